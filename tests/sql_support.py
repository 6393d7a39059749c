"""Plain SQL for tests: one statement in a transaction of its own."""

from __future__ import annotations

import sqlalchemy as sa

from replays.store.db import engine_for


def sql(url, statement, **params):
    """``statement`` run and committed on ``url``; its rows read in full before the
    connection goes back to its pool (where, on SQLite, any cursor still open is closed),
    so the result is read like any other after the call."""
    with engine_for(url).begin() as connection:
        result = connection.execute(sa.text(statement), params)
        return result.freeze()() if result.returns_rows else result
