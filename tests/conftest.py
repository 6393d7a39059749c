"""Shared fixtures: a fresh ledger database on SQLite and on PostgreSQL for each test.

Storage and read-model tests take the ``database_url`` fixture and so run twice, once per
engine. PostgreSQL is the server at 127.0.0.1:5432 (trust auth, database ``test``); each
test gets its own schema, dropped afterwards. Outside CI an unreachable server skips those
tests; with ``CI=true`` it fails them, because CI must prove both engines.
"""

from __future__ import annotations

import os
import uuid

import pytest

POSTGRES_BASE_URL = os.environ.get(
    "RUMMY_LEDGER_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _postgres_schema_url():
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


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database_url(request, tmp_path, monkeypatch):
    """A fresh, empty ledger database URL; also set as RUMMY_LEDGER_DATABASE_URL."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
        monkeypatch.setenv("RUMMY_LEDGER_DATABASE_URL", url)
        yield url
        return
    url, drop = _postgres_schema_url()
    monkeypatch.setenv("RUMMY_LEDGER_DATABASE_URL", url)
    try:
        yield url
    finally:
        drop()


@pytest.fixture
def sqlite_url(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    monkeypatch.setenv("RUMMY_LEDGER_DATABASE_URL", url)
    return url


@pytest.fixture
def postgres_url(monkeypatch):
    url, drop = _postgres_schema_url()
    monkeypatch.setenv("RUMMY_LEDGER_DATABASE_URL", url)
    try:
        yield url
    finally:
        drop()
