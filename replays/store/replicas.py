"""Read replicas: whether one answers, how far behind the primary it is, and how far
behind it is on one game.

The web app sends its read-only pages to ``RUMMY_LEDGER_READ_DATABASE_URL``
(:func:`replays.store.settings.read_database_url`; docs/deploying.md, "Replicas and
failover"). A replica is a PostgreSQL hot standby: it serves committed transactions in
the primary's commit order, so a game saved in one transaction (an import: events, seals
and read rows together) is there whole or not at all. What a replica can be is *behind*:
this module measures that, cheaply, and remembers a replica that did not answer so that
reads go to the primary without waiting on it again for a few seconds.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass

import sqlalchemy as sa

from domain.game_ids import game_uuid
from replays.store.db import one_statement
from replays.store.schema import EVENTS_TABLE
from replays.store.settings import database_url, read_database_url

log = logging.getLogger("replays.replicas")

# A replica that failed a probe or a query is left alone for this long: every read meanwhile
# goes to the primary at once instead of first waiting out a connect timeout.
DOWN_SECONDS = 5.0
# A probe or a lag measurement is reused for this long (every page asks).
CACHE_SECONDS = 1.0

_lock = threading.Lock()
_down_until: dict[str, float] = {}
_probed: dict[str, float] = {}
_lags: dict[tuple[str, str], tuple[float, float]] = {}
_games: dict[tuple[str, str, str], tuple[float, Behind | None]] = {}


class ReplicaUnreachable(Exception):
    """The read replica did not answer."""


def mark_down(read_url: str, error: BaseException | str) -> None:
    """Send reads to the primary for :data:`DOWN_SECONDS`, and say so once in the log."""
    with _lock:
        already = _down_until.get(read_url, 0.0) > time.monotonic()
        _down_until[read_url] = time.monotonic() + DOWN_SECONDS
        _probed.pop(read_url, None)
    if not already:
        reason = error if isinstance(error, str) else f"{error.__class__.__name__}: {error}"
        log.warning(
            "read replica unreachable (%s); reads go to the primary for %.0f s",
            str(reason).splitlines()[0] if str(reason) else reason,
            DOWN_SECONDS,
        )


def is_connection_error(error: BaseException) -> bool:
    """An error of the connection (server gone, link cut, no server accepting, or a server
    that stopped being the primary: read-only in the middle of a failover), not of a
    query: the caller may go to another server, or try again. Judged by the PostgreSQL
    driver's error under whatever wraps it (SQLAlchemy, eventsourcing); SQLite's
    OperationalError (a missing table, a locked file) is not one."""
    if isinstance(error, ReplicaUnreachable | ConnectionError):
        return True
    for link in _chain(error):
        if isinstance(link, sa.exc.DBAPIError) and link.connection_invalidated:
            return True
        if isinstance(link, sa.exc.PendingRollbackError):
            # A transaction whose connection died under code that caught the error and went
            # on (a save's read rows "never fail the save"): the next statement finds it
            # invalid. Nothing of it was committed; a new transaction may try again.
            return True
        if _postgres_connection_error(link):
            return True
    return False


# SQLSTATE classes and codes of a lost or refused connection, or of a node that is no longer
# the primary: 08 connection exception; 57P01-57P03 admin/crash shutdown, cannot connect
# now; 25006 read-only transaction (a standby, or a node being promoted).
_LOST_STATES = ("57P01", "57P02", "57P03", "25006")


def _chain(error: BaseException):
    seen: set[int] = set()
    while error is not None and id(error) not in seen and len(seen) < 8:
        seen.add(id(error))
        yield error
        wrapped = error.args[0] if error.args and isinstance(error.args[0], BaseException) else None
        error = getattr(error, "orig", None) or error.__cause__ or error.__context__ or wrapped


def _postgres_connection_error(error: BaseException) -> bool:
    try:
        import psycopg
    except ImportError:  # pragma: no cover - psycopg is a dependency
        return False
    if not isinstance(error, psycopg.Error):
        return False
    state = error.sqlstate
    if state is None:  # raised by the driver itself: the connection failed or broke
        return isinstance(error, psycopg.OperationalError | psycopg.InterfaceError)
    return state.startswith("08") or state in _LOST_STATES


def replica_usable(read_url: str) -> bool:
    """Whether reads may go to ``read_url`` now: not marked down, and it answered a probe
    in the last :data:`CACHE_SECONDS` (or answers one now)."""
    now = time.monotonic()
    with _lock:
        if _down_until.get(read_url, 0.0) > now:
            return False
        if now - _probed.get(read_url, -math.inf) < CACHE_SECONDS:
            return True
    try:
        with one_statement(read_url) as connection:
            connection.exec_driver_sql("SELECT 1")
    except Exception as error:
        mark_down(read_url, error)
        return False
    with _lock:
        _probed[read_url] = time.monotonic()
        _down_until.pop(read_url, None)
    return True


def replica_lag_seconds(
    primary_url: str | None = None, read_url: str | None = None, *, fresh: bool = False
) -> float | None:
    """How many seconds the read replica is behind the primary, for ``/readyz``.

    None: no replica is configured (``RUMMY_LEDGER_READ_DATABASE_URL`` unset), or the read
    URL is not PostgreSQL. 0.0: it has replayed everything the primary has written (or the
    read URL reached a primary). Otherwise the age of the last transaction it replayed.
    ``math.inf``: the replica does not answer. Measured at most once a second per process
    unless ``fresh``; the primary is asked only for its WAL position (one cheap query).
    """
    read_url = read_database_url(read_url)
    if read_url is None or not read_url.startswith("postgresql"):
        return None
    primary_url = database_url(primary_url)
    key = (primary_url, read_url)
    now = time.monotonic()
    if not fresh:
        with _lock:
            kept = _lags.get(key)
        if kept is not None and now - kept[0] < CACHE_SECONDS:
            return kept[1]
    try:
        lag = _measure_lag(primary_url, read_url)
    except Exception as error:
        if not is_connection_error(error):
            raise
        mark_down(read_url, error)
        lag = math.inf
    with _lock:
        _lags[key] = (time.monotonic(), lag)
    return lag


def _measure_lag(primary_url: str, read_url: str) -> float:
    with one_statement(read_url) as replica:
        standby, replayed, age = replica.exec_driver_sql(
            "SELECT pg_is_in_recovery(), pg_last_wal_replay_lsn(),"
            " extract(epoch FROM now() - pg_last_xact_replay_timestamp())"
        ).one()
    if not standby:
        return 0.0
    # Both positions are LSNs; the primary's is asked after the replica's, so a replica that
    # has replayed it is caught up however long the primary has been idle (the replay
    # timestamp alone would grow on an idle primary).
    with one_statement(primary_url) as primary:
        behind = primary.exec_driver_sql(
            "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), %(replayed)s::pg_lsn)",
            {"replayed": replayed},
        ).scalar()
    if behind is None or behind <= 0:
        return 0.0
    return max(0.0, float(age or 0.0))


@dataclass(frozen=True)
class Behind:
    """A game the replica has not fully reached: ``replica_events`` of ``primary_events``
    (0: not at all), and the replica's lag in seconds."""

    replica_events: int
    primary_events: int
    lag_seconds: float

    @property
    def missing(self) -> bool:
        return self.replica_events == 0


