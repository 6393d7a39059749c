"""The read-model projection on SQLite and PostgreSQL: rows from real games, exactly once.

Games come from the sample records (tests/data/games.jsonl) and from the simulator; they
are stored through the Ledger directly, so that each test decides when to project.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from domain.simulation.floor import Floor
from replays.readmodels import projections
from replays.readmodels.models import (
    GameRow,
    LedgerEntryRow,
    MoveRow,
    PlayerResultRow,
    ProjectionPosition,
)
from replays.readmodels.projection_runner import ProjectionCrash
from replays.readmodels.reports import PeriodFilter, period_report
from replays.records.codec import parse_record, read_records
from replays.simulation.batch import Simulation
from replays.store.application import Ledger
from replays.store.db import engine_for
from replays.store.schema import EVENTS_TABLE, migrate
from web.cli import main

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "tests" / "data" / "games.jsonl"
D = Decimal


def sample_records():
    return [record for _, record in read_records(SAMPLES.read_text().splitlines())]


def simulated_records(count: int, seed: int = 11, discrepancy_rate: float = 0.25):
    simulation = Simulation(Floor(seed=seed, tables=6, players=40), discrepancy_rate)
    return [parse_record(record) for record in simulation.games(count)]


def store(ledger: Ledger, records) -> None:
    for record in records:
        ledger.record_game(
            record.config,
            record.deal,
            record.move_dicts(),
            reported=None if record.reported is None else record.reported.to_dict(),
        )


@pytest.fixture
def ledger(database_url):
    migrate(database_url)
    return Ledger(database_url, env={"CREATE_TABLE": "no"})


def dump(url: str) -> dict[str, list[tuple]]:
    """Every read-model row, in key order; ledger entries without their surrogate id."""
    tables = {
        "games": (GameRow.__table__, ["game_id"]),
        "player_results": (PlayerResultRow.__table__, ["game_id", "player"]),
        "moves": (MoveRow.__table__, ["game_id", "move_index"]),
        "ledger_entries": (LedgerEntryRow.__table__, ["game_id", "kind", "line"]),
    }
    out = {}
    with engine_for(url).connect() as connection:
        for name, (table, keys) in tables.items():
            columns = [c for c in table.c if c.name != "id"]
            rows = connection.execute(
                sa.select(*columns).order_by(*(table.c[k] for k in keys))
            ).all()
            out[name] = [tuple(row) for row in rows]
    return out


def head(url: str) -> int:
    with engine_for(url).connect() as connection:
        return connection.execute(sa.text(f"SELECT max(id) FROM {EVENTS_TABLE}")).scalar() or 0


def rebuilt(url: str, ledger: Ledger) -> dict[str, list[tuple]]:
    projections.rebuild(url, ledger=ledger)
    return dump(url)


# -- rows from real games ------------------------------------------------------------------


def test_sample_games_project_to_the_recorded_figures(ledger, database_url):
    records = sample_records()
    store(ledger, records)
    applied = projections.catch_up(database_url, ledger=ledger)
    assert applied == head(database_url)

    rows = dump(database_url)
    assert [g[0] for g in rows["games"]] == sorted(r.game_id for r in records)
    with engine_for(database_url).connect() as connection:
        game = connection.execute(
            sa.select(GameRow.__table__).where(GameRow.game_id == "T7-000123")
        ).one()
        results = {
            r.player: r
            for r in connection.execute(
                sa.select(PlayerResultRow.__table__).where(PlayerResultRow.game_id == "T7-000123")
            )
        }
        moves = connection.execute(
            sa.select(MoveRow.__table__)
            .where(MoveRow.game_id == "T7-000123")
            .order_by(MoveRow.move_index)
        ).all()
        entries = connection.execute(
            sa.select(LedgerEntryRow.__table__)
            .where(LedgerEntryRow.game_id == "T7-000123")
            .order_by(LedgerEntryRow.line)
        ).all()
    # docs/record-format.md's example: p2 first drop 20 @ 1.00, p1 declares in round 1 @ 1.10, p3 27 @ 1.10.
    assert (game.status, game.winner, game.variant, game.table_id) == (
        "settled",
        "p1",
        "raise",
        "T7",
    )
    assert (game.gross, game.fee, game.net_to_winner) == (D("49.70"), D("4.97"), D("44.73"))
    assert (game.point_value, game.final_point_value, game.fee_percent) == (
        D("1.00"),
        D("1.10"),
        D("10"),
    )
    assert game.ended_on.isoformat() == "2025-03-01"
    assert game.discrepancy is False and game.settlement_hash == game.recomputed_hash
    assert (results["p2"].result, results["p2"].points, results["p2"].point_value) == (
        "first_drop",
        20,
        D("1.00"),
    )
    assert (results["p3"].points, results["p3"].amount, results["p3"].point_value) == (
        27,
        D("29.70"),
        D("1.10"),
    )
    assert results["p3"].min_score is not None and results["p3"].hand_score == 27
    assert (results["p1"].result, results["p1"].amount) == ("won", D("44.73"))

    stored = ledger.get_game("T7-000123")
    assert [(m.player, m.move_type, m.card) for m in moves] == [
        (m.get("player"), m["type"], m.get("card") or m.get("finish")) for m in stored.moves
    ]
    assert [m.move_index for m in moves] == list(range(len(stored.moves)))
    assert [(m.round, m.point_value) for m in moves[:5]] == [
        (0, D("1.00")),
        (0, D("1.00")),
        (0, D("1.00")),
        (0, D("1.00")),
        (1, D("1.10")),  # play passed the dealer (p3): round 1 at 1.10
    ]
    declare = next(m for m in moves if m.move_type == "declare")
    assert declare.card == "9C" and len(declare.groups) == 4
    assert [m.groups for m in moves if m.move_type == "pick"] == [None, None]

    debits = sum((e.debit for e in entries), D(0))
    credits = sum((e.credit for e in entries), D(0))
    assert debits == credits == D("49.70")
    assert {e.account: (e.debit, e.credit) for e in entries}["operator:fee"] == (D("0"), D("4.97"))


def test_each_game_s_rows_match_its_settlement(ledger, database_url):
    records = simulated_records(12)
    store(ledger, records)
    projections.catch_up(database_url, ledger=ledger)
    rows = dump(database_url)
    assert len(rows["games"]) == 12
    with engine_for(database_url).connect() as connection:
        for record in records:
            game = ledger.get_game(record.game_id)
            settlement = game.settlement
            moves = connection.execute(
                sa.select(sa.func.count()).where(MoveRow.game_id == record.game_id)
            ).scalar()
            assert moves == len(game.moves)
            row = connection.execute(
                sa.select(GameRow.__table__).where(GameRow.game_id == record.game_id)
            ).one()
            assert row.moves_count == len(game.moves) and row.version == game.version
            if settlement is None:
                assert row.status != "settled" and row.gross is None
                continue
            assert (row.gross, row.fee, row.winner) == (
                settlement.gross,
                settlement.fee,
                settlement.winner,
            )
            results = connection.execute(
                sa.select(PlayerResultRow.player, PlayerResultRow.amount).where(
                    PlayerResultRow.game_id == record.game_id
                )
            ).all()
            assert dict(results) == {
                settlement.winner: settlement.net_to_winner,
                **{p: line.amount for p, line in settlement.players.items()},
            }


# -- exactly once, incremental, crash-safe -------------------------------------------------


def test_catching_up_twice_applies_nothing_and_needs_no_ledger(ledger, database_url, monkeypatch):
    store(ledger, sample_records()[:3])
    first = projections.catch_up(database_url, ledger=ledger)
    before = dump(database_url)

    def no_ledger(url):  # nothing new: catch_up must not build an application
        raise AssertionError("a Ledger was built with nothing to project")

    monkeypatch.setattr(projections, "_ledger", no_ledger)
    assert first > 0 and projections.catch_up(database_url) == 0
    assert dump(database_url) == before
    status = projections.projection_status(database_url)
    assert (status.position, status.lag, status.events_applied) == (first, 0, first)


def test_a_game_played_move_by_move_projects_like_a_rebuild(ledger, database_url):
    """Each move is projected as it is stored: rows are inserted, then updated in place."""
    record = sample_records()[0]  # T7-000123, which ends with a show and a settlement
    ledger.start_game(record.config)
    deal = record.deal
    ledger.deal(record.game_id, deal.hands, deal.wild, deal.open_card, deal.stock)
    seen_statuses = []
    for move in record.move_dicts():
        ledger.play(record.game_id, move)
        assert projections.catch_up(database_url, ledger=ledger) >= 1
        with engine_for(database_url).connect() as connection:
            seen_statuses.append(
                connection.execute(
                    sa.select(GameRow.status, GameRow.moves_count).where(
                        GameRow.game_id == record.game_id
                    )
                ).one()
            )
    assert seen_statuses[0] == ("playing", 1)
    assert seen_statuses[-1] == ("settled", len(record.moves))
    incremental = dump(database_url)
    # A rebuild stamps nothing new, so equal dumps mean identical tables.
    assert rebuilt(database_url, ledger) == incremental
    assert incremental["games"][0][GameRow.__table__.c.keys().index("gross")] == D("49.70")


@pytest.mark.parametrize("crash_batch", [0, 3, 7])
def test_a_crash_mid_batch_rolls_back_and_resumes(ledger, database_url, crash_batch):
    store(ledger, sample_records())
    total = head(database_url)

    def crash(stage, batch):
        if stage == "applied" and batch == crash_batch:
            raise ProjectionCrash(f"crash in batch {batch}")

    runner = projections.runner(database_url, ledger=ledger, batch_size=20, hook=crash)
    with pytest.raises(ProjectionCrash):
        runner.catch_up()
    position = runner.status().position
    assert position == 20 * crash_batch  # the crashed batch left nothing behind
    assert len(dump(database_url)["moves"]) <= position

    resumed = projections.runner(database_url, ledger=ledger, batch_size=20)
    assert resumed.catch_up() == total - position
    after = dump(database_url)
    assert rebuilt(database_url, ledger) == after


def test_the_in_memory_games_are_dropped_after_a_crash(ledger, database_url):
    """The same runner continues after a failed batch: games it had advanced in memory
    during the rolled-back batch must not be reused."""
    store(ledger, sample_records())
    crashed = []

    def crash_once(stage, batch):
        if stage == "applied" and batch == 2 and not crashed:
            crashed.append(batch)
            raise ProjectionCrash("once")

    runner = projections.runner(database_url, ledger=ledger, batch_size=15, hook=crash_once)
    with pytest.raises(ProjectionCrash):
        runner.catch_up()
    runner.catch_up()
    assert dump(database_url) == rebuilt(database_url, ledger)


def test_settled_games_leave_the_projection_s_memory(ledger, database_url):
    """Memory flat in the number of games (issue 16): a settled game is not kept for a next
    event that never comes, so an import of any size holds no finished games; a game still
    in play stays cached, so its next move needs no store read."""
    records = simulated_records(12)
    store(ledger, records)
    first = records[0]
    open_config = dataclasses.replace(first.config, game_id="open-game-1")
    ledger.record_game(open_config, first.deal, first.move_dicts()[:6], settle=False)
    runner = projections.runner(database_url, ledger=ledger, batch_size=25)
    runner.catch_up()
    cached = {str(game.game_id) for game in runner.projection._games.values()}
    assert cached == {"open-game-1"}, cached
    assert dump(database_url) == rebuilt(database_url, ledger)


WORKER = """
import sys, time
from replays.readmodels import projections
url, batch = sys.argv[1], int(sys.argv[2])
def slow(stage, number):
    time.sleep(0.01)  # widen the window between applying a batch and committing it
