"""What an all-or-nothing rebuild costs, against the batch-by-batch rebuild it replaced.

``projections rebuild`` now projects every event in one transaction, so readers keep the
old rows until it commits and a failed or killed rebuild leaves them intact
(docs/read-models.md). The baseline, timed in the same run on the same events, is the
previous behaviour: empty the tables and reset the position in one transaction, then catch
up batch by batch, one commit per 1,000 notifications (readers see empty or partial tables
meanwhile). Each is run ``repeats`` times, alternating, best time kept.

Run: ``python -m bench rebuild`` (``RUMMY_BENCH_REBUILD_GAMES``, default 1,000 games;
``--quick``: 60).
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from typing import Any

from bench.projections import scratch_databases, simulated_lines, store


def batched_rebuild(runner) -> int:
    """The rebuild before issue 13: clear and reset committed first, then a catch-up."""
    from replays.readmodels.projection_runner import POSITIONS

    runner._ensure_position_row()
    with runner.engine.begin() as connection:
        runner._lock_position(connection)
        runner.projection.clear(connection)
        connection.execute(
            POSITIONS.update()
            .where(POSITIONS.c.name == runner.projection.name)
            .values(position=0, events_applied=0, updated_at=datetime.now(UTC))
        )
    runner.projection.forget()
    return runner.catch_up()


def timed(function, runner) -> tuple[int, float]:
    runner.projection.forget()
    start = time.perf_counter()
    count = function(runner)
    return count, time.perf_counter() - start


def measure(url: str, lines: list[str], repeats: int) -> dict[str, Any]:
    from replays.readmodels import projections

    ledger = store(url, lines)
    runner = projections.runner(url, ledger=ledger)
    old, new = [], []
    for _ in range(repeats):
        old.append(timed(batched_rebuild, runner))
        new.append(timed(lambda r: r.rebuild(), runner))
    events = old[0][0]
    assert all(count == events for count, _ in old + new), (old, new)
    old_seconds = min(seconds for _, seconds in old)
    new_seconds = min(seconds for _, seconds in new)
    return {
        "games": len(lines),
        "events": events,
        "batched_rebuild_seconds": round(old_seconds, 2),
        "one_transaction_rebuild_seconds": round(new_seconds, 2),
        "ratio": round(new_seconds / old_seconds, 3),
    }


def run(quick: bool = False) -> dict[str, Any]:
    games = int(os.environ.get("RUMMY_BENCH_REBUILD_GAMES", 60 if quick else 1000))
    repeats = 1 if quick else 2
    lines = simulated_lines(games)
    result: dict[str, Any] = {"games": games}
    rows = []
    with scratch_databases() as urls:
        for engine, url in urls.items():
            figures = measure(url, lines, repeats)
            result[engine] = figures
            name = "SQLite" if engine == "sqlite" else "PostgreSQL"
            rows.append(
                {
                    "benchmark": f"rebuild in one transaction, {games} games, {name} (s)",
                    "figure": figures["one_transaction_rebuild_seconds"],
                    "baseline": figures["batched_rebuild_seconds"],
                    "baseline_is": "the former batch-by-batch rebuild (a commit per 1,000)",
                    "ratio": figures["ratio"],
                }
            )
    result["rows"] = rows
    return result
