"""`verify` on a database whose tables are behind this rummy-ledger's schema: a clear refusal
that says what to run, never a bare database error about a missing column (found when a store
kept from an older checkout was verified after migrations 0014 and 0015 added columns)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from replays.store.db import engine_for
from replays.store.schema import head_revision, migrate
from web.cli import main


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def old_store(request, tmp_path):
    if request.param == "sqlite":
        url, drop = f"sqlite:///{tmp_path / 'ledger.sqlite3'}", None
    else:
        from pg_support import postgres_schema_url

        url, drop = postgres_schema_url()
    migrate(url, "0013")
    try:
        yield url
    finally:
        engine_for(url).dispose()
        if drop is not None:
            drop()


def verify(url: str, *args: str):
    return CliRunner().invoke(
        main, ["verify", *args], env={"RUMMY_LEDGER_DATABASE_URL": url}, catch_exceptions=False
    )


def test_an_older_schema_is_refused_with_what_to_run(old_store):
    result = verify(old_store)
    assert result.exit_code == 1
    assert "schema revision 0013" in result.output
    assert f"reads revision {head_revision()}" in result.output
    assert "rummy-ledger db upgrade" in result.output
    assert "Traceback" not in result.output and "no such column" not in result.output


def test_the_same_store_verifies_once_upgraded(old_store):
    migrate(old_store)
    result = verify(old_store, "--no-snapshots")
    assert result.exit_code == 0, result.output
    assert "schema revision" not in result.output


def test_since_refuses_an_older_schema_too(old_store, tmp_path):
    old = tmp_path / "old.json"
    old.write_text("{}")
    result = verify(old_store, "--since", str(old), "--state", str(tmp_path / "state"))
    assert result.exit_code == 1
    assert "schema revision 0013" in result.output
