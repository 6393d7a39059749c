"""`verify` reports a value of the wrong kind and goes on (issue 29): the issue's own cases,
through the CLI (full, ``--game`` and ``--jobs 2``), each beside a real event edit in
another game, on SQLite and on PostgreSQL (there after ``ALTER COLUMN ... TYPE text``)."""

from __future__ import annotations

import json

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


@pytest.mark.parametrize(
    ("table", "column", "value", "why"),
    [
        ("player_results", "player", "not-utf8", "not UTF-8 text"),
        # A BLOB in a text column: SQLite hands it back as bytes without failing the read,
        # and the report printed b'...' as the table's id (its JSON output a traceback).
        ("games", "table_id", "blob", "not text"),
    ],
)
def test_a_text_column_of_the_wrong_kind_is_named_by_the_period_report(
    tmp_path, table, column, value, why
):
    """SQLite keeps any bytes as text, and its driver then fails the whole read, or a BLOB,
    which it reads back as bytes: the period report names the value, reports the period
    without its row (in every format) and exits 0 (3 with --strict), no traceback.
    SQLite only: PostgreSQL refuses such text in a UTF-8 database and reads a text column
    as text."""
    from corruption_support import BLOB, NOT_UTF8

    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    victim = build_store(url)[0]
    engine = engine_for(url)
    case = Case(table, column, NOT_UTF8 if value == "not-utf8" else BLOB, True)
    with engine.begin() as connection:
        row = target_row(connection, table, victim)
        saved = corrupt(connection, case, row)
    report = ["report", "--from", "2020-01-01", "--to", "2030-12-31"]
    env = {"RUMMY_LEDGER_DATABASE_URL": url}
    try:
        result = CliRunner().invoke(main, report, env=env, catch_exceptions=False)
        strict = CliRunner().invoke(main, [*report, "--strict"], env=env, catch_exceptions=False)
        as_json = CliRunner().invoke(
            main, [*report, "--format", "json", "--no-verify"], env=env, catch_exceptions=False
        )
    finally:
        with engine.begin() as connection:
            restore(connection, case, row, saved)
    assert result.exit_code == 0, result.output  # as for any finding: --strict says 3
    assert strict.exit_code == 3, strict.output
    assert "Traceback" not in result.output
    assert f"unreadable: {table}" in result.output, result.output
    assert f"{column} holds" in result.output, result.output
    assert f"{why} (its row is left out of this report)" in result.output
    assert "Per player" in result.output  # the period is still reported
    assert "b'" not in result.stdout  # no stored bytes printed as if they were a value
    assert as_json.exit_code == 0, as_json.output
    assert f"unreadable: {table}" in as_json.stderr, as_json.output
    figures = json.loads(as_json.stdout)
    assert figures["totals"]["games"] >= 1


@pytest.mark.parametrize("value", ["zzz-not-this", "not-utf8"])
def test_export_all_names_an_unreadable_event_without_a_traceback(tmp_path, value):
    """`export --all` lists the games from their first events: one that no reading takes
    (text for bytes, or text that is not UTF-8, which fails SQLite's whole read) is named
    with its row, exit 1, no traceback. SQLite: PostgreSQL refuses the second."""
    from corruption_support import NOT_UTF8

    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    build_store(url)
    case = Case("ledger_events", "state", NOT_UTF8 if value == "not-utf8" else value, True)
    with engine_for(url).begin() as connection:
        first = connection.execute(sa.text("SELECT min(rowid) FROM ledger_events")).scalar()
        corrupt(connection, case, first)
    result = CliRunner().invoke(
        main, ["export", "--all"], env={"RUMMY_LEDGER_DATABASE_URL": url}, catch_exceptions=False
    )
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert "cannot list the stored games: ledger_events id=1" in result.output, result.output
    assert "state holds" in result.output and "not bytes" in result.output