runner = projections.runner(url, batch_size=batch, hook=slow)
print("ready", flush=True)
runner.catch_up()
print("done", flush=True)
"""


def _worker(url: str, batch: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, url, str(batch)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_killed_at_random_points_and_restarted_it_ends_like_a_clean_rebuild(ledger, database_url):
    store(ledger, sample_records() + simulated_records(10, seed=5))
    total = head(database_url)
    rng = random.Random(20250301)
    kills, positions = 0, []
    for _ in range(12):
        worker = _worker(database_url, batch=25)
        assert worker.stdout.readline() == b"ready\n", worker.communicate()[1].decode()
        time.sleep(rng.uniform(0.02, 0.4))
        if worker.poll() is None:
            worker.send_signal(signal.SIGKILL)
            kills += 1
        worker.communicate(timeout=60)
        positions.append(projections.projection_status(database_url).position)
        if positions[-1] == total:
            break
    finished = _worker(database_url, batch=25)
    _, err = finished.communicate(timeout=300)
    assert finished.returncode == 0, err.decode()
    assert kills >= 1, "no worker was killed: the test proved nothing"
    assert any(0 < p < total for p in positions), positions
    status = projections.projection_status(database_url)
    assert (status.position, status.events_applied) == (total, total)
    assert dump(database_url) == rebuilt(database_url, ledger)


def test_two_runners_at_once_apply_each_event_once(ledger, database_url):
    store(ledger, sample_records() + simulated_records(6, seed=9))
    total = head(database_url)
    errors = []

    def run():
        try:
            projections.runner(database_url, ledger=ledger, batch_size=10).catch_up()
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    status = projections.projection_status(database_url)
    assert (status.position, status.events_applied) == (total, total)
    assert dump(database_url) == rebuilt(database_url, ledger)


# -- discrepancies -------------------------------------------------------------------------


def test_a_misreported_settlement_is_flagged(ledger, database_url):
    records = sample_records()
    bad = json.loads(SAMPLES.read_text().splitlines()[0])
    bad["game_id"] = "T7-misreported"
    bad["reported"]["gross"] = "50.00"
    records.append(parse_record(bad))
    store(ledger, records)
    projections.catch_up(database_url, ledger=ledger)
    with engine_for(database_url).connect() as connection:
        flagged = connection.execute(
            sa.select(GameRow.game_id, GameRow.discrepancy_note).where(
                GameRow.discrepancy.is_(True)
            )
        ).all()
    assert [g for g, _ in flagged] == ["T7-misreported"]
    assert "reported gross: 50.00 != computed 49.70" in flagged[0][1]


def test_a_tampered_settled_event_differs_from_its_recomputation(ledger, database_url):
    store(ledger, sample_records()[:2])
    events = sa.table("ledger_events", sa.column("id"), sa.column("topic"), sa.column("state"))
    with engine_for(database_url).begin() as connection:
        row = connection.execute(
            sa.select(events.c.id, events.c.state)
            .where(events.c.topic == "rummy_ledger:Game.Settled")
            .order_by(events.c.id)
            .limit(1)
        ).one()
        state = json.loads(bytes(row.state))
        state["settlement"]["gross"] = "59.70"
        connection.execute(
            events.update().where(events.c.id == row.id).values(state=json.dumps(state).encode())
        )
    projections.catch_up(database_url, ledger=ledger)
    with engine_for(database_url).connect() as connection:
        game = connection.execute(
            sa.select(GameRow.__table__).where(GameRow.game_id == "T7-000123")
        ).one()
    assert game.discrepancy is True
    assert game.settlement_hash != game.recomputed_hash
    assert "recorded gross: 59.70 != computed 49.70" in game.discrepancy_note
    with engine_for(database_url).connect() as connection:
        report = period_report(connection, PeriodFilter(game.ended_on, game.ended_on))
    kinds = {(d.game_id, d.kind) for d in report.discrepancies}
    # The ledger entries (49.70 debited) no longer add up to the recorded gross either.
    assert kinds == {("T7-000123", "settlement_differs"), ("T7-000123", "ledger_differs")}


def test_the_period_report_over_projected_games(ledger, database_url):
    records = simulated_records(20, seed=3)
    store(ledger, records)
    projections.catch_up(database_url, ledger=ledger)
    settled = [ledger.get_game(r.game_id) for r in records]
    settled = [g for g in settled if g.settlement is not None]
    with engine_for(database_url).connect() as connection:
        report = period_report(connection, PeriodFilter(date(2000, 1, 1), date(2099, 12, 31)))
    assert report.totals.games == len(settled)
    assert report.totals.gross == sum((g.settlement.gross for g in settled), D("0.00"))
    assert report.totals.fees == sum((g.settlement.fee for g in settled), D("0.00"))
    assert report.reconciliation.balanced
    assert sum(t.totals.games for t in report.by_table) == len(settled)
    assert sum(d.totals.games for d in report.by_day) == len(settled)
    assert sum(p.paid for p in report.by_player) == report.totals.gross
    misreported = {g.game_id for g in settled if g.reported and _reported_differs(g)}
    flagged = {d.game_id for d in report.discrepancies}
    assert flagged == misreported


def _reported_differs(game) -> bool:
    from replays.records.audit import audit_game

    return bool(audit_game(game).discrepancies)


# -- the command line ----------------------------------------------------------------------


def test_cli_run_status_and_rebuild(ledger, database_url):
    store(ledger, sample_records())
    total = head(database_url)
    cli = CliRunner()
    status = cli.invoke(main, ["projections", "status", "--json", "--url", database_url])
    assert status.exit_code == 0, status.output
    assert json.loads(status.stdout)["lag"] == total

    run = cli.invoke(main, ["projections", "run", "--url", database_url])
    assert run.exit_code == 0, run.output
    assert f"{total} events applied" in run.stdout
    status = cli.invoke(main, ["projections", "status", "--url", database_url])
    assert f"position {total} of {total}, lag 0 events" in status.stdout

    before = dump(database_url)
    rebuild = cli.invoke(
        main, ["projections", "rebuild", "--batch-size", "7", "--url", database_url]
    )
    assert rebuild.exit_code == 0, rebuild.output
    assert f"{total} events applied" in rebuild.stdout
    assert dump(database_url) == before


def test_cli_status_on_an_unmigrated_database(tmp_path):
    out = CliRunner().invoke(
        main, ["projections", "status", "--url", f"sqlite:///{tmp_path}/empty.db"]
    )
    assert out.exit_code == 1 and "rummy-ledger db upgrade" in out.output
    assert "Traceback" not in out.output


def test_follow_picks_up_new_games(ledger, database_url):
    records = sample_records()
    store(ledger, records[:2])
    stop = threading.Event()
    done = []
    worker = threading.Thread(
        target=lambda: done.append(
            projections.follow(database_url, ledger=ledger, interval=0.05, stop=stop.is_set)
        )
    )
    worker.start()
    try:
        store(ledger, records[2:4])
        deadline = time.monotonic() + 30
        while projections.projection_status(database_url).lag and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        worker.join(timeout=30)
    assert done == [head(database_url)]
    assert len(dump(database_url)["games"]) == 4


def test_imported_games_appear_without_a_manual_step(database_url):
    out = CliRunner().invoke(main, ["import", str(SAMPLES)])
    assert out.exit_code == 0, out.output
    with engine_for(database_url).connect() as connection:
        games = connection.execute(sa.select(sa.func.count()).select_from(GameRow)).scalar()
        position = connection.execute(
            sa.select(ProjectionPosition.position).where(
                ProjectionPosition.name == projections.NAME
            )
        ).scalar()
    assert games == len(sample_records())
    assert position == head(database_url)
