"""Period report speed over 100,000 games: the month report, in PostgreSQL (and SQLite).

Two ways to fill the read models, chosen with ``RUMMY_BENCH_REPORT_SOURCE``:

- ``synthetic`` (default): read-model rows written directly, shaped exactly as the
  projection writes them (:func:`replays.readmodels.projections.started_row` and
  :func:`~replays.readmodels.projections.settlement_rows` over a real
  :func:`~domain.rummy13.settlement.compute_settlement`), for games on the simulator's floor (its
  tables, stakes and player pool) spread over one month. Losers are dropped, auto-dropped
  or wrong-showed (flat points; no 13-card hands to solve), and 1 % of the games are
  flagged as discrepancies. The ``moves`` table is left empty: no report reads it.
  This takes minutes; simulating and storing 100,000 games takes hours on two cores.
- ``simulated``: games played by the simulator, imported as events, projected by
  ``projections.catch_up`` (timed, beside a raw read of the same notifications), then
  reported on. ``RUMMY_BENCH_REPORT_GAMES`` sets the count (default 100,000);
  ``RUMMY_BENCH_REPORT_ENGINES=postgresql`` skips SQLite.

Timed, median of five runs each: the whole-month report (every game of the month), one
day, one table, one player. Baseline, in the same run: the plain scans any such report
must at least make — ``SELECT count(*), sum(gross), sum(fee) FROM games`` and
``SELECT sum(debit), sum(credit) FROM ledger_entries`` over the same tables.

Run: ``python -m bench report`` (``--quick``: 5,000 games).
"""

from __future__ import annotations

import json
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, date, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from bench.projections import raw_read, scratch_databases

MONTH = "2025-03"
CHUNK = 2000
DISCREPANCY_SHARE = 0.01
REPEATS = 5


def _synthetic_games(count: int, seed: int = 2025):
    """(games rows, player_results rows, ledger_entries rows) for ``count`` settled games."""
    from domain.rummy13.game import Game, TableConfig
    from domain.rummy13.settlement import PlayerEnd, compute_settlement
    from domain.simulation.floor import Floor
    from replays.readmodels.projections import settlement_hash, settlement_rows, started_row
    from replays.simulation import table_at

    floor = Floor(seed=seed, month=MONTH)
    tables = [table_at(floor, n) for n in range(1, floor.tables + 1)]
    flat_results = ("first_drop", "middle_drop", "auto_drop", "wrong_show")
    for index in range(count):
        rng = random.Random(f"report-bench:{seed}:{index}")
        table = rng.choice(tables)
        players = tuple(floor.player_ids(rng, table))
        started = floor.start_time(rng)
        config = TableConfig(
            game_id=f"{table.id}-S{seed}-{index:06d}",
            variant=table.variant,
            rules=table.rules,
            table_id=table.id,
            players=players,
            point_value=table.point_value,
            raise_step=table.raise_step,
            raise_max=table.raise_max,
            fee_percent=table.fee_percent,
            currency=table.currency,
            dealer=players[-1],
        )
        final_round = rng.randint(0, 8)
        winner = rng.choice(players)
        ends = [
            PlayerEnd(p, rng.choice(flat_results), ended_at_round=rng.randint(0, final_round))
            for p in players
            if p != winner
        ]
        recorded = compute_settlement(config, winner, ends, wild=None).to_dict()
        ended = started + timedelta(minutes=rng.randint(3, 40))
        columns, results, entries = settlement_rows(config, recorded, ended, final_round)
        flagged = rng.random() < DISCREPANCY_SHARE
        moves = rng.randint(10, 120)
        row = started_row(config, str(Game.create_id(config.game_id)), started)
        row.update(columns)
        row.update(
            status="settled",
            round=final_round,
            moves_count=moves,
            version=moves + 4,
            winner=winner,
            final_point_value=results[0]["point_value"],
            recomputed_hash="0" * 64 if flagged else settlement_hash(recorded),
            discrepancy=flagged,
            discrepancy_note="synthetic: recorded gross != computed" if flagged else None,
        )
        yield row, results, entries


