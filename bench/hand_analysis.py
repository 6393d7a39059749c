"""What the replay's hand analysis costs a frame, measured in one process.

The replay-page benchmark (``bench/replay_page.py``) measures whole pages over HTTP, where
other work on the machine moves the figures by more than the analysis costs. This one times
the analysis alone for every move of the same kind of game (simulated, about 100 moves),
against ``Ledger.state_at`` for the same moves (the frame's storage floor):

- the analysis of every hand the full view shows, per move: with the solver's answers
  cached (a viewer stepping back and forth, or a second viewer) and with the caches
  cleared before every move (the first viewer of a game);
- walking the game for its missed chances: once per game, then kept.

Run: ``python -m bench hand_analysis`` (``--quick``: fewer games to choose from).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from typing import Any


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 3)


def run(quick: bool = False) -> dict[str, Any]:
    from sqlalchemy.orm import Session

    from bench.replay_page import fill_database, pick_long_game, simulated_records
    from replays.readmodels import hand_analysis
    from replays.store.application import Ledger
    from replays.store.db import engine_for
    from web import queries

    records = simulated_records(20 if quick else 60)
    game = pick_long_game(records)
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{folder}/ledger.sqlite3"
        fill_database(url, records, len(records))
        ledger = Ledger(url, env={"CREATE_TABLE": "no"})
        game_id = game["game_id"]
        with Session(engine_for(url)) as session:
            timeline = queries.move_timeline(session, game_id)
        moves = range(len(timeline) + 1)

        floor = []
        states = []
        for move in moves:
            started = time.perf_counter()
            states.append(ledger.state_at(game_id, move))
            floor.append(time.perf_counter() - started)

        hand_analysis.clear_caches()
        started = time.perf_counter()
        chances = hand_analysis.game_chances(ledger, game_id, timeline, "bench")
        walk = time.perf_counter() - started
        profile = chances.profile

        def analyse_frame(state) -> None:
            if state.phase != "playing":
                return
            for seat in state.seats:
                if seat.status in ("waiting", "playing") and len(seat.hand) in (13, 14):
                    hand_analysis.analyse(seat.hand, state.wild, profile)

        cold = []
        for state in states:
            hand_analysis.clear_caches()
            started = time.perf_counter()
            analyse_frame(state)
            cold.append(time.perf_counter() - started)
        for state in states:  # warm every answer once
            analyse_frame(state)
        warm = []
        for state in states:
            started = time.perf_counter()
            analyse_frame(state)
            warm.append(time.perf_counter() - started)

    floor_p50 = _ms(statistics.median(floor))
    result: dict[str, Any] = {
        "game": game_id,
        "game_moves": len(timeline),
        "players": len(game["players"]),
        "state_at_p50_ms": floor_p50,
        "analysis_cold_p50_ms": _ms(statistics.median(cold)),
        "analysis_cold_p95_ms": _ms(sorted(cold)[int(len(cold) * 0.95)]),
        "analysis_cached_p50_ms": _ms(statistics.median(warm)),
        "missed_chances_walk_ms": _ms(walk),
        "missed_chances_found": len(chances.chances),
    }
    where = f"{result['game_moves']}-move game, {result['players']} players, full view"
    result["rows"] = [
        {
            "benchmark": f"hand analysis per frame ms p50, caches cold ({where})",
            "figure": result["analysis_cold_p50_ms"],
            "baseline": floor_p50,
            "baseline_is": "Ledger.state_at alone, p50, same moves",
            "ratio": round(result["analysis_cold_p50_ms"] / max(floor_p50, 0.001), 2),
        },
        {
            "benchmark": f"hand analysis per frame ms p50, solver answers cached ({where})",
            "figure": result["analysis_cached_p50_ms"],
            "baseline": floor_p50,
            "baseline_is": "Ledger.state_at alone, p50, same moves",
            "ratio": round(result["analysis_cached_p50_ms"] / max(floor_p50, 0.001), 2),
        },
        {
            "benchmark": f"missed chances: one walk of the game ms ({where})",
            "figure": result["missed_chances_walk_ms"],
            "baseline": floor_p50,
            "baseline_is": "Ledger.state_at alone, p50, same moves",
            "ratio": round(result["missed_chances_walk_ms"] / max(floor_p50, 0.001), 2),
        },
    ]
    return result


if __name__ == "__main__":
    for key, value in run(quick="--quick" in sys.argv).items():
        if key != "rows":
            print(f"{key:40} {value}")
