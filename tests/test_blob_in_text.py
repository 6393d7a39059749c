"""A BLOB in a text column of a table the pages and commands show is named, never shown.

SQLite hands a BLOB an insider stores in a text column (``UPDATE games SET table_id =
X'00ff'``) back as ``bytes`` without failing the read: pages printed ``b'\\x00\\xff'`` as
if it were the table's id, with no finding and an answer of 200. Every text column of
every table below (taken from the SQLAlchemy metadata, so a new column is probed without a
change here) gets a BLOB in one row, in turn, and every page and command showing that
table is opened: it answers as usual, quotes the bytes nowhere but in a finding that names
the table and column, and still shows the other rows (the other games, users, tokens).

SQLite only: a PostgreSQL text column holds text (tests/test_corruption_pages.py covers
the values it can hold). One store for the module; each value is written back after.
"""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa
from auth_support import PASSWORD, ensure_account, signed_in
from click.testing import CliRunner
from corruption_support import BLOB, Case, build_store, corrupt, restore, target_row

from replays.readmodels.models import READ_MODEL_TABLES
from replays.store.db import engine_for
from replays.store.decoding import _kind, owned_tables
from web import create_app, unreadable
from web.cli import main

pytestmark = pytest.mark.filterwarnings("ignore")

PERIOD = "from=2000-01-01&to=2100-12-31"
GAME_PAGES = ("/games/{game}", "/games/{game}/replay", "/games/{game}/audit")
AUDIT = ("/games/{game}/audit", "/games/{game}/audit.json", "/games/{game}/audit.csv")
REPORTS = (f"/reports?{PERIOD}", f"/reports.csv?{PERIOD}", f"/reports.json?{PERIOD}")
REPORT_COMMAND = ("report", "--from", "2000-01-01", "--to", "2100-12-31")
# Per table: the pages and commands (argv, the exit status it documents for a row it
# leaves out) that show its rows.
SHOWN_BY = {
    "games": (("/games", *GAME_PAGES, "/players/{player}", *REPORTS), [(REPORT_COMMAND, 0)]),
    "player_results": (("/games/{game}", "/players/{player}", *REPORTS), [(REPORT_COMMAND, 0)]),
    "moves": (("/games/{game}/replay", "/games/{game}/replay?move=3", *AUDIT), []),
    "ledger_entries": ((*AUDIT, *REPORTS), [(REPORT_COMMAND, 0)]),
    "users": (("/admin/users",), [(("users", "list"), 1)]),
    "api_tokens": ((), [(("tokens", "list"), 1)]),
    "dispute_cases": (("/disputes", "/disputes?status=all", "/disputes/{case}"), []),
    "access_log": (("/admin/access-log", "/admin/access-log.csv"), []),
    **{
        table: (("/fairplay",), [])
        for table in (
            *("fairplay_games", "fairplay_table_days", "fairplay_player_days"),
            *("fairplay_partner_days", "fairplay_pair_days", "fairplay_reviews"),
        )
    },
}
LISTED = {*(t.name for t in READ_MODEL_TABLES), "users", "api_tokens", "dispute_cases"}
# A bytes value's repr (``b'…'``) as HTML, JSON or plain text writes it.
BYTES_SHOWN = re.compile(r"(?<![\w])b(?:'|&#39;|\\')")


def _text_columns():
    for table in owned_tables():
        if table.name in SHOWN_BY:
            for column in table.c:
                if _kind(column) in ("text", "variant"):
                    yield table.name, column.name


def test_every_read_model_table_is_probed():
    assert {t.name for t in READ_MODEL_TABLES} <= set(SHOWN_BY)
    assert len(list(_text_columns())) > 30


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    from replays.access import tokens
    from replays.access.accounts import add_user, find_user
    from replays.disputes.cases import Disputes
    from replays.fairplay import projection
    from replays.store.application import Ledger

    url = f"sqlite:///{tmp_path_factory.mktemp('blob') / 'ledger.sqlite3'}"
    game_ids = build_store(url)
    ledger = Ledger(url, env={"CREATE_TABLE": "no"})
    projection.catch_up(ledger, url)
    officer = find_user(ensure_account(url, "dispute_officer"), url=url)
    for game_id in game_ids[:2]:
        Disputes(ledger).open_case(officer, game_id, 1, f"a case on {game_id}")
    for name in ("auditor-a", "auditor-b"):  # before the admin: the first row gets the value
        add_user(name, "auditor", PASSWORD, url=url)
    token_ids = [tokens.create_token(name, url=url).token_id for name in ("acme", "zeta")]
    app = create_app({"DATABASE_URL": url, "TESTING": True, "REPLAY_CACHE": False})
    try:
        yield url, game_ids, token_ids, signed_in(app, "admin")
    finally:
        engine_for(url).dispose()


def _player(url: str, game_id: str) -> str:
    with engine_for(url).connect() as connection:
        return connection.execute(
            sa.text("SELECT player FROM player_results WHERE game_id = :g LIMIT 1"), {"g": game_id}
        ).scalar_one()


