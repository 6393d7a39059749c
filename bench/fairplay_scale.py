"""Fair-play review at the issue's scale: 100,000 games on PostgreSQL, their statistics
against importing them, and the ``/fairplay`` page's first look at a month of 20,000 games.

    python -m bench.fairplay_scale --games 100000 --jobs 2 [--keep DIR] [--schema NAME]
    python -m bench fairplay_scale [--quick]     # a smaller store (FAIRPLAY_SCALE_GAMES)

The store: ``DISTINCT`` games simulated over one month (1,000 player ids, 25 tables of every
13-card variant, 2 % of the players cheating in each way at strength 0.5), then cloned up
to the wanted count: clone ``c`` goes to month ``c * MONTHS / clones`` (20,000 games a month
at 100,000), every player id remapped by a permutation of the pool of its own (so the
month's pairs are as many as a real month's, not the distinct games' few) and every time
moved by whole days (each game kept in its month). The clones go through the real importer
(``import_lines_parallel``, what ``rummy-ledger import --jobs N`` runs: every move checked,
every save sealed, the read models projected); the lines of each slice are made before its
import is timed. The clones break the cheats' identities (a feeding pair is another pair in
each clone): this measures cost, not recall (``bench/fairplay.py`` does that).

Timed: the import, slice by slice (resumable: the store is a kept PostgreSQL schema and
``DIR/state.json`` says which slices are in); the fair-play statistics on the same store with
the same ``--jobs`` (``projection.catch_up``: events to records, the walk, the kept rows and
each calendar month's stored review); and the page: the first look at each month in a
freshly started app (its review stored by the catch-up), a custom period worked out on
demand, and ``/games`` as the baseline in the same run. The load average is recorded beside
every figure. Results: ``bench/results/fairplay_scale.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import re
import statistics
import sys
import time
from datetime import date, timedelta
from pathlib import Path
from typing import Any

GAMES = 100_000
QUICK_GAMES = 2_000
DISTINCT = 2_000
PLAYERS = 1_000
TABLES = 25
MONTH = "2025-03"
MONTHS = ("2025-03", "2025-04", "2025-05", "2025-06", "2025-07")
SLICE = 10_000  # games imported (and timed) at a time
VARIANTS = ("points", "raise", "pool", "deals")
POSTGRES_URL = os.environ.get(
    "RUMMY_LEDGER_BENCH_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
_PLAYER = re.compile(r'"p(\d{4})"')
_DAY = re.compile(r'"(\d{4}-\d\d-\d\d)T')


def _load() -> float:
    return round(os.getloadavg()[0], 2)


def distinct_records(keep: Path, count: int) -> list[dict]:
    """The simulated games the clones copy (kept in ``keep``: simulating is minutes)."""
    path = keep / f"distinct-{count}.pickle"
    if path.exists():
        return pickle.loads(path.read_bytes())
    from domain.simulation.cheats import Cheats
    from replays.simulation import Floor, Simulation

    cheats = Cheats.parse("pair:0.02,peek:0.02,dump:0.02,bot:0.02", 0.5)
    floor = Floor(
        seed=70, players=PLAYERS, tables=TABLES, variants=VARIANTS, month=MONTH, cheats=cheats
    )
    records = list(Simulation(floor).games(count, jobs=2, progress=True))
    path.write_bytes(pickle.dumps(records))
    return records


def clone_line(record_text: str, record: dict, clone: int, clones: int) -> str:
    """``record`` (its JSON text) as clone ``clone`` of ``clones``: new id, players, days."""
    if clone == 0:
        return record_text
    rng = random.Random(clone)
    pool = list(range(1, PLAYERS + 1))
    rng.shuffle(pool)
    month = MONTHS[clone * len(MONTHS) // clones]
    first = date.fromisoformat(month + "-01")
    following = date(first.year + first.month // 12, first.month % 12 + 1, 1)
    length = (following - first).days
    started = date.fromisoformat(record["started_at"][:10])
    day = (started.day - 1 + 7 * clone) % length
    shift = first + timedelta(days=day) - started
    days: dict[str, str] = {}

    def moved(match: re.Match) -> str:
        text = match.group(1)
        if text not in days:
            days[text] = (date.fromisoformat(text) + shift).isoformat()
        return f'"{days[text]}T'

    text = _PLAYER.sub(lambda m: f'"p{pool[int(m.group(1)) - 1]:04d}"', record_text)
    text = _DAY.sub(moved, text)
    game_id = record["game_id"]
    return text.replace(f'"game_id": "{game_id}"', f'"game_id": "{game_id}-c{clone}"', 1)


def slice_lines(records: list[dict], texts: list[str], start: int, stop: int, total: int):
    # Rounded up: a count that is not a whole number of copies (5,000 of 2,000) has a last,
    # partial clone, which must still fall in a month.
    clones = max(1, -(-total // len(records)))
    return [
        clone_line(texts[i % len(records)], records[i % len(records)], i // len(records), clones)
        for i in range(start, stop)
    ]


def _postgres_url(schema: str) -> str:
    import sqlalchemy as sa

    engine = sa.create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(sa.text(f'CREATE SCHEMA IF NOT EXISTS "{schema}"'))
    engine.dispose()
    return f"{POSTGRES_URL}?options=-csearch_path%3D{schema}"


def _save(keep: Path, state: dict) -> None:
    path = keep / "state.json"
    path.with_suffix(".tmp").write_text(json.dumps(state, indent=1))
    path.with_suffix(".tmp").replace(path)


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the import's and the
    walk's workers): a figure other helpers' load does not inflate as much as wall time."""
    import resource

    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _timed(work) -> tuple[Any, dict[str, float]]:
    load, cpu, started = _load(), _cpu(), time.perf_counter()
    result = work()
    return result, {
        "seconds": round(time.perf_counter() - started, 2),
        "cpu_seconds": round(_cpu() - cpu, 2),
        "load_before": load,
        "load_after": _load(),
    }