def test_an_inclusion_proof_names_an_unreadable_seal_without_a_traceback(store, tmp_path):
    """`proof inclusion` reads the game's seals and the tree: a value of the wrong kind in
    them ended in a traceback. It names the value, points to `verify`, exits 1."""
    url, victim, _ = store
    env = {"RUMMY_LEDGER_DATABASE_URL": url, "RUMMY_LEDGER_KEY_DIR": str(tmp_path / "keys")}
    runner = CliRunner()
    assert runner.invoke(main, ["keys", "init"], env=env).exit_code == 0
    checkpoint = tmp_path / "checkpoint.json"
    made = runner.invoke(main, ["checkpoint", "--out", str(checkpoint)], env=env)
    assert made.exit_code == 0, made.output
    engine = engine_for(url)
    case = Case("integrity_seals", "originator_id", "zzz-not-this", True)
    with engine.begin() as connection:
        row = target_row(connection, "integrity_seals", victim)
        saved = corrupt(connection, case, row)
    try:
        result = runner.invoke(
            main, ["proof", "inclusion", victim, "--checkpoint", str(checkpoint)], env=env
        )
    finally:
        with engine.begin() as connection:
            restore(connection, case, row, saved)
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "integrity_seals" in result.output and "originator_id holds" in result.output
    assert "rummy-ledger verify" in result.output


def test_a_consistency_proof_names_a_checkpoint_value_read_back_as_bytes(tmp_path):
    """A BLOB in the stored checkpoint's key id: SQLite reads it back as bytes without
    failing, and writing the proof ended in a TypeError traceback. SQLite only: on
    PostgreSQL a text column reads back as text."""
    from corruption_support import BLOB

    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    build_store(url)
    env = {"RUMMY_LEDGER_DATABASE_URL": url, "RUMMY_LEDGER_KEY_DIR": str(tmp_path / "keys")}
    runner = CliRunner()
    assert runner.invoke(main, ["keys", "init"], env=env).exit_code == 0
    checkpoint = tmp_path / "checkpoint.json"
    assert runner.invoke(main, ["checkpoint", "--out", str(checkpoint)], env=env).exit_code == 0
    with engine_for(url).begin() as connection:
        connection.execute(sa.text("UPDATE integrity_checkpoints SET key_id = :v"), {"v": BLOB})
    result = runner.invoke(main, ["proof", "consistency", str(checkpoint)], env=env)
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "cannot prove: integrity_checkpoints" in result.output
    assert "key_id holds" in result.output, result.output


@pytest.mark.parametrize("value", ["", "x"])
def test_audit_names_an_unreadable_event_of_its_game_without_a_traceback(store, value):
    """An event of the game whose version is not a number: `audit` ended in an
    AssertionError traceback from the event store's replay. It names the value, points
    to `verify --game`, exits 1."""
    url, victim, _ = store
    engine = engine_for(url)
    case = Case("ledger_events", "originator_version", value, True)
    with engine.begin() as connection:
        row = target_row(connection, "ledger_events", victim)
        saved = corrupt(connection, case, row)
    try:
        result = CliRunner().invoke(main, ["audit", victim], env={"RUMMY_LEDGER_DATABASE_URL": url})
    finally:
        with engine.begin() as connection:
            restore(connection, case, row, saved)
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert f"game {victim} cannot be rebuilt from its stored events" in result.output
    assert "originator_version holds" in result.output, result.output
    assert f"rummy-ledger verify --game {victim}" in result.output


# -- values of the right kind that say the wrong thing: the seals' game ids, the chain heads
# (integrity_games), the projection's position. Each beside the edit in another game.
def _chain_head(connection, game_id: str) -> dict:
    row = connection.execute(
        sa.text("SELECT * FROM integrity_games WHERE game_id = :g"), {"g": game_id}
    )
    return dict(row.mappings().one())


def _put_back_head(connection, saved: dict) -> None:
    connection.execute(
        sa.text("DELETE FROM integrity_games WHERE originator_id = :originator_id"), saved
    )
    columns = ", ".join(saved)
    connection.execute(
        sa.text(
            f"INSERT INTO integrity_games ({columns}) VALUES ({', '.join(':' + c for c in saved)})"
        ),
        saved,
    )


def _wrong_head(column: str, value):
    def do(connection, victim, edited):
        if column == "deleted":
            connection.execute(
                sa.text("DELETE FROM integrity_games WHERE game_id = :g"), {"g": victim}
            )
            return
        new = edited if value == "copied" else value  # "copied": another game's id
        connection.execute(
            sa.text(f"UPDATE integrity_games SET {column} = :v WHERE game_id = :g"),
            {"v": new, "g": victim},
        )

    return do


