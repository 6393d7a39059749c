"""Seals written in the save: every write seals its own events in the transaction that
stores them.

Why in the save: a seal written afterwards, by a separate step, trusts whatever the store
holds when that step runs. A row slipped in between a write and the next sealing run was
sealed as if the ledger had written it, and until the run came the newest events were not
covered at all. Written in the same transaction, a seal exists exactly when its event
does: an event row without a seal was not written by the ledger.

Order. Tree positions follow notification ids, and each save continues the tree from the
one-row tree head (:class:`~replays.integrity.models.TreeHead`). Saves are serialised by
the event store's own lock and the seals are written under it: on PostgreSQL the
``LOCK TABLE ... IN EXCLUSIVE MODE`` the library takes before inserting (so that
notification ids commit in the order they were taken; it is held until the commit), on
SQLite the database's one write lock, which the insert takes. So the head a save reads is
the one the save before it committed, and no two saves take the same positions.

A save, once its events are inserted and their notification ids known:

1. reads the tree head and the chain heads of the games it continues (on PostgreSQL in the
   pipeline that takes the lock and inserts: no extra round trip);
2. computes each event's leaf and chain link and the tree's newly completed subtrees;
3. writes the seals, those subtrees, the chain heads and the new tree head (one more
   pipeline); they commit with the events or roll back with them.

A store written before sealing moved here has no tree head yet. The first save builds it
from the stored seals (the slow way, once), and refuses while events lie unsealed after
the last seal: ``rummy-ledger seal`` (:func:`replays.integrity.evidence.seal_new_events`) seals
those first.

>>> from uuid import UUID
>>> batch = SaveSeals([(UUID(int=1), 1, "t", b"{}")], "sqlite")
>>> batch.events[0].leaf.hex()[:16], batch.continuing
('ff41aba18630385b', [])
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from uuid import UUID

import sqlalchemy as sa

from replays.integrity import merkle
from replays.integrity.canonical import GENESIS, LEAF_PREFIX, chain_hash, event_leaf
from replays.integrity.models import HEAD_ID, NODE_MIN_LEVEL
from replays.integrity.store import (
    IntegrityError,
    StoredTree,
    game_id_from_state,
    raw_id,
    seal_head,
)


class SealingError(IntegrityError):
    """A save whose events cannot be sealed: nothing of it was stored."""


@dataclass(slots=True)
class NewEvent:
    originator: bytes  # the aggregate id's 16 bytes
    version: int
    state: bytes
    leaf: bytes
    # The chain link, worked out before the lock for a game whose chain this save starts
    # (its first event here is version 1: the link depends on nothing stored); else None.
    link: bytes | None = None


@dataclass(slots=True)
class ChainHead:
    game_id: str
    version: int
    chain: bytes
    position: int
    stored: bool  # False: the game's first seals, its integrity_games row is new


@dataclass(frozen=True, slots=True)
class Head:
    """The tree head row: where the next seal goes."""

    size: int
    notification_id: int
    frontier: bytes
    root: bytes

    def builder(self) -> merkle.TreeBuilder:
        return merkle.TreeBuilder.from_frontier(self.size, bytes(self.frontier))


class _Sql:
    """The statements on one engine, run on the DB-API connection under SQLAlchemy: a save
    writes a few dozen rows, and SQLAlchemy's per-value processing cost more than that."""

    def __init__(self, dialect: str) -> None:
        self.sqlite = dialect == "sqlite"
        self.pipelines = dialect == "postgresql"
        m = "?" if self.sqlite else "%s"
        self.head = (
            f"SELECT size, notification_id, frontier, root FROM integrity_head WHERE id = {HEAD_ID}"
        )
        self.insert_seal = (
            "INSERT INTO integrity_seals (position, notification_id, originator_id, "
            "originator_version, game_id, leaf_hash, chain_hash) "
            f"VALUES ({m}, {m}, {m}, {m}, {m}, {m}, {m})"
        )
        # PostgreSQL: a save's seals as one statement over arrays (the server's overhead
        # per statement was as much as the row's own insert, and it is paid under the lock),
        # sent in binary (``%b``): psycopg's text form escaped each hash byte by byte in
        # Python, under the lock; binary copies them as they are.
        self.insert_seals_at_once = (
            "INSERT INTO integrity_seals (position, notification_id, originator_id, "
            "originator_version, game_id, leaf_hash, chain_hash) SELECT * FROM unnest("
            "%b::bigint[], %b::bigint[], %b::uuid[], %b::bigint[], %b::varchar[], "
            "%b::bytea[], %b::bytea[])"
        )
        self.insert_node = (
            f'INSERT INTO integrity_nodes (level, "index", hash) VALUES ({m}, {m}, {m})'
        )
        self.insert_game = (
            "INSERT INTO integrity_games (originator_id, game_id, version, chain_hash, "
            f"last_position) VALUES ({m}, {m}, {m}, {m}, {m})"
        )
        # PostgreSQL: a save's tree nodes (one every 16 events and more) and its new games'
        # chain heads likewise, one statement each instead of one execution a row.
        self.insert_nodes_at_once = (
            'INSERT INTO integrity_nodes (level, "index", hash) SELECT * FROM unnest('
            "%b::smallint[], %b::bigint[], %b::bytea[])"
        )
        self.insert_games_at_once = (
            "INSERT INTO integrity_games (originator_id, game_id, version, chain_hash, "
            "last_position) SELECT * FROM unnest(%b::uuid[], %b::varchar[], %b::bigint[], "
            "%b::bytea[], %b::bigint[])"
        )
        self.update_game = (
            f"UPDATE integrity_games SET version = {m}, chain_hash = {m}, last_position = {m} "
            f"WHERE originator_id = {m}"
        )
        self.insert_head = (
            "INSERT INTO integrity_head (size, notification_id, frontier, root, id) "
            f"VALUES ({m}, {m}, {m}, {m}, {HEAD_ID})"
        )
        self.update_head = (
            f"UPDATE integrity_head SET size = {m}, notification_id = {m}, frontier = {m}, "
            f"root = {m} WHERE id = {HEAD_ID}"
        )
        self._chains = (
            "SELECT originator_id, game_id, version, chain_hash, last_position "
            "FROM integrity_games WHERE originator_id "
        )

    def uuid(self, originator: bytes) -> Any:
        # The integrity tables' Uuid columns: 32 hex digits on SQLite, native elsewhere.
        return originator.hex() if self.sqlite else UUID(bytes=originator)

    def chains(self, originators: Sequence[bytes]) -> tuple[str, tuple]:
        ids = [self.uuid(o) for o in originators]
        if self.sqlite:
            return self._chains + f"IN ({', '.join('?' * len(ids))})", tuple(ids)
        return self._chains + "= ANY(%s)", (ids,)


