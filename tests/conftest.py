"""Shared fixtures: a fresh ledger database on SQLite and on PostgreSQL for each test.

Storage and read-model tests take the ``database_url`` fixture and so run twice, once per
engine. PostgreSQL is the server at 127.0.0.1:5432 (trust auth, database ``test``); each
test gets its own schema, dropped afterwards. Outside CI an unreachable server skips those
tests; with ``CI=true`` it fails them, because CI must prove both engines.
"""

from __future__ import annotations

import migration_memo
import pytest
from pg_support import postgres_schema_url, wait_for_drops

from replays.access import accounts

# Production hashes passwords with scrypt at N = 2**15 (accounts.PASSWORD_METHOD, held by
# tests/test_accounts.py): about 0.1 s of CPU a hash and a check, paid by each of the suite's
# thousand-odd sign-ins. Here the same scrypt runs at N = 2**10. A stored hash names its own
# parameters, so a server the tests start checks these at their cost too.
PRODUCTION_PASSWORD_METHOD = accounts.PASSWORD_METHOD
TEST_PASSWORD_METHOD = "scrypt:1024:8:1"


@pytest.fixture(autouse=True, scope="session")
def _test_password_cost():
    accounts.PASSWORD_METHOD = TEST_PASSWORD_METHOD
    accounts._dummy_hash.cache_clear()
    yield
    accounts.PASSWORD_METHOD = PRODUCTION_PASSWORD_METHOD
    accounts._dummy_hash.cache_clear()


@pytest.fixture(autouse=True, scope="session")
def _schemas_dropped():
    """The throwaway PostgreSQL schemas are dropped in the background: the session ends
    when they are gone."""
    yield
    wait_for_drops()


@pytest.fixture(autouse=True, scope="session")
def _migrations_replayed():
    """Empty stores migrated to head by replaying the first such migration's statements
    (tests/migration_memo.py says why and when)."""
    migration_memo.install()
    yield
    migration_memo.uninstall()


@pytest.fixture
def real_migrations(monkeypatch):
    """Every migration through Alembic itself, for the tests of the migrations."""
    monkeypatch.setattr(migration_memo, "enabled", False)


@pytest.fixture
def production_password_cost(monkeypatch):
    """Passwords hashed as production hashes them, for the tests of that cost itself."""
    monkeypatch.setattr(accounts, "PASSWORD_METHOD", PRODUCTION_PASSWORD_METHOD)
    accounts._dummy_hash.cache_clear()
    yield
    accounts._dummy_hash.cache_clear()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database_url(request, tmp_path, monkeypatch):
    """A fresh, empty ledger database URL; also set as RUMMY_LEDGER_DATABASE_URL."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
        monkeypatch.setenv("RUMMY_LEDGER_DATABASE_URL", url)
        yield url
        return
    url, drop = postgres_schema_url()
    monkeypatch.setenv("RUMMY_LEDGER_DATABASE_URL", url)
    try:
        yield url
    finally:
        drop()


@pytest.fixture
def second_url(database_url, tmp_path):
    """Another fresh, empty store on the same engine as ``database_url`` (for comparing
    two ways of storing the same records); not set as the environment's URL."""
    if database_url.startswith("sqlite"):
        yield f"sqlite:///{tmp_path / 'second.sqlite3'}"
        return
    url, drop = postgres_schema_url()
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
    url, drop = postgres_schema_url()
    monkeypatch.setenv("RUMMY_LEDGER_DATABASE_URL", url)
    try:
        yield url
    finally:
        drop()


@pytest.fixture
def keys(tmp_path, monkeypatch):
    """A fresh key directory (signing key pair and memo key), set as RUMMY_LEDGER_KEY_DIR."""
    from replays.integrity.signing import init_keys

    directory = tmp_path / "keys"
    init_keys(directory)
    monkeypatch.setenv("RUMMY_LEDGER_KEY_DIR", str(directory))
    return directory