def fill_synthetic(url: str, count: int) -> float:
    """Write ``count`` synthetic games' rows; return the seconds it took."""
    from replays.readmodels.models import GameRow, LedgerEntryRow, PlayerResultRow
    from replays.store.db import engine_for
    from replays.store.schema import migrate

    migrate(url)
    engine = engine_for(url)
    start = time.perf_counter()
    games, results, entries = [], [], []

    def flush() -> None:
        with engine.begin() as connection:
            connection.execute(GameRow.__table__.insert(), games)
            connection.execute(PlayerResultRow.__table__.insert(), results)
            connection.execute(LedgerEntryRow.__table__.insert(), entries)
        games.clear(), results.clear(), entries.clear()

    for row, lines, postings in _synthetic_games(count):
        games.append(row)
        results.extend(lines)
        entries.extend(postings)
        if len(games) >= CHUNK:
            flush()
    if games:
        flush()
    _analyze(engine)
    return time.perf_counter() - start


def simulated_file(count: int, folder: str) -> tuple[str, float]:
    """Simulated records as JSON Lines in a file (``RUMMY_BENCH_REPORT_RECORDS`` reuses one)."""
    given = os.environ.get("RUMMY_BENCH_REPORT_RECORDS")
    if given:
        return given, 0.0
    from domain.simulation.floor import Floor
    from replays.simulation.batch import Simulation
    from replays.simulation.output import write_records

    path = os.path.join(folder, "games.jsonl")
    started = time.perf_counter()
    simulation = Simulation(Floor(seed=2025, month=MONTH), discrepancy_rate=0.02)
    write_records(simulation.games(count, progress=True), path)
    return path, time.perf_counter() - started


def fill_simulated(url: str, records: str) -> dict[str, Any]:
    """Import the records as events, then time the projection's catch-up of all of them."""
    from replays.readmodels import projections
    from replays.records.importer import import_lines
    from replays.store.application import Ledger
    from replays.store.db import engine_for
    from replays.store.schema import migrate

    migrate(url)
    ledger = Ledger(url, env={"CREATE_TABLE": "no"})
    started = time.perf_counter()
    with open(records, "rb") as lines:
        summary = import_lines(ledger, lines, follow=False, progress=True)
    stored = time.perf_counter() - started
    events, raw_seconds = raw_read(url)
    started = time.perf_counter()
    applied = projections.catch_up(url, ledger=ledger, progress=True)
    seconds = time.perf_counter() - started
    _analyze(engine_for(url))
    return {
        "imported": summary.imported,
        "events": events,
        "store_seconds": round(stored, 1),
        "raw_read_events_per_s": round(events / raw_seconds),
        "catch_up_events": applied,
        "catch_up_seconds": round(seconds, 1),
        "catch_up_events_per_s": round(applied / seconds),
        "catch_up_ratio": round(applied / seconds / (events / raw_seconds), 4),
    }


def _analyze(engine: sa.Engine) -> None:
    """Fresh planner statistics, as autovacuum would give a table this size."""
    # Only these tables: a bare ANALYZE visits every schema and can queue behind others' locks.
    with engine.connect() as connection:
        connection.exec_driver_sql("ANALYZE games")
        connection.exec_driver_sql("ANALYZE player_results")
        connection.exec_driver_sql("ANALYZE ledger_entries")
        connection.commit()


