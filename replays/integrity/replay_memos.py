"""Remembered replays: what a game's events give, kept so that its badge need not replay it.

A game page's "Ledger verified" badge checks the game's events against their seals, the
tree and the latest checkpoint (cheap: a read and a hash per event), and its read rows
against a replay of its events (dear: every event decoded and applied, the settlement
recomputed, the deal checked against its seeds, the snapshots compared). The replay is a
pure function of the stored events (and the stored snapshots it compares), so its outcome
can be remembered: a *memo* holds the rows the events give, the notes of the deal and
snapshot checks, and the digest of everything the replay read.

A memo is only ever used for the same inputs: its key is a SHA-256 digest of the game's
stored event rows (every byte the seals cover), the projection's reach, the stored
snapshots, which checks ran, and a fingerprint of the code that replays (the source of
``domain`` and ``replays``, and the event library's version). An edited event, snapshot or
a new release misses the memo, and the replay runs again. The stored read rows are *not*
in the key: they are compared with the remembered rows on every view, so an edited read
row shows as "read model differs" exactly as before.

Memos live in the database (``integrity_replay_memos``), beside what an insider could edit,
so each carries an HMAC-SHA256 under a key kept in the key directory (``memo-key``, beside
the signing key; written by ``rummy-ledger keys init`` or on first use where the signing
key is). A memo whose MAC does not hold is ignored. A process without the key neither reads
nor writes memos, and only memos from a replay that found nothing are written.

Only the pages' verdict reads memos (:func:`replays.integrity.evidence.integrity_verdict`).
``rummy-ledger verify`` always replays, since its purpose is to distrust what is stored;
it writes memos for the games it finds clean, so pages viewed after a verify run answer
at once.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from replays.integrity.models import ReplayMemo
from replays.integrity.signing import MEMO_KEY_FILE, PRIVATE_KEY_FILE, key_dir, write_memo_key

FORMAT = b"rummy-ledger replay memo 1\0"


# -- the key -----------------------------------------------------------------------------------
def memo_key(directory: str | os.PathLike | None = None) -> bytes | None:
    """The key that signs memos, or None where this process is not trusted with one.

    Read from ``memo-key`` in the key directory; created there (32 random bytes, mode
    0600) when the directory holds the signing key but no memo key yet. Whoever can write
    the key directory can sign checkpoints already, so that is no new trust.
    """
    where = key_dir(directory)
    path = where / MEMO_KEY_FILE
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    except OSError:
        return None
    if not (where / PRIVATE_KEY_FILE).exists():
        return None
    try:
        write_memo_key(where)
        return _read_key(path)
    except OSError:
        return None


def _read_key(path: Path) -> bytes:
    key = bytes.fromhex(path.read_text().strip())
    if len(key) < 32:
        raise OSError(f"{path}: a memo key has 32 bytes")
    return key


# -- what the replay read ----------------------------------------------------------------------
@cache
def code_fingerprint() -> bytes:
    """A digest of the code that turns events into rows and checks: every ``.py`` file of
    ``domain`` and ``replays``, and the event library's version. Any change to either makes
    every memo miss."""
    from importlib.metadata import version

    root = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256(version("eventsourcing").encode())
    for package in ("domain", "replays"):
        for path in sorted((root / package).rglob("*.py")):
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.digest()


def inputs_digest(
    game_id: str,
    rows: Iterable,
    reach: int,
    snapshots: Iterable | None,
    deals: bool,
) -> bytes:
    """The digest of everything one game's replay reads: its stored event rows (identity,
    topic, state, and any defect found reading them), how many of them the read rows come
    from, its stored snapshots (None: not checked) and whether its deal is checked."""
    digest = hashlib.sha256(FORMAT + code_fingerprint())
    _field(digest, game_id.encode())
    _field(digest, f"{reach} {int(deals)} {int(snapshots is not None)}".encode())
    for row in rows:
        # One update per row: the lengths first, so no two rows' bytes run together alike.
        topic = row.topic.encode() if isinstance(row.topic, str) else repr(row.topic).encode()
        state = row.state if isinstance(row.state, bytes) else repr(row.state).encode()
        defect = b"" if row.defect is None else b"!" + row.defect.encode()
        head = f"{row.notification_id} {row.version} {len(topic)} {len(defect)} {len(state)}\0"
        digest.update(head.encode() + row.originator + topic + defect + state)
    for snapshot in snapshots or ():
        head = f"snapshot {snapshot.originator_id} {snapshot.originator_version} {snapshot.topic}"
        _field(digest, head.encode())
        _field(digest, snapshot.state)
    return digest.digest()


def _field(digest, data: bytes) -> None:
    # Length-prefixed, so no two sequences of fields hash alike.
    digest.update(len(data).to_bytes(8, "big"))
    digest.update(data)


# -- the remembered outcome ------------------------------------------------------------------
def encode(value: Any) -> Any:
    """JSON for a row's values, each keeping its exact type (the comparison checks types)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, Decimal):
        return {"$decimal": str(value)}
    if isinstance(value, datetime):
        return {"$datetime": value.isoformat()}
    if isinstance(value, date):
        return {"$date": value.isoformat()}
    if isinstance(value, list):
        return [encode(item) for item in value]
    if isinstance(value, tuple):
        return {"$tuple": [encode(item) for item in value]}
    if isinstance(value, dict):
        return {"$dict": [[key, encode(item)] for key, item in value.items()]}
    raise TypeError(f"a memo cannot hold a {type(value).__name__}")


