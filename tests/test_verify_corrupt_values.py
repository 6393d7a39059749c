"""`verify` reports a value of the wrong kind and goes on (issue 29): the issue's own cases,
through the CLI (full, ``--game`` and ``--jobs 2``), each beside a real event edit in
another game, on SQLite and on PostgreSQL (there after ``ALTER COLUMN ... TYPE text``)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from corruption_support import Case, build_store, corrupt, edit_event, restore, target_row

from replays.store.db import engine_for
from web.cli import main

# (table, column, value, what the finding quotes)
ISSUE_CASES = [
    ("games", "point_value", "abc", "'abc'"),
    ("player_results", "amount", "xyz", "'xyz'"),
    ("ledger_entries", "debit", "1e999", ""),
    ("moves", "at", "notadate", "'notadate'"),
    ("games", "started_at", "zzz", "'zzz'"),
    ("games", "players", "not json{", "'not json{'"),
    ("integrity_seals", "leaf_hash", "nothex", "'nothex'"),
    ("integrity_head", "size", "big", "'big'"),
    ("ledger_events", "originator_version", "x", "'x'"),
    ("ledger_snapshots", "state", "TEXT", ""),
]


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def store(request, tmp_path_factory):
    if request.param == "sqlite":
        url, drop = f"sqlite:///{tmp_path_factory.mktemp('corrupt') / 'ledger.sqlite3'}", None
    else:
        from pg_support import postgres_schema_url

        url, drop = postgres_schema_url()
    games = build_store(url)
    edit_event(url, games[-1])
    try:
        yield url, games[0], games[-1]
    finally:
        engine_for(url).dispose()
        if drop is not None:
            drop()


def run(url, *args):
    result = CliRunner().invoke(
        main, ["verify", *args], env={"RUMMY_LEDGER_DATABASE_URL": url}, catch_exceptions=False
    )
    return result.exit_code, result.output


@pytest.mark.parametrize(("table", "column", "value", "quoted"), ISSUE_CASES)
def test_a_wrong_value_is_a_finding_and_the_edit_is_still_found(
    store, table, column, value, quoted
):
    url, victim, edited = store
    engine = engine_for(url)
    with engine.begin() as connection:
        table_key = table if table != "ledger_snapshots" else "ledger_snapshots"
        row = target_row(connection, table_key, victim)
        if value == "TEXT":  # the snapshot's own JSON, stored as TEXT instead of bytes
            where = "rowid = :r" if connection.dialect.name == "sqlite" else None
            if where is None:
                keys = " AND ".join(f"{k} = :{k}" for k in row)
                state = connection.execute(
                    sa.text(f"SELECT state FROM ledger_snapshots WHERE {keys}"), row
                ).scalar_one()
            else:
                state = connection.execute(
                    sa.text(f"SELECT state FROM ledger_snapshots WHERE {where}"), {"r": row}
                ).scalar_one()
            value = bytes(state).decode()
        case = Case(table, column, value, True)
        saved = corrupt(connection, case, row)
    try:
        outputs = [run(url), run(url, "--jobs", "2")]
        code, text = outputs[0]
        for code, text in outputs:
            assert code == 1, text
            assert "Traceback" not in text
            assert f"game {edited}, event 3: altered" in text, text
            assert f"unreadable: {table}" in text and f"{column} holds {quoted}" in text, text
        code, text = run(url, "--game", victim)
        named_here = table not in ("ledger_events", "ledger_snapshots", "integrity_seals") or (
            victim in text
        )
        assert code == 1 and f"unreadable: {table}" in text and named_here, text
        code, text = run(url, "--game", edited)
        assert code == 1 and f"game {edited}, event 3: altered" in text, text
    finally:
        with engine.begin() as connection:
            restore(connection, case, row, saved)
