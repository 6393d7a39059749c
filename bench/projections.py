"""Projection catch-up speed: events per second into the read models, against a raw read.

Simulated games are stored through the importer's code path (batched saves), then, on
SQLite and on PostgreSQL:

- **baseline**: a raw read of the same notifications, the way the projection reads them
  (``SELECT id, originator_id, originator_version, topic, state ... WHERE id > ? ORDER BY
  id LIMIT 1000`` through the DB-API cursor, every row fetched), timed in the same run;
- **catch-up**: ``projections.rebuild`` — decode each event, apply it to the game
  aggregate, write the rows, take each game's audit columns from what the write computed
  (the hash its ``Settled`` event carries; the operator's report compared with the
  recorded settlement), commit with the position, batch by batch — reported as events/s
  and as a ratio of the raw read, with the process's CPU seconds beside the wall clock
  (the machine is shared: CPU time is what other sessions' load inflates least);
- the same through the game aggregate (``light=False``: every event applied to a whole
  ``Game`` with the library's ``mutate``, as before the light fold of
  ``domain/rummy13/fold.py``), to show what the fold saves;
- the same recomputing every settlement with the solver, as the projection did before
  issue 16 and as ``verify`` still does (``recompute=True``), and without any audit
  (``verify=False``), to show what each costs;
- ``catch_up`` with nothing new: what every import/API write pays afterwards.

Run: ``python -m bench projections`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from typing import Any

import sqlalchemy as sa

POSTGRES_URL = os.environ.get(
    "RUMMY_LEDGER_BENCH_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
BATCH = 1000


@contextlib.contextmanager
def scratch_databases() -> Iterator[dict[str, str]]:
    """A fresh SQLite file and (when the server answers) a fresh PostgreSQL schema."""
    with tempfile.TemporaryDirectory() as folder:
        urls = {"sqlite": f"sqlite:///{folder}/bench.sqlite3"}
        schema = "bench_" + uuid.uuid4().hex[:12]
        admin = sa.create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as connection:
                connection.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
            urls["postgresql"] = f"{POSTGRES_URL}?options=-csearch_path%3D{schema}"
        except Exception as error:
            print(f"PostgreSQL not reachable ({error}); SQLite only", file=sys.stderr)
        try:
            yield urls
        finally:
            if "postgresql" in urls:
                from replays.store.db import engine_for

                engine_for(urls["postgresql"]).dispose()
                with admin.connect() as connection:
                    connection.execute(sa.text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
            admin.dispose()


def simulated_lines(count: int, seed: int = 17, jobs: int = 1) -> list[str]:
    from domain.simulation.floor import Floor
    from replays.simulation.batch import Simulation

    simulation = Simulation(Floor(seed=seed), discrepancy_rate=0.02)
    return [json.dumps(record) for record in simulation.games(count, jobs=jobs, progress=True)]


def store(url: str, lines: list[str]):
    """Migrate and import ``lines`` (no followers); return the Ledger."""
    from replays.records.importer import import_lines
    from replays.store.application import Ledger
    from replays.store.schema import migrate

    migrate(url)
    ledger = Ledger(url, env={"CREATE_TABLE": "no"})
    summary = import_lines(ledger, lines, follow=False)
    if summary.imported != len(lines):
        raise RuntimeError(f"only {summary.line()}")
    return ledger


def raw_read(url: str) -> tuple[int, float]:
    """Every notification through the DB-API cursor, in id order, batch by batch."""
    from replays.store.db import engine_for
    from replays.store.schema import EVENTS_TABLE

    engine = engine_for(url)
    mark = "%s" if engine.dialect.name == "postgresql" else "?"
    sql = (
        f"SELECT id, originator_id, originator_version, topic, state FROM {EVENTS_TABLE} "
        f"WHERE id > {mark} ORDER BY id LIMIT {mark}"
    )
    count, position = 0, 0
    start = time.perf_counter()
    with engine.connect() as connection:
        while True:
            rows = connection.exec_driver_sql(sql, (position, BATCH)).fetchall()
            if not rows:
                break
            count += len(rows)
            position = rows[-1][0]
    return count, time.perf_counter() - start


def catch_up_rate(
    url: str, ledger, verify: bool, recompute: bool = False, light: bool = True
) -> tuple[int, float, float]:
    """A rebuild: (events, wall seconds, CPU seconds of this process)."""
    from replays.readmodels import projections

    runner = projections.runner(url, ledger=ledger, verify=verify, recompute=recompute, light=light)
    runner.projection.forget()  # no aggregate kept from an earlier run
    start, cpu = time.perf_counter(), time.process_time()
    count = runner.rebuild()
    return count, time.perf_counter() - start, time.process_time() - cpu


def idle_catch_up_ms(url: str, repeats: int = 50) -> tuple[float, float]:
    """``catch_up`` with nothing new, and a bare ``SELECT 1`` round trip, in ms."""
    from replays.readmodels import projections
    from replays.store.db import engine_for

    engine = engine_for(url)
    samples, probes = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        assert projections.catch_up(url) == 0
        samples.append(time.perf_counter() - start)
        start = time.perf_counter()
        with engine.connect() as connection:
            connection.exec_driver_sql("SELECT 1").fetchall()
        probes.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000, statistics.median(probes) * 1000


def measure(url: str, lines: list[str], repeats: int) -> dict[str, Any]:
    started = time.perf_counter()
    ledger = store(url, lines)
    stored_seconds = time.perf_counter() - started
    reads = [raw_read(url) for _ in range(repeats)]
    events = reads[0][0]
    raw_seconds = min(seconds for _, seconds in reads)
    load = os.getloadavg()
    full = min(
        (catch_up_rate(url, ledger, verify=True) for _ in range(repeats)), key=lambda r: r[1]
    )
    whole = min(
        (catch_up_rate(url, ledger, verify=True, light=False) for _ in range(repeats)),
        key=lambda r: r[1],
    )
    again = min(
        (catch_up_rate(url, ledger, verify=True, recompute=True) for _ in range(repeats)),
        key=lambda r: r[1],
    )
    bare = min(
        (catch_up_rate(url, ledger, verify=False) for _ in range(repeats)), key=lambda r: r[1]
    )
    # Leave the read models complete (verified) for the idle check.
    catch_up_rate(url, ledger, verify=True)
    idle_ms, probe_ms = idle_catch_up_ms(url)
    assert full[0] == whole[0] == again[0] == bare[0] == events, (full, again, bare, events)
    raw_rate = events / raw_seconds
    return {
        "games": len(lines),
        "events": events,
        "store_seconds": round(stored_seconds, 1),
        "raw_read_events_per_s": round(raw_rate),
        "catch_up_events_per_s": round(events / full[1]),
        "catch_up_ratio": round(events / full[1] / raw_rate, 4),
        "catch_up_seconds": round(full[1], 2),
        "catch_up_cpu_seconds": round(full[2], 2),
        "catch_up_cpu_events_per_s": round(events / full[2]),
        "catch_up_aggregate_events_per_s": round(events / whole[1]),
        "catch_up_aggregate_ratio": round(events / whole[1] / raw_rate, 4),
        "catch_up_aggregate_cpu_seconds": round(whole[2], 2),
        "catch_up_recomputing_events_per_s": round(events / again[1]),
        "catch_up_recomputing_ratio": round(events / again[1] / raw_rate, 4),
        "catch_up_recomputing_cpu_seconds": round(again[2], 2),
        "catch_up_unverified_events_per_s": round(events / bare[1]),
        "catch_up_unverified_ratio": round(events / bare[1] / raw_rate, 4),
        "catch_up_unverified_cpu_seconds": round(bare[2], 2),
        "audit_share_of_time": round(1 - bare[1] / full[1], 3),
        "recomputation_share_of_time": round(1 - full[1] / again[1], 3),
        "load_average": {
            "start": [round(x, 2) for x in load],
            "end": [round(x, 2) for x in os.getloadavg()],
        },
        "idle_catch_up_ms": round(idle_ms, 3),
        "select_1_round_trip_ms": round(probe_ms, 3),
    }


def run(quick: bool = False) -> dict[str, Any]:
    games = int(os.environ.get("RUMMY_BENCH_PROJECTION_GAMES", 60 if quick else 1500))
    repeats = 1 if quick or games > 5000 else 2
    lines = simulated_lines(games)
    result: dict[str, Any] = {"games": games, "batch": BATCH}
    rows = []
    with scratch_databases() as urls:
        for engine, url in urls.items():
            figures = measure(url, lines, repeats)
            result[engine] = figures
            name = "SQLite" if engine == "sqlite" else "PostgreSQL"
            raw = figures["raw_read_events_per_s"]
            rows += [
                {
                    "benchmark": f"projection catch-up, {name} (events/s)",
                    "figure": figures["catch_up_events_per_s"],
                    "baseline": raw,
                    "baseline_is": "raw read of the same notifications (DB-API, 1000 a batch)",
                    "ratio": figures["catch_up_ratio"],
                },
                {
                    "benchmark": f"projection catch-up through the game aggregate (before the light fold), {name} (events/s)",
                    "figure": figures["catch_up_aggregate_events_per_s"],
                    "baseline": raw,
                    "baseline_is": "raw read of the same notifications",
                    "ratio": figures["catch_up_aggregate_ratio"],
                },
                {
                    "benchmark": f"projection catch-up recomputing every settlement (before issue 16), {name} (events/s)",
                    "figure": figures["catch_up_recomputing_events_per_s"],
                    "baseline": raw,
                    "baseline_is": "raw read of the same notifications",
                    "ratio": figures["catch_up_recomputing_ratio"],
                },
                {
                    "benchmark": f"projection catch-up without any audit, {name} (events/s)",
                    "figure": figures["catch_up_unverified_events_per_s"],
                    "baseline": raw,
                    "baseline_is": "raw read of the same notifications",
                    "ratio": figures["catch_up_unverified_ratio"],
                },
                {
                    "benchmark": f"catch_up with nothing new, {name} (ms)",
                    "figure": figures["idle_catch_up_ms"],
                    "baseline": figures["select_1_round_trip_ms"],
                    "baseline_is": "one SELECT 1 round trip",
                    "ratio": round(
                        figures["idle_catch_up_ms"] / max(figures["select_1_round_trip_ms"], 1e-9),
                        2,
                    ),
                },
            ]
    result["rows"] = rows
    return result


if __name__ == "__main__":
    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
