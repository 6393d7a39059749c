"""Integrity speed: sealing, the full verification pass (events only, and with the read
models checked against the events), one game's verdict (read rows included), proofs.

Every figure is set against a raw baseline measured in the same run and database: a plain
``SELECT`` of every stored event in notification order (what any pass over the store must
at least do), and a plain ``SELECT`` of one game's rows for the per-game figures. Games are
dealt from verifiable shuffles (so the deal checks run) and each turn picks the stock's top
card and discards it.

Saves seal their own events (their cost is in ``bench/store.py``'s append figures); the
sealing figure here is the backfill, ``seal_new_events``, over a store written the old way,
without seals (the library's own recorder), which is also what sealing after the fact cost.

Run: ``python -m bench integrity`` (or ``python -m bench.integrity``); ``quick=True`` for a
smoke run.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

from domain.rummy13.table import TableConfig
from domain.shuffle import commitment, deal_from_seeds
from replays.integrity import evidence as integrity
from replays.integrity.signing import init_keys
from replays.store.application import Ledger

POSTGRES_URL = os.environ.get(
    "RUMMY_LEDGER_BENCH_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
PLAYERS = ("p1", "p2", "p3", "p4")
TURNS = 25  # 2 + 2 x 25 = 52 events per game


def record(ledger: Ledger, game_id: str) -> None:
    server = f"server:{game_id}".encode()
    clients = {p: f"{game_id}:{p}".encode() for p in PLAYERS}
    dealt = deal_from_seeds(server, clients, list(PLAYERS), "p4")
    config = TableConfig(
        game_id=game_id,
        variant="points",
        players=PLAYERS,
        point_value="1.00",
        dealer="p4",
        shuffle={
            "commitment": commitment(server),
            "seed": server.hex(),
            "client_seeds": {p: s.hex() for p, s in clients.items()},
        },
    )
    moves = []
    for turn in range(TURNS):
        player, card = PLAYERS[turn % 4], str(dealt.stock[turn])
        moves.append({"player": player, "type": "pick", "from": "closed", "card": card})
        moves.append({"player": player, "type": "discard", "card": card})
    ledger.record_game(config, dealt.to_dict(), moves, settle=False)


def _timed(work: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = work()
    return time.perf_counter() - start, result


def measure_engine(url: str, count: int, key_dir: str) -> dict[str, Any]:
    integrity.create_tables(url)
    unsealed = Ledger(url, env={"PERSISTENCE_MODULE": "eventsourcing_sqlalchemy"})
    for n in range(count):
        record(unsealed, f"B{n}")
    unsealed.close()
    db = integrity.engine(url)

    def raw_read() -> int:
        with db.connect() as connection:
            query = "SELECT id, originator_id, originator_version, topic, state FROM ledger_events ORDER BY id"
            return len(connection.execute(sa.text(query)).all())

    raw_s, events = min(_timed(raw_read) for _ in range(3))
    seal_s, sealed = _timed(lambda: integrity.seal_new_events(url))
    assert sealed == events
    checkpoint_s, _ = _timed(lambda: integrity.make_checkpoint(url, key_directory=key_dir))
    # The read models, projected as a live store has them (the projection's own cost is
    # bench/projections.py's); the event-only rows below leave them out.
    from replays.readmodels.projections import catch_up
    from replays.store.db import Base

    Base.metadata.create_all(db)
    catch_up(url)
    events_only = {"check_read_models": False}
    verify_s, report = _timed(
        lambda: integrity.verify_store(url, check_deals=False, check_snapshots=False, **events_only)
    )
    deals_s, with_deals = _timed(
        lambda: integrity.verify_store(url, check_snapshots=False, **events_only)
    )
    full_s, full = _timed(lambda: integrity.verify_store(url, **events_only))
    read_s, with_read = _timed(lambda: integrity.verify_store(url, check_snapshots=False))
    only_read_s, only_read = _timed(lambda: integrity.verify_read_models(url))
    assert report.ok and with_deals.ok and full.ok, (report.problems, full.problems)
    assert with_read.ok and only_read.ok, (with_read.problems, only_read.problems)

    sample = [f"B{n}" for n in range(0, count, max(1, count // 40))]
    aggregate_ids = [Ledger.aggregate_id(g) for g in sample]

    def raw_game(aggregate_id) -> None:
        with db.connect() as connection:
            param = aggregate_id.bytes if connection.dialect.name == "sqlite" else aggregate_id
            connection.execute(
                sa.text("SELECT state FROM ledger_events WHERE originator_id = :o"), {"o": param}
            ).all()

    raw_game_ms = statistics.median(
        1000 * _timed(lambda a=a: raw_game(a))[0] for a in aggregate_ids
    )
    public_key_dir = key_dir
    from replays.integrity.signing import load_public_key

    public_key = load_public_key(public_key_dir)
    verdict_ms = statistics.median(
        1000 * _timed(lambda g=g: integrity.integrity_verdict(url, g, public_key=public_key))[0]
        for g in sample
    )
    proof_ms = statistics.median(
        1000 * _timed(lambda g=g: integrity.inclusion_proof(url, g))[0] for g in sample
    )
    return {
        "games": count,
        "events": events,
        "raw_read_events_per_s": round(events / raw_s),
        "seal_events_per_s": round(events / seal_s),
        "seal_ratio": round(raw_s / seal_s, 3),
        "verify_events_per_s": round(events / verify_s),
        "verify_ratio": round(raw_s / verify_s, 3),
        "verify_with_deals_events_per_s": round(events / deals_s),
        "verify_with_deals_ratio": round(raw_s / deals_s, 3),
        "verify_full_events_per_s": round(events / full_s),
        "verify_full_ratio": round(raw_s / full_s, 3),
        "verify_with_read_models_events_per_s": round(events / read_s),
        "verify_with_read_models_ratio": round(raw_s / read_s, 3),
        "verify_read_models_only_events_per_s": round(events / only_read_s),
        "verify_read_models_only_ratio": round(raw_s / only_read_s, 3),
        "checkpoint_ms": round(1000 * checkpoint_s, 1),
        "raw_game_select_ms": round(raw_game_ms, 3),
        "verdict_ms_per_game": round(verdict_ms, 2),
        "verdict_ratio": round(raw_game_ms / verdict_ms, 3),
        "inclusion_proof_ms_per_game": round(proof_ms, 2),
        "estimated_verify_100k_games_s": round(100_000 * 52 / (events / deals_s)),
        "estimated_full_verify_100k_games_s": round(100_000 * 52 / (events / full_s)),
    }


def _postgres_schema() -> tuple[str, Callable[[], None]] | None:
    schema = "bench_" + uuid.uuid4().hex[:12]
    try:
        admin = sa.create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
        with admin.connect() as connection:
            connection.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    except Exception as error:  # no server: report it rather than fail the whole bench run
        print(f"integrity bench: PostgreSQL not reachable ({error}); skipped", file=sys.stderr)
        return None

    def drop() -> None:
        with admin.connect() as connection:
            connection.execute(sa.text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        admin.dispose()

    return f"{POSTGRES_URL}?options=-csearch_path%3D{schema}", drop


def run(quick: bool = False) -> dict[str, Any]:
    count = 60 if quick else 1000
    result: dict[str, Any] = {"games": count, "events_per_game": 2 + 2 * TURNS}
    with tempfile.TemporaryDirectory() as folder:
        key_dir = os.path.join(folder, "keys")
        init_keys(key_dir)
        url = f"sqlite:///{os.path.join(folder, 'bench.sqlite3')}"
        result["sqlite"] = measure_engine(url, count, key_dir)
        postgres = _postgres_schema()
        if postgres is None:
            result["postgresql"] = {"skipped": "PostgreSQL not reachable"}
        else:
            url, drop = postgres
            try:
                result["postgresql"] = measure_engine(url, count, key_dir)
            finally:
                drop()
    result["rows"] = [
        row
        for engine in ("sqlite", "postgresql")
        if "seal_ratio" in result[engine]
        for row in (
            {
                "benchmark": f"integrity {engine}: sealing an old store, the backfill (events/s)",
                "figure": result[engine]["seal_events_per_s"],
                "baseline": result[engine]["raw_read_events_per_s"],
                "baseline_is": "plain SELECT of every event",
                "ratio": result[engine]["seal_ratio"],
            },
            {
                "benchmark": f"integrity {engine}: verify, with deal checks (events/s)",
                "figure": result[engine]["verify_with_deals_events_per_s"],
                "baseline": result[engine]["raw_read_events_per_s"],
                "baseline_is": "plain SELECT of every event",
                "ratio": result[engine]["verify_with_deals_ratio"],
            },
            {
                "benchmark": f"integrity {engine}: verify, deals and read models (events/s)",
                "figure": result[engine]["verify_with_read_models_events_per_s"],
                "baseline": result[engine]["raw_read_events_per_s"],
                "baseline_is": "plain SELECT of every event",
                "ratio": result[engine]["verify_with_read_models_ratio"],
            },
            {
                "benchmark": f"integrity {engine}: verify --read-models alone (events/s)",
                "figure": result[engine]["verify_read_models_only_events_per_s"],
                "baseline": result[engine]["raw_read_events_per_s"],
                "baseline_is": "plain SELECT of every event",
                "ratio": result[engine]["verify_read_models_only_ratio"],
            },
            {
                "benchmark": f"integrity {engine}: verify, deals and snapshots too (events/s)",
                "figure": result[engine]["verify_full_events_per_s"],
                "baseline": result[engine]["raw_read_events_per_s"],
                "baseline_is": "plain SELECT of every event",
                "ratio": result[engine]["verify_full_ratio"],
            },
            {
                "benchmark": f"integrity {engine}: one game's verdict (ms)",
                "figure": result[engine]["verdict_ms_per_game"],
                "baseline": result[engine]["raw_game_select_ms"],
                "baseline_is": "plain SELECT of the game's rows",
                "ratio": result[engine]["verdict_ratio"],
            },
        )
    ]
    return result


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
