"""Reading the event store and the integrity tables for sealing and verification.

Rows are read with plain SQL and compared as raw bytes: verification must not trust the
application (its caches, snapshots or decoding), and it streams millions of rows, so it
skips the per-value conversions an ORM would do. Aggregate ids travel as their 16 raw
bytes; the event store keeps them as 16 bytes on SQLite and as ``uuid`` on PostgreSQL.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from operator import itemgetter
from typing import Any, NamedTuple
from uuid import UUID

import sqlalchemy as sa

from replays.integrity import merkle
from replays.integrity.canonical import event_leaf
from replays.integrity.checkpoint_blocks import Blocks, block_level, rest_subtrees
from replays.integrity.models import INTEGRITY_TABLES, MEMO_TABLES, NODE_MIN_LEVEL, Seal, TreeNode
from replays.store.db import Base, engine_for
from replays.store.decoding import _TOPICS, CorruptValue, known_topics, shorten
from replays.store.schema import EVENTS_TABLE
from replays.store.settings import database_url

# The tables' Core columns, not the mapped classes': a statement naming a mapped class's
# attribute is compiled through the ORM, and a process's first one configures every
# mapper of the application (about 84 million instructions: verify on a 100-game store
# needs none of it).
SEALS, NODES = Seal.__table__.c, TreeNode.__table__.c

BATCH = 2000


class IntegrityError(Exception):
    """Integrity work that cannot go on (missing tables, no such game, a failing proof)."""


class UnknownGame(IntegrityError, LookupError):
    pass


def engine(url: str | None) -> sa.Engine:
    # Resolved first: engine_for caches by its argument, and None would pin whichever
    # database the environment named on the first call.
    return engine_for(database_url(url))


_TABLES_SEEN: set[str] = set()


def require_tables(connection: sa.Connection) -> None:
    """A clear error when the integrity tables were never built (checked once per database)."""
    url = connection.engine.url.render_as_string(hide_password=False)
    if url in _TABLES_SEEN:
        return
    inspector = sa.inspect(connection)
    missing = [t.name for t in INTEGRITY_TABLES if not inspector.has_table(t.name)]
    if missing:
        raise IntegrityError(
            f"integrity tables missing ({', '.join(missing)}): run `rummy-ledger db upgrade`"
        )
    _TABLES_SEEN.add(url)


def read_snapshot(connection: sa.Connection) -> sa.Connection:
    """One consistent view for the whole read while saves carry on: events and their seals
    commit together, so a view taken in one piece never shows one without the other."""
    if connection.dialect.name == "postgresql":
        connection.execution_options(isolation_level="REPEATABLE READ")
    elif connection.dialect.name == "sqlite":
        # The driver would run each SELECT on its own; in WAL mode a read transaction sees
        # the database as of its first read.
        connection.exec_driver_sql("BEGIN")
    return connection


def has_table(connection: sa.Connection, name: str) -> bool:
    return sa.inspect(connection).has_table(name)


def create_tables(url: str | None = None) -> None:
    """Create the integrity tables directly (tests, and databases Alembic does not manage)."""
    Base.metadata.create_all(engine(url), tables=INTEGRITY_TABLES + MEMO_TABLES)


def progress_bar(total: int | None, desc: str, enabled: bool):
    """tqdm on a terminal only, so logs and pipes stay clean."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="ev", disable=not (enabled and sys.stderr.isatty()))


def chunks(items: Sequence, size: int) -> Iterator[Sequence]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# -- stored events -------------------------------------------------------------------------
class StoredRow(NamedTuple):
    """One stored event as read for verification. A named tuple: ``verify`` makes one or
    two for every stored event, and a frozen dataclass costs three times as much to make."""

    notification_id: int
    originator: bytes  # the aggregate id's 16 bytes
    version: int
    topic: str
    state: bytes
    # Why the row cannot be trusted as stored (its state is not bytes, or is missing),
    # so verification reports it and goes on instead of failing on it.
    defect: str | None = None

    @property
    def leaf(self) -> bytes:
        return event_leaf(self.originator, self.version, self.topic, self.state)

    @property
    def originator_id(self) -> UUID:
        return UUID(bytes=self.originator)


