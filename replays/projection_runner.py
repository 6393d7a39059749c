"""Follow the event store's notification log into read-model tables, exactly once.

eventsourcing's own ``ProjectionRunner`` needs ``recorder.subscribe()``, which the
SQLAlchemy recorder has only on PostgreSQL; this catch-up loop works on both engines:

1. In one transaction: lock this projection's row in ``projection_positions`` (an UPDATE,
   so a second runner waits instead of applying the same events twice), read its
   position, select the next notifications after it from the events table.
2. Let the projection turn them into row changes on the same connection.
3. Move the position to the last notification read, and commit: the rows and the
   position become visible together or not at all. Killed anywhere before the commit,
   the batch is simply applied again by the next run.

>>> runner = Runner(engine, projections=[GameProjection(app)])  # doctest: +SKIP
>>> runner.catch_up()  # doctest: +SKIP
1234
"""

from __future__ import annotations

import sys
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import sqlalchemy as sa
from eventsourcing.persistence import Notification

from replays.models import ProjectionPosition
from replays.schema import EVENTS_TABLE, event_store_metadata

POSITIONS = ProjectionPosition.__table__
DEFAULT_BATCH_SIZE = 1000


class Projection(ABC):
    """Turns notifications into read-model rows. ``name`` keys its tracking record."""

    name: str

    @abstractmethod
    def process(self, connection: sa.Connection, notifications: Sequence[Notification]) -> None:
        """Apply these notifications, in order, writing rows through ``connection``."""

    @abstractmethod
    def clear(self, connection: sa.Connection) -> None:
        """Delete every row this projection wrote (for a rebuild)."""

    def forget(self) -> None:  # noqa: B027 - optional hook
        """Drop in-memory state: the batch that built it was rolled back."""


@dataclass(frozen=True)
class Status:
    name: str
    position: int
    head: int
    events_applied: int
    updated_at: datetime | None

    @property
    def lag(self) -> int:
        return max(0, self.head - self.position)

    def to_dict(self) -> dict:
        return {
            "projection": self.name,
            "position": self.position,
            "head": self.head,
            "lag": self.lag,
            "events_applied": self.events_applied,
            "updated_at": self.updated_at.isoformat() if self.updated_at else None,
        }


class ProjectionCrash(RuntimeError):
    """Raised by test hooks to simulate a crash; never raised by the runner itself."""