_DECODERS = {
    "$decimal": Decimal,
    "$datetime": datetime.fromisoformat,
    "$date": date.fromisoformat,
    "$tuple": lambda items: tuple(decode(item) for item in items),
    "$dict": lambda pairs: {key: decode(item) for key, item in pairs},
}


def decode(value: Any) -> Any:
    if isinstance(value, list):
        return [decode(item) for item in value]
    if isinstance(value, dict):
        ((tag, inner),) = value.items()
        return _DECODERS[tag](inner)
    return value


def _table(rows: Iterable[dict]) -> dict[str, Any]:
    """Rows of one table as its columns once and each row's values (a move table of a
    long match has over a thousand rows of the same columns)."""
    rows = list(rows)
    columns = list(rows[0]) if rows else []
    if any(list(row) != columns for row in rows):
        return {"rows": [encode(row) for row in rows]}
    return {"columns": columns, "values": [[encode(row[c]) for c in columns] for row in rows]}


def _rows(table: dict[str, Any]) -> list[dict]:
    if "rows" in table:
        return [decode(row) for row in table["rows"]]
    columns = table["columns"]
    return [
        dict(zip(columns, (decode(v) for v in values), strict=True)) for values in table["values"]
    ]


def memo_body(expected) -> bytes:
    """The bytes of a memo's rows: what the game's events give (``Expected``), as JSON
    compressed with zlib (a game's move rows repeat themselves; about a tenth the size)."""
    body = {
        "game_id": expected.game_id,
        "game": encode(expected.game),
        "results": _table(expected.results.values()),
        "moves": _table(expected.moves.values()),
        "entries": _table(expected.entries.values()),
        "settled_version": expected.settled_version,
    }
    return zlib.compress(json.dumps(body, separators=(",", ":")).encode(), 1)


def read_body(body: bytes, entry_key: tuple[str, ...]):
    """The ``Expected`` rows from :func:`memo_body`'s bytes."""
    from replays.readmodels.read_model_checks import Expected

    data = json.loads(zlib.decompress(body))
    expected = Expected(data["game_id"], decode(data["game"]))
    expected.results = {row["player"]: row for row in _rows(data["results"])}
    expected.moves = {row["move_index"]: row for row in _rows(data["moves"])}
    expected.entries = {tuple(row[k] for k in entry_key): row for row in _rows(data["entries"])}
    expected.settled_version = data["settled_version"]
    return expected


def stored_rows_digest(connection: sa.Connection, game_id: str) -> bytes:
    """A digest of one game's stored read rows exactly as the database returns them (every
    column, in key order): equal digests mean rows identical to the ones compared before."""
    return stored_rows_digests(connection, [game_id])[game_id]


def stored_rows_digests(connection: sa.Connection, game_ids: list[str]) -> dict[str, bytes]:
    """:func:`stored_rows_digest` of several games, four queries in all."""
    from replays.readmodels.projections import ENTRIES, GAMES, MOVES, RESULTS

    digests = {game_id: hashlib.sha256(FORMAT + b"read rows\0") for game_id in game_ids}
    for table, order in (
        (GAMES, "game_id"),
        (RESULTS, "player"),
        (MOVES, "move_index"),
        (ENTRIES, "kind, line"),
    ):
        where = "game_id IN :ids" + (" AND dispute_id IS NULL" if table is ENTRIES else "")
        query = sa.text(
            f"SELECT * FROM {table.name} WHERE {where} ORDER BY game_id, {order}"
        ).bindparams(sa.bindparam("ids", expanding=True))
        result = connection.execute(query, {"ids": list(game_ids)})
        columns = list(result.keys())
        at = columns.index("game_id")
        head = repr((table.name, tuple(columns))).encode()
        for digest in digests.values():
            _field(digest, head)
        for row in result.fetchall():
            _field(digests[row[at]], repr(tuple(row)).encode())
    return {game_id: digest.digest() for game_id, digest in digests.items()}


