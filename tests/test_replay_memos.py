"""Remembered replays (replays/integrity/replay_memos.py): the badge answers from a memo of
the same events' replay, and nothing an insider edits gets past it.

Each test stores simulated games of three families (13-card Points, Red 3, Pool), signs a
checkpoint and runs ``verify``, which leaves a memo for every clean game; then it edits the
store like an insider and asks the pages' verdict.
"""

from __future__ import annotations

import json
import zlib
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
import sqlalchemy as sa
from sql_support import sql

from domain.simulation.floor import Floor
from replays.integrity import replay_memos
from replays.integrity.evidence import integrity_verdict, make_checkpoint
from replays.integrity.models import GameChainHead
from replays.integrity.signing import init_keys
from replays.integrity.verify import verify_game, verify_store
from replays.readmodels import read_model_checks
from replays.simulation import Simulation, store_games
from replays.store.db import engine_for
from replays.store.schema import migrate


def stored_games(url: str) -> list[str]:
    migrate(url)  # the read-model tables, as a site has them
    records = [
        *Simulation(Floor(seed=5, variants=("points",))).games(2),
        *Simulation(Floor(seed=5, variants=("red3",))).games(1),
        *Simulation(Floor(seed=5, variants=("pool",))).games(1),
    ]
    summary = store_games(records, url=url, warn=lambda message: None)
    assert not summary.rejected, summary.rejected
    make_checkpoint(url)
    return [record["game_id"] for record in records]


class Replays:
    """Counts the read-model replays (``expected_rows``) made from now on."""

    def __init__(self, monkeypatch):
        self.count = 0
        original = read_model_checks.expected_rows

        def counted(*args, **kwargs):
            self.count += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(read_model_checks, "expected_rows", counted)


def memo_count(url: str) -> int:
    return sql(url, "SELECT COUNT(*) FROM integrity_replay_memos").scalar_one()


def test_verify_leaves_a_memo_per_game_and_the_badge_replays_nothing(
    database_url, keys, monkeypatch
):
    games = stored_games(database_url)
    report = verify_store(database_url)
    assert report.ok, report.problems
    assert memo_count(database_url) == len(games)
    # A second run finds every memo up to date and rewrites none.
    made = sql(database_url, "SELECT game_id, made_at FROM integrity_replay_memos").all()
    assert verify_store(database_url).ok
    assert sql(database_url, "SELECT game_id, made_at FROM integrity_replay_memos").all() == made
    replays = Replays(monkeypatch)
    for game_id in games:
        verdict = integrity_verdict(database_url, game_id)
        assert verdict.status == "verified", (game_id, verdict.message)
    assert replays.count == 0
    # `verify` itself never takes a memo's word: it replays every game.
    assert verify_game(database_url, games[1]).problems == []
    assert replays.count == 1


def test_a_game_never_checked_is_replayed_once_then_remembered(database_url, keys, monkeypatch):
    games = stored_games(database_url)
    replays = Replays(monkeypatch)
    assert integrity_verdict(database_url, games[2]).status == "verified"
    assert integrity_verdict(database_url, games[2]).status == "verified"
    assert replays.count == 1
    assert memo_count(database_url) == 1


@pytest.mark.parametrize("index", [0, 2, 3])  # Points, Red 3, Pool
def test_an_edited_read_row_is_found_through_the_memo(database_url, keys, monkeypatch, index):
    games = stored_games(database_url)
    assert verify_store(database_url).ok
    game_id = games[index]
    player, amount = sql(
        database_url,
        "SELECT player, amount FROM player_results WHERE game_id = :g ORDER BY player",
        g=game_id,
    ).first()
    sql(
        database_url,
        "UPDATE player_results SET amount = :a WHERE game_id = :g AND player = :p",
        a=amount + 7,
        g=game_id,
        p=player,
    )
    replays = Replays(monkeypatch)
    verdict = integrity_verdict(database_url, game_id)
    assert verdict.status == "read_model_differs"
    assert any(f"player_results[{player}].amount" in field for field in verdict.fields)
    assert replays.count == 0  # compared with the remembered rows, not replayed

    # Put back, the rows are the very ones found to match: verified again.
    sql(
        database_url,
        "UPDATE player_results SET amount = :a WHERE game_id = :g AND player = :p",
        a=amount,
        g=game_id,
        p=player,
    )
    assert integrity_verdict(database_url, game_id).status == "verified"