def build(url: str, keep: Path, games: int, jobs: int, state: dict) -> None:
    """Import the store slice by slice, and after each slice count its games for the
    review (``catch_up``, as a day's new games are counted): each timed right after the
    other, so both see the same load. Slices already in are skipped."""
    from replays.fairplay import projection
    from replays.records.parallel import import_lines_parallel
    from replays.store.application import Ledger
    from replays.store.schema import migrate

    migrate(url)
    records = distinct_records(keep, min(DISTINCT, games))
    texts = [json.dumps(r) for r in records]
    slices = state.setdefault("slices", [])
    ledger = Ledger(url, env={"CREATE_TABLE": "no"})
    for start in range(len(slices) * SLICE, games, SLICE):
        stop = min(games, start + SLICE)
        lines = slice_lines(records, texts, start, stop, games)
        summary, imported = _timed(lambda lines=lines: import_lines_parallel(url, lines, jobs=jobs))
        if not summary.ok:
            raise RuntimeError(f"import failed: {summary.line()} {summary.failures[:3]}")
        counted, count = _timed(lambda: projection.catch_up(ledger, url, jobs=jobs))
        slices.append(
            {
                "games": stop - start,
                "imported": summary.imported,
                "counted": counted,
                "import": imported,
                "count": count,
                "count_over_import": round(count["seconds"] / imported["seconds"], 3),
            }
        )
        _save(keep, state)
        print(f"slice {stop}/{games}: {slices[-1]}", file=sys.stderr, flush=True)


def count(url: str, jobs: int) -> dict[str, Any]:
    """The fair-play statistics of every stored game counted again from nothing."""
    from replays.fairplay import projection
    from replays.store.application import Ledger

    ledger = Ledger(url, env={"CREATE_TABLE": "no"})
    counted, figures = _timed(lambda: projection.rebuild(ledger, url, jobs=jobs))
    return {"games": counted, "jobs": jobs, **figures}


def rows_kept(url: str) -> dict[str, int]:
    import sqlalchemy as sa

    from replays.store.db import engine_for

    names = ("fairplay_player_days", "fairplay_pair_days", "fairplay_evidence", "fairplay_games")
    with engine_for(url).connect() as connection:
        return {
            name: connection.execute(sa.text(f"SELECT count(*) FROM {name}")).scalar_one()
            for name in names
        }


