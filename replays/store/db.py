"""The SQLAlchemy side of the ledger database: one declarative base for every table we own.

Tables the project owns (read models, tokens, integrity seals, accounts, access log) are
declared on :class:`Base` in their own modules and built by the Alembic migrations in
`migrations/`; the event store's own tables belong to eventsourcing-sqlalchemy.
"""

from __future__ import annotations

import os
import sqlite3
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, sessionmaker

from replays.store.settings import database_url

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


def _as_given(value):
    return value


def _bind_without_adapting() -> None:
    """Let Python's ``sqlite3`` bind bytes, memoryviews and None as they are, without its
    search for an adapter on each one.

    The driver binds only exact ints, floats, str and bytearrays straight away; every
    other value goes to its adapter registry, then looks for an ``__adapt__`` on the
    protocol type (a failed class attribute look-up that formats an AttributeError) and a
    ``__conform__`` on the value, and finally binds the value itself: about 2,800
    instructions a value, 3.9 % of an import's (each event's state, every seal's hashes,
    the read rows' NULLs). Registered as adapters that return the value, they are bound
    exactly as before (the value itself), for a dictionary look-up and a call (about
    1,300). The registry is the process's: the adapters change no value any code binds."""
    for kind in (bytes, memoryview, type(None)):
        sqlite3.register_adapter(kind, _as_given)


_bind_without_adapting()


class Base(DeclarativeBase):
    metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)


class StoredBytes(ValueError):
    """A value read as text (a table, a player, a game id) came back as bytes: SQLite's
    answer for a BLOB an insider stored in a text column, where every other value of the
    wrong kind fails the read itself. The read fails the same way, so that its callers
    find the row, name it and go on without it, rather than print the bytes as a value."""


def _text_not_bytes(value):
    if value.__class__ is bytes:
        raise StoredBytes(f"a text column holds bytes: {value[:16]!r}")
    return value


class StoredText(sa.types.TypeDecorator):
    """Text of a table we own (``sa.String``'s DDL): on SQLite, a BLOB an insider stores in it
    fails the read, as every other value of the wrong kind does, instead of coming back as
    ``bytes`` that a page, the API or a command would print (``b'\\x00\\xff'``) as the
    value. The failed read is what the fallbacks act on (web/unreadable.py's ``guard``,
    :func:`replays.store.decoding.read_around_unreadable`): they find the row
    (``typeof(col) != 'text'``), name it and draw the rest. PostgreSQL's text
    columns hold text only: no processor there, nothing added to a read."""

    impl = sa.String
    cache_ok = True

    def result_processor(self, dialect, coltype):
        return _text_not_bytes if dialect.name == "sqlite" else None


class StoredLongText(StoredText):
    """:class:`StoredText` of unbounded length (``sa.Text``'s DDL)."""

    impl = sa.Text
    cache_ok = True  # SQLAlchemy reads it from each class itself, never inherited


class NotPlayerIds(ValueError):
    """A game's stored players (``games.players``) read back as something other than a
    list of their ids: JSON that parses to ``true``, ``null``, ``123``, ``{}``, ``[]`` or
    ``["p1", 5]``, each of which a reader would otherwise iterate, test membership in or
    print as if it were the game's players."""


def is_player_ids(value) -> bool:
    """Whether ``value`` is what :class:`StoredPlayerIds` holds: a non-empty list of texts."""
    return type(value) is list and bool(value) and all(type(p) is str for p in value)