def _case(url: str, game_id: str) -> str:
    with engine_for(url).connect() as connection:
        return connection.execute(
            sa.text("SELECT case_id FROM dispute_cases WHERE game_id = :g"), {"g": game_id}
        ).scalar_one()


def _outputs(client, url: str, table: str, shown: dict) -> dict[str, tuple]:
    from web.views import fairplay

    pages, commands = SHOWN_BY[table]
    out = {}
    for page in pages:
        unreadable._seen.clear()  # each page names only what it met itself
        fairplay._REVIEWS.clear()  # and reads the store, not what it kept in this process
        path = page.format(**shown)
        response = client.get(path, follow_redirects=True)
        out[path] = (response.status_code, response.get_data(as_text=True))
    for argv, status in commands:
        result = CliRunner().invoke(main, list(argv), env={"RUMMY_LEDGER_DATABASE_URL": url})
        out[" ".join(argv)] = (result.exit_code, result.output, status)
    return out


# A finding's quote of the stored value, as HTML, JSON or plain text writes it: a page's
# (``column holds b'\x00\xffblob'``) or verification's (``table.column: stored b'…'``, in a
# game's badge or the report's verification lines; a badge may still quote an earlier case).
FINDING = re.compile(
    r"(?:\w+ holds|\w+(?:\[[^]]*\])?\.\w+: stored) b(?:'|&#39;)(?:\\{1,2})x00(?:\\{1,2})xffblob(?:'|&#39;)"
)


def _without_findings(text: str) -> str:
    return FINDING.sub("", text)


def test_a_blob_in_any_shown_text_column_is_named_and_the_rest_still_shown(site):
    url, game_ids, token_ids, client = site
    game = game_ids[0]
    shown = {"game": game, "player": _player(url, game), "case": _case(url, game)}
    markers = [*game_ids[1:], "auditor-a", "auditor-b", *token_ids]
    engine = engine_for(url)
    failures, named, refused, tried = [], set(), set(), 0
    clean = {t: _outputs(client, url, t, shown) for t in SHOWN_BY}
    for table, column in _text_columns():
        case = Case(table, column, BLOB, True)
        with engine.begin() as connection:
            row = target_row(connection, table, game)
            key = (
                connection.execute(sa.text(f'SELECT * FROM "{table}" WHERE rowid = :r'), {"r": row})
                .mappings()
                .one()
            )
            try:
                with connection.begin_nested():
                    saved = corrupt(connection, case, row)
            except sa.exc.IntegrityError:  # a key other rows refer to: the database refuses it
                refused.add((table, column))
                continue
        own = {str(v) for v in key.values() if isinstance(v, str)}
        try:
            answers = _outputs(client, url, table, shown)
        finally:
            with engine.begin() as connection:
                if table == "fairplay_reviews":
                    # /fairplay keeps a review of its own when the kept one cannot be read.
                    connection.execute(sa.text(f"DELETE FROM {table} WHERE rowid != {row}"))
                restore(connection, case, row, saved)
        tried += 1
        for where, (status, text, *documented) in answers.items():
            before = clean[table][where]
            wanted = documented[0] if documented and f"{column} holds" in text else before[0]
            if status != wanted and not (status == 404 and column in key and where != "/games"):
                failures.append(f"{case}: {where} answered {status}, not {wanted}")
            rest = _without_findings(text)
            shows = BYTES_SHOWN.search(rest)
            if shows:
                at = shows.start()
                failures.append(f"{case}: {where} shows the bytes: {rest[at - 80 : at + 30]!r}")
            if re.search(rf"{table}\b[^:]*: {column} holds|{table}(\[[^]]*\])?\.{column}:", text):
                named.add((table, column))
            lost = [m for m in markers if m in before[1] and m not in text and m not in own]
            if lost:
                failures.append(f"{case}: {where} no longer shows {lost[:3]}")
    assert tried > 30
    assert not failures, "\n".join(failures[:40]) + f"\n({len(failures)} in all)"
    # Each column of a table whose rows these pages list is read by one of them: named
    # there. Fair play's pages show sums over its tables (a period, its flags).
    unnamed = [(t, c) for t, c in _text_columns() if t in LISTED and (t, c) not in named | refused]
    assert not unnamed, " ".join(f"{t}.{c}" for t, c in sorted(unnamed))


def test_every_column_type_of_ours_can_be_cached():
    """SQLAlchemy caches a statement's compiled form only when each TypeDecorator class in it
    says ``cache_ok`` itself (the flag is not inherited): without it every query naming the
    column is compiled again, with an SAWarning (StoredLongText lacked it once)."""
    import replays.store.db  # noqa: F401  (the decorators register as subclasses on import)
    from replays.store.decoding import owned_tables

    decorators = {
        type(column.type)
        for table in owned_tables()
        for column in table.c
        if isinstance(column.type, sa.types.TypeDecorator)
    }
    assert decorators, "no column of ours has a decorated type"
    uncached = sorted(k.__name__ for k in decorators if k.__dict__.get("cache_ok") is not True)
    assert uncached == []