def raw_id(value: Any) -> bytes:
    """An aggregate id as 16 bytes, whatever the driver returned (UUID, 16 bytes, or the
    32 hex digits SQLAlchemy's ``Uuid`` keeps on SQLite). The SQLite text is tested first
    and by exact type, after the 16 bytes the event store's own column gives there:
    ``verify`` calls this once or twice for every stored event."""
    if type(value) is bytes and len(value) == 16:
        return value
    if type(value) is str and len(value) == 32:
        return bytes.fromhex(value)
    if isinstance(value, UUID):
        return value.bytes
    if isinstance(value, str):
        return bytes.fromhex(value) if len(value) == 32 else UUID(value).bytes
    return bytes(value)


def id_param(connection: sa.Connection, originator: bytes) -> Any:
    """An aggregate id as the event store's column wants it on this engine."""
    return originator if connection.dialect.name == "sqlite" else UUID(bytes=originator)


def seal_id_param(connection: sa.Connection, originator: bytes) -> Any:
    """An aggregate id as the integrity tables' ``Uuid`` column holds it on this engine,
    for plain SQL (32 hex digits on SQLite, a native uuid elsewhere)."""
    return originator.hex() if connection.dialect.name == "sqlite" else UUID(bytes=originator)


def _stored(r: Any) -> StoredRow:
    state, topic = r[4], r[3]
    # The ledger's own topics (replays.store.decoding's allow-list, one dict look-up).
    if type(state) is bytes and type(topic) is str and type(r[2]) is int and topic in _TOPICS:
        originator = r[1]
        if type(originator) is not bytes or len(originator) != 16:  # raw_id's first case
            originator = raw_id(originator)
        # The tuple made directly: the named tuple's own __new__ is a Python call, and
        # verify makes a row this way for every stored event, twice.
        return _new_row(StoredRow, (r[0], originator, r[2], topic, state, None))
    return _mistyped(r)


_new_row = tuple.__new__


def _mistyped(r: Any) -> StoredRow:
    """A row whose columns are not what the ledger writes (a state stored as TEXT or
    NULL, a NULL topic): kept with its defect named, its bytes as close to the stored
    ones as can be had, so the pass goes on to the end."""
    state, topic, defect = r[4], r[3], None
    if isinstance(state, str):
        state, defect = state.encode("utf-8", "surrogateescape"), "its state is stored as text"
    elif state is None:
        state, defect = b"", "its state is NULL"
    elif isinstance(state, bytes | bytearray | memoryview):
        state = bytes(state)
    else:
        state, defect = str(state).encode(), f"its state is a {type(state).__name__}"
    if not isinstance(topic, str):
        what = "NULL" if topic is None else f"a {type(topic).__name__}"
        topic, defect = str(topic or ""), f"its topic is {what}"
    elif topic not in known_topics():
        defect = f"{EVENTS_TABLE}: unknown topic {shorten(topic)}"
    if type(r[2]) is not int:
        raise CorruptValue(EVENTS_TABLE, "originator_version", r[2], "not an integer", {"id": r[0]})
    try:
        originator = raw_id(r[1])
    except (TypeError, ValueError):
        originator, defect = bytes(16), "its originator id is unreadable"
    return StoredRow(r[0], originator, int(r[2] or 0), topic, state, defect)


_COLUMNS = "id, originator_id, originator_version, topic, state"
_TOPIC_OF = itemgetter(3)


def plain_rows(connection: sa.Connection, query: str, params: dict[str, Any]) -> Iterator[Any]:
    """The rows of a plain SQL query (named ``:params``) as the driver gives them, in the
    connection's own transaction. On SQLite straight from its cursor: these queries
    convert nothing, and SQLAlchemy's result rows cost as much again as the read
    (``verify`` reads every event twice, every seal once). Elsewhere through SQLAlchemy."""
    if connection.dialect.name == "sqlite":
        return connection.connection.dbapi_connection.execute(query, params)
    return iter(connection.execute(sa.text(query), params))


def event_rows(
    connection: sa.Connection,
    table: str = EVENTS_TABLE,
    batch: int = BATCH,
    topics: set | None = None,
) -> Iterator[StoredRow]:
    """Every stored event in notification order (keyset pages, so memory stays flat).
    ``topics``: a set given every topic value read, as stored (a page at a time)."""
    for rows in event_pages(connection, table, batch, topics):
        yield from map(_stored, rows)