class StoredPlayerIds(sa.types.TypeDecorator):
    """A game's players, the JSON list of their ids (``sa.JSON``'s DDL): a stored value that
    parses but is no such list fails the read, as a value that does not parse does, so
    that no page, access check or command decodes the column again to be sure of it. The
    failed read is what the fallbacks act on, as for :class:`StoredText`: the scan finds
    the row (:func:`replays.store.decoding.find_corrupt`, "not a list of player ids"),
    names it and the rest is drawn without it.

    >>> from sqlalchemy.dialects.sqlite import dialect
    >>> read = StoredPlayerIds().dialect_impl(dialect()).result_processor(dialect(), None)
    >>> read('["p1", "p2"]')
    ['p1', 'p2']
    >>> read("true")
    Traceback (most recent call last):
    ...
    replays.store.db.NotPlayerIds: a game's players hold True, not a list of player ids
    """

    impl = sa.JSON
    cache_ok = True

    def result_processor(self, dialect, coltype):
        # SQLite's JSON is parsed here; PostgreSQL's driver hands over the parsed value.
        parse = self.impl_instance.result_processor(dialect, coltype)

        def read(value):
            ids = value if parse is None else parse(value)
            if not is_player_ids(ids):
                raise NotPlayerIds(f"a game's players hold {ids!r:.40}, not a list of player ids")
            return ids

        return read


def as_stored(kind: sa.types.TypeEngine) -> sa.types.TypeEngine:
    """The type a reader that takes values as stored reads ``kind``'s column with: a
    :class:`StoredText`'s plain text type (no processor), so that ``verify``'s read-model
    check keeps comparing texts in their stored form, at no cost; it names a BLOB there as
    a value that differs from the events', and its scan as one of the wrong kind. A
    :class:`StoredPlayerIds`'s plain JSON likewise: a list of the wrong shape differs from
    the events' players."""
    if isinstance(kind, StoredText | StoredPlayerIds):
        return kind.impl_instance
    return kind


def engine_for(url: str | None = None) -> sa.Engine:
    """One engine per database URL per process (SQLite gets foreign keys and WAL).

    The URL is resolved before the cache is consulted, so ``engine_for()`` follows
    ``RUMMY_LEDGER_DATABASE_URL`` when it changes (tests switch databases per test).
    """
    return _engine(database_url(url))


_ENGINES: dict[str, sa.Engine] = {}


def _engine(url: str) -> sa.Engine:
    engine = _ENGINES.get(url)
    if engine is None:
        if len(_ENGINES) >= 16:  # tests open many databases: keep the newest few
            _ENGINES.pop(next(iter(_ENGINES)))
        engine = _ENGINES[url] = _new_engine(url)
    return engine


# The pools a forked child inherited: kept referenced for the child's life, never closed.
_INHERITED: list = []


def forget_pool_in_child(engine: sa.Engine) -> None:
    """In a forked child: give ``engine`` a pool of its own. The parent's pooled
    connections are dropped unclosed, and kept referenced so the garbage collector does
    not close them either (a SQLite connection closed in a child may checkpoint and delete
    the parent's write-ahead log; closing a PostgreSQL one ends the parent's session)."""
    _INHERITED.append(engine.pool)
    engine.dispose(close=False)


def _forget_engines_in_child() -> None:
    """A forked process (``import --jobs``, ``verify --jobs``, the simulator's workers)
    must not use its parent's pooled connections (:func:`forget_pool_in_child`): the
    child opens its own."""
    for engine in _ENGINES.values():
        forget_pool_in_child(engine)
    _ENGINES.clear()


os.register_at_fork(after_in_child=_forget_engines_in_child)


# SQL's name for :func:`valid_utf8`, registered on every SQLite connection.
VALID_UTF8 = "rl_valid_utf8"


def valid_utf8(value: bytes | None) -> bool:
    """Whether ``value`` (a stored text's bytes) is UTF-8: SQL's ``rl_valid_utf8``, which
    :func:`replays.store.decoding.find_corrupt` asks of SQLite's text values, since SQLite
    keeps whatever bytes it is given as text and Python cannot read them back."""
    if value is None:
        return True
    try:
        bytes(value).decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _surrogate_text(value: bytes) -> str:
    return value.decode("utf-8", "surrogateescape")


