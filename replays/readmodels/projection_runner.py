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

An event the projection cannot apply never stops the read side: the batch is applied in a
savepoint; when that fails, it is applied again one event at a time, each in its own
savepoint, and the event that fails is recorded in ``projection_failures`` while its
aggregate (game, match or case) is set aside: its rows are removed, its later events are
skipped, until :meth:`Runner.retry` projects it whole again. Errors of the connection
itself (a dropped server, a locked database) are not the event's fault: they still roll
the batch back and propagate. :meth:`Runner.rebuild` is all-or-nothing (one transaction).

>>> runner = Runner(engine, projections=[GameProjection(app)])  # doctest: +SKIP
>>> runner.catch_up()  # doctest: +SKIP
1234
"""

from __future__ import annotations

import logging
import sys
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import sqlalchemy as sa
from eventsourcing.persistence import Notification

from replays.readmodels.models import ProjectionPosition
from replays.readmodels.projection_failures import (
    FAILURES,
    MAX_ERROR,
    MAX_GAME_ID,
    REBUILD_SUFFIX,
    Failure,
    RebuildAbandoned,
    event_type,
    read_failures,
)
from replays.store.collector import bulk_work
from replays.store.schema import EVENTS_TABLE, event_store_metadata

log = logging.getLogger(__name__)

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

    def discard(self, connection: sa.Connection, originator_id: uuid.UUID) -> None:  # noqa: B027
        """Delete the rows this aggregate's events wrote (it is being set aside)."""

    def game_of(self, connection: sa.Connection, notification: Notification) -> str | None:
        """The game (or case) id a notification belongs to, for naming a failure."""
        return None


def _transient(error: BaseException) -> bool:
    """Errors of the database connection rather than of the event: retried, never recorded."""
    return not isinstance(error, Exception) or isinstance(
        error, sa.exc.OperationalError | sa.exc.InterfaceError | ProjectionCrash
    )


def _lost_connection(error: BaseException) -> bool:
    from replays.store.replicas import is_connection_error

    return is_connection_error(error)


@dataclass(frozen=True)
class Status:
    name: str
    position: int
    head: int
    events_applied: int
    updated_at: datetime | None
    failures: tuple[Failure, ...] = ()

    @property
    def lag(self) -> int:
        return max(0, self.head - self.position)

    def stuck(self, now: datetime | None = None, after_seconds: float = 300.0) -> bool:
        """Events wait and no run has moved the position for ``after_seconds``."""
        if self.lag == 0:
            return False
        if self.updated_at is None:
            return True
        updated = self.updated_at
        if updated.tzinfo is None:  # SQLite gives back naive UTC
            updated = updated.replace(tzinfo=UTC)
        return ((now or datetime.now(UTC)) - updated).total_seconds() > after_seconds

    def to_dict(self) -> dict:
        return {
            "projection": self.name,
            "position": self.position,
            "head": self.head,
            "lag": self.lag,
            "events_applied": self.events_applied,
            "updated_at": self.updated_at.isoformat() if self.updated_at else None,
            "failures": [failure.to_dict() for failure in self.failures],
        }


class ProjectionCrash(RuntimeError):
    """Raised by test hooks to simulate a crash; never raised by the runner itself."""


