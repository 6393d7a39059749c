"""eventsourcing-sqlalchemy's recorders with the two hot paths on SQLAlchemy Core.

Same tables, same rows, same transactions and locking as the library's recorders; only
reading a game's events and appending them skip the ORM. Reading 60 events through ORM
instances cost about 3 ms, most of it building objects that are thrown away at once; a
Core ``SELECT`` returns plain rows. Appends use one multi-row ``INSERT ... RETURNING id``
(the notification ids the library needs) instead of an ORM flush of one object per event.
``bench/store.py`` measures both against a raw DB-API baseline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from eventsourcing.persistence import StoredEvent
from eventsourcing_sqlalchemy.datastore import transactions
from eventsourcing_sqlalchemy.factory import SQLAlchemyFactory
from eventsourcing_sqlalchemy.recorders import (
    SQLAlchemyAggregateRecorder,
    SQLAlchemyApplicationRecorder,
)
from sqlalchemy.orm import Session


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
    """The snapshot store's recorder."""


class LedgerApplicationRecorder(_CoreSelect, SQLAlchemyApplicationRecorder):
    def _insert_stored_events(
        self, session: Session, stored_events: Sequence[StoredEvent], **kwargs: Any
    ) -> Sequence[int]:
        if not stored_events:
            return []
        table = self.events_record_cls.__table__
        # The library locks the table so notification ids commit in order (PostgreSQL).
        self._lock_table(session)
        result = session.execute(
            sa.insert(table).returning(table.c.id, sort_by_parameter_order=True),
            [
                {
                    "originator_id": event.originator_id,
                    "originator_version": event.originator_version,
                    "topic": event.topic,
                    "state": event.state,
                }
                for event in stored_events
            ],
        )
        notification_ids = list(result.scalars())
        self._notify_channel(session)
        return notification_ids


class LedgerFactory(SQLAlchemyFactory):
    """``PERSISTENCE_MODULE=replays.recorders:LedgerFactory``."""

    aggregate_recorder_class = LedgerAggregateRecorder
    application_recorder_class = LedgerApplicationRecorder