def _forget_review(url: str, start: str, end: str) -> None:
    import sqlalchemy as sa

    from replays.fairplay.tables import FairplayReview
    from replays.store.db import engine_for

    r = FairplayReview
    with engine_for(url).begin() as connection:
        connection.execute(sa.delete(r).where(r.start == start, r.end == end))


def page(url: str, months: tuple[str, ...]) -> dict[str, Any]:
    """First looks at each month in a fresh app (the stored reviews), then a custom period
    (worked out on demand), its second look, and /games: medians in ms, with the load."""
    from replays.access.accounts import add_user, find_user
    from web import create_app

    if find_user("bench-officer", url=url) is None:  # kept from an earlier run
        add_user("bench-officer", "dispute_officer", "bench-password-123", url=url)
    app = create_app({"DATABASE_URL": url, "TESTING": True, "WTF_CSRF_ENABLED": False})
    client = app.test_client()
    answer = client.post(
        "/login", data={"username": "bench-officer", "password": "bench-password-123"}
    )
    assert answer.status_code in (302, 303), answer.status_code

    def timed(path: str) -> float:
        started = time.perf_counter()
        response = client.get(path)
        assert response.status_code == 200, (path, response.status_code)
        return round(1000 * (time.perf_counter() - started), 1)

    # Warm the app (templates, connections) on a period with no games.
    timed("/fairplay?from=2000-01-01&to=2000-01-02")
    games = [timed("/games") for _ in range(5)]
    from web.views import fairplay as view

    # Each month's first look (its review kept by the catch-up), then four more first looks
    # at the first month, the process's own copy of the review forgotten before each.
    firsts = {}
    for month in months:
        first = date.fromisoformat(month + "-01")
        last = date(first.year + first.month // 12, first.month % 12 + 1, 1) - timedelta(days=1)
        view._REVIEWS.clear()
        firsts[month] = timed(f"/fairplay?from={first}&to={last}")
    month_path = f"/fairplay?from={months[0]}-01&to={months[0]}-31"
    repeated = []
    for _ in range(4):
        view._REVIEWS.clear()
        repeated.append(timed(month_path))
    again = [timed(month_path) for _ in range(5)]
    load = _load()
    # Another period, worked out on its first look: forgotten first if an earlier run kept it.
    _forget_review(url, f"{months[0]}-02", f"{months[0]}-29")
    view._REVIEWS.clear()
    custom = timed(f"/fairplay?from={months[0]}-02&to={months[0]}-29")
    custom_again = timed(f"/fairplay?from={months[0]}-02&to={months[0]}-29")
    first_median = statistics.median([*firsts.values(), *repeated])
    return {
        "first_look_ms_by_month": firsts,
        "first_look_median_ms": first_median,
        "first_looks_first_month_ms": repeated,
        "second_look_median_ms": statistics.median(again),
        "custom_period_first_look_ms": custom,
        "custom_period_second_look_ms": custom_again,
        "games_page_median_ms": statistics.median(games),
        "first_look_over_games_page": round(first_median / statistics.median(games), 2),
        "load_average": load,
    }


def measure(games: int, jobs: int, keep: Path, schema: str, stage: str = "all") -> dict[str, Any]:
    keep.mkdir(parents=True, exist_ok=True)
    path = keep / "state.json"
    state = json.loads(path.read_text()) if path.exists() else {}
    if state.get("games", games) != games:
        raise SystemExit(f"{keep} holds a store of {state['games']} games, not {games}")
    state.update(games=games, jobs=jobs, schema=schema)
    url = _postgres_url(schema)
    if stage in ("import", "all"):
        build(url, keep, games, jobs, state)
    if stage == "import":
        return state
    # The slices imported and counted so far (all of them once the run is whole): the
    # page and a rebuild are measured on them, the whole months among them.
    slices = state["slices"]
    stored = sum(s["games"] for s in slices)
    state["rows_kept"] = rows_kept(url)
    if stage == "rebuild":
        state["rebuild"] = count(url, jobs)
    months = tuple(MONTHS[: max(1, len(MONTHS) * stored // GAMES)])
    state["page"] = page(url, months)
    _save(keep, state)
    imported = sum(s["import"]["seconds"] for s in slices)
    counted = sum(s["count"]["seconds"] for s in slices)
    imported_cpu = sum(s["import"]["cpu_seconds"] for s in slices)
    counted_cpu = sum(s["count"]["cpu_seconds"] for s in slices)
    result = {
        **state,
        "stored_games": stored,
        "import_seconds": round(imported, 1),
        "count_seconds": round(counted, 1),
        "count_over_import": round(counted / imported, 3),
        "import_cpu_seconds": round(imported_cpu, 1),
        "count_cpu_seconds": round(counted_cpu, 1),
        "count_over_import_cpu": round(counted_cpu / imported_cpu, 3),
    }
    result["rows"] = [
        {
            "benchmark": f"fair-play statistics, {stored:,} games on PostgreSQL, --jobs {jobs}, "
            f"counted after each slice of {SLICE:,} imported",
            "figure": f"{counted:.0f} s",
            "baseline": f"importing them (--jobs {jobs}): {imported:.0f} s",
            "ratio": result["count_over_import"],
        },
        {
            "benchmark": f"/fairplay first look at a month ({min(stored, GAMES // len(MONTHS)):,} "
            f"games, {PLAYERS:,} players), its review kept",
            "figure": f"{state['page']['first_look_median_ms']} ms",
            "baseline": f"/games page: {state['page']['games_page_median_ms']} ms",
            "ratio": state["page"]["first_look_over_games_page"],
        },
    ]
    if "rebuild" in state:
        # Per game: an interrupted run leaves part of a slice imported (untimed), and a
        # rebuild counts every stored game.
        rebuilt = state["rebuild"]["seconds"] * stored / state["rebuild"]["games"]
        result["rebuild_over_import"] = round(rebuilt / imported, 3)
        result["rows"].insert(
            1,
            {
                "benchmark": f"fair-play statistics of {stored:,} games counted again from "
                f"nothing (--rebuild, --jobs {jobs}; per game of the "
                f"{state['rebuild']['games']:,} stored)",
                "figure": f"{rebuilt:.0f} s",
                "baseline": f"importing them (--jobs {jobs}): {imported:.0f} s",
                "ratio": result["rebuild_over_import"],
            },
        )
    return result


def run(quick: bool = False) -> dict[str, Any]:
    games = QUICK_GAMES if quick else int(os.environ.get("FAIRPLAY_SCALE_GAMES", GAMES))
    keep = Path(os.environ.get("FAIRPLAY_SCALE_KEEP", f"/tmp/fairplay-scale-{games}"))
    return measure(games, 2, keep, os.environ.get("FAIRPLAY_SCALE_SCHEMA", f"fpscale_{games}"))


def main(argv: list[str] | None = None) -> int:
    from bench.__main__ import RESULTS_DIR, machine

    parser = argparse.ArgumentParser(
        prog="python -m bench.fairplay_scale", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--games", type=int, default=GAMES)
    parser.add_argument("--jobs", type=int, default=2, help="import and statistics workers")
    parser.add_argument("--keep", help="folder of the kept state (default /tmp/...)")
    parser.add_argument("--schema", help="PostgreSQL schema of the kept store")
    parser.add_argument("--no-write", action="store_true", help="no result file")
    parser.add_argument(
        "--stage",
        choices=("import", "rebuild", "page", "all"),
        default="all",
        help="import and count the slices only; on the slices stored so far, count them "
        "again from nothing and the page, or the page only; or all",
    )
    args = parser.parse_args(argv)
    keep = Path(args.keep or f"/tmp/fairplay-scale-{args.games}")
    schema = args.schema or f"fpscale_{args.games}"
    result = measure(args.games, args.jobs, keep, schema, args.stage)
    if args.stage == "import":
        print(json.dumps(result, indent=1))
        return 0
    result["machine"] = machine()
    result["when"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    print(json.dumps(result, indent=1))
    if not args.no_write:
        (RESULTS_DIR / "fairplay_scale.json").write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
