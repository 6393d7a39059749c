"""Would compressing snapshots pay on SQLite? Sizes, and what loading a game costs.

On the store ``bench/verify.py`` builds (simulated games, cloned, imported and projected;
every game that crosses the snapshot interval has one snapshot at its last event), in one
run:

- **size**: the database file, the snapshots' share of it, and the same store with every
  snapshot's state compressed with zlib (what eventsourcing's ``COMPRESSOR_TOPIC =
  eventsourcing.compressor:ZlibCompressor`` writes), both files compacted (``VACUUM
  INTO``) so free pages do not count;
- **loading a game** (what every page that shows a game does): ``Ledger.get_game``
  (the snapshot and the events after it) timed per game, and the snapshot's part of it, its
  row read and decoded, plain (the baseline) and compressed (the row read, decompressed,
  decoded), each the median over the same sample of games; and what compressing one
  snapshot would add to the save that writes it.

Run: ``python -m bench snapshots`` (1,000 games; ``--quick``: 100).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

import sqlalchemy as sa

GAMES, QUICK_GAMES, SAMPLE = 1_000, 100, 200


def _file_size(path: Path) -> int:
    return path.stat().st_size


def _compact(url_path: Path, into: Path, compress: bool) -> None:
    import sqlite3

    with sqlite3.connect(url_path) as connection:
        connection.execute(f"VACUUM INTO '{into}'")
    if compress:
        with sqlite3.connect(into) as connection:
            rows = connection.execute(
                "SELECT originator_id, originator_version, state FROM ledger_snapshots"
            ).fetchall()
            connection.executemany(
                "UPDATE ledger_snapshots SET state = ? WHERE originator_id = ? "
                "AND originator_version = ?",
                [(zlib.compress(state), o, v) for o, v, state in rows],
            )
        with sqlite3.connect(into) as connection:
            connection.execute("VACUUM")


def _median_ms(times: list[float]) -> float:
    return round(1000 * statistics.median(times), 3)


def measure(path: Path, folder: Path) -> dict[str, Any]:
    from eventsourcing.persistence import StoredEvent

    from replays.store.application import Ledger

    plain, packed = folder / "plain.sqlite3", folder / "packed.sqlite3"
    _compact(path, plain, compress=False)
    _compact(path, packed, compress=True)
    engines = {
        name: sa.create_engine(f"sqlite:///{p}")
        for name, p in (("plain", plain), ("packed", packed))
    }
    with engines["plain"].connect() as connection:
        snapshot_bytes, snapshots = connection.execute(
            sa.text("SELECT sum(length(state)), count(*) FROM ledger_snapshots")
        ).one()
        event_bytes = connection.execute(
            sa.text("SELECT sum(length(state)) FROM ledger_events")
        ).scalar_one()
        ids = [
            bytes(o)
            for (o,) in connection.execute(
                sa.text(f"SELECT originator_id FROM ledger_snapshots LIMIT {SAMPLE}")
            )
        ]
    with engines["packed"].connect() as connection:
        packed_bytes = connection.execute(
            sa.text("SELECT sum(length(state)) FROM ledger_snapshots")
        ).scalar_one()

    ledger = Ledger(f"sqlite:///{plain}", env={"CREATE_TABLE": "no"})
    to_domain_event = ledger.mapper.to_domain_event
    query = sa.text(
        "SELECT originator_id, originator_version, topic, state FROM ledger_snapshots "
        "WHERE originator_id = :o"
    )
    from uuid import UUID

    def snapshot_load(name: str, originator: bytes) -> float:
        start = time.perf_counter()
        with engines[name].connect() as connection:
            o, version, topic, state = connection.execute(query, {"o": originator}).one()
        if name == "packed":
            state = zlib.decompress(state)
        to_domain_event(StoredEvent(UUID(bytes=bytes(o)), version, topic, state))
        return time.perf_counter() - start

    def game_load(originator: bytes) -> float:
        start = time.perf_counter()
        ledger.repository.get(UUID(bytes=originator))
        return time.perf_counter() - start

    for originator in ids[:5]:  # connections opened, statements compiled
        snapshot_load("plain", originator), snapshot_load("packed", originator)
    plain_times, packed_times, game_times = [], [], []
    for originator in ids:
        plain_times.append(snapshot_load("plain", originator))
        packed_times.append(snapshot_load("packed", originator))
        game_times.append(game_load(originator))
    plain_ms, packed_ms = _median_ms(plain_times), _median_ms(packed_times)
    # What a save would add: compressing the snapshot it writes.
    with engines["plain"].connect() as connection:
        states = [
            bytes(state)
            for (state,) in connection.execute(
                sa.text(f"SELECT state FROM ledger_snapshots LIMIT {SAMPLE}")
            )
        ]
    compress_times = []
    for state in states:
        start = time.perf_counter()
        zlib.compress(state)
        compress_times.append(time.perf_counter() - start)
    return {
        "snapshots": snapshots,
        "file_bytes": _file_size(plain),
        "file_bytes_compressed_snapshots": _file_size(packed),
        "snapshot_state_bytes": snapshot_bytes,
        "snapshot_state_bytes_compressed": packed_bytes,
        "event_state_bytes": event_bytes,
        "snapshot_share_of_file": round(snapshot_bytes / _file_size(plain), 3),
        "compression_ratio": round(snapshot_bytes / packed_bytes, 2),
        "file_saved_share": round(1 - _file_size(packed) / _file_size(plain), 3),
        "game_load_ms": _median_ms(game_times),
        "snapshot_load_ms": plain_ms,
        "snapshot_load_compressed_ms": packed_ms,
        "compressed_load_ratio": round(plain_ms / packed_ms, 3),
        "compress_ms": _median_ms(compress_times),
        "sample": len(ids),
    }


def run(quick: bool = False) -> dict[str, Any]:
    from bench.verify import build

    games = (
        QUICK_GAMES if quick else int(os.environ.get("RUMMY_LEDGER_BENCH_SNAPSHOTS_GAMES") or GAMES)
    )
    db = os.environ.get("RUMMY_LEDGER_BENCH_SNAPSHOTS_DB")
    load_before = round(os.getloadavg()[0], 2)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(db) if db else Path(folder) / "store.sqlite3"
        if not path.exists():
            build(f"sqlite:///{path}", games)
        result = measure(path, Path(folder))
    result.update(games=games, load_before=load_before, load_after=round(os.getloadavg()[0], 2))
    result["rows"] = [
        {
            "benchmark": f"snapshots, {games:,} games, SQLite: database file with zlib-compressed snapshots (bytes)",
            "figure": result["file_bytes_compressed_snapshots"],
            "baseline": result["file_bytes"],
            "baseline_is": "the same store, snapshots as stored today",
            "ratio": round(result["file_bytes"] / result["file_bytes_compressed_snapshots"], 3),
        },
        {
            "benchmark": f"snapshots, {games:,} games, SQLite: a snapshot read and decoded, compressed (ms)",
            "figure": result["snapshot_load_compressed_ms"],
            "baseline": result["snapshot_load_ms"],
            "baseline_is": "the same snapshot stored as today",
            "ratio": result["compressed_load_ratio"],
        },
    ]
    return result