def event_pages(
    connection: sa.Connection,
    table: str = EVENTS_TABLE,
    batch: int = BATCH,
    topics: set | None = None,
) -> Iterator[list[Any]]:
    """:func:`event_rows`'s pages as the driver gives their rows (``id, originator_id,
    originator_version, topic, state``), for a reader that checks the values itself
    (``verify``'s store pass: :func:`_stored` once per event is a Python call it spares
    on every usual one)."""
    query = f"SELECT {_COLUMNS} FROM {table} WHERE id > :last ORDER BY id LIMIT :n"
    last = -(2**62)  # forged rows may carry any id, negative ones included
    while True:
        rows = list(plain_rows(connection, query, {"last": last, "n": batch}))
        if topics is not None:
            topics.update(map(_TOPIC_OF, rows))
        yield rows
        if len(rows) < batch:
            return
        last = rows[-1][0]


class Pages:
    """A stream of rows read a page at a time (:func:`event_pages`, :func:`seal_pages`),
    for ``verify``'s store pass: it takes runs of usual rows straight from the page by
    index (``page``, ``at``), with their aggregate ids as 16 bytes (``ids``: None when
    some value on the page is not what the ledger writes, and the page is then read row
    by row), and any other row converted as the plain readers convert it (:meth:`current`:
    :func:`_stored` or :func:`_seal`, which name or raise on what they cannot read)."""

    __slots__ = ("_convert", "_ids", "_pages", "at", "ids", "page")

    def __init__(
        self,
        pages: Iterator[list[Any]],
        convert: Any,
        ids: Any,
    ) -> None:
        self._pages, self._convert, self._ids = pages, convert, ids
        self.page: list[Any] = []
        self.at = 0
        self.ids: Sequence[bytes] | None = None

    def turn(self) -> bool:
        """On to the next page with rows once this one is read: False past the last."""
        while self.at >= len(self.page):
            page = next(self._pages, None)
            if page is None:
                return False
            self.page, self.at, self.ids = page, 0, self._ids(page) if page else None
        return True

    def advance(self, at: int) -> tuple[list[Any], int, Sequence[bytes] | None, int] | None:
        """Read up to ``at`` (the end of the page): the next page with rows, with its
        reading position, ids and length (None past the last)."""
        self.at = at
        if not self.turn():
            return None
        return self.page, self.at, self.ids, len(self.page)

    def current(self) -> Any:
        """The row at the reading position, converted (None past the last)."""
        return self._convert(self.page[self.at]) if self.turn() else None


def event_stream(pages: Iterator[list[Any]]) -> Pages:
    return Pages(pages, _stored, _event_ids)


def seal_stream(pages: Iterator[list[Any]]) -> Pages:
    return Pages(pages, _seal, _seal_ids)


def _event_ids(page: list[Any]) -> Sequence[bytes] | None:
    """The page's aggregate ids as 16 bytes when every row of it is one :func:`_stored`
    takes by its first case (a row of the ledger's own types and topics, no defect),
    else None. Column by column: C loops, a few instructions a row."""
    _, originators, versions, topics, states = zip(*page, strict=True)
    if (
        set(map(type, states)) != {bytes}
        or set(map(type, topics)) != {str}
        or set(map(type, versions)) != {int}
        or not known_topics().issuperset(topics)
    ):
        return None
    return _ids16(originators)


def _seal_ids(page: list[Any]) -> Sequence[bytes] | None:
    """The page's aggregate ids as 16 bytes when :func:`_seal` takes every row of it as
    it is (its values of the types a seal holds), else None."""
    positions, notification_ids, originators, versions, games, leaves, chains = zip(
        *page, strict=True
    )
    if (
        set(map(type, leaves)) != {bytes}
        or set(map(type, chains)) != {bytes}
        or set(map(type, positions)) != {int}
        or set(map(type, notification_ids)) != {int}
        or set(map(type, versions)) != {int}
        or set(map(type, games)) != {str}
    ):
        return None
    return _ids16(originators)


def _ids16(originators: Sequence[Any]) -> Sequence[bytes] | None:
    """The ids as :func:`raw_id` gives them, when each is 16 bytes (None otherwise)."""
    kinds = set(map(type, originators))
    if kinds == {bytes} and set(map(len, originators)) == {16}:
        return originators  # the event store's own column on SQLite
    try:
        if kinds == {str} and set(map(len, originators)) == {32}:
            ids = list(map(bytes.fromhex, originators))  # the integrity tables on SQLite
        else:
            ids = list(map(raw_id, originators))
    except (TypeError, ValueError):
        return None
    return ids if set(map(len, ids)) == {16} else None