@contextmanager
def text_as_stored(connection: sa.Connection) -> Iterator[None]:
    """On SQLite, text read on ``connection`` meanwhile that is not UTF-8 comes back with each
    bad byte as a lone surrogate (``'\\udcff'``; UTF-8 itself never decodes to one) instead of
    failing the whole read: SQLite keeps whatever bytes an insider stores as text. Valid
    text reads as usual. Dearer than the usual reading (a Python call a value, twice its
    cost), so the readers that must see such a value use it: the search for corrupt
    values, and a read that failed on one (:func:`undecodable`), run again."""
    if connection.dialect.name != "sqlite":
        yield
        return
    raw = connection.connection.driver_connection
    usual = raw.text_factory
    raw.text_factory = _surrogate_text
    try:
        yield
    finally:
        raw.text_factory = usual


def undecodable(error: BaseException) -> bool:
    """Whether ``error`` is SQLite's refusal to read stored text that is not UTF-8."""
    return "Could not decode to UTF-8" in str(error)


class _SQLiteConnection(sqlite3.Connection):
    """A SQLite connection that knows its open cursors (weakly), so that it can end their
    reads when it goes back to its pool (:func:`end_reads_on_return`)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.cursors: weakref.WeakSet[sqlite3.Cursor] = weakref.WeakSet()

    def cursor(self, *args, **kwargs) -> sqlite3.Cursor:
        cursor = super().cursor(*args, **kwargs)
        self.cursors.add(cursor)
        return cursor


def end_reads_on_return(engine: sa.Engine) -> None:
    """On SQLite, close every cursor a connection still has open when it goes back to
    ``engine``'s pool.

    A read that failed part-way (a stored value its column's type cannot decode, raised
    while the rows are iterated) leaves its cursor mid-statement, referenced by the
    exception's traceback until the garbage collector frees it. Python's ``sqlite3``
    (3.11 on) no longer resets statements on rollback, so the pooled connection kept that
    statement's read open: in WAL mode every later user of the connection saw the
    database as it was then (a corrupt value just written, not found; a verify's figures
    from the past), and its next write failed with "database is locked". Closing the
    cursors ends the read; a cursor used after its connection went back is a bug anyway.
    Costs a weak reference a cursor. Other engines keep no read open outside a
    transaction, and the pool's rollback ends those."""
    if engine.dialect.name != "sqlite":
        return

    @sa.event.listens_for(engine, "do_connect")
    def _tracking(_dialect, _record, _cargs, cparams):
        cparams.setdefault("factory", _SQLiteConnection)

    @sa.event.listens_for(engine, "reset")
    def _end_reads(dbapi_connection, _record, _reset_state):
        for cursor in list(getattr(dbapi_connection, "cursors", ())):
            cursor.close()


def _new_engine(url: str) -> sa.Engine:
    engine = sa.create_engine(url, future=True)
    end_reads_on_return(engine)
    if url.startswith("sqlite"):

        @sa.event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_connection, _record):
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.close()
            dbapi_connection.create_function(VALID_UTF8, 1, valid_utf8, deterministic=True)

    return engine


@contextmanager
def one_statement(url: str | None = None) -> Iterator[sa.Connection]:
    """A pooled connection outside any transaction, for a statement that is a transaction of
    its own (a look-up by key, one INSERT).

    The usual transaction around one statement costs two more round trips (BEGIN, and
    COMMIT or ROLLBACK). Every page pays them on the primary for the signed-in account and
    the access log, even a page a read replica serves, and round trips to a busy primary
    are what a replica's page waits on (bench/cluster_failover.py). An INSERT run this way
    commits as any other transaction does, under the server's ``synchronous_commit``."""
    with engine_for(url).connect() as connection:
        yield connection.execution_options(isolation_level="AUTOCOMMIT")


def session_factory(url: str | None = None) -> sessionmaker:
    return sessionmaker(engine_for(database_url(url)), expire_on_commit=False)