class Runner:
    """Catches one projection up with the notification log, in batches.

    ``hook(stage, batch_number)`` is called at ``"applied"`` (rows written, position not
    yet, nothing committed) and ``"committed"``; tests raise from it to simulate crashes.
    """

    def __init__(
        self,
        engine: sa.Engine,
        projection: Projection,
        *,
        batch_size: int = DEFAULT_BATCH_SIZE,
        hook: Callable[[str, int], None] | None = None,
    ):
        self.engine = engine
        self.projection = projection
        self.batch_size = batch_size
        self.hook = hook
        self.events = event_store_metadata().tables[EVENTS_TABLE]

    # -- reading -----------------------------------------------------------------------
    def head(self, connection: sa.Connection | None = None) -> int:
        """The last notification id in the store (0 when empty)."""
        query = sa.select(sa.func.max(self.events.c.id))
        if connection is None:
            with self.engine.connect() as connection:
                return connection.execute(query).scalar() or 0
        return connection.execute(query).scalar() or 0

    def status(self) -> Status:
        with self.engine.connect() as connection:
            row = connection.execute(
                sa.select(POSITIONS).where(POSITIONS.c.name == self.projection.name)
            ).first()
            head = self.head(connection)
        if row is None:
            return Status(self.projection.name, 0, head, 0, None)
        return Status(self.projection.name, row.position, head, row.events_applied, row.updated_at)

    def _select(self, connection: sa.Connection, after: int, limit: int) -> list[Notification]:
        e = self.events.c
        originator = e.originator_id
        binary = connection.dialect.name != "postgresql"
        if binary:
            # SQLite keeps the UUID as 16 bytes; a batch holds few games, so each UUID is
            # built once instead of once per event.
            originator = sa.type_coerce(originator, sa.LargeBinary).label("originator_id")
        rows = connection.execute(
            sa.select(e.id, originator, e.originator_version, e.topic, e.state)
            .where(e.id > after)
            .order_by(e.id)
            .limit(limit)
        )
        uuids: dict[bytes, uuid.UUID] = {}
        notifications = []
        for row in rows:
            originator_id = row.originator_id
            if binary:
                key = bytes(originator_id)
                originator_id = uuids.get(key) or uuids.setdefault(key, uuid.UUID(bytes=key))
            notifications.append(
                Notification(
                    id=row.id,
                    originator_id=originator_id,
                    originator_version=row.originator_version,
                    topic=row.topic,
                    state=bytes(row.state),
                )
            )
        return notifications

    # -- writing -----------------------------------------------------------------------
    def _ensure_position_row(self) -> None:
        with self.engine.connect() as connection:
            exists = connection.execute(
                sa.select(POSITIONS.c.name).where(POSITIONS.c.name == self.projection.name)
            ).first()
        if exists:
            return
        try:
            with self.engine.begin() as connection:
                connection.execute(
                    POSITIONS.insert().values(
                        name=self.projection.name, position=0, events_applied=0
                    )
                )
        except sa.exc.IntegrityError:
            pass  # another runner created it first

    def _lock_position(self, connection: sa.Connection) -> tuple[int, int]:
        """Take the write lock first (SQLite: a write transaction; PostgreSQL: the row),
        then read the position, so no other runner can apply the same notifications."""
        connection.execute(
            POSITIONS.update()
            .where(POSITIONS.c.name == self.projection.name)
            .values(updated_at=datetime.now(UTC))
        )
        row = connection.execute(
            sa.select(POSITIONS.c.position, POSITIONS.c.events_applied).where(
                POSITIONS.c.name == self.projection.name
            )
        ).one()
        return row.position, row.events_applied

    def run_batch(self, batch_number: int = 0, limit: int | None = None) -> int:
        """Apply the next batch; return how many notifications it held (0: caught up)."""
        size = self.batch_size if limit is None else min(limit, self.batch_size)
        try:
            with self.engine.begin() as connection:
                position, applied = self._lock_position(connection)
                notifications = self._select(connection, position, size)
                if not notifications:
                    return 0
                self.projection.process(connection, notifications)
                if self.hook:
                    self.hook("applied", batch_number)
                connection.execute(
                    POSITIONS.update()
                    .where(POSITIONS.c.name == self.projection.name)
                    .values(
                        position=notifications[-1].id,
                        events_applied=applied + len(notifications),
                        updated_at=datetime.now(UTC),
                    )
                )
        except BaseException:
            self.projection.forget()
            raise
        if self.hook:
            self.hook("committed", batch_number)
        return len(notifications)

    def catch_up(self, *, limit: int | None = None, progress: bool = False) -> int:
        """Apply every notification after the position (at most ``limit``); return the count.

        Cheap when there is nothing new: two indexed reads, no write.
        """
        status = self.status()
        if status.lag == 0:
            return 0
        self._ensure_position_row()
        bar = _progress_bar(status.lag if limit is None else min(limit, status.lag), progress)
        done = 0
        batch_number = 0
        try:
            while limit is None or done < limit:
                count = self.run_batch(batch_number, None if limit is None else limit - done)
                if count == 0:
                    break
                done += count
                batch_number += 1
                if bar is not None:
                    bar.update(count)
        finally:
            if bar is not None:
                bar.close()
        return done

    def follow(self, *, interval: float = 1.0, stop: Callable[[], bool] = lambda: False) -> int:
        """Keep catching up until ``stop()`` is true; sleep ``interval`` when idle."""
        done = 0
        while not stop():
            count = self.catch_up()
            done += count
            if count == 0:
                time.sleep(interval)
        return done

    def rebuild(self, *, progress: bool = False) -> int:
        """Empty the projection's tables and reset its position in one transaction, then
        catch up from the first notification. Interrupted, it resumes like any catch-up."""
        self._ensure_position_row()
        with self.engine.begin() as connection:
            self._lock_position(connection)
            self.projection.clear(connection)
            connection.execute(
                POSITIONS.update()
                .where(POSITIONS.c.name == self.projection.name)
                .values(position=0, events_applied=0, updated_at=datetime.now(UTC))
            )
        self.projection.forget()
        return self.catch_up(progress=progress)


def _progress_bar(total: int, wanted: bool):
    if not wanted or not sys.stderr.isatty() or total <= 0:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="event", desc="projecting", file=sys.stderr)