def events_after(
    connection: sa.Connection, after: int, limit: int, table: str = EVENTS_TABLE
) -> list[StoredRow]:
    query = sa.text(f"SELECT {_COLUMNS} FROM {table} WHERE id > :last ORDER BY id LIMIT :n")
    return [_stored(r) for r in connection.execute(query, {"last": after, "n": limit})]


def game_rows(
    connection: sa.Connection, originators: Iterable[bytes], table: str = EVENTS_TABLE
) -> list[StoredRow]:
    """The stored events of some aggregates, by aggregate then version."""
    query = sa.text(
        f"SELECT {_COLUMNS} FROM {table} WHERE originator_id = :o ORDER BY originator_version"
    )
    return [
        _stored(r)
        for originator in originators
        for r in connection.execute(query, {"o": id_param(connection, originator)})
    ]


def count_events(
    connection: sa.Connection, table: str = EVENTS_TABLE, after: int | None = None
) -> int:
    where = "" if after is None else " WHERE id > :last"
    return connection.execute(
        sa.text(f"SELECT count(*) FROM {table}{where}"), {"last": after}
    ).scalar_one()


def game_id_from_state(state: bytes) -> str | None:
    """The record's game id in a game's first event (its table configuration).

    Found by content rather than by event class, so that verification keeps working
    over events whose classes were renamed or moved since they were written.
    """
    try:
        data = json.loads(state)
    except (ValueError, UnicodeDecodeError):
        return None
    todo, seen = [data], 0
    while todo and seen < 200:
        item = todo.pop(0)
        seen += 1
        if isinstance(item, dict):
            value = item.get("game_id")
            if isinstance(value, str):
                return value
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)
    return None


# -- seals -----------------------------------------------------------------------------------
class SealRow(NamedTuple):
    position: int
    notification_id: int
    originator: bytes
    version: int
    game_id: str
    leaf: bytes
    chain: bytes


_SEAL_COLUMNS = (
    "position, notification_id, originator_id, originator_version, game_id, leaf_hash, chain_hash"
)


def _seal(r: Any) -> SealRow:
    # Unpacked at once: verify makes one for every seal.
    position, notification_id, originator, version, game_id, leaf, chain = r
    if type(leaf) is not bytes or type(chain) is not bytes:
        leaf, chain = _seal_bytes(r, 5, "leaf_hash"), _seal_bytes(r, 6, "chain_hash")
    if (
        type(position) is int
        and type(notification_id) is int
        and type(version) is int
        and type(game_id) is str
    ):
        # raw_id, its SQLite case first (the integrity tables keep 32 hex digits there).
        if type(originator) is str and len(originator) == 32:
            originator = bytes.fromhex(originator)
        else:
            originator = raw_id(originator)
        if len(originator) == 16:
            return _new_row(
                SealRow, (position, notification_id, originator, version, game_id, leaf, chain)
            )
    # A value of the wrong kind: verify's careful pass names it (replays.store.decoding).
    raise CorruptValue("integrity_seals", "a column", r, "not what a seal holds")


def _seal_bytes(r: Any, index: int, column: str) -> bytes:
    if isinstance(r[index], bytes | bytearray | memoryview):
        return bytes(r[index])
    raise CorruptValue("integrity_seals", column, r[index], "not bytes")


def seal_rows(connection: sa.Connection, batch: int = BATCH) -> Iterator[SealRow]:
    """Every seal in position (= notification) order."""
    for rows in seal_pages(connection, batch):
        yield from map(_seal, rows)


def seal_pages(connection: sa.Connection, batch: int = BATCH) -> Iterator[list[Any]]:
    """:func:`seal_rows`'s pages as the driver gives their rows (the columns of
    :class:`SealRow`, the id as stored), for a reader that checks the values itself."""
    query = (
        f"SELECT {_SEAL_COLUMNS} FROM integrity_seals WHERE position > :last "
        "ORDER BY position LIMIT :n"
    )
    last = -1
    while True:
        rows = list(plain_rows(connection, query, {"last": last, "n": batch}))
        yield rows
        if len(rows) < batch:
            return
        last = rows[-1][0]


def game_seals(connection: sa.Connection, originators: Iterable[bytes]) -> list[SealRow]:
    query = sa.text(
        f"SELECT {_SEAL_COLUMNS} FROM integrity_seals WHERE originator_id = :o "
        "ORDER BY originator_version"
    )
    return [
        _seal(r)
        for o in originators
        for r in connection.execute(query, {"o": seal_id_param(connection, o)})
    ]