class _NotNext(Exception):
    """The position is not right before the notifications saved: the catch-up's turn."""


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
        self._position_row_known = False

    # -- reading -----------------------------------------------------------------------
    def head(self, connection: sa.Connection | None = None) -> int:
        """The last notification id in the store (0 when empty)."""
        query = sa.select(sa.func.max(self.events.c.id))
        if connection is None:
            with self.engine.connect() as connection:
                return connection.execute(query).scalar() or 0
        return connection.execute(query).scalar() or 0

    def status(self, *, failures: bool = True) -> Status:
        with self.engine.connect() as connection:
            row = connection.execute(
                sa.select(POSITIONS).where(POSITIONS.c.name == self.projection.name)
            ).first()
            head = self.head(connection)
            found = tuple(read_failures(connection, self.projection.name)) if failures else ()
        if row is None:
            return Status(self.projection.name, 0, head, 0, None, found)
        return Status(
            self.projection.name, row.position, head, row.events_applied, row.updated_at, found
        )

    def _select(
        self,
        connection: sa.Connection,
        after: int,
        limit: int | None,
        *,
        originator: uuid.UUID | None = None,
        upto: int | None = None,
    ) -> list[Notification]:
        e = self.events.c
        originator_filter, originator = originator, e.originator_id
        binary = connection.dialect.name != "postgresql"
        if binary:
            # SQLite keeps the UUID as 16 bytes; a batch holds few games, so each UUID is
            # built once instead of once per event.
            originator = sa.type_coerce(originator, sa.LargeBinary).label("originator_id")
        query = (
            sa.select(e.id, originator, e.originator_version, e.topic, e.state)
            .where(e.id > after)
            .order_by(e.id)
            .limit(limit)
        )
        if originator_filter is not None:
            query = query.where(e.originator_id == originator_filter)
        if upto is not None:
            query = query.where(e.id <= upto)
        # One fetch of plain tuples: a Row per event, fetched one by one, cost more than
        # the query itself.
        rows = connection.execute(query).tuples().all()
        uuids: dict[bytes, uuid.UUID] = {}
        notifications = []
        append = notifications.append
        for notification_id, originator_id, version, topic, state in rows:
            if binary:
                key = bytes(originator_id)
                originator_id = uuids.get(key) or uuids.setdefault(key, uuid.UUID(bytes=key))
            append(
                Notification(
                    id=notification_id,
                    originator_id=originator_id,
                    originator_version=version,
                    topic=topic,
                    state=state if type(state) is bytes else bytes(state),
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

    def _lock_position(self, connection: sa.Connection, *, wait: bool = True) -> tuple[int, int]:
        """Take the write lock first (SQLite: a write transaction; PostgreSQL: the row),
        then read the position, so no other runner can apply the same notifications.
        ``wait=False``: on PostgreSQL, a row another runner holds raises at once instead of
        being waited for (SQLite's one write lock is already the caller's)."""
        if not wait and connection.dialect.name == "postgresql":
            # The row locked and read in one statement. A save's own transaction is the
            # only caller: the position's UPDATE at its end sets updated_at (or the
            # savepoint undoes everything), so touching it here first would only add a
            # statement and a row version to every save.
            row = connection.execute(
                sa.select(POSITIONS.c.position, POSITIONS.c.events_applied)
                .where(POSITIONS.c.name == self.projection.name)
                .with_for_update(nowait=True)
            ).one()
            return row.position, row.events_applied
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
        try:
            with self.engine.begin() as connection:
                count = self._batch(connection, batch_number, limit)
        except BaseException:
            self.projection.forget()
            raise
        if count and self.hook:
            self.hook("committed", batch_number)
        return count

    def _batch(self, connection: sa.Connection, batch_number: int, limit: int | None) -> int:
        """One batch on ``connection`` (its transaction is the caller's)."""
        size = self.batch_size if limit is None else min(limit, self.batch_size)
        position, applied = self._lock_position(connection)
        notifications = self._select(connection, position, size)
        if not notifications:
            return 0
        aside = self._set_aside_ids(connection)
        if aside:  # rare: only then is each event's game id written out to compare
            self._apply(connection, [n for n in notifications if str(n.originator_id) not in aside])
        else:
            self._apply(connection, notifications)
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
        return len(notifications)

    def apply_saved(self, first: int, last: int, apply: Callable[[sa.Connection], None]) -> bool:
        """Project the notifications ``first``..``last`` that the caller has just saved
        and still holds in memory, without reading them back: ``apply(connection)`` writes
        their rows, and the position moves to ``last``, in one transaction, as a batch of
        :meth:`catch_up` would.

        Only when every notification before ``first`` is projected and none from
        ``first`` on (no stored id lies between the position and ``first``: PostgreSQL's
        ids have gaps where a save rolled back): otherwise, or when ``apply`` fails,
        nothing is written and False is returned, and the ordinary catch-up projects
        these notifications (recording any failure as it does). A crash before the commit
        leaves the same: rows and position go together."""
        if last < first:
            return False
        self.ensure_position_row()
        try:
            with self.engine.begin() as connection:
                self._advance(connection, first, last, apply)
        except Exception:  # _NotNext, or a failure the catch-up will find and record again
            self.projection.forget()
            return False
        except BaseException:
            self.projection.forget()
            raise
        if self.hook:
            self.hook("committed", 0)
        return True

    def apply_in_save(
        self, connection: sa.Connection, first: int, last: int, apply: Callable
    ) -> bool:
        """:meth:`apply_saved` inside the save's own transaction, on its ``connection``,
        right after its events are inserted and sealed (under the store's lock, which
        orders the saves, so positions move in notification order): rows, position and
        events go in one commit.

        In a savepoint: when the position is not right before ``first``, its row is held
        by another runner (PostgreSQL: not waited for, the save holds the store's lock),
        or ``apply`` fails, the savepoint is rolled back and False is returned; the save
        itself goes on, and the ordinary catch-up projects these notifications later
        (recording any failure as it does); rows the caller wrote earlier in the save
        (PostgreSQL: before the lock) are the caller's to take out. :meth:`ensure_position_row`
        first, outside the save."""
        if last < first:
            return False
        try:
            with connection.begin_nested():
                self._advance(connection, first, last, apply, wait=False)
        except Exception:
            self.projection.forget()
            return False
        return True

    def ensure_position_row(self) -> None:
        """The projection's position row exists (written once, outside any save)."""
        if not self._position_row_known:
            self._ensure_position_row()
            self._position_row_known = True

    def _advance(
        self,
        connection: sa.Connection,
        first: int,
        last: int,
        apply: Callable[[sa.Connection], None],
        *,
        wait: bool = True,
    ) -> None:
        """Rows of ``first``..``last`` by ``apply`` and the position moved to ``last``, on
        ``connection``; raises :class:`_NotNext` when they are not the next to project."""
        position, applied = self._lock_position(connection, wait=wait)
        if not self._next_after(connection, position, first):
            raise _NotNext
        apply(connection)
        if self.hook:
            self.hook("applied", 0)
        connection.execute(
            POSITIONS.update()
            .where(POSITIONS.c.name == self.projection.name)
            .values(
                position=last,
                events_applied=applied + last - first + 1,
                updated_at=datetime.now(UTC),
            )
        )

    def _next_after(self, connection: sa.Connection, position: int, first: int) -> bool:
        """Whether notification ``first`` is the next one after ``position``."""
        if position >= first:
            return False
        if position == first - 1:
            return True
        between = connection.execute(
            sa.select(self.events.c.id)
            .where(self.events.c.id > position, self.events.c.id < first)
            .limit(1)
        ).first()
        return between is None

    def _set_aside_ids(self, connection: sa.Connection) -> set[str]:
        return set(
            connection.execute(
                sa.select(FAILURES.c.originator_id).where(
                    FAILURES.c.projection == self.projection.name
                )
            ).scalars()
        )

    def _apply(self, connection: sa.Connection, notifications: list[Notification]) -> None:
        """The whole batch in a savepoint; if it fails, event by event to find the culprit."""
        if not notifications:
            return
        try:
            with connection.begin_nested():
                self.projection.process(connection, notifications)
            return
        except Exception as error:
            if _transient(error):
                raise
            self.projection.forget()
        failed: set[str] = set()
        for notification in notifications:
            key = str(notification.originator_id)
            if key in failed:
                continue  # the game is set aside: its later events would build on a gap
            try:
                with connection.begin_nested():
                    self.projection.process(connection, [notification])
            except Exception as error:
                if _transient(error):
                    raise
                self.projection.forget()
                failed.add(key)
                self._set_aside(connection, notification, error)

    def _set_aside(
        self, connection: sa.Connection, notification: Notification, error: Exception
    ) -> Failure:
        """Record the failure and remove what the aggregate's earlier events wrote."""
        key = str(notification.originator_id)
        try:
            with connection.begin_nested():
                game_id = self.projection.game_of(connection, notification)
        except Exception:
            game_id = None
        with connection.begin_nested():
            self.projection.discard(connection, notification.originator_id)
        text = f"{error.__class__.__name__}: {error}"[:MAX_ERROR]
        now = datetime.now(UTC)
        failure = Failure(
            projection=self.projection.name,
            originator_id=key,
            notification_id=notification.id,
            game_id=None if game_id is None else str(game_id)[:MAX_GAME_ID],
            event_type=event_type(notification.topic)[:200],
            event_version=notification.originator_version,
            error=text,
            first_seen=now,
            last_attempt=now,
        )
        self._record(connection, failure)
        return failure

    def _record(self, connection: sa.Connection, failure: Failure) -> None:
        this = (FAILURES.c.projection == failure.projection) & (
            FAILURES.c.originator_id == failure.originator_id
        )
        changed = {
            "notification_id": failure.notification_id,
            "game_id": failure.game_id,
            "event_type": failure.event_type,
            "event_version": failure.event_version,
            "error": failure.error,
            "last_attempt": failure.last_attempt,
        }
        updated = connection.execute(
            FAILURES.update().where(this).values(attempts=FAILURES.c.attempts + 1, **changed)
        )
        if updated.rowcount == 0:
            connection.execute(
                FAILURES.insert().values(
                    projection=failure.projection,
                    originator_id=failure.originator_id,
                    first_seen=failure.first_seen,
                    attempts=failure.attempts,
                    **changed,
                )
            )

    def failures(self) -> list[Failure]:
        with self.engine.connect() as connection:
            return read_failures(connection, self.projection.name)

    def retry(self) -> tuple[list[Failure], list[Failure]]:
        """Project each set-aside aggregate again, whole, up to the position.

        Returns (cleared, still failing). One transaction: an aggregate that projects now
        gets all its rows and loses its failure record; one that does not keeps no rows
        and its record counts one more attempt, naming the event that failed this time.
        """
        self._ensure_position_row()
        cleared, failing = [], []
        try:
            with self.engine.begin() as connection:
                position, _ = self._lock_position(connection)
                for failure in read_failures(connection, self.projection.name):
                    if failure.during_rebuild:
                        continue  # only a rebuild can retry a rebuild
                    result = self._retry_one(connection, failure, position)
                    (failing if result is not None else cleared).append(result or failure)
        finally:
            self.projection.forget()
        return cleared, failing

    def _retry_one(
        self, connection: sa.Connection, failure: Failure, position: int
    ) -> Failure | None:
        originator = uuid.UUID(failure.originator_id)
        events = self._select(connection, 0, None, originator=originator, upto=position)
        current = None
        try:
            with connection.begin_nested():
                self.projection.forget()
                self.projection.discard(connection, originator)
                for current in events:
                    self.projection.process(connection, [current])
        except Exception as error:
            if _transient(error) or current is None:
                raise
            self.projection.forget()
            with connection.begin_nested():
                self.projection.discard(connection, originator)
            again = Failure(
                projection=failure.projection,
                originator_id=failure.originator_id,
                notification_id=current.id,
                game_id=failure.game_id,
                event_type=event_type(current.topic)[:200],
                event_version=current.originator_version,
                error=f"{error.__class__.__name__}: {error}"[:MAX_ERROR],
                first_seen=failure.first_seen,
                last_attempt=datetime.now(UTC),
                attempts=failure.attempts + 1,
            )
            self._record(connection, again)
            return again
        connection.execute(
            FAILURES.delete().where(
                (FAILURES.c.projection == failure.projection)
                & (FAILURES.c.originator_id == failure.originator_id)
            )
        )
        return None

    def catch_up(self, *, limit: int | None = None, progress: bool = False) -> int:
        """Apply every notification after the position (at most ``limit``); return the count.

        Cheap when there is nothing new: two indexed reads, no write.
        """
        with bulk_work():
            return self._catch_up(limit, progress)

    def _catch_up(self, limit: int | None, progress: bool) -> int:
        status = self.status(failures=False)
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

    def follow(
        self,
        *,
        interval: float = 1.0,
        stop: Callable[[], bool] = lambda: False,
        on_batch: Callable[[int], None] | None = None,
        on_error: Callable[[Exception], None] | None = None,
    ) -> int:
        """Keep catching up, one batch at a time, until ``stop()`` is true; return how many
        events were applied.

        ``stop()`` is asked between batches, so a stop (SIGTERM) finishes the batch in
        flight and never cuts one. Idle, the runner waits for PostgreSQL's notification that
        events were committed (:mod:`replays.readmodels.new_events`), or ``interval``
        seconds (SQLite; and PostgreSQL's safety net). ``on_batch(count)`` after each
        batch. A failed batch was rolled back whole, with its position, so trying again
        after a wait is always safe: ``on_error(error)`` is told of any error and the
        runner tries again; without it, errors of the connection (a failover, a restart)
        are logged and tried again, and any other is raised.
        """
        from replays.readmodels.new_events import waiter_for

        waiter = waiter_for(self.engine)
        done = 0
        try:
            while not stop():
                try:
                    # Listening first: an event committed after this catch-up wakes the wait.
                    waiter.start()
                    count = self.catch_up(limit=self.batch_size)
                except Exception as error:
                    if on_error is not None:
                        on_error(error)
                    elif _transient(error) or _lost_connection(error):
                        log.warning("projection %s: %s; retrying", self.projection.name, error)
                    else:
                        raise
                    waiter.close()
                    waiter.wait(max(interval, 5.0), stop)
                    continue
                if count:
                    done += count
                    if on_batch is not None:
                        on_batch(count)
                else:
                    waiter.wait(interval, stop)
        finally:
            waiter.close()
        return done

    def rebuild(self, *, progress: bool = False, keep_failed: bool = False) -> int:
        """Project every event again into empty tables, all in one transaction.

        Readers keep seeing the old rows until the commit (PostgreSQL's MVCC; SQLite in WAL
        mode, which :func:`replays.store.db.engine_for` sets), and a rebuild that fails or is
        killed leaves them exactly as they were. Aggregates already set aside are tried
        again and stay set aside if they still fail; an event that fails anew rolls the
        whole rebuild back (:class:`RebuildAbandoned`, the failures recorded under
        ``<name>:rebuild`` for status and health checks) unless ``keep_failed``, which
        commits the rebuild with those aggregates set aside instead.
        """
        with bulk_work():
            return self._rebuild(progress, keep_failed)

    def _rebuild(self, progress: bool, keep_failed: bool) -> int:
        self._ensure_position_row()
        name = self.projection.name
        rebuild_name = name + REBUILD_SUFFIX
        done = 0
        try:
            with self.engine.begin() as connection:
                self._lock_position(connection)
                known = self._set_aside_ids(connection)
                self.projection.clear(connection)
                connection.execute(
                    FAILURES.delete().where(FAILURES.c.projection.in_((name, rebuild_name)))
                )
                connection.execute(
                    POSITIONS.update()
                    .where(POSITIONS.c.name == name)
                    .values(position=0, events_applied=0, updated_at=datetime.now(UTC))
                )
                self.projection.forget()
                head = self.head(connection)
                bar = _progress_bar(head, progress)
                try:
                    batch_number = 0
                    while count := self._batch(connection, batch_number, None):
                        done += count
                        batch_number += 1
                        if bar is not None:
                            bar.update(count)
                finally:
                    if bar is not None:
                        bar.close()
                new = [f for f in read_failures(connection, name) if f.originator_id not in known]
                if new and not keep_failed:
                    raise RebuildAbandoned(new)
        except RebuildAbandoned as abandoned:
            self.projection.forget()
            with self.engine.begin() as connection:
                connection.execute(FAILURES.delete().where(FAILURES.c.projection == rebuild_name))
                for failure in abandoned.failures:
                    self._record(connection, replace(failure, projection=rebuild_name))
            raise
        except BaseException:
            self.projection.forget()
            raise
        self.projection.forget()
        return done


def _progress_bar(total: int, wanted: bool):
    if not wanted or not sys.stderr.isatty() or total <= 0:
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="event", desc="projecting", file=sys.stderr)
