"""``rummy-ledger import`` by game type: does every variant import at the store's speed?

``bench/importer.py`` measures the import on points and raise games, the bulk of a month.
Red 3 matches, pools and deals matches hold ten to twenty times a points game's events and
play through their own aggregates; this measures each variant's one-process SQLite import
(stored, sealed and projected, as ``rummy-ledger import`` runs it) beside, in the same
run, the same records played in memory with every rule and deal checked and nothing stored
(the variant's ``build_checked``, what ``rummy-ledger settle`` does), and the same records'
events as they are stored, read back with one ``SELECT``. Peak memory is
``bench/memory.py``'s (``import-all``).

Run: ``python -m bench variant_import`` (or ``python -m bench.variant_import [--quick]``).
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import tempfile
import time
from typing import Any

SEED = 16


def simulated_lines(variant: str, count: int) -> list[str]:
    from domain.simulation.floor import Floor
    from replays.simulation.batch import Simulation

    simulation = Simulation(Floor(seed=SEED, variants=(variant,)))
    return [json.dumps(record) for record in simulation.games(count)]


def played(lines: list[str]) -> float:
    """Seconds to parse and play every record in memory, deals checked, nothing stored."""
    from replays.records.codec import parse_record
    from replays.records.importer import build_game
    from replays.store.collector import bulk_work

    with bulk_work():
        start = time.perf_counter()
        for line in lines:
            build_game(parse_record(line))
        return time.perf_counter() - start


def imported(path: str, lines: list[str]) -> tuple[float, int]:
    """Seconds for the whole import into a fresh SQLite ledger, and the events it stored."""
    from replays.records.importer import import_lines
    from replays.store.application import Ledger
    from replays.store.schema import migrate

    url = f"sqlite:///{path}"
    migrate(url)
    ledger = Ledger(url, env={"CREATE_TABLE": "no"})
    start = time.perf_counter()
    summary = import_lines(ledger, lines)
    seconds = time.perf_counter() - start
    if summary.imported != len(lines):
        raise RuntimeError(f"only {summary.line()}: {summary.failures[:3]}")
    with sqlite3.connect(path) as connection:
        (events,) = connection.execute("SELECT count(*) FROM ledger_events").fetchone()
    return seconds, events


def selected(path: str) -> float:
    """Seconds for one SELECT of every stored event (the store's read ceiling)."""
    with sqlite3.connect(path) as connection:
        start = time.perf_counter()
        connection.execute(
            "SELECT originator_id, originator_version, topic, state FROM ledger_events"
        ).fetchall()
        return time.perf_counter() - start


def run(quick: bool = False) -> dict[str, Any]:
    from domain import variants

    games = {"points": 300, "raise": 300, "red3": 40, "pool": 80, "deals": 120}
    if quick:
        games = {name: max(4, count // 10) for name, count in games.items()}
    load = os.getloadavg()
    result: dict[str, Any] = {"games": games}
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for name in variants.names():
            lines = simulated_lines(name, games.get(name, 60))
            baseline = played(lines)
            path = os.path.join(folder, f"{name}.sqlite3")
            seconds, events = imported(path, lines)
            read = selected(path)
            rate, play_rate = round(events / seconds), round(events / baseline)
            result[name] = {
                "games": len(lines),
                "events": events,
                "import_seconds": round(seconds, 3),
                "import_events_per_s": rate,
                "played_events_per_s": play_rate,
                "select_events_per_s": round(events / read),
            }
            rows.append(
                {
                    "benchmark": f"import events/s, {name}, SQLite, one process: stored, "
                    "sealed and projected (vs the same records played in memory)",
                    "figure": rate,
                    "baseline": play_rate,
                    "baseline_is": "the records played and deal-checked, nothing stored",
                    "ratio": round(rate / play_rate, 3),
                }
            )
    result["load_average"] = {
        "start": [round(x, 2) for x in load],
        "end": [round(x, 2) for x in os.getloadavg()],
    }
    result["rows"] = rows
    return result


if __name__ == "__main__":
    for key, value in run(quick="--quick" in sys.argv).items():
        print(f"{key:24} {value}")
