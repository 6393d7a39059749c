"""The app's handles on the ledger: one :class:`~replays.store.application.Ledger` per app (the
library's Application is thread-safe, and building one per request would cost more than
the page), and read-model sessions on the same database.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from flask import current_app, g
from sqlalchemy.orm import Session

from replays.store.db import session_factory

_lock = threading.Lock()


def get_ledger():
    """The app's Ledger, built on first use against ``DATABASE_URL``."""
    extensions = current_app.extensions
    ledger = extensions.get("rummy_ledger")
    if ledger is None:
        with _lock:
            ledger = extensions.get("rummy_ledger")
            if ledger is None:
                from replays.store.application import Ledger

                ledger = Ledger(current_app.config["DATABASE_URL"])
                extensions["rummy_ledger"] = ledger
    return ledger


@contextmanager
def read_session() -> Session:
    """A read-only session on the read-model tables, closed afterwards (on the connection
    that hides unreadable rows while a page is drawn around them: web/unreadable.py)."""
    masked = g.get("masked_connection")
    if masked is not None:
        session = Session(bind=masked)
    else:
        session = session_factory(current_app.config["DATABASE_URL"])()
    try:
        yield session
    finally:
        session.close()
