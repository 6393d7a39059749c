"""Red 3 Rummy: playing a record through the rules, and rebuilding a stored match's replay.

Three figures, each beside a baseline measured in the same run:

- **record play** (events/s): parsing a ``red3@1`` record and playing it through the match
  aggregate (every rule checked), against just decoding the same JSON lines (the floor of
  any importer);
- **replay rebuild** (steps/s): every table state of a stored match from one read of its
  events (what the replay viewer builds on a first visit), against a raw read of the same
  stored rows (SQLite);
- **first view of a long match** (ms): the table at the last move of a 10-round match,
  viewed for the first time in the process (no cache holds anything of it; the
  ``Ledger`` has served one other game, as a running server's has), with the match's
  snapshot and with snapshots switched off (how every Red 3 match loaded before it had
  them), against
  the same first view of a 13-card game stored in the same database.

The matches are simulated (``domain.red3.bot``) with a fixed seed.
"""

from __future__ import annotations

import json
import os
import random
import tempfile
import time
from typing import Any

from domain.red3.bot import play, setup_table
from domain.red3.records import parse_red3_record
from domain.simulation.floor import Floor
from replays.store.application import Ledger
from replays.store.timeline import state_at_step, states_after_steps, store_record


def matches(count: int) -> list[dict]:
    floor = Floor(seed=31, variants=("red3",))
    return [
        play(random.Random(i), floor, setup_table(floor, 1 + i % 24, random.Random(i)), f"B3-{i}")
        for i in range(count)
    ]


def long_matches(count: int, rounds: int = 10) -> list[dict]:
    floor = Floor(seed=37, variants=("red3",))
    return [
        play(
            random.Random(100 + i),
            floor,
            setup_table(floor, 1 + i % 24, random.Random(i)),
            f"B3-LONG-{i}",
            rounds=rounds,
        )
        for i in range(count)
    ]


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def _first_views(url: str, views: list[tuple[str, Any]], env: dict | None = None) -> float:
    """Median seconds of each ``view(ledger, game_id)``, each game viewed once by a Ledger
    that has served one other game first (as a running server's has: its SQL compiled),
    so nothing of the viewed game is cached in the process."""
    ledger = Ledger(url, env=env)
    (warm_id, warm_view), *measured = views
    warm_view(ledger, warm_id)
    times = []
    for game_id, view in measured:
        start = time.perf_counter()
        view(ledger, game_id)
        times.append(time.perf_counter() - start)
    return _median(times)


def first_view(quick: bool = False) -> dict[str, Any]:
    """The table at the last move of 10-round Red 3 matches and of 13-card games."""
    from domain.simulation.floor import Floor as SimFloor
    from replays.simulation import Simulation, store_games

    count = 3 if quick else 16
    records = long_matches(count)
    thirteen = list(Simulation(SimFloor(seed=37, variants=("points",))).games(count))
    with tempfile.TemporaryDirectory() as folder:
        url = f"sqlite:///{os.path.join(folder, 'first-view.sqlite3')}"
        ledger = Ledger(url)
        steps, events = {}, 0
        for record in records:
            match = store_record(ledger, parse_red3_record(record))
            steps[record["game_id"]] = len(match.steps)
            events += match.version
        store_games(thirteen, url)
        moves = {r["game_id"]: ledger.move_count(r["game_id"])[0] for r in thirteen}

        def red3_view(ledger, game_id):
            return state_at_step(ledger, game_id, steps[game_id])

        def thirteen_view(ledger, game_id):
            return ledger.state_at(game_id, moves[game_id])

        red3_views = [(g, red3_view) for g in steps]
        thirteen_views = [(g, thirteen_view) for g in moves]
        no_snapshots = {"IS_SNAPSHOTTING_ENABLED": "n"}
        with_s = _first_views(url, red3_views)
        without_s = _first_views(url, red3_views, no_snapshots)
        baseline_s = _first_views(url, thirteen_views)
        page = _page_first_views(url, steps, moves)
    return {
        "long_matches": count,
        "long_match_events_mean": round(events / count),
        "first_view_ms": round(1000 * with_s, 1),
        "first_view_without_snapshots_ms": round(1000 * without_s, 1),
        "thirteen_card_first_view_ms": round(1000 * baseline_s, 1),
        **page,
        "rows": [
            {
                "benchmark": (
                    "red3: replay page, first view of a 10-round match's last move, "
                    "after verify (ms)"
                ),
                "figure": page["page_first_view_ms"],
                "baseline": page["page_thirteen_card_first_view_ms"],
                "baseline_is": "the same page's first view of a 13-card game's last move",
                "ratio": round(
                    page["page_thirteen_card_first_view_ms"] / page["page_first_view_ms"], 3
                ),
            },
            {
                "benchmark": (
                    "red3: replay page, first view of a 10-round match's last move, "
                    "never checked before (ms)"
                ),
                "figure": page["page_first_view_unchecked_ms"],
                "baseline": page["page_thirteen_card_first_view_unchecked_ms"],
                "baseline_is": "the same page's first view of a 13-card game never checked",
                "ratio": round(
                    page["page_thirteen_card_first_view_unchecked_ms"]
                    / page["page_first_view_unchecked_ms"],
                    3,
                ),
            },
            {
                "benchmark": "red3: first view, last move of a 10-round match, snapshots (ms)",
                "figure": round(1000 * with_s, 1),
                "baseline": round(1000 * baseline_s, 1),
                "baseline_is": "the same first view of a 13-card game",
                "ratio": round(baseline_s / with_s, 3),
            },
            {
                "benchmark": "red3: first view, last move of a 10-round match, no snapshots (ms)",
                "figure": round(1000 * without_s, 1),
                "baseline": round(1000 * baseline_s, 1),
                "baseline_is": "the same first view of a 13-card game",
                "ratio": round(baseline_s / without_s, 3),
            },
        ],
    }


