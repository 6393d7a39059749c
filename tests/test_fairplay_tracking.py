"""A game the fair-play catch-up counted is never counted twice: its ``fairplay_games`` row
deleted (an insider's write), the next catch-up names it and counts nothing, and ``verify``
names it, as it names a row of a game that is not an ended one (issue 32; SQLite and
PostgreSQL)."""

from __future__ import annotations

import json

import sqlalchemy as sa
from click.testing import CliRunner
from fairplay_support import FROM, TO, cheating_records
from test_fairplay_kept import _rows

from replays.fairplay import projection
from replays.store.db import engine_for
from web.cli import main


def _counted_store(url: str):
    from replays.readmodels.projections import catch_up
    from replays.simulation import store_games
    from replays.store.application import Ledger
    from replays.store.schema import migrate

    migrate(url)
    store_games(cheating_records()[:40], url)
    catch_up(url)
    ledger = Ledger(url, env={"CREATE_TABLE": "no"})
    assert projection.catch_up(ledger, url) == 40
    return ledger


def _sql(url: str, statement: str) -> list:
    with engine_for(url).begin() as connection:
        result = connection.execute(sa.text(statement))
        return result.all() if result.returns_rows else []


def _run(*args):
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout


def _read_model_findings(output: str) -> list[tuple[str, str]]:
    report = json.loads(output)
    return [(p["game_id"], p["message"]) for p in report["problems"]]


def test_a_deleted_row_is_reported_not_counted_again(database_url):
    ledger = _counted_store(database_url)
    kept = _rows(database_url)
    (gone,) = _sql(database_url, "SELECT game_id FROM fairplay_games ORDER BY game_id LIMIT 1")[0]
    _sql(database_url, f"DELETE FROM fairplay_games WHERE game_id = '{gone}'")
    findings = []
    assert projection.catch_up(ledger, database_url, skipped=findings.append) == 0
    assert [finding.game_id for finding in findings] == [gone]
    assert "counted before" in str(findings[0]) and "--rebuild" in str(findings[0])
    # The day rows hold the game once, as before; its row stays missing for verify to see.
    kept["fairplay_games"] = [row for row in kept["fairplay_games"] if row[0] != gone]
    assert _rows(database_url) == kept

    code, out = _run("fairplay", "--from", FROM, "--to", TO, "--json")
    assert code == 0
    doubts = json.loads(out)["doubts"]
    assert len(doubts) == 1 and gone in doubts[0]
    code, out = _run("fairplay", "--from", FROM, "--to", TO)
    assert "figures may be wrong" in out and gone in out

    code, out = _run("verify", "--read-models", "--json")
    assert code == 1
    assert [game for game, message in _read_model_findings(out) if "fairplay" in message] == [gone]


def test_an_extra_row_is_found_by_verify(database_url):
    _counted_store(database_url)
    _sql(
        database_url,
        "INSERT INTO fairplay_games (game_id, day, table_id) VALUES ('FORGED', '2025-03-02', 'T1')",
    )
    code, out = _run("verify", "--read-models", "--json")
    assert code == 1
    assert [game for game, _ in _read_model_findings(out)] == ["FORGED"]


def test_untouched_counts_verify_and_new_games_count(database_url):
    from replays.readmodels.projections import catch_up
    from replays.simulation import store_games

    ledger = _counted_store(database_url)
    code, out = _run("verify", "--read-models", "--json")
    assert code == 0, out
    # Games stored after the catch-up have events after its position: counted as new.
    store_games(cheating_records()[40:50], database_url)
    catch_up(database_url)
    findings = []
    assert projection.catch_up(ledger, database_url, skipped=findings.append) == 10
    assert findings == []
    # A rebuild forgets the position with the counts, and counts every game once.
    assert projection.rebuild(ledger, database_url, skipped=findings.append) == 50
    assert findings == []