def game_behind(
    read_url: str, primary_url: str, game_id: str, *, fresh: bool = True
) -> Behind | None:
    """Whether the replica lacks some of ``game_id``'s events that the primary has: two
    indexed look-ups of one game's last version, one on each server. None: the replica has
    every event the primary has for this game (or the primary has none).

    ``fresh=False`` (a page's banner) reuses an answer for the same game for
    :data:`CACHE_SECONDS`, as the lag it is shown beside is: while a replica is behind,
    staff stepping through one game's replay ask this on every move, each time a round
    trip to the primary, which is busy with the writes that put the replica behind."""
    key = (read_url, primary_url, game_id)
    if not fresh:
        with _lock:
            kept = _games.get(key)
        if kept is not None and time.monotonic() - kept[0] < CACHE_SECONDS:
            return kept[1]
    table = sa.table(
        EVENTS_TABLE, sa.column("originator_id", sa.Uuid), sa.column("originator_version")
    )
    query = sa.select(sa.func.max(table.c.originator_version)).where(
        table.c.originator_id == game_uuid(game_id)
    )
    with one_statement(read_url) as replica:
        on_replica = replica.execute(query).scalar() or 0
    with one_statement(primary_url) as primary:
        on_primary = primary.execute(query).scalar() or 0
    found = None
    if on_primary > on_replica:
        lag = replica_lag_seconds(primary_url, read_url)
        found = Behind(on_replica, on_primary, 0.0 if lag is None else lag)
    with _lock:
        if len(_games) >= 1024:  # many games opened within a second: start again
            _games.clear()
        _games[key] = (time.monotonic(), found)
    return found


def forget() -> None:
    """Forget every probe and every replica marked down (tests; after a reconfiguration)."""
    with _lock:
        _down_until.clear()
        _probed.clear()
        _lags.clear()
        _games.clear()