HEAD_CASES = [
    ("deleted", None, "integrity_games has no row for aggregate"),
    ("last_position", 2**63 - 1, f"last_position holds {2**63 - 1}, but the game's last seal"),
    ("last_position", -7, "last_position holds -7, but the game's last seal"),
    ("game_id", "copied", "game_id holds"),
    ("chain_hash", b"\0" * 32, "chain_hash does not match the chain the game's seals give"),
]


@pytest.mark.parametrize(("column", "value", "said"), HEAD_CASES)
def test_a_wrong_chain_head_is_named_and_the_edit_is_still_found(store, column, value, said):
    """A game's row in integrity_games (what the saves go on from, what names the game)
    deleted or holding a value the seals do not give was not reported: verified."""
    url, victim, edited = store
    engine = engine_for(url)
    with engine.begin() as connection:
        saved = _chain_head(connection, victim)
        _wrong_head(column, value)(connection, victim, edited)
    try:
        for code, text in (run(url), run(url, "--jobs", "2")):
            assert code == 1 and "Traceback" not in text, text
            assert f"game {edited}, event 3: altered" in text, text
            assert f"FAIL game {victim}: " in text and said in text, text
            assert "integrity_games" in text, text
        if value == "copied":  # the game whose id was copied onto it: its events only
            code, text = run(url, "--game", edited)
            assert code == 1 and f"FAIL game {victim}: altered: integrity_games" in text, text
            assert f"game {edited}, event 3: altered" in text, text
            assert "event moved" not in text and "chain:" not in text, text
    finally:
        with engine.begin() as connection:
            _put_back_head(connection, saved)


def test_seals_relabelled_with_another_game_id_are_named_with_their_owner(store):
    """The edited game's seals relabelled with another game's id: the edit was reported
    against the label, the edited game named nowhere, and the relabel not at all
    (`verify --game` of the label said verified)."""
    url, victim, edited = store
    engine = engine_for(url)
    relabel = "UPDATE integrity_seals SET game_id = :new WHERE game_id = :old"
    with engine.begin() as connection:
        connection.execute(sa.text(relabel), {"new": victim, "old": edited})
        originator = _chain_head(connection, edited)["originator_id"]
    try:
        for code, text in (run(url), run(url, "--jobs", "2")):
            assert code == 1 and "Traceback" not in text, text
            assert f"game {edited}, event 3: altered" in text, text
            assert f"game {victim}, event 3" not in text, text
            assert (
                f"FAIL game {edited}: altered: integrity_seals: seals of game {edited}" in text
            ), text
            assert f"labelled game_id '{victim}'" in text, text
        code, text = run(url, "--game", victim)
        assert code == 1 and "integrity_seals: seals of another aggregate" in text, text
        assert str(originator).replace("-", "")[:8] in text.replace("-", ""), text
        code, text = run(url, "--game", edited)
        assert code == 1 and f"game {edited}, event 3: altered" in text, text
        assert f"are labelled game_id '{victim}'" in text, text
    finally:
        with engine.begin() as connection:
            connection.execute(
                sa.text(
                    "UPDATE integrity_seals SET game_id = :old WHERE game_id = :new "
                    "AND originator_id <> (SELECT originator_id FROM integrity_games "
                    "WHERE game_id = :new)"
                ),
                {"new": victim, "old": edited},
            )


@pytest.mark.parametrize(
    ("statement", "said"),
    [
        ("UPDATE projection_positions SET position = position + 5000", "lies beyond the last"),
        (f"UPDATE projection_positions SET position = {2**63 - 1}", "lies beyond the last"),
        ("UPDATE projection_positions SET position = 0", "position 0 is behind the read rows"),
        ("DELETE FROM projection_positions", "no readable position"),
    ],
)
def test_a_wrong_projection_position_is_one_finding(store, statement, said):
    """The projection's position past the last event was not reported; behind the read
    rows (or deleted) it had every game's rows reported as of a game with no events."""
    url, _, edited = store
    engine = engine_for(url)
    with engine.begin() as connection:
        saved = dict(
            connection.execute(sa.text("SELECT * FROM projection_positions")).mappings().one()
        )
        connection.execute(sa.text(statement))
    try:
        for code, text in (run(url), run(url, "--jobs", "2")):
            assert code == 1 and "Traceback" not in text, text
            assert f"game {edited}, event 3: altered" in text, text
            assert "read_model: projection_positions name='read_models': " in text, text
            assert said in text, text
            assert "with no events" not in text, text
            assert text.count("projection_positions") == 1, text
    finally:
        with engine.begin() as connection:
            connection.execute(sa.text("DELETE FROM projection_positions"))
            connection.execute(
                sa.text(
                    "INSERT INTO projection_positions (name, position, events_applied, "
                    "updated_at) VALUES (:name, :position, :events_applied, :updated_at)"
                ),
                saved,
            )