def sealed_up_to(connection: sa.Connection) -> int:
    """The highest sealed notification id (0 when nothing is sealed)."""
    return connection.scalar(sa.select(sa.func.max(SEALS.notification_id))) or 0


def seal_head(connection: sa.Connection) -> tuple[int, int]:
    """``(number of seals, highest sealed notification id)``; ``(0, 0)`` when none."""
    # Two queries: with both aggregates in one, SQLite scans the table instead of taking
    # each maximum from its index.
    top = connection.scalar(sa.select(sa.func.max(SEALS.position)))
    return (0 if top is None else top + 1), sealed_up_to(connection)


# -- the stored tree -------------------------------------------------------------------------
class StoredTree:
    """Complete subtree hashes read from the stored nodes (high levels) and seals (low)."""

    def __init__(self, connection: sa.Connection) -> None:
        self.connection = connection
        self._cache: dict[tuple[int, int], bytes] = {}

    def size(self) -> int:
        return seal_head(self.connection)[0]

    def prefetch(self, subtrees: Iterable[tuple[int, int]]) -> None:
        wanted = [s for s in set(subtrees) if s not in self._cache]
        high = [s for s in wanted if s[0] >= NODE_MIN_LEVEL]
        positions = sorted(
            {p for lv, ix in wanted if lv < NODE_MIN_LEVEL for p in range(ix << lv, (ix + 1) << lv)}
        )
        for chunk in chunks(high, 400):
            rows = self.connection.execute(
                sa.select(NODES.level, NODES.index, NODES.hash).where(
                    sa.tuple_(NODES.level, NODES.index).in_(chunk)
                )
            )
            for level, index, value in rows:
                self._cache[(level, index)] = bytes(value)
        leaves: dict[int, bytes] = {}
        for chunk in chunks(positions, 900):
            rows = self.connection.execute(
                sa.select(SEALS.position, SEALS.leaf_hash).where(SEALS.position.in_(chunk))
            )
            leaves.update((p, bytes(h)) for p, h in rows)
        for level, index in wanted:
            span = range(index << level, (index + 1) << level)
            if level < NODE_MIN_LEVEL and all(p in leaves for p in span):
                self._cache[(level, index)] = merkle.tree_hash([leaves[p] for p in span])

    def subtree(self, level: int, index: int) -> bytes:
        key = (level, index)
        if key not in self._cache:
            self.prefetch([key])
        try:
            return self._cache[key]
        except KeyError:
            raise IntegrityError(
                f"the stored tree lacks the subtree of level {level}, index {index}: "
                "seals or tree nodes were deleted"
            ) from None

    def root(self, size: int) -> bytes:
        if size == 0:
            return merkle.EMPTY_ROOT
        self.prefetch(merkle.subtrees_of(0, size))
        return merkle.range_hash(0, size, self.subtree)

    def blocks(self, size: int) -> Blocks:
        """The block hashes a checkpoint file of ``size`` events carries
        (:mod:`replays.integrity.checkpoint_blocks`): one indexed read of the stored level."""
        level = block_level(size)
        count = size >> level
        rows = self.connection.execute(
            sa.select(NODES.index, NODES.hash)
            .where(NODES.level == level, NODES.index < count)
            .order_by(NODES.index)
        ).all()
        if [index for index, _ in rows] != list(range(count)):
            raise IntegrityError(
                f"the stored tree lacks subtrees of level {level} below {count}: "
                "tree nodes were deleted; run `rummy-ledger verify`"
            )
        rest = tuple(self.subtree(lv, ix) for lv, ix in rest_subtrees(size, level))
        return Blocks(level, tuple(bytes(value) for _, value in rows), rest)

    def leaves(self, start: int, end: int) -> dict[int, bytes]:
        """The sealed leaf hashes at positions ``start``..``end - 1`` (those stored)."""
        rows = self.connection.execute(
            sa.select(SEALS.position, SEALS.leaf_hash).where(
                SEALS.position >= start, SEALS.position < end
            )
        )
        # A leaf hash stored as anything but bytes is left out (a finding of the pass,
        # not a reason to stop locating).
        return {
            position: bytes(value)
            for position, value in rows
            if isinstance(value, bytes | bytearray | memoryview)
        }

    def hashes_of(self, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        self.prefetch(s for a, b in ranges for s in merkle.subtrees_of(a, b))
        return [merkle.range_hash(a, b, self.subtree) for a, b in ranges]
