"""`rummy-ledger audit`: the recomputation against the recorded settlement and the report."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import sqlalchemy as sa
from click.testing import CliRunner

from replays.records.audit import audit
from replays.store.application import Ledger
from replays.store.db import engine_for
from replays.store.schema import EVENTS_TABLE
from web.cli import main

DATA = Path(__file__).parent / "data"


def records() -> list[dict]:
    return [json.loads(line) for line in (DATA / "games.jsonl").read_text().splitlines()]


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(main, list(args), input=input)


def imported(*changes) -> None:
    games = records()
    for change in changes:
        change(games)
    result = run("import", "-", input="".join(json.dumps(g) + "\n" for g in games))
    assert result.exit_code == 0, result.output


def test_a_clean_game_audits_clean_with_min_scores_and_cases(database_url):
    imported()
    result = run("audit", "T7-000123", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    settle_line = json.loads(
        run(
            "settle", "--json", "-", input=(DATA / "games.jsonl").read_text().splitlines()[0]
        ).stdout
    )
    assert {k: report[k] for k in settle_line} == settle_line  # the settle shape, plus:
    assert report["discrepancies"] == []
    # p3 showed a grouping worth 27; the same 13 cards (four jokers) could have scored 3.
    assert report["hand_scores"] == {"p3": 27}
    assert report["min_scores"]["p3"] == 3
    assert report["cases"] == {"p3": "pure_but_fewer_than_two_sequences"}


def test_operator_figures_that_differ_are_listed_field_by_field(database_url):
    def misreport(games):
        reported = games[3]["reported"]  # T2-000451
        reported["gross"] = "110.00"
        reported["points"]["p4"] = 70
        reported["net_to_winner"] = "85"  # the same amount written differently is no error

    imported(misreport)
    result = run("audit", "T2-000451", "--json")
    assert result.exit_code == 2
    report = json.loads(result.stdout)
    assert report["discrepancies"] == [
        {"field": "points.p4", "reported": 70, "computed": 80, "source": "reported"},
        {"field": "gross", "reported": "110.00", "computed": "100.00", "source": "reported"},
    ]
    people = run("audit", "T2-000451")
    assert people.exit_code == 2
    assert "2 discrepancy(ies):" in people.stdout
    assert "gross" in people.stdout and "110.00" in people.stdout


def test_a_tampered_recorded_settlement_is_caught(database_url):
    imported()
    ledger = Ledger(database_url, env={"CREATE_TABLE": "no"})
    game_id = "T7-000123"  # short enough to have no snapshot covering the Settled event
    settled = ledger.get_game(game_id).version - 1  # Settled, then Reported
    table = sa.table(
        EVENTS_TABLE,
        sa.column("originator_id"),
        sa.column("originator_version"),
        sa.column("state"),
    )
    aggregate_id = ledger.aggregate_id(game_id)
    with engine_for(database_url).begin() as connection:
        row = connection.execute(
            sa.select(table.c.state, table.c.originator_id).where(
                table.c.originator_version == settled
            )
        ).all()
        state, stored_id = next((s, i) for s, i in row if as_uuid(i) == aggregate_id)
        body = json.loads(bytes(state))
        assert body["settlement"]["gross"] == "49.70"
        body["settlement"]["gross"] = "49.00"
        body["settlement"]["players"]["p3"]["amount"] = "29.00"
        connection.execute(
            table.update()
            .where(table.c.originator_id == stored_id, table.c.originator_version == settled)
            .values(state=json.dumps(body).encode())
        )
    fresh = Ledger(database_url, env={"CREATE_TABLE": "no"})
    report = audit(fresh, game_id)
    found = {(d.field, d.source): (d.reported, d.computed) for d in report.discrepancies}
    assert found == {
        ("gross", "recorded"): ("49.00", "49.70"),
        ("players.p3.amount", "recorded"): ("29.00", "29.70"),
    }


def as_uuid(value) -> uuid.UUID:
    # SQLite keeps the aggregate id as 16 raw bytes, PostgreSQL as a UUID.
    if isinstance(value, bytes | memoryview):
        return uuid.UUID(bytes=bytes(value))
    return uuid.UUID(str(value))


def test_every_sample_game_audits_clean(database_url):
    imported()
    ledger = Ledger(database_url, env={"CREATE_TABLE": "no"})
    for record in records():
        report = audit(ledger, record["game_id"])
        assert report.clean, (record["game_id"], report.discrepancies)
        for line in report.losers:
            if line.hand_score is not None:
                assert line.min_score is not None and line.min_score <= line.hand_score


def test_unknown_or_unfinished_games_are_clear_errors(database_url):
    running = records()[0]
    running["moves"] = running["moves"][:2]
    del running["reported"]
    assert run("import", "-", input=json.dumps(running)).exit_code == 0
    unknown = run("audit", "no-such-game")
    assert unknown.exit_code == 1
    assert "no game no-such-game is recorded" in unknown.output
    unfinished = run("audit", "T7-000123")
    assert unfinished.exit_code == 1
    assert "has no winner yet" in unfinished.output
    assert "Traceback" not in unknown.output + unfinished.output
