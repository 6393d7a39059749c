"""Import speed: simulated records stored through ``rummy-ledger import``'s code path.

Baseline, measured in the same run: the same records parsed and played through the
aggregate in memory with nothing stored (what ``rummy-ledger settle`` does). The import
figures are reported as a ratio of that baseline, on SQLite and PostgreSQL, storing one game
per transaction (``batch=1``, one ``record_game`` save each) and 50 games per transaction
(the importer's default).

Run: ``python -m bench importer`` (or ``python -m bench.importer``); ``quick=True`` for a
smoke run.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
import uuid
from typing import Any

import sqlalchemy as sa

from replays.application import Ledger
from replays.importer import import_lines
from replays.records import parse_record
from replays.schema import migrate
from replays.settle import play_record

POSTGRES_URL = os.environ.get(
    "RUMMY_LEDGER_BENCH_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def simulated_lines(count: int, seed: int = 11) -> list[str]:
    from replays.simulation.batch import Simulation
    from replays.simulation.tables import Floor

    simulation = Simulation(Floor(seed=seed, variants=("points", "raise")))
    return [json.dumps(record) for record in simulation.games(count)]


def in_memory(lines: list[str]) -> float:
    start = time.perf_counter()
    for line in lines:
        play_record(parse_record(line))
    return time.perf_counter() - start


def stored(url: str, lines: list[str], batch: int) -> tuple[float, int]:
    migrate(url)
    ledger = Ledger(url, env={"CREATE_TABLE": "no"})
    start = time.perf_counter()
    summary = import_lines(ledger, lines, batch=batch, follow=False)
    seconds = time.perf_counter() - start
    if summary.imported != len(lines):
        raise RuntimeError(f"only {summary.line()}: {summary.failures[:3]}")
    return seconds, summary.imported


def _postgres_schema():
    schema = "bench_" + uuid.uuid4().hex[:12]
    base = POSTGRES_URL
    try:
        engine = sa.create_engine(base, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    except Exception as error:
        print(f"PostgreSQL not reachable ({error}); skipping it", file=sys.stderr)
        return None

    def drop() -> None:
        with engine.connect() as conn:
            conn.execute(sa.text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        engine.dispose()

    return f"{base}?options=-csearch_path%3D{schema}", drop


def run(quick: bool = False) -> dict[str, Any]:
    count = 60 if quick else 600
    lines = simulated_lines(count)
    events = sum(len(json.loads(line)["moves"]) + 4 for line in lines)  # + start, deal, settle
    baseline = in_memory(lines)
    result: dict[str, Any] = {
        "games": count,
        "events_approx": events,
        "in_memory_games_per_s": round(count / baseline, 1),
    }
    with tempfile.TemporaryDirectory() as folder:
        for engine_name in ("sqlite", "postgresql"):
            for batch in (1, 50):
                if engine_name == "sqlite":
                    url, drop = f"sqlite:///{folder}/batch{batch}.sqlite3", None
                else:
                    made = _postgres_schema()
                    if made is None:
                        break
                    url, drop = made
                try:
                    seconds, imported = stored(url, lines, batch)
                finally:
                    if drop is not None:
                        drop()
                key = f"{engine_name}_batch{batch}"
                result[f"{key}_games_per_s"] = round(imported / seconds, 1)
                result[f"{key}_events_per_s"] = round(events / seconds)
                result[f"{key}_ratio_to_in_memory"] = round(baseline / seconds, 3)
    return result


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    for key, value in run(quick=quick).items():
        print(f"{key:40} {value}")
