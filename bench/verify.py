"""`verify` on a store of simulated games: events only, with the read models, and the
read models alone, each against a plain ``SELECT`` of every event in the same run.

The store is built the way ``bench/replay_page.py`` builds its 10,000-game store (the
same functions): a few hundred simulated games, then clones of them under new ids up to
the wanted count, imported through the real importer (every save seals its events) and
projected into the read models. Simulating every game would take far longer than
verifying it; clones are the same size and shape, and sealed and projected like any
import. Then, in one process, after one untimed pass of floor 2 and of ``verify`` (warm
caches for all), three rounds of one pass each (each figure the median of its rounds):

- a raw ``SELECT`` of every stored event in notification order;
- the same ``SELECT`` plus every hash ``verify`` recomputes: each event's leaf, each game's
  chain, the Merkle tree (the baseline: what any verification must at least do);
- two floors for a verify that replays every game: the hashes plus every event decoded and
  applied through the domain (nothing built or compared), and the same plus every finished
  game's settlement recomputed and audited (what ``verify`` must do to distrust the stored
  figures). No change to ``verify`` can take it above these in this code;
- floor 3: floor 2 plus a raw read of every stored row ``verify`` compares with what the
  events give (seals, tree nodes, chain heads, read rows, snapshots); against it, what is
  left of ``verify``'s time is its checks' own work;
- ``verify --no-snapshots`` without the read-model step (seals, chains, tree, deals);
- ``verify`` without the read-model step (the snapshots too: every event-side check);
- ``verify --no-snapshots`` with the read-model step (every game replayed into its rows);
- ``verify`` with every check on (the read-model replay also compares the snapshots);
- the same with ``--jobs 2`` (the games replayed in two processes);
- ``verify --read-models`` alone.

Figures are events per second and the ratio to the baseline (SELECT + hashes); the ratio
to the plain ``SELECT`` is kept too. Two rows give issue 33's measures directly: ``verify``
with every check against floor 2, and ``--jobs 2`` against one process (the result keeps
``verify`` against floor 3 too). The load average before and after is recorded: the
machine is shared, so the ratios are the comparable part.

Run: ``python -m bench verify`` (1,000 games; ``--quick``: 100), or for the closing
figures ``python -m bench.verify --games 10000 [--db PATH]`` (``--db`` keeps the built
store and reuses it on the next run).

Instructions: ``python -m bench.verify --floor --db PATH`` runs floor 2 (the hashes, every
event replayed, every settlement audited) once on a kept store and prints its events; under
``PYTHONHASHSEED=0 valgrind --tool=callgrind``, beside ``rummy-ledger verify`` on the same
store, and both again on an empty migrated store (the imports, subtracted), it gives each
one's instructions per event.

The ``--since`` stage (``python -m bench.verify --since --games 2000``, issue 33) measures
the auditor's day: on a store of N games verified once by ``verify --since`` (its first,
full run, which writes the state), 300 new games are imported, and then one pass each of
``verify --since`` (the consistency proof, the new games replayed, every other game
compared with its kept digests), the full ``verify`` with every check, and the SELECT of
every event plus every hash of the whole store. Its result goes to
``bench/results/verify_since.json`` (not to the summary table).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sqlalchemy as sa

GAMES = 1_000
QUICK_GAMES = 100
DISTINCT = 400  # simulated games; the rest are clones (as in bench/replay_page.py)
GAMES_ENV, DB_ENV = "RUMMY_LEDGER_BENCH_VERIFY_GAMES", "RUMMY_LEDGER_BENCH_VERIFY_DB"


def build(url: str, games: int) -> None:
    """Simulate, clone, import (sealed in the save) and project ``games`` games."""
    from bench.replay_page import fill_database, simulated_records

    records = simulated_records(min(DISTINCT, games))
    fill_database(url, records, games)


def _timed(work: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = work()
    return time.perf_counter() - start, result


def _load() -> float:
    return round(os.getloadavg()[0], 2)


_QUERY = "SELECT id, originator_id, originator_version, topic, state FROM ledger_events"


def read_and_hash(db: sa.Engine) -> int:
    """The baseline: every event SELECTed in notification order, its leaf, its game's chain
    and the Merkle tree hashed. Returns the events read."""
    from replays.integrity import merkle
    from replays.integrity.canonical import GENESIS, chain_hash, event_leaf
    from replays.integrity.store import raw_id

    chains: dict[bytes, bytes] = {}
    tree = merkle.TreeBuilder()
    count = 0
    with db.connect() as connection:
        for _, originator, version, topic, state in connection.execute(
            sa.text(_QUERY + " ORDER BY id")
        ):
            originator = raw_id(originator)
            leaf = event_leaf(originator, version, topic, state)
            chains[originator] = chain_hash(chains.get(originator, GENESIS), leaf)
            tree.append(leaf)
            count += 1
    tree.root()
    return count


def bare_replay(url: str, db: sa.Engine, audit: bool) -> int:
    """Every game read by aggregate and its events decoded and applied, as verify's
    replay does, and nothing else (no rows built, nothing compared); with ``audit``,
    each finished game's settlement recomputed and audited too. Added to the hashes,
    the least any verify that replays every game must do in this code."""
    from domain import variants
    from replays.integrity.replaying import replayer_for
    from replays.readmodels.read_model_checks import (
        _events_by_aggregate,
        ledger_for,
        projection_position,
    )
    from replays.store.schema import EVENTS_TABLE

    replayer = replayer_for(ledger_for(url).mapper)
    count = 0
    with db.connect() as connection:
        position = projection_position(connection)
        for prefix in variants.topic_prefixes():
            for rows in _events_by_aggregate(connection, position, EVENTS_TABLE, prefix):
                game, originator_id = None, rows[0].originator_id
                for row in rows:
                    event = replayer.event(originator_id, row.version, row.topic, row.state)
                    game = replayer.apply(event, game)
                count += len(rows)
                variant = variants.for_topic(rows[0].topic)
                if audit and variant is not None and variant.is_over(game):
                    variant.audit_columns(game, ())
    return count


# What verify reads besides the events, to compare with what they give: the seals, the
# stored tree nodes and chain heads, the read-model rows and the snapshots.
COMPARED_TABLES = (
    "integrity_seals",
    "integrity_nodes",
    "integrity_games",
    "games",
    "moves",
    "player_results",
    "ledger_entries",
    "ledger_snapshots",
)


def read_compared(db: sa.Engine) -> int:
    """Every stored row ``verify`` compares with what the events give (:data:`COMPARED_TABLES`),
    read raw and nothing done with it. Added to floor 2, floor 3: the least a verify must
    do that replays every game and reads what it checks, in this code. Returns the rows."""
    count = 0
    with db.connect() as connection:
        for table in COMPARED_TABLES:
            count += sum(1 for _ in connection.exec_driver_sql(f"SELECT * FROM {table}"))
    return count


def floor(url: str) -> int:
    """Floor 2 once (the hashes, then every event replayed and every settlement audited),
    for an instruction count (``python -m bench.verify --floor --db FILE`` under callgrind,
    beside ``rummy-ledger verify`` on the same store; run both on an empty migrated store
    too and subtract, for the imports). Returns the events replayed."""
    from replays.integrity import evidence as integrity

    db = integrity.engine(url)
    read_and_hash(db)
    return bare_replay(url, db, True)


ROUNDS = 3


def measure(url: str, rounds: int = ROUNDS) -> dict[str, Any]:
    """Every pass ``rounds`` times in this process, on the store at ``url``; each figure is
    the median of its rounds. One untimed pass of floor 2 and of ``verify`` comes first, so
    that no timed pass pays for caches the ones after it find warm (the solver's tables,
    SQLite's pages): with a kept store (``--db``) the first settlement audit of a process
    costs about a third more than the next."""
    import statistics

    from replays.integrity import evidence as integrity

    db = integrity.engine(url)

    def raw_read() -> int:
        with db.connect() as connection:
            return sum(1 for _ in connection.execute(sa.text(_QUERY + " ORDER BY id")))

    load_before = _load()
    read_and_hash(db)
    bare_replay(url, db, True)
    integrity.verify_store(url)
    passes = {
        "verify_events_only": {"check_snapshots": False, "check_read_models": False},
        "verify_events_and_snapshots": {"check_read_models": False},
        "verify_with_read_models": {"check_snapshots": False},
        "verify_every_check": {},
        "verify_every_check_jobs_2": {"jobs": 2},
    }
    times: dict[str, list[float]] = {}

    def timed(name: str, work: Callable[[], Any]) -> Any:
        seconds, result = _timed(work)
        times.setdefault(name, []).append(seconds)
        return result

    reports = {}
    for _ in range(rounds):
        events = timed("raw", raw_read)
        hashed = timed("hashed", lambda: read_and_hash(db))
        assert hashed == events
        replayed = timed("replay", lambda: bare_replay(url, db, False))
        timed("audited", lambda: bare_replay(url, db, True))
        timed("compared", lambda: read_compared(db))
        for name, options in passes.items():
            reports[name] = timed(name, lambda o=options: integrity.verify_store(url, **o))
        reports["alone"] = timed("read_models_alone", lambda: integrity.verify_read_models(url))
    for name, report in reports.items():
        if not report.ok:
            raise RuntimeError(f"verify ({name}) found problems: {report.problems[:3]}")
    games = reports["verify_every_check"].games
    # The floors are sums of passes: each round's sum, then their median.
    times["floor_hashes_and_replay"] = list(
        map(sum, zip(times["hashed"], times["replay"], strict=True))
    )
    times["floor_hashes_replay_and_settlements"] = list(
        map(sum, zip(times["hashed"], times["audited"], strict=True))
    )
    times["floor_3"] = list(
        map(sum, zip(times["hashed"], times["audited"], times["compared"], strict=True))
    )
    median = {name: statistics.median(seconds) for name, seconds in times.items()}
    raw_s, hashed_s = median["raw"], median["hashed"]

    def figures(seconds: float) -> dict[str, float]:
        return {
            "seconds": round(seconds, 2),
            "events_per_s": round(events / seconds),
            "ratio": round(hashed_s / seconds, 4),
            "ratio_to_select": round(raw_s / seconds, 4),
        }

    every_check = median["verify_every_check"]
    return {
        "games": games,
        "events": events,
        "rounds": rounds,
        "load_before": load_before,
        "load_after": _load(),
        "raw_select": {"seconds": round(raw_s, 2), "events_per_s": round(events / raw_s)},
        "select_and_hashes": {
            "seconds": round(hashed_s, 2),
            "events_per_s": round(events / hashed_s),
        },
        # Floors: what every verify that replays each game must do, in this code.
        "bare_replay": {
            "seconds": round(median["replay"], 2),
            "events_per_s": round(replayed / median["replay"]),
        },
        **{
            name: figures(median[name])
            for name in (
                "floor_hashes_and_replay",
                "floor_hashes_replay_and_settlements",
                "floor_3",
                *passes,
                "read_models_alone",
            )
        },
        # Issue 33's two measures: the full verify against floor 2, and --jobs 2 against
        # one process, each from the medians of the same rounds.
        "every_check_over_floor_2": round(
            median["floor_hashes_replay_and_settlements"] / every_check, 3
        ),
        "jobs_2_speedup": round(every_check / median["verify_every_check_jobs_2"], 3),
        # And against floor 3 (floor 2 + a raw read of every stored row verify compares):
        # what is left is the checks' own work.
        "every_check_over_floor_3": round(median["floor_3"] / every_check, 3),
        "notes": reports["verify_every_check"].notes,
        "read_models_vs_events_only": round(
            median["verify_events_only"] / median["verify_with_read_models"], 3
        ),
    }


def rows(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The summary-table rows (python -m bench)."""
    games, base = result["games"], result["select_and_hashes"]["events_per_s"]
    labels = {
        "floor_hashes_and_replay": "floor: SELECT + hashes + every event decoded and applied",
        "floor_hashes_replay_and_settlements": "floor: the same + every settlement recomputed",
        "floor_3": "floor 3: floor 2 + every stored row verify compares, read raw",
        "verify_events_only": "verify --no-snapshots, events only",
        "verify_events_and_snapshots": "verify without the read models (snapshots too)",
        "verify_with_read_models": "verify --no-snapshots, with the read models",
        "verify_every_check": "verify, every check on",
        "verify_every_check_jobs_2": "verify --jobs 2, every check on",
        "read_models_alone": "verify --read-models alone",
    }
    return [
        {
            "benchmark": f"verify, {games:,} games, SQLite: {label} (events/s)",
            "figure": result[key]["events_per_s"],
            "baseline": base,
            "baseline_is": "SELECT of every event + every leaf, chain and tree hash",
            "ratio": result[key]["ratio"],
        }
        for key, label in labels.items()
    ] + [
        # Issue 33's two measures, each against its own baseline.
        {
            "benchmark": f"verify, {games:,} games, SQLite: {label} (events/s)",
            "figure": result[key]["events_per_s"],
            "baseline": result[against]["events_per_s"],
            "baseline_is": baseline_is,
            "ratio": result[ratio],
        }
        for label, key, against, baseline_is, ratio in (
            (
                "verify, every check on, against floor 2",
                "verify_every_check",
                "floor_hashes_replay_and_settlements",
                "floor 2: SELECT + hashes + every event applied + every settlement",
                "every_check_over_floor_2",
            ),
            (
                "verify --jobs 2, every check on, against one process",
                "verify_every_check_jobs_2",
                "verify_every_check",
                "verify, every check on, one process",
                "jobs_2_speedup",
            ),
        )
    ]


def run(quick: bool = False) -> dict[str, Any]:
    """``python -m bench verify``: the store's size from ``RUMMY_LEDGER_BENCH_VERIFY_GAMES``
    (default 1,000; quick 100), kept in ``RUMMY_LEDGER_BENCH_VERIFY_DB`` when set."""
    games = int(os.environ.get(GAMES_ENV) or (QUICK_GAMES if quick else GAMES))
    db = os.environ.get(DB_ENV)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(db) if db else Path(folder) / "verify.sqlite3"
        url = f"sqlite:///{path}"
        built_s = 0.0
        if not path.exists():
            built_s, _ = _timed(lambda: build(url, games))
        else:
            # A kept store from an older checkout: its tables brought up to this schema.
            from replays.store.schema import migrate

            migrate(url)
        result = measure(url)
    result["build_seconds"] = round(built_s, 1)
    result["rows"] = rows(result)
    return result


NEW_GAMES = 300


def add_games(url: str, records: list[dict], start: int, count: int) -> None:
    """Import ``count`` more clones (ids from ``start`` on) and project them."""
    import copy
    import json

    from replays.readmodels.projections import catch_up
    from replays.records.importer import import_lines
    from replays.store.application import Ledger

    ledger = Ledger(url, env={"CREATE_TABLE": "no"})

    def lines():
        for index in range(start, start + count):
            record = copy.deepcopy(records[index % len(records)])
            record["game_id"] = f"{record['game_id']}-n{index}"
            yield json.dumps(record)

    summary = import_lines(ledger, lines(), follow=False)
    if summary.rejected:
        raise RuntimeError(f"import failed: {summary.line()} {summary.failures[:3]}")
    catch_up(url)


def measure_since(url: str, games: int, folder: Path) -> dict[str, Any]:
    """The ``--since`` stage (module docstring) on the built store at ``url``."""
    from bench.replay_page import simulated_records
    from replays.integrity import evidence as integrity
    from replays.integrity.incremental import verify_since
    from replays.integrity.signing import Checkpoint, init_keys

    keys = folder / "keys"
    if not keys.exists():
        init_keys(keys)
    os.environ["RUMMY_LEDGER_KEY_DIR"] = str(keys)
    state = folder / "since-state"
    old = integrity.make_checkpoint(url)
    load_before = _load()
    first_s, (report, _) = _timed(lambda: verify_since(url, old, state))
    if not report.ok:
        raise RuntimeError(f"verify --since (first run) found problems: {report.problems[:3]}")
    add_games(url, simulated_records(min(DISTINCT, NEW_GAMES), seed=29), games, NEW_GAMES)
    kept = Checkpoint.load(state / "checkpoint.json")
    since_s, (report, coverage) = _timed(lambda: verify_since(url, kept, state))
    if not report.ok:
        raise RuntimeError(f"verify --since found problems: {report.problems[:3]}")
    full_s, full = _timed(lambda: integrity.verify_store(url))
    if not full.ok:
        raise RuntimeError(f"verify found problems: {full.problems[:3]}")
    hashed_s, events = _timed(lambda: read_and_hash(integrity.engine(url)))
    return {
        "games": games,
        "new_games": NEW_GAMES,
        "events": events,
        "load_before": load_before,
        "load_after": _load(),
        "first_run_seconds": round(first_s, 2),
        "since": {
            "seconds": round(since_s, 2),
            "replayed": len(coverage.replayed),
            "compared_by_digest": coverage.compared,
            "proven_by_consistency": coverage.proven,
            "stages_seconds": coverage.stages,
        },
        "full_verify_seconds": round(full_s, 2),
        "select_and_hashes_seconds": round(hashed_s, 2),
        "full_over_since": round(full_s / since_s, 2),
        "select_and_hashes_over_since": round(hashed_s / since_s, 2),
    }


def run_since(games: int, db: str | None) -> dict[str, Any]:
    """The ``--since`` stage on a fresh store of ``games`` games (a copy of ``db`` when
    given, so the kept store is not grown by the new games)."""
    import shutil

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "verify.sqlite3"
        built_s = 0.0
        if db and Path(db).exists():
            shutil.copyfile(db, path)
        else:
            built_s, _ = _timed(lambda: build(f"sqlite:///{path}", games))
            if db:
                shutil.copyfile(path, db)
        result = measure_since(f"sqlite:///{path}", games, Path(folder))
    result["build_seconds"] = round(built_s, 1)
    return result


def main(argv: list[str] | None = None) -> int:
    """``python -m bench.verify --games 10000 [--db FILE]``: the same run, its result file
    and the summary table written as ``python -m bench verify`` writes them."""
    from bench.__main__ import main as bench_main

    parser = argparse.ArgumentParser(
        prog="python -m bench.verify", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--games", type=int, default=GAMES, help=f"games in the store ({GAMES})")
    parser.add_argument("--db", help="SQLite file to build once and reuse")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--since",
        action="store_true",
        help="the verify --since stage (bench/results/verify_since.json)",
    )
    parser.add_argument(
        "--floor",
        action="store_true",
        help="floor 2 alone, once, on the --db store (for callgrind); prints the events",
    )
    args = parser.parse_args(argv)
    if args.floor:
        if not args.db:
            parser.error("--floor needs --db (a store built by an earlier run)")
        print(floor(f"sqlite:///{args.db}"))
        return 0
    if args.since:
        import json

        from bench.__main__ import RESULTS_DIR, machine

        result = run_since(QUICK_GAMES if args.quick else args.games, args.db)
        result["machine"] = machine()
        result["when"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        (RESULTS_DIR / "verify_since.json").write_text(json.dumps(result, indent=2) + "\n")
        print(json.dumps(result, indent=2))
        return 0
    os.environ[GAMES_ENV] = str(QUICK_GAMES if args.quick else args.games)
    if args.db:
        os.environ[DB_ENV] = args.db
    return bench_main(["verify", *(["--quick"] if args.quick else [])])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
