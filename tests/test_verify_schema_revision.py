"""`verify` on a database whose tables are behind this rummy-ledger's schema: a clear refusal
that says what to run, never a bare database error about a missing column (found when a store
kept from an older checkout was verified after migrations 0014 and 0015 added columns)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
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


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def edited_store(request, tmp_path_factory):
    """A current store of simulated games, one of them with an edited event, a signing key
    and a checkpoint of it (for --since)."""
    from corruption_support import build_store, edit_event

    from replays.integrity.evidence import make_checkpoint
    from replays.integrity.signing import init_keys

    if request.param == "sqlite":
        url, drop = f"sqlite:///{tmp_path_factory.mktemp('schema') / 'ledger.sqlite3'}", None
    else:
        from pg_support import postgres_schema_url

        url, drop = postgres_schema_url()
    games = build_store(url)
    keys = tmp_path_factory.mktemp("keys")
    init_keys(keys)
    checkpoint = keys / "checkpoint.json"
    checkpoint.write_text(make_checkpoint(url, key_directory=str(keys)).to_json())
    edit_event(url, games[-1])
    try:
        yield url, games[-1], keys, checkpoint
    finally:
        engine_for(url).dispose()
        if drop is not None:
            drop()


VERSION_ROWS = [
    ("INSERT INTO alembic_version VALUES ('0018')", "'0018'", "2 rows where Alembic keeps one"),
    ("UPDATE alembic_version SET version_num = 'zzzz'", "'zzzz'", "not a schema revision"),
    ("UPDATE alembic_version SET version_num = '9999'", "'9999'", "not a schema revision"),
    ("UPDATE alembic_version SET version_num = x'00ff'", "b'\\x00\\xff'", "not a schema revision"),
]


@pytest.mark.parametrize(("statement", "quoted", "why"), VERSION_ROWS)
def test_a_version_row_that_cannot_be_read_is_a_finding(
    edited_store, tmp_path, statement, quoted, why
):
    """A second row in Alembic's version table ended verify in Alembic's traceback ("more
    than one head present"); an unknown revision or bytes there was refused with "run
    `rummy-ledger db upgrade`", and the edited event never reported. The tables have every
    column verify reads: the row is a finding, the store is verified as it is."""
    url, edited, keys, checkpoint = edited_store
    engine = engine_for(url)
    if "x'00ff'" in statement and engine.dialect.name != "sqlite":
        # PostgreSQL reads x'00ff' as a bit string, and the varchar column keeps its digits.
        quoted = "'0000000011111111'"
    with engine.begin() as connection:
        head = connection.execute(sa.text("SELECT version_num FROM alembic_version")).scalar()
        connection.execute(sa.text(statement))
    env = {"RUMMY_LEDGER_DATABASE_URL": url, "RUMMY_LEDGER_KEY_DIR": str(keys)}
    since = ["--since", str(checkpoint), "--state", str(tmp_path / "state")]
    try:
        results = [
            CliRunner().invoke(main, ["verify", *args], env=env, catch_exceptions=False)
            for args in ([], ["--json"], ["--jobs", "2"], since)
        ]
        others = [
            CliRunner().invoke(main, args, env=env) for args in (["db", "current"], ["simulate"])
        ]
    finally:
        with engine.begin() as connection:
            connection.execute(sa.text("DELETE FROM alembic_version"))
            connection.execute(sa.text("INSERT INTO alembic_version VALUES (:v)"), {"v": head})
    for result in results:
        text = result.output.replace("\\\\", "\\")  # --json escapes the quoted bytes
        assert result.exit_code == 1, text
        assert "Traceback" not in text and "db upgrade" not in text
        assert "alembic_version: version_num holds " in text and quoted in text, text
        assert why in text and "altered" in text and edited in text, text
    for result in others:  # the other commands reading the version row: no traceback
        assert result.exception is None or isinstance(result.exception, SystemExit), result.output


def test_an_unknown_version_row_over_tables_lacking_columns_is_refused(old_store):
    """When the version row cannot be read and the tables lack columns verify reads, verify
    refuses, naming the row and the columns, with no traceback."""
    with engine_for(old_store).begin() as connection:
        connection.execute(sa.text("UPDATE alembic_version SET version_num = 'zzzz'"))
    result = verify(old_store)
    assert result.exit_code == 1
    assert "alembic_version: version_num holds 'zzzz'" in result.output, result.output
    assert "the tables lack columns this rummy-ledger reads (" in result.output, result.output
    assert "Traceback" not in result.output and "no such column" not in result.output
