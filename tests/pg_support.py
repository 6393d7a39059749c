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


def postgres_schema_url():
    """Create a throwaway schema; return (url bound to it, dropper)."""
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

    def drop() -> None:
        # A session a test forgot to close holds its connection in a transaction until
        # it is collected; DROP SCHEMA would wait on its locks forever.
        import gc

        gc.collect()
        with engine.connect() as conn:
            conn.execute(sa.text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        engine.dispose()

    return f"{POSTGRES_BASE_URL}?options=-csearch_path%3D{schema}", drop
