"""The app's handles on the ledger: one :class:`~replays.store.application.Ledger` per app and
database (the library's Application is thread-safe, and building one per request would cost
more than the page), and read-model sessions on the same database.

Reads and writes may go to different servers. With ``READ_DATABASE_URL`` set
(``RUMMY_LEDGER_READ_DATABASE_URL``: read replicas), the read-only pages (:data:`READ_PAGES`,
on GET) read the events and the read models from a replica; everything else (the API, with
its read-after-write; disputes; accounts and sign-in; admin) and every write stays on
``DATABASE_URL``, the primary. :func:`reading_url` makes that choice, once per request, and
:func:`get_ledger` and :func:`read_session` follow it. A replica that does not answer sends
the request to the primary (:mod:`replays.store.replicas` logs it once).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from flask import current_app, g, has_request_context, request
from sqlalchemy.orm import Session

from replays.store.db import session_factory

_lock = threading.Lock()

# The blueprints whose GET pages only read: games list, replays, audit pages, player
# histories, reports. Their pages compare events with read rows only inside one server's
# snapshot (the integrity verdict), so a replica's lag cannot make a false verdict.
READ_PAGES = frozenset({"games", "replays", "audit", "players", "reports"})


def reading_url() -> str:
    """The database this request reads from: a read replica for a read-only page when one
    is configured and answering, else the primary."""
    if not has_request_context():
        return current_app.config["DATABASE_URL"]
    url = g.get("reading_url")
    if url is None:
        url = g.reading_url = _choose_reading_url()
    return url


def served_by_replica() -> bool:
    replica = current_app.config.get("READ_DATABASE_URL")
    return bool(replica) and reading_url() == replica


def _choose_reading_url() -> str:
    primary = current_app.config["DATABASE_URL"]
    replica = current_app.config.get("READ_DATABASE_URL")
    if (
        not replica
        or replica == primary
        or request.method not in ("GET", "HEAD")
        or request.blueprint not in READ_PAGES
    ):
        return primary
    from replays.store.replicas import replica_usable

    return replica if replica_usable(replica) else primary


def get_ledger():
    """The Ledger on this request's database (:func:`reading_url`), built on first use."""
    url = reading_url()
    extensions = current_app.extensions
    ledgers = extensions.get("rummy_ledgers")
    ledger = ledgers.get(url) if ledgers is not None else None
    if ledger is None:
        with _lock:
            ledgers = extensions.setdefault("rummy_ledgers", {})
            ledger = ledgers.get(url)
            if ledger is None:
                from replays.store.application import Ledger

                if url == current_app.config["DATABASE_URL"]:
                    ledger = Ledger(url)
                    # The primary's, under the name code before replicas used.
                    extensions["rummy_ledger"] = ledger
                else:
                    # A hot standby refuses DDL, even CREATE TABLE IF NOT EXISTS: the tables
                    # are the primary's, replicated.
                    ledger = Ledger(url, env={"CREATE_TABLE": "n"})
                ledgers[url] = ledger
    return ledger


@contextmanager
def read_session() -> Session:
    """A read-only session on the read-model tables, closed afterwards (on the connection
    that hides unreadable rows while a page is drawn around them: web/unreadable.py)."""
    masked = g.get("masked_connection")
    session = Session(bind=masked) if masked is not None else session_factory(reading_url())()
    try:
        yield session
    finally:
        session.close()


def replica_notice() -> str | None:
    """What the layout says on a page a lagging replica serves, or None (called from the
    page). A game page names how many of the game's events the replica has; other pages
    say that the newest games may be missing. The lag is measured at most once a second."""
    if not has_request_context() or not served_by_replica():
        return None
    from replays.store.replicas import game_behind, replica_lag_seconds

    primary, replica = current_app.config["DATABASE_URL"], current_app.config["READ_DATABASE_URL"]
    try:
        lag = replica_lag_seconds(primary, replica)
        if not lag:
            return None
        game_id = (request.view_args or {}).get("game_id")
        if game_id is None:
            if lag < 1.0:
                return None
            return (
                f"Served by a read replica {lag:.1f} s behind the primary: "
                "the newest games may not appear yet."
            )
        behind = game_behind(replica, primary, game_id, fresh=False)
    except Exception as error:  # a notice must not take the page down
        current_app.logger.warning("cannot measure the replica's lag: %s", error)
        return None
    if behind is None:
        return None
    return (
        f"Served by a read replica {behind.lag_seconds:.1f} s behind the primary: it has "
        f"{behind.replica_events} of this game's {behind.primary_events} events; "
        "the rest will appear when it catches up."
    )


def replica_readiness(app) -> str | None:
    """For ``/readyz`` (``web.ops.add_readiness_check``): None when no replica is configured
    or its lag is within ``READY_MAX_REPLICA_LAG`` seconds (default 30), else the reason.

    A replica that does not answer is not a reason: its reads already go to the primary
    (logged by :mod:`replays.store.replicas`), and taking every web process out of the load
    balancer for it would turn a lost replica into a lost site."""
    import math

    from replays.store.replicas import replica_lag_seconds

    replica = app.config.get("READ_DATABASE_URL")
    if not replica:
        return None
    lag = replica_lag_seconds(app.config["DATABASE_URL"], replica)
    bound = float(app.config.get("READY_MAX_REPLICA_LAG", 30.0))
    if lag is None or math.isinf(lag) or lag <= bound:
        return None
    return f"read replica {lag:.0f} s behind the primary (bound {bound:g} s)"
