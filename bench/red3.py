"""Red 3 Rummy: playing a record through the rules, and rebuilding a stored match's replay.

Two figures, each beside a baseline measured in the same run on the same matches:

- **record play** (events/s): parsing a ``red3@1`` record and playing it through the match
  aggregate (every rule checked), against just decoding the same JSON lines (the floor of
  any importer);
- **replay rebuild** (steps/s): every table state of a stored match from one read of its
  events (what the replay viewer builds on a first visit), against a raw read of the same
  stored rows (SQLite).

The matches are simulated (``replays.simulation.red3``) with a fixed seed.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
import time
from typing import Any

from replays.application import Ledger
from replays.red3_ledger import record_match, replay_states
from replays.red3_records import parse_red3_record
from replays.simulation.red3 import play, setup_table
from replays.simulation.tables import Floor


def matches(count: int) -> list[dict]:
    floor = Floor(seed=31, variants=("red3",))
    return [
        play(random.Random(i), floor, setup_table(floor, 1 + i % 24, random.Random(i)), f"B3-{i}")
        for i in range(count)
    ]


def _best(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def run(quick: bool = False) -> dict[str, Any]:
    count, repeats = (4, 2) if quick else (30, 3)
    records = matches(count)
    lines = [json.dumps(record) for record in records]
    built = [parse_red3_record(record).build() for record in records]
    events = sum(match.version for match in built)
    steps = sum(len(match.steps) for match in built)

    play_s = _best(lambda: [parse_red3_record(line).build() for line in lines], repeats)
    decode_s = _best(lambda: [json.loads(line) for line in lines], repeats)

    with tempfile.TemporaryDirectory() as folder:
        ledger = Ledger(f"sqlite:///{os.path.join(folder, 'bench.sqlite3')}")
        for record in records:
            record_match(ledger, parse_red3_record(record))
        ids = [record["game_id"] for record in records]
        rebuild_s = _best(lambda: [replay_states(ledger, game_id) for game_id in ids], repeats)
        raw_s = _best(
            lambda: [ledger.recorder.select_events(ledger.aggregate_id(g)) for g in ids], repeats
        )
    result = {
        "matches": count,
        "events": events,
        "steps": steps,
        "record_play_events_per_s": round(events / play_s),
        "json_decode_events_per_s": round(events / decode_s),
        "replay_steps_per_s": round(steps / rebuild_s),
        "raw_read_steps_per_s": round(steps / raw_s),
        "replay_ms_per_match": round(1000 * rebuild_s / count, 1),
    }
    result["rows"] = [
        {
            "benchmark": "red3: record played through the rules (events/s)",
            "figure": result["record_play_events_per_s"],
            "baseline": result["json_decode_events_per_s"],
            "baseline_is": "json.loads of the same records",
            "ratio": round(play_s and decode_s / play_s, 3),
        },
        {
            "benchmark": "red3: replay states rebuilt, SQLite (steps/s)",
            "figure": result["replay_steps_per_s"],
            "baseline": result["raw_read_steps_per_s"],
            "baseline_is": "raw select of the same stored events",
            "ratio": round(raw_s / rebuild_s, 3),
        },
    ]
    return result