@dataclass
class Memo:
    """One stored memo: the digest of the replay's inputs, the digest of the read rows last
    found to match (None: not compared yet), the deal check's notes, and the rows."""

    digest: bytes
    rows_digest: bytes | None
    notes: list[str]
    body: bytes

    def mac(self, key: bytes, game_id: str) -> bytes:
        message = hashlib.sha256(FORMAT + game_id.encode() + b"\0")
        for part in (self.digest, self.rows_digest or b"", json.dumps(self.notes).encode()):
            _field(message, part)
        _field(message, self.body)
        return hmac.new(key, message.digest(), hashlib.sha256).digest()


# -- reading and writing -----------------------------------------------------------------------
def recall(connection: sa.Connection, key: bytes, game_id: str, digest: bytes) -> Memo | None:
    """The memo for ``game_id`` made from exactly these inputs, when its MAC holds."""
    from replays.integrity.store import has_table

    if not has_table(connection, ReplayMemo.__tablename__):
        return None
    memo = stored_memos(connection, key, [game_id]).get(game_id)
    return memo if memo is not None and memo.digest == digest else None


def stored_memos(connection: sa.Connection, key: bytes, game_ids: list[str]) -> dict[str, Memo]:
    """The stored memos of these games whose MAC holds under ``key`` (a memo written or
    edited by someone without the key is never trusted)."""
    query = sa.select(
        ReplayMemo.game_id,
        ReplayMemo.digest,
        ReplayMemo.rows_digest,
        ReplayMemo.notes,
        ReplayMemo.body,
        ReplayMemo.mac,
    ).where(ReplayMemo.game_id.in_(game_ids))
    found = {}
    for row in connection.execute(query):
        read = _memo_of(row)
        if read is not None and hmac.compare_digest(read[1], read[0].mac(key, row.game_id)):
            found[row.game_id] = read[0]
    return found


def _memo_of(row) -> tuple[Memo, bytes] | None:
    """A stored memo row as a :class:`Memo` and its stored MAC (not checked yet), or None
    when it cannot be read as one: whatever an insider stores (notes nested past the JSON
    parser's depth, a number for bytes) leaves the memo unused, never stops a check."""
    try:
        rows_digest = _bytes(row.rows_digest) if row.rows_digest is not None else None
        notes = list(json.loads(row.notes))
        return Memo(_bytes(row.digest), rows_digest, notes, _bytes(row.body)), _bytes(row.mac)
    except (ValueError, TypeError, RecursionError):
        return None


def _bytes(value: Any) -> bytes:
    # bytes(n) of a number n would make n zero bytes: a huge one exhausts memory.
    if not isinstance(value, bytes | bytearray | memoryview):
        raise TypeError(f"not bytes: {type(value).__name__}")
    return bytes(value)


def remember(engine: sa.Engine, key: bytes, game_id: str, memo: Memo) -> bool:
    """Store (or replace) the memo for ``game_id``; False when the database would not take
    it now (a memo is an optimisation: a locked store or a missing table is no error)."""
    try:
        with engine.begin() as connection, _brief_wait(connection):
            _store(connection, key, {game_id: memo})
    except sa.exc.DBAPIError:
        return False
    return True


def _store(connection: sa.Connection, key: bytes, memos: dict[str, Memo]) -> None:
    """Replace the memos of these games, each with its MAC under ``key``."""
    rows = [
        {
            "game_id": game_id,
            "digest": memo.digest,
            "rows_digest": memo.rows_digest,
            "notes": json.dumps(memo.notes),
            "body": memo.body,
            "mac": memo.mac(key, game_id),
            "made_at": datetime.now(UTC),
        }
        for game_id, memo in memos.items()
    ]
    connection.execute(sa.delete(ReplayMemo).where(ReplayMemo.game_id.in_(list(memos))))
    connection.execute(sa.insert(ReplayMemo), rows)


class _brief_wait:
    """A page that remembers a replay waits at most a moment for the store's write lock (a
    long import may hold it): the memo is then simply written by a later view."""

    WAIT_MS = 100

    def __init__(self, connection: sa.Connection):
        self.connection = connection
        self.sqlite = connection.dialect.name == "sqlite"
        self.before = None

    def __enter__(self):
        if self.sqlite:
            self.before = self.connection.exec_driver_sql("PRAGMA busy_timeout").scalar()
            self.connection.exec_driver_sql(f"PRAGMA busy_timeout = {self.WAIT_MS}")
        elif self.connection.dialect.name == "postgresql":
            self.connection.exec_driver_sql(f"SET LOCAL lock_timeout = '{self.WAIT_MS}ms'")

    def __exit__(self, *exc):
        if self.sqlite and self.before is not None:
            self.connection.exec_driver_sql(f"PRAGMA busy_timeout = {int(self.before)}")