def _page_first_views(url: str, steps: dict, moves: dict) -> dict[str, float]:
    """Server time of ``/games/<id>/replay?move=<last>`` the first time a running site shows
    each game (its ledger warm, nothing of the game cached in the process), over Flask's
    test client signed in as an auditor, with a signed checkpoint over every game so that
    the badge can say "Ledger verified":

    - before any check of the games: each badge replays its game (and leaves a memo);
    - after ``rummy-ledger verify``, in a new site: each badge answers from the memo verify
      left (replays/integrity/replay_memos.py), the events still checked against their seals
      and the checkpoint, the read rows against the remembered rows;

    and the second view of the same match, which builds its timeline."""
    from replays.integrity.evidence import make_checkpoint
    from replays.integrity.verify import verify_store
    from replays.readmodels.projections import catch_up
    from replays.store.schema import migrate

    migrate(url)  # the site's own tables (accounts, read models), as `rummy-ledger run` has
    catch_up(url)
    with tempfile.TemporaryDirectory() as keys, _key_dir(keys):
        from replays.integrity.signing import init_keys

        init_keys(keys)
        make_checkpoint(url)
        cold = _page_views(url, steps, moves)
        report = verify_store(url)
        assert report.ok, report.problems
        remembered = _page_views(url, steps, moves)
    return {
        "page_first_view_ms": remembered["red3"],
        "page_thirteen_card_first_view_ms": remembered["thirteen"],
        "page_first_view_unchecked_ms": cold["red3"],
        "page_thirteen_card_first_view_unchecked_ms": cold["thirteen"],
        "page_second_view_ms": remembered["second"],
    }


class _key_dir:
    """RUMMY_LEDGER_KEY_DIR set to ``path`` for the block."""

    def __init__(self, path: str):
        self.path, self.before = path, None

    def __enter__(self):
        self.before = os.environ.get("RUMMY_LEDGER_KEY_DIR")
        os.environ["RUMMY_LEDGER_KEY_DIR"] = self.path

    def __exit__(self, *exc):
        if self.before is None:
            os.environ.pop("RUMMY_LEDGER_KEY_DIR", None)
        else:
            os.environ["RUMMY_LEDGER_KEY_DIR"] = self.before


def _page_views(url: str, steps: dict, moves: dict) -> dict[str, float]:
    """Median ms of each game's first view in a new site (see _page_first_views)."""
    import re

    from replays.access import accounts
    from web import create_app

    app = create_app({"DATABASE_URL": url})
    if accounts.find_user("bench-auditor", url=url) is None:
        accounts.add_user("bench-auditor", "auditor", "bench-password-1", url=url)
    client = app.test_client()
    form = client.get("/login").get_data(as_text=True)
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', form).group(1)
    client.post(
        "/login",
        data={"csrf_token": token, "username": "bench-auditor", "password": "bench-password-1"},
    )

    def view(game_id: str, last: int) -> float:
        start = time.perf_counter()
        response = client.get(f"/games/{game_id}/replay?move={last}")
        elapsed = time.perf_counter() - start
        assert response.status_code == 200, response.status_code
        assert "Ledger verified" in response.get_data(as_text=True), game_id
        return elapsed

    thirteen = list(moves.items())
    view(*thirteen[0])  # the app's first request (templates compiled) is not measured
    first, second, baseline = [], [], []
    for game_id, count in steps.items():
        app.extensions.pop("red3_timelines", None)  # the ledger stays, as a server's does
        first.append(view(game_id, count - 1))
        second.append(view(game_id, count - 1))
    for game_id, count in thirteen[1:]:  # each game shown for the first time
        baseline.append(view(game_id, count))
    return {
        "red3": round(1000 * _median(first), 1),
        "second": round(1000 * _median(second), 1),
        "thirteen": round(1000 * _median(baseline), 1),
    }


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
            store_record(ledger, parse_red3_record(record))
        ids = [record["game_id"] for record in records]
        rebuild_s = _best(lambda: [states_after_steps(ledger, game_id) for game_id in ids], repeats)
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
    viewed = first_view(quick)
    result.update({k: v for k, v in viewed.items() if k != "rows"})
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
        *viewed["rows"],
    ]
    return result