@lru_cache(maxsize=4)
def _sql(dialect: str) -> _Sql:
    return _Sql(dialect)


def read_head(row: Any) -> Head | None:
    return None if row is None else Head(row[0], row[1], bytes(row[2]), bytes(row[3]))


def read_chains(rows: Any) -> dict[bytes, ChainHead]:
    return {
        raw_id(o): ChainHead(game_id, version, bytes(chain), position, True)
        for o, game_id, version, chain, position in rows
    }


class SaveSeals:
    """The seals of some stored events, appended at the end of the tree.

    Leaves are hashed when this is made, before the store's lock is taken; :meth:`query`
    and :meth:`write` run under it.
    """

    def __init__(self, events: Sequence[tuple[Any, int, str, bytes]], dialect: str) -> None:
        self.sql = _sql(dialect)
        self.events = []
        first: dict[bytes, int] = {}
        # A save holds a few games and a dozen topics: each game's id is converted, and each
        # topic's part of the leaf's bytes made, once (the bytes are event_leaf's). The ids
        # are looked up by identity (a game's events share its id object): a UUID's own
        # hash and equality are Python code.
        ids: dict[int, tuple[Any, bytes, bytes | None]] = {}  # id() -> (id, raw, leaf prefix)
        topics: dict[str, bytes] = {}
        # Games whose chains this save starts: raw id -> the last link so far.
        starting: dict[bytes, bytes] = {}
        self.names: dict[bytes, str | None] = {}  # their game ids, from their first events
        sha256, join, append = hashlib.sha256, b"".join, self.events.append
        for originator, version, topic, state in events:
            known = ids.get(id(originator))
            if known is None or known[0] is not originator:
                raw = originator.bytes if type(originator) is UUID else raw_id(originator)
                if raw not in first:
                    first[raw] = version
                    if version == 1:
                        starting[raw] = GENESIS
                        self.names[raw] = game_id_from_state(state)
                prefix = LEAF_PREFIX + raw if len(raw) == 16 else None
                known = ids[id(originator)] = (originator, raw, prefix)
            _, raw, prefix = known
            topic_part = topics.get(topic)
            if topic_part is None:
                encoded = topic.encode("utf-8")
                topic_part = topics[topic] = len(encoded).to_bytes(4, "big") + encoded
            if prefix is None or version < 0:  # event_leaf says what is wrong with it
                leaf = event_leaf(raw, version, topic, state)
            else:
                leaf = sha256(
                    join(
                        (
                            prefix,
                            version.to_bytes(8, "big"),
                            topic_part,
                            len(state).to_bytes(4, "big"),
                            state,
                        )
                    )
                ).digest()
            previous = starting.get(raw)
            link = None
            if previous is not None:
                link = starting[raw] = chain_hash(previous, leaf)
            append(NewEvent(raw, version, state, leaf, link))
        # Games that already have seals: their chains go on from the stored chain head.
        self.continuing = [o for o, version in first.items() if version > 1]

    @classmethod
    def of_stored(cls, events: Sequence[Any], dialect: str) -> SaveSeals:
        """From the library's ``StoredEvent`` objects, as a save hands them to the recorder."""
        return cls(
            [(e.originator_id, e.originator_version, e.topic, e.state) for e in events], dialect
        )

    def query(self, head_cursor: Any, chains_cursor: Any) -> None:
        """Ask for the tree head and the chain heads (on PostgreSQL, queued in a pipeline)."""
        head_cursor.execute(self.sql.head)
        if self.continuing:
            chains_cursor.execute(*self.sql.chains(self.continuing))

    def fetch(self, head_cursor: Any, chains_cursor: Any) -> tuple[Head | None, dict]:
        head = read_head(head_cursor.fetchone())
        chains = read_chains(chains_cursor.fetchall()) if self.continuing else {}
        return head, chains

    def write(
        self,
        connection: sa.Connection,
        notification_ids: Sequence[int],
        head: Head | None,
        chains: dict[bytes, ChainHead],
        *,
        events_table: str,
        backfill: bool = False,
        keep_head: bool = True,
    ) -> Head:
        """Seal the events at the end of the tree, in ``connection``'s transaction; return
        the new tree head.

        ``head`` is None for a store that has none yet (written before sealing moved into
        the save): the tree is then resumed from the stored seals and, unless this is the
        ``backfill`` itself, the save is refused while older events are left unsealed.
        A backfill stores the tree head (``keep_head``) only with its last batch, so that
        saves wait until nothing is left behind.
        """
        if len(notification_ids) != len(self.events):
            raise SealingError(
                f"{len(self.events)} events to seal but {len(notification_ids)} notification ids"
            )
        if self.sql.sqlite and not backfill and notification_ids:
            self._check_ids(connection, notification_ids, events_table)
        if head is None:
            builder, last_sealed = _resume(connection, notification_ids, events_table, backfill)
        else:
            builder, last_sealed = head.builder(), head.notification_id
        if notification_ids and notification_ids[0] <= last_sealed:
            raise SealingError(
                f"notification id {notification_ids[0]} is at or below the last sealed one "
                f"({last_sealed}): rows at the end of {events_table} were deleted; run "
                "`rummy-ledger verify`"
            )
        sql = self.sql
        seals = []
        ids: dict[bytes, Any] = {}
        # A chain worked out before the lock holds only if nothing stored continues it.
        started = {o for o in self.names if o not in chains}
        position = builder.size
        for event, notification_id in zip(self.events, notification_ids, strict=True):
            chain = chains.get(event.originator)
            if chain is None:
                # A game's first event carries its table configuration, hence its game id.
                name = self.names.get(event.originator) if event.version == 1 else None
                chain = chains[event.originator] = ChainHead(
                    name or str(UUID(bytes=event.originator)), 0, GENESIS, -1, False
                )
            originator = ids.get(event.originator)
            if originator is None:
                originator = ids[event.originator] = sql.uuid(event.originator)
            version, leaf = event.version, event.leaf
            if event.link is not None and event.originator in started:
                link = event.link
            else:
                link = chain_hash(chain.chain, leaf)
            seals.append(
                (position, notification_id, originator, version, chain.game_id, leaf, link)
            )
            chain.version, chain.chain, chain.position = version, link, position
            position += 1
        nodes = builder.extend([event.leaf for event in self.events], NODE_MIN_LEVEL)
        touched = {e.originator for e in self.events}
        fresh = [
            (sql.uuid(o), c.game_id, c.version, c.chain, c.position)
            for o, c in chains.items()
            if o in touched and not c.stored
        ]
        moved = [
            (c.version, c.chain, c.position, sql.uuid(o))
            for o, c in chains.items()
            if o in touched and c.stored
        ]
        new_head = Head(
            builder.size,
            notification_ids[-1] if notification_ids else last_sealed,
            builder.frontier,
            builder.root(),
        )
        head_row = (new_head.size, new_head.notification_id, new_head.frontier, new_head.root)
        driver = connection.connection.dbapi_connection
        try:
            with _pipeline(driver, sql.pipelines):
                cursor = driver.cursor()
                at_once = sql.pipelines  # PostgreSQL: one statement over arrays a table
                _insert_rows(cursor, seals, sql.insert_seals_at_once, sql.insert_seal, at_once)
                _insert_rows(cursor, nodes, sql.insert_nodes_at_once, sql.insert_node, at_once)
                _insert_rows(cursor, fresh, sql.insert_games_at_once, sql.insert_game, at_once)
                if moved:
                    cursor.executemany(sql.update_game, moved)
                if keep_head:
                    cursor.execute(sql.insert_head if head is None else sql.update_head, head_row)
        except connection.dialect.dbapi.IntegrityError as error:
            raise SealingError(
                "the integrity tables already hold seals, tree nodes or chain heads where "
                f"this save's go (tree size {new_head.size - len(seals)}): they were changed "
                f"outside the ledger; run `rummy-ledger verify` ({error})"
            ) from None
        return new_head

    def _check_ids(
        self, connection: sa.Connection, notification_ids: Sequence[int], events_table: str
    ) -> None:
        """SQLite does not say which rowids an insert took: the save takes them to be the
        last ones, which holds only while ids grow by one. A row forged at the top of the
        id range (2^63 - 1) makes SQLite pick free ids at random, and a save sealing the
        ids it expected would seal other rows than its own: read them back and refuse."""
        first, last = notification_ids[0], notification_ids[-1]
        cursor = connection.connection.dbapi_connection.cursor()
        found = cursor.execute(
            f"SELECT id, originator_id, originator_version FROM {events_table} "
            "WHERE id BETWEEN ? AND ? ORDER BY id",
            (first, last),
        ).fetchall()
        expected = [
            (i, e.originator, e.version) for i, e in zip(notification_ids, self.events, strict=True)
        ]
        if found == expected:  # the rows as SQLite returns them: the ids as 16 bytes
            return
        got = [(i, raw_id(o), v) for i, o, v in found]
        if got != expected:
            wrong = next(
                (g for g, e in zip(got, expected, strict=False) if g != e),
                got[len(expected)] if len(got) > len(expected) else None,
            )
            where = f"row {wrong[0]}" if wrong else f"rows {first}-{last}"
            raise SealingError(
                f"this save's events did not get notification ids {first}-{last} ({where} is "
                f"another event's): a row was written into {events_table} outside the "
                "ledger (a forged row at the top of the id range makes SQLite hand out ids "
                "at random). Nothing was stored; run `rummy-ledger verify`"
            )


