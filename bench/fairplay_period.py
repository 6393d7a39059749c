"""A custom period's first look on ``/fairplay`` at a month of N games, without importing them.

    python -m bench.fairplay_period --clones 10 --schema fp_period [--keep DIR] [--looks 3]

``bench.fairplay_scale`` reaches a 20,000-game month only by importing 100,000 games (hours).
This builds the month's fair-play rows directly: the scale bench's distinct games (simulated
once, kept in ``DIR``) walked once, their facts cloned ``--clones`` times with every player id
remapped by a permutation of the pool of its own and every day moved by seven a clone (all
inside March, as ``fairplay_scale.clone_line`` moves records), and counted by the projection
(``add_facts`` in 500-game batches, then ``note_month_pairs``): the rows a catch-up of the
cloned records keeps. Then the page's first look at 2nd-29th March, as
``fairplay_scale.page`` times it (the kept review forgotten and the app's copy cleared
before each look), with the process's CPU beside the wall time. Run it from an older
checkout's directory (``PYTHONPATH``) against the same schema to compare code.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import resource
import statistics
import sys
import time
from datetime import date
from pathlib import Path

from bench.fairplay_scale import DISTINCT, PLAYERS, _forget_review, _postgres_url, distinct_records

START, END = "2025-03-02", "2025-03-29"


def _facts(keep: Path) -> list[tuple]:
    """The distinct games' facts, packed (walking them is a minute: kept in ``keep``)."""
    from replays.fairplay.facts import game_facts

    path = keep / "facts.pickle"
    if path.exists():
        return pickle.loads(path.read_bytes())
    records = distinct_records(keep, DISTINCT)
    facts = [f.packed() for f in map(game_facts, records) if f is not None]
    path.write_bytes(pickle.dumps(facts))
    return facts


def clone(packed: tuple, number: int) -> tuple:
    """A game's packed facts as clone ``number``: new id, players and day (in March)."""
    pool = list(range(1, PLAYERS + 1))
    if number:
        random.Random(number).shuffle(pool)

    def who(player: str) -> str:
        return f"p{pool[int(player[1:]) - 1]:04d}"

    game_id, day, table, seated, chips, choices, feeds, exits, intervals, deals, discards = packed
    moved = date(2025, 3, 1 + (date.fromisoformat(day).day - 1 + 7 * number) % 31)
    return (
        f"{game_id}-c{number}",
        moved.isoformat(),
        table,
        tuple(map(who, seated)),
        chips,
        [(who(p), *rest) for p, *rest in choices],
        [(who(a), who(b), *rest) for a, b, *rest in feeds],
        [
            (who(p), kind, score, tuple(map(who, others)), step)
            for p, kind, score, others, step in exits
        ],
        [(who(p), *rest) for p, *rest in intervals],
        [
            (
                {who(p): score for p, score in dealt.items()},
                {who(p): (step, tuple(map(who, others))) for p, (step, others) in drops.items()},
            )
            for dealt, drops in deals
        ],
        [(who(p), *rest) for p, *rest in discards],
    )


def build(url: str, keep: Path, clones: int) -> int:
    from replays.fairplay import projection
    from replays.store.db import engine_for
    from replays.store.schema import migrate

    facts = _facts(keep)
    games = sorted((clone(f, c) for c in range(clones) for f in facts), key=lambda g: g[1])
    migrate(url)
    engine = engine_for(url)
    for start in range(0, len(games), 500):
        projection.add_facts(engine, [(g[0], g[1], g[2], g) for g in games[start : start + 500]])
    projection.note_month_pairs(engine, ["2025-03"])
    projection._analyse(engine)
    return len(games)


def first_looks(url: str, looks: int) -> dict:
    from replays.access.accounts import add_user, find_user
    from web import create_app
    from web.views import fairplay as view

    if find_user("bench-officer", url=url) is None:
        add_user("bench-officer", "dispute_officer", "bench-password-123", url=url)
    app = create_app({"DATABASE_URL": url, "TESTING": True, "WTF_CSRF_ENABLED": False})
    client = app.test_client()
    client.post("/login", data={"username": "bench-officer", "password": "bench-password-123"})
    client.get("/fairplay?from=2000-01-01&to=2000-01-02")  # warm the app

    def cpu() -> float:
        used = resource.getrusage(resource.RUSAGE_SELF)
        return used.ru_utime + used.ru_stime

    walls, cpus = [], []
    for _ in range(looks):
        _forget_review(url, START, END)
        view._REVIEWS.clear()
        spent, started = cpu(), time.perf_counter()
        response = client.get(f"/fairplay?from={START}&to={END}")
        walls.append(round(1000 * (time.perf_counter() - started), 1))
        cpus.append(round(1000 * (cpu() - spent), 1))
        assert response.status_code == 200, response.status_code
    return {
        "custom_period_first_look_ms": walls,
        "median_ms": statistics.median(walls),
        "process_cpu_ms": cpus,
        "load_average": round(os.getloadavg()[0], 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.fairplay_period", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--clones", type=int, default=10, help="copies of the 2,000 games")
    parser.add_argument("--schema", default="fp_period", help="PostgreSQL schema (kept)")
    parser.add_argument("--keep", default="/tmp/fairplay-period", help="simulated games kept")
    parser.add_argument("--looks", type=int, default=3)
    parser.add_argument("--no-build", action="store_true", help="time the schema as it is")
    args = parser.parse_args(argv)
    keep = Path(args.keep)
    keep.mkdir(parents=True, exist_ok=True)
    url = _postgres_url(args.schema)
    result = {} if args.no_build else {"games": build(url, keep, args.clones)}
    result.update(first_looks(url, args.looks))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