def _median_seconds(action) -> float:
    samples = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        action()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def time_reports(url: str) -> dict[str, Any]:
    from replays.readmodels.models import GameRow, PlayerResultRow
    from replays.readmodels.reports import PeriodFilter, period_report
    from replays.store.db import engine_for

    engine = engine_for(url)
    first = date.fromisoformat(f"{MONTH}-01")
    last = (first.replace(day=28) + timedelta(days=4)).replace(day=1) - timedelta(days=1)
    with engine.connect() as connection:
        busiest_table = connection.execute(
            sa.select(GameRow.table_id)
            .group_by(GameRow.table_id)
            .order_by(sa.func.count().desc())
            .limit(1)
        ).scalar()
        busiest_player = connection.execute(
            sa.select(PlayerResultRow.player)
            .group_by(PlayerResultRow.player)
            .order_by(sa.func.count().desc())
            .limit(1)
        ).scalar()
    filters = {
        "month": PeriodFilter(first, last),
        "day": PeriodFilter(first + timedelta(days=14), first + timedelta(days=14)),
        "table_month": PeriodFilter(first, last, table=busiest_table),
        "player_month": PeriodFilter(first, last, player=busiest_player),
    }
    out: dict[str, Any] = {}
    reports = {}
    for name, period in filters.items():

        def report(period=period, name=name):
            with engine.connect() as connection:
                reports[name] = period_report(connection, period)

        out[f"{name}_report_s"] = round(_median_seconds(report), 4)
    month = reports["month"]
    out["month_games"] = month.totals.games
    out["month_gross"] = str(month.totals.gross)
    out["month_discrepancies"] = len(month.discrepancies)
    out["month_balanced"] = month.reconciliation.balanced

    def scans():
        with engine.connect() as connection:
            connection.exec_driver_sql("SELECT count(*), sum(gross), sum(fee) FROM games").all()
            connection.exec_driver_sql("SELECT sum(debit), sum(credit) FROM ledger_entries").all()

    out["raw_scan_s"] = round(_median_seconds(scans), 4)
    return out


def run(quick: bool = False) -> dict[str, Any]:
    games = int(os.environ.get("RUMMY_BENCH_REPORT_GAMES", 5000 if quick else 100_000))
    source = os.environ.get("RUMMY_BENCH_REPORT_SOURCE", "synthetic")
    if source not in ("synthetic", "simulated"):
        raise ValueError("RUMMY_BENCH_REPORT_SOURCE must be 'synthetic' or 'simulated'")
    note = (
        "read-model rows written directly (synthetic games on the simulator's floor; no events)"
        if source == "synthetic"
        else "simulated games stored as events and projected by catch_up"
    )
    print(f"bench report: {games} games, {note}", file=sys.stderr)
    result: dict[str, Any] = {"games": games, "source": source, "note": note, "month": MONTH}
    rows = []
    with scratch_databases() as urls, tempfile.TemporaryDirectory() as folder:
        if source == "simulated":
            records, result["simulate_seconds"] = simulated_file(games, folder)
        wanted = os.environ.get("RUMMY_BENCH_REPORT_ENGINES", "sqlite,postgresql").split(",")
        for engine, url in urls.items():
            if engine not in wanted:
                continue
            started = datetime.now(UTC)
            figures: dict[str, Any] = {}
            if source == "synthetic":
                figures["fill_seconds"] = round(fill_synthetic(url, games), 1)
            else:
                figures.update(fill_simulated(url, records))
            figures.update(time_reports(url))
            figures["wall_seconds"] = round((datetime.now(UTC) - started).total_seconds(), 1)
            result[engine] = figures
            name = "SQLite" if engine == "sqlite" else "PostgreSQL"
            rows.append(
                {
                    "benchmark": f"month report over {games:,} games ({source}), {name} (s)",
                    "figure": figures["month_report_s"],
                    "baseline": figures["raw_scan_s"],
                    "baseline_is": "plain count/sum scans of games and ledger_entries",
                    "ratio": round(figures["month_report_s"] / figures["raw_scan_s"], 2),
                }
            )
            if "catch_up_events_per_s" in figures:
                rows.append(
                    {
                        "benchmark": f"projection catch-up of {games:,} games, {name} (events/s)",
                        "figure": figures["catch_up_events_per_s"],
                        "baseline": figures["raw_read_events_per_s"],
                        "baseline_is": "raw read of the same notifications",
                        "ratio": figures["catch_up_ratio"],
                    }
                )
    result["rows"] = rows
    return result


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
