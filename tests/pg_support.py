"""A throwaway PostgreSQL schema per test (the server at 127.0.0.1:5432, trust auth).

A module of its own rather than part of ``conftest``: under pytest-xdist ``import conftest``
can find ``tests/browser/conftest.py`` instead, so helpers import from here.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import uuid

import pytest
from sqlalchemy.engine import make_url as sa_url

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


# One psql per test process, fed the schemas to drop on its standard input; what it says
# goes to a file, shown when the session ends if it is not empty.
_dropper: subprocess.Popen | None = None
_dropper_errors = None


def _drop_later(schema: str) -> None:
    """Drop the schema while the next tests run: ending its sessions and dropping its
    tables is the server's work, and the test that made it need not wait for it. A psql
    of its own does it, not a thread of this process: processes the tests fork would
    share a thread's connection."""
    global _dropper, _dropper_errors
    if _dropper is None:
        _dropper_errors = tempfile.TemporaryFile("w+")  # noqa: SIM115 - read and closed at the end
        url = sa_url(POSTGRES_BASE_URL)
        _dropper = subprocess.Popen(
            [
                "psql",
                "-X",
                "-q",
                "-h",
                url.host or "127.0.0.1",
                "-p",
                str(url.port or 5432),
                "-U",
                url.username or "postgres",
                "-d",
                url.database or "test",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=_dropper_errors,
            text=True,
        )
        _dropper.stdin.write("SET client_min_messages = error;\nSET lock_timeout = '60s';\n")
    query = " ".join(_LEFT_BEHIND.replace(":schema", f"'{schema}'").split())
    _dropper.stdin.write(f'{query};\nDROP SCHEMA IF EXISTS "{schema}" CASCADE;\n')
    _dropper.stdin.flush()


def wait_for_drops() -> None:
    """Block until every schema handed to the dropper is gone."""
    global _dropper
    if _dropper is not None:
        _dropper.stdin.close()
        _dropper.wait()
        _dropper = None
        _dropper_errors.seek(0)
        said = _dropper_errors.read()
        _dropper_errors.close()
        if said:
            print(
                f"pg_support: psql, dropping the test schemas, said:\n{said}", file=sys.__stderr__
            )


def postgres_schema_url():
    """Create a throwaway schema; return (url bound to it, dropper).

    Every connection made through the URL is named after the schema (``application_name``),
    so that the dropper can end the sessions a test left open: a session a test forgot to
    close holds its connection, and its locks, until the garbage collector finds it, and
    DROP SCHEMA would wait on those locks. Ending them on the server instead of collecting
    garbage keeps the drop cheap (a full collection in a worker late in the suite took most
    of a second a test) and the server's connections few. The drop itself runs in the
    background (:func:`wait_for_drops` waits for it)."""
    import sqlalchemy as sa

    schema = "t_" + uuid.uuid4().hex[:16]
    try:
        engine = sa.create_engine(POSTGRES_BASE_URL, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
        engine.dispose()
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
        _drop_later(schema)

    return url, drop
