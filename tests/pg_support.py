"""A throwaway PostgreSQL schema per test (the server at 127.0.0.1:5432, trust auth).

A module of its own rather than part of ``conftest``: under pytest-xdist ``import conftest``
can find ``tests/browser/conftest.py`` instead, so helpers import from here.
"""

from __future__ import annotations

import os
import uuid

import pytest

POSTGRES_BASE_URL = os.environ.get(
    "RUMMY_LEDGER_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

# The sessions a dropped schema leaves behind: those opened through its URL (named after it,
# unless they renamed themselves) and any holding a lock on one of its tables.
_LEFT_BEHIND = """
SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity
WHERE pid <> pg_backend_pid()
  AND (application_name = :schema OR pid IN (
        SELECT l.pid FROM pg_locks l
        JOIN pg_class c ON c.oid = l.relation
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = :schema))
"""


def postgres_schema_url():
    """Create a throwaway schema; return (url bound to it, dropper).

    Every connection made through the URL is named after the schema (``application_name``),
    so that the dropper can end the sessions a test left open: a session a test forgot to
    close holds its connection, and its locks, until the garbage collector finds it, and
    DROP SCHEMA would wait on those locks. Ending them on the server instead of collecting
    garbage keeps the drop cheap (a full collection in a worker late in the suite took most
    of a second a test) and the server's connections few."""
    import sqlalchemy as sa

    schema = "t_" + uuid.uuid4().hex[:16]
    try:
        engine = sa.create_engine(POSTGRES_BASE_URL, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    except Exception as error:  # the server is down or unreachable
        if IN_CI:
            pytest.fail(f"PostgreSQL is required in CI and is not reachable: {error}")
        pytest.skip(f"PostgreSQL not reachable at {POSTGRES_BASE_URL}: {error}")
    url = f"{POSTGRES_BASE_URL}?options=-csearch_path%3D{schema}&application_name={schema}"

    def drop() -> None:
        from replays.store import db

        cached = db._ENGINES.pop(url, None)  # the ledger's own engine for the URL
        if cached is not None:
            cached.dispose()
        with engine.connect() as conn:
            conn.execute(sa.text(_LEFT_BEHIND), {"schema": schema})
            conn.execute(sa.text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        engine.dispose()

    return url, drop