def _insert_rows(cursor: Any, rows: list[tuple], at_once: str, each: str, arrays: bool) -> None:
    """``rows`` inserted by ``at_once`` over a column's array each when ``arrays``, else by
    ``each`` a row; nothing for no rows."""
    if not rows:
        return
    if arrays:
        cursor.execute(at_once, columns_of(rows))
    else:
        cursor.executemany(each, rows)


def columns_of(rows: list[tuple]) -> list[list]:
    """Rows as one list a column (the arrays of an ``INSERT ... SELECT * FROM unnest``)."""
    return [list(column) for column in zip(*rows, strict=True)]


class _NoPipeline:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _pipeline(driver: Any, wanted: bool):
    """psycopg's pipeline (one round trip for every statement), where libpq has it."""
    pipeline = getattr(driver, "pipeline", None) if wanted else None
    if pipeline is not None:
        import psycopg

        if psycopg.Pipeline.is_supported():
            return pipeline()
    return _NoPipeline()


def _resume(
    connection: sa.Connection, notification_ids: Sequence[int], events_table: str, backfill: bool
) -> tuple[merkle.TreeBuilder, int]:
    """The tree of a store that has no tree head yet, from its stored seals and nodes."""
    size, last_sealed = seal_head(connection)
    if not backfill and notification_ids:
        left = connection.execute(
            sa.text(f"SELECT count(*) FROM {events_table} WHERE id > :last AND id < :first"),
            {"last": last_sealed, "first": notification_ids[0]},
        ).scalar_one()
        if left:
            raise SealingError(
                f"{left} stored event(s) after the last seal are not sealed: the store was "
                "written before sealing moved into the save. Run `rummy-ledger verify`, then "
                "`rummy-ledger seal` once to seal them; nothing was stored"
            )
    return merkle.TreeBuilder.resume(size, StoredTree(connection).subtree), last_sealed