def test_a_forged_memo_is_never_trusted(database_url, keys, monkeypatch):
    """An insider edits a move row and the memo's remembered rows to agree with it: the
    memo's MAC no longer holds, so the badge replays the events and names the edit."""
    games = stored_games(database_url)
    assert verify_store(database_url).ok
    game_id = games[0]
    index, card = sql(
        database_url,
        "SELECT move_index, card FROM moves WHERE game_id = :g AND card IS NOT NULL "
        "ORDER BY move_index",
        g=game_id,
    ).first()
    forged_card = "2C" if card != "2C" else "3C"
    sql(
        database_url,
        "UPDATE moves SET card = :c WHERE game_id = :g AND move_index = :i",
        c=forged_card,
        g=game_id,
        i=index,
    )
    body = bytes(
        sql(
            database_url, "SELECT body FROM integrity_replay_memos WHERE game_id = :g", g=game_id
        ).scalar_one()
    )
    data = json.loads(zlib.decompress(body))
    moves = data["moves"]
    at = moves["columns"].index("card")
    for values in moves["values"]:
        if values[moves["columns"].index("move_index")] == index:
            values[at] = forged_card
    forged = zlib.compress(json.dumps(data, separators=(",", ":")).encode())
    assert forged != body
    sql(
        database_url,
        "UPDATE integrity_replay_memos SET body = :b, rows_digest = NULL WHERE game_id = :g",
        b=forged,
        g=game_id,
    )
    replays = Replays(monkeypatch)
    verdict = integrity_verdict(database_url, game_id)
    assert verdict.status == "read_model_differs"
    assert verdict.fields == (f"moves[{index}].card: stored {forged_card}, from events {card}",)
    assert replays.count == 1


def test_a_memo_under_another_key_is_ignored(database_url, keys, monkeypatch, tmp_path):
    games = stored_games(database_url)
    assert verify_store(database_url).ok
    other = tmp_path / "other-keys"
    init_keys(other)
    monkeypatch.setenv("RUMMY_LEDGER_KEY_DIR", str(other))
    replays = Replays(monkeypatch)
    make_checkpoint(database_url)  # signed by the new key, so the badge can say verified
    assert integrity_verdict(database_url, games[0]).status == "verified"
    assert replays.count == 1


def test_new_code_edited_snapshots_and_later_events_miss_the_memo(database_url, keys, monkeypatch):
    games = stored_games(database_url)
    assert verify_store(database_url).ok
    replays = Replays(monkeypatch)
    monkeypatch.setattr(replay_memos, "code_fingerprint", lambda: b"another release")
    assert integrity_verdict(database_url, games[0]).status == "verified"
    assert replays.count == 1


def test_an_edited_snapshot_misses_the_memo(database_url, keys):
    games = stored_games(database_url)
    red3 = games[2]
    assert verify_store(database_url).ok
    with engine_for(database_url).connect() as connection:
        originator = connection.execute(
            sa.select(GameChainHead.originator_id).where(GameChainHead.game_id == red3)
        ).scalar_one()
    # eventsourcing-sqlalchemy stores UUIDs as 16 bytes on SQLite, native on PostgreSQL.
    stored_id = originator.bytes if database_url.startswith("sqlite") else originator
    snapshots = sql(
        database_url, "SELECT COUNT(*) FROM ledger_snapshots WHERE originator_id = :o", o=stored_id
    ).scalar_one()
    assert snapshots  # Red 3 snapshots every 20 events
    sql(
        database_url,
        "UPDATE ledger_snapshots SET state = :s WHERE originator_id = :o",
        s=b"{}",
        o=stored_id,
    )
    assert integrity_verdict(database_url, red3).status == "broken"
    # A snapshot emptied to `{}` is a finding, not a crash of the check.
    report = verify_store(database_url)
    assert [(p.kind, p.game_id) for p in report.problems] == [("snapshot", red3)]
    assert "cannot be read" in report.problems[0].message


def test_without_a_memo_key_nothing_is_remembered(database_url, tmp_path, monkeypatch):
    monkeypatch.setenv("RUMMY_LEDGER_KEY_DIR", str(tmp_path / "no-keys"))
    games = stored_games_unsigned(database_url)
    assert verify_store(database_url).ok
    assert integrity_verdict(database_url, games[0]).status == "not_checkpointed"
    assert memo_count(database_url) == 0


def stored_games_unsigned(url: str) -> list[str]:
    migrate(url)
    records = list(Simulation(Floor(seed=5, variants=("points",))).games(2))
    store_games(records, url=url, warn=lambda message: None)
    return [record["game_id"] for record in records]


def test_verify_with_jobs_leaves_memos_too(sqlite_url, keys, monkeypatch):
    games = stored_games(sqlite_url)
    assert verify_store(sqlite_url, jobs=2).ok
    assert memo_count(sqlite_url) == len(games)
    replays = Replays(monkeypatch)
    assert all(integrity_verdict(sqlite_url, g).status == "verified" for g in games)
    assert replays.count == 0


def test_a_game_with_a_problem_gets_no_memo(database_url, keys):
    games = stored_games(database_url)
    sql(
        database_url,
        "UPDATE player_results SET amount = amount + 1 WHERE game_id = :g",
        g=games[1],
    )
    report = verify_store(database_url)
    assert {p.game_id for p in report.problems} == {games[1]}
    remembered = {g for (g,) in sql(database_url, "SELECT game_id FROM integrity_replay_memos")}
    # Its replay was clean, but the whole-store pass remembers only games without findings.
    assert remembered == set(games) - {games[1]}