@pytest.mark.parametrize(
    ("column", "value"), [("root", "zz"), ("signature", "xyz"), ("signature", "ab" * 63 + "c")]
)
def test_a_stored_checkpoint_that_is_not_hex_is_a_finding(store, tmp_path, column, value):
    """A stored checkpoint's root or signature that is not hex digits (one an odd 127
    long) stopped verify at once: the only finding was "stopped early", with no table
    named, and the edit in another game went unreported. It is named with its row and left
    out (as a checkpoint that fails), and every other check still runs."""
    url, _, edited = store
    env = {"RUMMY_LEDGER_DATABASE_URL": url, "RUMMY_LEDGER_KEY_DIR": str(tmp_path / "keys")}
    runner = CliRunner()
    assert runner.invoke(main, ["keys", "init"], env=env).exit_code == 0
    made = runner.invoke(main, ["checkpoint", "--out", str(tmp_path / "checkpoint.json")], env=env)
    assert made.exit_code == 0, made.output
    engine = engine_for(url)
    case = Case("integrity_checkpoints", column, value, True)
    with engine.begin() as connection:  # the latest: the one `verify --game` reads too
        latest = connection.execute(sa.text("SELECT max(id) FROM integrity_checkpoints")).scalar()
        if connection.dialect.name == "sqlite":
            row = connection.execute(
                sa.text("SELECT rowid FROM integrity_checkpoints WHERE id = :i"), {"i": latest}
            ).scalar_one()
        else:
            row = {"id": latest}
        saved = corrupt(connection, case, row)
    try:
        outputs = [
            runner.invoke(main, ["verify", *args], env=env, catch_exceptions=False)
            for args in ([], ["--jobs", "2"], ["--json"], ["--game", edited])
        ]
    finally:
        with engine.begin() as connection:
            restore(connection, case, row, saved)
    for result in outputs:
        assert result.exit_code == 1, result.output
        assert "Traceback" not in result.output and "stopped early" not in result.output
        assert "unreadable" in result.output, result.output
        assert "integrity_checkpoints id=" in result.output, result.output
        assert f"{column} holds" in result.output and "not hex digits" in result.output
        assert "altered" in result.output and edited in result.output, result.output


@pytest.mark.parametrize(("column", "value"), [("level", -1), ("index", -5), ("level", 2**63 - 1)])
def test_a_tree_node_at_no_place_in_a_tree_is_a_finding(store, column, value):
    """A stored tree node whose level or index no tree has: a negative level stopped verify
    ("negative shift count"), a huge one exhausted its memory, and the read-model step never
    ran. The node's row is named, and the edit in another game is still found."""
    url, _, edited = store
    engine = engine_for(url)
    where = 'level = 4 AND "index" = 0'
    if value > 2**15 and engine.dialect.name == "postgresql":
        # PostgreSQL keeps a node's level in a smallint: it refuses the value itself.
        with pytest.raises(sa.exc.DBAPIError), engine.begin() as connection:
            connection.execute(
                sa.text(f'UPDATE integrity_nodes SET "{column}" = :v WHERE {where}'), {"v": value}
            )
        return
    with engine.begin() as connection:
        connection.execute(
            sa.text(f'UPDATE integrity_nodes SET "{column}" = :v WHERE {where}'), {"v": value}
        )
    try:
        outputs = [run(url), run(url, "--jobs", "2")]
    finally:
        with engine.begin() as connection:
            connection.execute(
                sa.text(f'UPDATE integrity_nodes SET "{column}" = :old WHERE "{column}" = :v'),
                {"old": 4 if column == "level" else 0, "v": value},
            )
    for code, text in outputs:
        assert code == 1, text
        assert "Traceback" not in text and "stopped early" not in text, text
        level, index = (value, 0) if column == "level" else (4, value)
        assert f"tree: integrity_nodes level={level}, index={index}: no tree has" in text, text
        assert f"game {edited}, event 3: altered" in text, text
        assert "read rows checked against their events" in text, text