def missing_tables_error(error: Exception) -> SealingError | None:
    """A clear error for a database whose integrity tables were never built."""
    text = str(error).lower()
    if "integrity_" in text and ("no such table" in text or "does not exist" in text):
        return SealingError(
            "the integrity tables are missing, so events cannot be sealed as they are "
            "stored: run `rummy-ledger db upgrade`; nothing was stored"
        )
    return None


def stored_head(connection: sa.Connection) -> Head | None:
    """The tree head row, or None (nothing sealed yet, or a store from before it)."""
    return read_head(connection.exec_driver_sql(_sql(connection.dialect.name).head).first())


def stored_chains(connection: sa.Connection, originators: Sequence[bytes]) -> dict:
    sql, found = _sql(connection.dialect.name), {}
    for start in range(0, len(originators), 500):
        statement, params = sql.chains(originators[start : start + 500])
        found.update(read_chains(connection.exec_driver_sql(statement, params)))
    return found


def lock_store(connection: sa.Connection, events_table: str) -> None:
    """Take the lock every save takes, first thing in the transaction, so that what is read
    next cannot change before the commit."""
    if connection.dialect.name == "postgresql":
        connection.exec_driver_sql(f"LOCK TABLE {events_table} IN EXCLUSIVE MODE")
    elif connection.dialect.name == "sqlite":
        # Deferred, a transaction that reads first cannot write after another's commit.
        connection.exec_driver_sql("BEGIN IMMEDIATE")
