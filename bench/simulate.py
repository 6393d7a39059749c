"""Simulator speed: games the bots play per second, and what each turn costs in solver calls.

Every other benchmark stands on simulated games, and the month-report benchmark wants
100,000 of them, so the simulator's own rate matters. Figures, each beside a baseline
measured in the same run on the same games:

- games played per second on one process, against replaying the very same records through
  the game aggregate in memory (the ``settle`` path: no bots, no decisions). The ratio is
  the price of the bots' thinking; a played game includes its own settlement (for the
  ``reported`` block), so it can never beat the replay.
- games per second on every CPU (``--jobs``), against one process: the parallel speed-up
  (the records are checked to be identical).
- solver calls per turn: mean and the largest seen in any one turn (bounded by design at
  ``2 * lookahead + 1``, so at most 9; the losers' shows after a declaration add one call
  each, once per game).

Run: ``python -m bench simulate`` (or ``python -m bench.simulate [--quick]``).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from typing import Any

SEED = 2025


def _cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()


def _count_solver_calls(count: int) -> tuple[list[int], int]:
    """Solver calls in each turn of ``count`` games (a separate, instrumented pass)."""
    from domain.rummy13 import bot as bots
    from domain.rummy13 import simulate as rummy13
    from replays.simulation import Floor, Simulation

    calls = [0]
    per_turn: list[int] = []

    def counted(function):
        def wrapper(*args, **kwargs):
            calls[0] += 1
            return function(*args, **kwargs)

        return wrapper

    originals = {
        name: getattr(bots, name) for name in ("min_hand_score", "best_grouping", "declaration")
    }
    turn, shows = rummy13._Game.turn, rummy13._Game.shows

    def timed_turn(game, player):
        calls[0] = 0
        try:
            return turn(game, player)
        finally:
            per_turn.append(calls[0])

    def uncounted_shows(game, winner):
        # The losers' shows after a declaration are one call each, not part of a turn.
        before = calls[0]
        shows(game, winner)
        calls[0] = before

    try:
        for name, function in originals.items():
            setattr(bots, name, counted(function))
        rummy13._Game.turn = timed_turn
        rummy13._Game.shows = uncounted_shows
        moves = sum(len(r["moves"]) for r in Simulation(Floor(seed=SEED + 1)).games(count))
    finally:
        for name, function in originals.items():
            setattr(bots, name, function)
        rummy13._Game.turn, rummy13._Game.shows = turn, shows
    return per_turn, moves


def run(quick: bool = False) -> dict[str, Any]:
    from domain.rummy13.reported import settle
    from replays.simulation import Floor, Simulation

    count = 60 if quick else 600
    jobs = max(2, _cpus())
    run_ = Simulation(Floor(seed=SEED))

    started = time.perf_counter()
    records = list(run_.games(count))
    play_s = time.perf_counter() - started

    started = time.perf_counter()
    for record in records:
        settle(record)
    replay_s = time.perf_counter() - started

    started = time.perf_counter()
    parallel = list(run_.games(count, jobs=jobs))
    parallel_s = time.perf_counter() - started
    if parallel != records:
        raise AssertionError("games played on several processes differ from one process's")

    per_turn, _ = _count_solver_calls(count // 3)
    moves = [len(r["moves"]) for r in records]
    play_rate = count / play_s
    parallel_rate = count / parallel_s
    result: dict[str, Any] = {
        "games": count,
        "seed": SEED,
        "moves_per_game": round(statistics.mean(moves), 1),
        "moves_per_game_max": max(moves),
        "play_games_per_s": round(play_rate, 1),
        "play_ms_per_game": round(1000 * play_s / count, 2),
        "replay_games_per_s": round(count / replay_s, 1),
        "jobs": jobs,
        "parallel_games_per_s": round(parallel_rate, 1),
        "solver_calls_per_turn_mean": round(statistics.mean(per_turn), 2),
        "solver_calls_per_turn_max": max(per_turn),
        "hours_for_100k_games_on_all_cpus": round(100_000 / parallel_rate / 3600, 2),
    }
    result["rows"] = [
        {
            "benchmark": "simulator: games played per second (1 process)",
            "figure": result["play_games_per_s"],
            "baseline": result["replay_games_per_s"],
            "baseline_is": "the same records replayed through the aggregate in memory",
            "ratio": round(play_rate / (count / replay_s), 3),
        },
        {
            "benchmark": f"simulator: games per second on {jobs} processes",
            "figure": result["parallel_games_per_s"],
            "baseline": result["play_games_per_s"],
            "baseline_is": "one process",
            "ratio": round(parallel_rate / play_rate, 3),
        },
    ]
    return result


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
