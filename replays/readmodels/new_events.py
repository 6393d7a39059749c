"""Waiting for new events: PostgreSQL tells (LISTEN/NOTIFY), SQLite is asked again later.

Migration 0012 has PostgreSQL send ``NOTIFY rummy_ledger_events`` (the payload: the schema
of the events table) from the transaction that stores events, delivered when it commits. The
projection worker (:meth:`Runner.follow <replays.readmodels.projection_runner.Runner.follow>`)
listens before it catches up, so an event committed between its catch-up and its wait still
wakes it; it then sleeps until told, and reads the store only then (and once per ``interval``
as a safety net, which may be long: minutes). SQLite has no such signal: the waiter sleeps
``interval`` and the worker looks again.

A wait is cut into short slices only to notice ``stop()`` (SIGTERM) promptly; a slice asks
the socket, never the database.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable

import sqlalchemy as sa

CHANNEL = "rummy_ledger_events"  # migrations/versions/0012_notify_new_events.py
SLICE_SECONDS = 0.25

log = logging.getLogger(__name__)


class Sleeper:
    """Waits out the interval (SQLite: nothing tells a reader that a write committed)."""

    listening = False

    def start(self) -> None:
        pass

    def wait(self, seconds: float, stop: Callable[[], bool]) -> bool:
        """Return after ``seconds``, or sooner once ``stop()``; False: not told of events."""
        deadline = time.monotonic() + seconds
        while not stop():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(left, SLICE_SECONDS))
        return False

    def close(self) -> None:
        pass


class Listener(Sleeper):
    """LISTENs on its own connection of ``engine`` (PostgreSQL, psycopg 3); wakes on a
    notification for this store's schema. A lost connection is opened again on the next
    wait, which then returns at once: events may have come while nobody listened."""

    def __init__(self, engine: sa.Engine):
        self.engine = engine
        self.connection: sa.Connection | None = None
        self.schema: str | None = None

    @property
    def listening(self) -> bool:
        return self.connection is not None

    def start(self) -> None:
        if self.connection is not None:
            return
        connection = self.engine.connect().execution_options(isolation_level="AUTOCOMMIT")
        try:
            self.schema = connection.execute(sa.text("SELECT current_schema()")).scalar()
            # Named in pg_stat_activity, for the operator (and the test that cuts it).
            connection.execute(
                sa.text("SELECT set_config('application_name', :name, false)"),
                {"name": f"rummy-ledger projection worker {os.getpid()}"},
            )
            connection.execute(sa.text(f"LISTEN {CHANNEL}"))
        except Exception:
            connection.close()
            raise
        self.connection = connection

    def wait(self, seconds: float, stop: Callable[[], bool]) -> bool:
        if self.connection is None:
            try:
                self.start()
            except sa.exc.SQLAlchemyError as error:
                log.warning("cannot LISTEN for new events (%s); polling", error)
                super().wait(min(seconds, 5.0), stop)
            return True  # not listening until now: look at the store before waiting
        driver = self.connection.connection.driver_connection
        deadline = time.monotonic() + seconds
        while not stop():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                told = [
                    note
                    for note in driver.notifies(timeout=min(left, SLICE_SECONDS), stop_after=1)
                    if note.payload in ("", self.schema)
                ]
            except Exception as error:  # the server went away: listen again next time
                log.warning("lost the LISTEN connection (%s)", error.__class__.__name__)
                self.close()
                return True
            if told:
                return True
        return False

    def close(self) -> None:
        connection, self.connection = self.connection, None
        if connection is not None:
            try:
                connection.invalidate()  # never back to the pool still LISTENing
                connection.close()
            except Exception:
                pass


def waiter_for(engine: sa.Engine) -> Sleeper:
    return Listener(engine) if engine.dialect.name == "postgresql" else Sleeper()