def test_values_keep_their_exact_types():
    values = {
        "amount": Decimal("12.50"),
        "zero": Decimal("0"),
        "at": datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        "naive": datetime(2026, 1, 2, 3, 4, 5),
        "day": date(2026, 1, 2),
        "pair": ("a", 1),
        "nested": [{"x": Decimal("1.0")}, None, True, 3, "s"],
    }
    back = replay_memos.decode(json.loads(json.dumps(replay_memos.encode(values))))
    assert back == values
    for key, value in values.items():
        assert type(back[key]) is type(value)
    assert str(back["amount"]) == "12.50"
    assert back["at"].tzinfo is not None and back["naive"].tzinfo is None
    with pytest.raises(TypeError, match="a memo cannot hold a float"):
        replay_memos.encode(1.5)


def test_a_page_does_not_wait_for_a_long_write_to_remember(sqlite_url, keys):
    """An import holding SQLite's write lock: the badge still answers (from a replay), the
    memo is left for a later view, and the pooled connection keeps its usual wait."""
    import sqlite3

    games = stored_games(sqlite_url)
    writer = sqlite3.connect(sqlite_url.removeprefix("sqlite:///"))
    writer.execute("BEGIN IMMEDIATE")
    try:
        assert integrity_verdict(sqlite_url, games[0]).status == "verified"
        with engine_for(sqlite_url).connect() as connection:
            assert connection.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 1000
    finally:
        writer.rollback()
        writer.close()
    assert memo_count(sqlite_url) == 0
    assert integrity_verdict(sqlite_url, games[0]).status == "verified"
    assert memo_count(sqlite_url) == 1


def test_a_games_verdict_reads_dispute_events_through_their_index(database_url):
    """The one-game check reads dispute cases' events with the partial index's own
    condition, so it does not scan every event of the store on every page view."""
    from replays.disputes.projection import DISPUTE_TOPICS
    from replays.store.application import Ledger
    from replays.store.schema import DISPUTE_EVENTS, DISPUTE_INDEX

    migrate(database_url)
    Ledger(database_url)
    assert f"topic LIKE '{DISPUTE_TOPICS}%'" == DISPUTE_EVENTS
    indexes = {i["name"] for i in sa.inspect(engine_for(database_url)).get_indexes("ledger_events")}
    assert DISPUTE_INDEX in indexes
    query = (
        "SELECT id FROM ledger_events WHERE id <= 10 AND "
        f"{DISPUTE_EVENTS} ORDER BY originator_id, originator_version"
    )
    with engine_for(database_url).connect() as connection:
        if connection.dialect.name == "sqlite":
            plan = " ".join(
                str(row[-1]) for row in connection.execute(sa.text("EXPLAIN QUERY PLAN " + query))
            )
        else:
            connection.exec_driver_sql("SET enable_seqscan = off")
            plan = " ".join(row[0] for row in connection.execute(sa.text("EXPLAIN " + query)))
    assert DISPUTE_INDEX in plan, plan


@pytest.mark.parametrize("column", ["notes", "digest", "mac"])
def test_a_memo_that_cannot_be_read_is_left_unused(database_url, keys, column):
    """A memo no parser takes: notes nested past the JSON parser's depth stopped verify
    (RecursionError, caught as nothing), and an edit in another game went unreported; a
    number where bytes go would be read as that many zero bytes. The memo is left unused:
    verify names the edit, and the badge replays the game instead of failing the page."""
    games = stored_games(database_url)
    assert verify_store(database_url).ok
    game_id, other = games[0], games[1]
    postgres = database_url.startswith("postgresql")
    value = "[" * 100_000 + "]" * 100_000 if column == "notes" else 2**40
    if column != "notes" and postgres:
        # PostgreSQL keeps bytes in a bytea column: it refuses the number itself.
        with pytest.raises(sa.exc.DBAPIError):
            sql(database_url, f"UPDATE integrity_replay_memos SET {column} = :v", v=value)
        return

    def spoil():
        sql(
            database_url,
            f"UPDATE integrity_replay_memos SET {column} = :v WHERE game_id = :g",
            v=value,
            g=game_id,
        )

    spoil()
    sql(
        database_url,
        "UPDATE player_results SET amount = amount + 100 WHERE game_id = :g AND player = "
        "(SELECT MIN(player) FROM player_results WHERE game_id = :g)",
        g=other,
    )
    report = verify_store(database_url)
    assert not any("stopped early" in p.message for p in report.problems), report.problems
    assert any(p.game_id == other and p.kind == "read_model" for p in report.problems)
    spoil()  # verify wrote the game's memo anew
    verdict = integrity_verdict(database_url, game_id)
    if column == "notes":  # text, as notes are: merely unusable
        assert verdict.status == "verified", verdict
    else:  # of the wrong kind: the scan before the check names it
        assert verdict.status == "unverifiable", verdict
        assert f"integrity_replay_memos game_id='{game_id}': {column} holds" in verdict.message
