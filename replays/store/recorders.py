"""eventsourcing-sqlalchemy's recorders with the two hot paths on SQLAlchemy Core, and
every append sealed in its own transaction.

Same tables, same rows, same transactions and locking as the library's recorders; only
reading a game's events and appending them skip the ORM. Reading 60 events through ORM
instances cost about 3 ms, most of it building objects that are thrown away at once; a
Core ``SELECT`` returns plain rows. Appends use one multi-row ``INSERT ... RETURNING id``
(the notification ids the library needs) instead of an ORM flush of one object per event.

Every append also writes its events' integrity seals (leaf, chain link, tree nodes, tree
head) in the same transaction, under the same lock (:mod:`replays.integrity.append`), so an
event row without a seal was never written by the ledger. ``bench/store.py`` measures
appends and reads against a raw DB-API baseline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from eventsourcing.persistence import IntegrityError, StoredEvent
from eventsourcing_sqlalchemy.datastore import transactions
from eventsourcing_sqlalchemy.factory import SQLAlchemyFactory
from eventsourcing_sqlalchemy.recorders import (
    SQLAlchemyAggregateRecorder,
    SQLAlchemyApplicationRecorder,
)
from sqlalchemy.orm import Session

from replays.integrity.append import SaveSeals, SealingError, columns_of, missing_tables_error
from replays.store.db import end_reads_on_return


class _CoreSelect:
    """``select_events`` as one cached Core statement per shape of query."""

    events_record_cls: Any
    datastore: Any

    def select_events(
        self,
        originator_id: Any,
        gt: int | None = None,
        lte: int | None = None,
        desc: bool = False,
        limit: int | None = None,
    ) -> list[StoredEvent]:
        statement = self._select_statement(gt is not None, lte is not None, desc, limit is not None)
        params: dict[str, Any] = {"originator_id": originator_id}
        if gt is not None:
            params["gt"] = gt
        if lte is not None:
            params["lte"] = lte
        if limit is not None:
            params["limit"] = limit
        engine = self._read_engine()
        if engine is None:
            with self.transaction(commit=False) as session:
                rows = session.execute(statement, params).all()
        else:
            with engine.connect() as connection:
                rows = connection.execute(statement, params).all()
        return [
            StoredEvent(
                originator_id=row[0],
                originator_version=row[1],
                topic=row[2],
                state=bytes(row[3]) if isinstance(row[3], memoryview) else row[3],
            )
            for row in rows
        ]

    def stored_originators(self, originator_ids: Sequence[Any]) -> set[Any]:
        """Those of ``originator_ids`` that have a first event stored, in one query."""
        if not originator_ids:
            return set()
        table = self.events_record_cls.__table__
        statement = sa.select(table.c.originator_id).where(
            table.c.originator_id.in_(sa.bindparam("ids", expanding=True)),
            table.c.originator_version == 1,
        )
        params = {"ids": list(originator_ids)}
        engine = self._read_engine()
        if engine is None:
            with self.transaction(commit=False) as session:
                return set(session.execute(statement, params).scalars())
        with engine.connect() as connection:
            return set(connection.execute(statement, params).scalars())

    def _read_engine(self) -> sa.Engine | None:
        """An autocommit engine for reads outside any transaction, or None.

        One SELECT needs no transaction of its own; the library's read transaction costs
        BEGIN and ROLLBACK round trips that, on PostgreSQL, took longer than the SELECT.
        Inside a caller's transaction (read models share the session) reads go through it.
        """
        datastore = self.datastore
        if datastore.scoped_session is not None or datastore.access_lock is not None:
            return None  # a caller's session, or an in-memory SQLite database
        try:
            transactions.get()
            return None
        except LookupError:
            pass
        engine = self.__dict__.get("_autocommit_engine")
        if engine is None and datastore.engine is not None:
            engine = datastore.engine.execution_options(isolation_level="AUTOCOMMIT")
            self.__dict__["_autocommit_engine"] = engine
        return engine

    def _select_statement(self, gt: bool, lte: bool, desc: bool, limit: bool) -> sa.Select:
        cache = self.__dict__.setdefault("_select_statements", {})
        key = (gt, lte, desc, limit)
        statement = cache.get(key)
        if statement is None:
            table = self.events_record_cls.__table__
            version = table.c.originator_version
            statement = sa.select(
                table.c.originator_id, version, table.c.topic, table.c.state
            ).where(table.c.originator_id == sa.bindparam("originator_id"))
            if gt:
                statement = statement.where(version > sa.bindparam("gt"))
            if lte:
                statement = statement.where(version <= sa.bindparam("lte"))
            statement = statement.order_by(version.desc() if desc else version)
            if limit:
                statement = statement.limit(sa.bindparam("limit"))
            cache[key] = statement
        return statement


class LedgerAggregateRecorder(_CoreSelect, SQLAlchemyAggregateRecorder):
    """The snapshot store's recorder: a save's snapshots inserted by the driver.

    The library adds one ORM object a snapshot and flushes them at the commit, that is
    under the store's lock, where every other writer of an ``import --jobs`` waits: the
    flush of a save's fifty snapshots cost several times their inserts. The same rows go
    in by the DB-API connection, in the save's transaction: on PostgreSQL one ``INSERT ...
    SELECT`` over arrays (one statement a save, where psycopg's ``executemany`` ran one a
    snapshot), on SQLite one ``executemany``."""

    # False: the library's ORM objects (slower; same rows).
    driver_inserts = True

    def _insert_stored_events(
        self, session: Session, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int] | None:
        connection = session.connection()
        dialect = connection.dialect
        if not self.driver_inserts or dialect.name not in ("sqlite", "postgresql"):
            return super()._insert_stored_events(session, stored_events, **kwargs)
        if not stored_events:
            return None
        table = self.events_record_cls.__table__
        rows = _driver_rows(table, dialect, stored_events)
        cursor = connection.connection.dbapi_connection.cursor()
        try:
            if dialect.name == "postgresql" and len(rows) > 1:
                # In binary, as the events' arrays (see _insert_postgres).
                cursor.execute(
                    f"INSERT INTO {table.fullname} (originator_id, originator_version, topic, "
                    "state) SELECT * FROM unnest(%b::uuid[], %b::bigint[], %b::text[], "
                    "%b::bytea[])",
                    columns_of(rows),
                )
            else:
                cursor.executemany(_insert(table, "?" if dialect.name == "sqlite" else "%s"), rows)
        except dialect.dbapi.IntegrityError as error:
            raise IntegrityError(error) from error
        return None


class LedgerApplicationRecorder(_CoreSelect, SQLAlchemyApplicationRecorder):
    # False: every database goes through SQLAlchemy Core (slower; same rows).
    driver_inserts = True
    # SQLite: a lock the processes of one ``import --jobs`` share, entered right before
    # the insert takes the database's write lock and left by the ledger's ``_record`` after
    # the commit (:class:`replays.records.parallel.WriteGate`). None: SQLite's lock alone.
    write_gate: Any = None

    def create_table(self) -> None:
        """The event tables and, with them, the integrity tables every append writes to."""
        super().create_table()
        from replays.integrity.models import INTEGRITY_TABLES, MEMO_TABLES
        from replays.store.db import Base

        Base.metadata.create_all(self.datastore.engine, tables=INTEGRITY_TABLES + MEMO_TABLES)
        from replays.store.schema import index_dispute_events

        with self.datastore.engine.begin() as connection:
            index_dispute_events(connection, self.events_table_name)

    def _insert_stored_events(
        self, session: Session, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int]:
        """Insert and seal one save's events in the session's transaction; their
        notification ids.

        Written against the driver (the library does the same for its NOTIFY): the ORM and
        even Core spent more time preparing 60 rows than the database took to store them.
        """
        if not stored_events:
            return []
        table = self.events_record_cls.__table__
        connection = session.connection()
        dialect = connection.dialect
        seals = SaveSeals.of_stored(stored_events, dialect.name)  # hashed before the lock
        try:
            if not self.driver_inserts:
                notification_ids = self._insert_core(session, table, stored_events)
                self._seal(connection, table, seals, notification_ids)
                return notification_ids
            rows = _driver_rows(table, dialect, stored_events)
            driver = connection.connection.dbapi_connection
            if dialect.name == "sqlite":
                if self.write_gate is not None:
                    self.write_gate.enter()
                cursor = driver.cursor()
                cursor.executemany(_insert(table, "?"), rows)
                # SQLite gives a new row max(rowid) + 1, and this transaction holds the only
                # write lock on the file: the ids are the last len(rows) rowids.
                last = cursor.execute(f"SELECT max(id) FROM {table.fullname}").fetchone()[0]
                notification_ids = list(range(last - len(rows) + 1, last + 1))
                self._seal(connection, table, seals, notification_ids)
                return notification_ids
            if dialect.name == "postgresql" and _pipelines_supported(driver):
                return self._insert_postgres(connection, driver, table, rows, seals)
            notification_ids = self._insert_core(session, table, stored_events)
            self._seal(connection, table, seals, notification_ids)
            return notification_ids
        except (
            dialect.dbapi.ProgrammingError,
            dialect.dbapi.OperationalError,
            sa.exc.ProgrammingError,
            sa.exc.OperationalError,
        ) as error:
            clear = missing_tables_error(error)
            if clear is None:
                raise
            raise clear from None
        except dialect.dbapi.IntegrityError as error:
            raise IntegrityError(error) from error

    def _seal(
        self,
        connection: sa.Connection,
        table: sa.Table,
        seals: SaveSeals,
        notification_ids: Sequence[int],
    ) -> None:
        """Seal under the lock the insert took (nothing else pipelined with it)."""
        driver = connection.connection.dbapi_connection
        head_cursor, chains_cursor = driver.cursor(), driver.cursor()
        seals.query(head_cursor, chains_cursor)
        head, chains = seals.fetch(head_cursor, chains_cursor)
        seals.write(connection, notification_ids, head, chains, events_table=table.fullname)

    def _insert_postgres(
        self, connection: sa.Connection, driver: Any, table: sa.Table, rows: list, seals: SaveSeals
    ) -> list:
        """Lock, insert, notify and read the tree head in one pipeline: one round trip
        instead of five; then the seals in another.

        The rows go in as one ``INSERT ... SELECT`` from arrays rather than one execution
        each: the server's work per row, paid under the lock while every other writer
        waits, was half of it statement overhead. Ordered by the rows' place in the save,
        the serial ids are drawn in that order (the form SQLAlchemy's "insertmanyvalues"
        relies on for PostgreSQL), so the i-th smallest id returned is the i-th row's.

        The arrays go in binary (``%b``): psycopg dumps them as they are sent, after the
        ``LOCK`` has gone ahead in the pipeline, and in text form it escaped every byte of
        every event's state in Python (about 50 ms a save of 2,300 events, under the lock);
        in binary the values are copied as they are, and the server stores the same ones."""
        lock_and_notify = driver.cursor()
        cursor = driver.cursor()
        head_cursor, chains_cursor = driver.cursor(), driver.cursor()
        columns = columns_of(rows)
        with driver.pipeline():
            # The library's lock: notification ids must commit in the order they were taken.
            # Held to the commit, it also orders the seals: positions follow the ids.
            lock_and_notify.execute(f"LOCK TABLE {table.fullname} IN EXCLUSIVE MODE")
            cursor.execute(
                f"INSERT INTO {table.fullname} (originator_id, originator_version, topic, state) "
                "SELECT o, v, t, s FROM unnest(%b::uuid[], %b::bigint[], %b::text[], "
                "%b::bytea[]) WITH ORDINALITY AS r(o, v, t, s, n) ORDER BY n "
                "RETURNING id, originator_id::text, originator_version",
                columns,
            )
            lock_and_notify.execute(f"NOTIFY {self.channel_name}")
            seals.query(head_cursor, chains_cursor)
        returned = sorted(cursor.fetchall())
        notification_ids = [row[0] for row in returned]
        if not _in_given_order(returned, columns):
            # Never seen; if ids were ever drawn out of the rows' order, nothing is sealed
            # against the wrong event: the save is refused and rolls back.
            raise SealingError(
                "the event rows did not take their notification ids in the order they were "
                "given; nothing was stored"
            )
        head, chains = seals.fetch(head_cursor, chains_cursor)
        seals.write(connection, notification_ids, head, chains, events_table=table.fullname)
        return notification_ids

    def _insert_core(
        self, session: Session, table: sa.Table, stored_events: Sequence[StoredEvent]
    ) -> list[int]:
        self._lock_table(session)
        result = session.execute(
            sa.insert(table).returning(table.c.id, sort_by_parameter_order=True),
            [
                {
                    "originator_id": e.originator_id,
                    "originator_version": e.originator_version,
                    "topic": e.topic,
                    "state": e.state,
                }
                for e in stored_events
            ],
        )
        notification_ids = list(result.scalars())
        self._notify_channel(session)
        return notification_ids


def _in_given_order(returned: list, columns: list) -> bool:
    """Whether each id's row, ``returned`` sorted by id as (id, originator text, version),
    is the one given at that place in ``columns``: game and version both (two games with
    the same run of versions could otherwise trade places unseen).

    The ids go in as the column's bound text and come back as the server's text of the
    stored UUID (the same canonical form): compared as text, with no UUID made and written
    out in Python for each row, under the lock."""
    given = list(zip(map(str, columns[0]), columns[1], strict=True))
    return [row[1:] for row in returned] == given


def _driver_rows(table: sa.Table, dialect: Any, stored_events: Sequence[StoredEvent]) -> list:
    """``stored_events`` as the driver binds them: (id, version, topic, state). A save
    holds many events of few games, which come together sharing their id object: each
    game's id is converted once."""
    as_uuid = table.c.originator_id.type.dialect_impl(dialect).bind_processor(dialect) or (
        lambda value: value
    )
    bound: dict = {}
    rows = []
    last = value = None
    for e in stored_events:
        originator_id = e.originator_id
        if originator_id is not last:
            last = originator_id
            value = bound.get(originator_id)
            if value is None:
                value = bound[originator_id] = as_uuid(originator_id)
        rows.append((value, e.originator_version, e.topic, e.state))
    return rows


def _insert(table: sa.Table, mark: str) -> str:
    """The driver's INSERT of :func:`_driver_rows` into ``table``, binds marked ``mark``."""
    return (
        f"INSERT INTO {table.fullname} (originator_id, originator_version, topic, state) "
        f"VALUES ({mark}, {mark}, {mark}, {mark})"
    )


def _pipelines_supported(driver: Any) -> bool:
    pipeline = getattr(type(driver), "pipeline", None)
    if pipeline is None:
        return False
    import psycopg

    return psycopg.Pipeline.is_supported()


class LedgerFactory(SQLAlchemyFactory):
    """``PERSISTENCE_MODULE=replays.store.recorders:LedgerFactory``."""

    aggregate_recorder_class = LedgerAggregateRecorder

    def __init__(self, env) -> None:
        super().__init__(env)
        if self.datastore.engine is not None:
            end_reads_on_return(self.datastore.engine)

    application_recorder_class = LedgerApplicationRecorder