class GameMemo:
    """One game's memo as a one-game check sees it.

    ``recall(reach)`` (when ``read``) gives the stored :class:`Memo` for the same inputs;
    the check then compares the read rows with ``expected()`` unless they are the very rows
    found to match before (``rows_match``). ``remember`` stores what a check established: a
    clean replay's rows, and the read rows it found equal to them.
    """

    def __init__(
        self,
        connection: sa.Connection,
        engine: sa.Engine,
        key: bytes,
        game_id: str,
        rows: list,
        snapshots: list | None,
        deals: bool,
        *,
        read: bool,
    ):
        self.connection, self.engine, self.key, self.game_id = connection, engine, key, game_id
        self.rows, self.snapshots, self.deals, self.read = rows, snapshots, deals, read
        self.digest: bytes | None = None
        self.found: Memo | None = None  # the memo recalled
        self.rows_digest: bytes | None = None  # read rows this check found to match
        self.changed = False

    def recall(self, reach: int) -> Memo | None:
        self.digest = inputs_digest(self.game_id, self.rows, reach, self.snapshots, self.deals)
        if self.read:
            self.found = recall(self.connection, self.key, self.game_id, self.digest)
        return self.found

    def rows_match(self) -> bool:
        """Whether the stored read rows are exactly those a check found to match the same
        events before (then there is nothing to compare); either way the digest is kept."""
        self.rows_digest = stored_rows_digest(self.connection, self.game_id)
        return self.found is not None and self.found.rows_digest == self.rows_digest

    def expected(self, entry_key: tuple[str, ...]):
        return read_body(self.found.body, entry_key)

    def matched(self) -> None:
        """The read rows were compared and found equal to what the events give."""
        if self.rows_digest is None:
            self.rows_digest = stored_rows_digest(self.connection, self.game_id)
        self.changed = True

    def replayed(self, expected, notes: list[str]) -> None:
        """A replay that went to the end and found its deal and snapshots clean."""
        try:
            body = memo_body(expected)
        except TypeError:
            return  # a value the memo cannot hold exactly: the next check replays
        self.found = Memo(self.digest, None, notes, body)
        self.changed = True

    def remember(self) -> bool:
        if not self.changed or self.found is None or self.digest is None:
            return False
        memo = Memo(self.digest, self.rows_digest, self.found.notes, self.found.body)
        return remember(self.engine, self.key, self.game_id, memo)


class MemoWriter:
    """Memos for the games a whole-store ``verify`` replays and finds clean, written a
    batch at a time (:func:`replays.readmodels.read_model_checks.replay_games`).

    A game is remembered only when the store pass found nothing about it (its seals, its
    deal against its seeds, its snapshots and its read rows all held); the memo's inputs
    are what the one-game check of the same game will read, so its badge finds it.
    """

    def __init__(self, engine: sa.Engine, key: bytes, *, deals: bool):
        self.engine, self.key, self.deals = engine, key, deals
        self.written = 0

    def write(self, connection: sa.Connection, report, batch: list) -> None:
        """``batch``: ``(game_id, rows, snapshots or None, Expected)`` of games replayed.
        A game whose stored memo already says the same (same inputs, same read rows, a MAC
        that holds) is left as it is, so a nightly run rewrites only what changed."""
        self.store(self.prepare(connection, report, batch))

    def prepare(self, connection: sa.Connection, report, batch: list) -> dict[str, Memo]:
        """The memos :meth:`write` would store for ``batch``, not stored yet: a ``verify
        --jobs`` worker hands them to the main pass, which alone knows whether the store
        pass found anything about their games (:mod:`replays.readmodels.verify_jobs`)."""
        troubled = {p.game_id for p in report.problems}
        clean = [item for item in batch if item[0] not in troubled]
        if not clean:
            return {}
        ids = [game_id for game_id, *_ in clean]
        rows_digests = stored_rows_digests(connection, ids)
        kept = stored_memos(connection, self.key, ids)
        memos: dict[str, Memo] = {}
        for game_id, rows, snapshots, expected in clean:
            digest = inputs_digest(game_id, rows, len(rows), snapshots, self.deals)
            old = kept.get(game_id)
            if old is not None and (old.digest, old.rows_digest) == (digest, rows_digests[game_id]):
                continue
            try:
                body = memo_body(expected)
            except TypeError:
                continue
            memos[game_id] = Memo(digest, rows_digests[game_id], [], body)
        return memos

    def store(self, memos: dict[str, Memo]) -> None:
        if not memos:
            return
        try:
            with self.engine.begin() as writer:
                _store(writer, self.key, memos)
        except sa.exc.DBAPIError:
            return
        self.written += len(memos)


def memo_writer(url: str | None, *, deals: bool) -> MemoWriter | None:
    """The whole-store verify's memo writer, or None without a memo key or memo table."""
    from replays.integrity.store import engine, has_table

    key = memo_key()
    if key is None:
        return None
    store = engine(url)
    with store.connect() as connection:
        if not has_table(connection, ReplayMemo.__tablename__):
            return None
    return MemoWriter(store, key, deals=deals)
