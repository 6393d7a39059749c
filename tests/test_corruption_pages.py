"""The corruption fuzzer, pages side (issue 29): with a value of the wrong kind in any column
of any table the project owns, every page of every game of the five variants and the games
list answer below 500, on SQLite and PostgreSQL; the issue's own cases show the rest of the
list, mark the unreadable row, and draw a game's page with the finding in its place.

One store per engine (simulated games of every variant, projected), built once; each case
writes one value into one row of one game (tests/corruption_support.py, shared with
verify's fuzzer), opens the pages through Flask's test client, and writes the row back.
"""

from __future__ import annotations

import html
import json
import re
import sys
from contextlib import contextmanager

import pytest
import sqlalchemy as sa
from auth_support import ensure_account, signed_in
from corruption_support import (
    BLOB,
    NOT_UTF8,
    Case,
    NotUtf8,
    cases,
    corrupt,
    restore,
    target_row,
)

from replays.store.db import engine_for
from web import create_app

pytestmark = pytest.mark.filterwarnings("ignore")


def _store(url) -> list[dict]:
    from replays.readmodels.projections import catch_up
    from replays.simulation import Floor, Simulation, store_games
    from replays.store.schema import migrate

    migrate(url)
    floor = Floor(
        seed=7, tables=5, players=8, variants=("points", "raise", "red3", "pool", "deals")
    )
    records = list(Simulation(floor).games(5))
    store_games(records, url=url, warn=lambda message: None)
    catch_up(url)
    return records


def game_pages(game_id: str, players: list[str]) -> list[str]:
    pages = [
        f"/games/{game_id}",
        f"/games/{game_id}/replay",
        f"/games/{game_id}/replay?move=3",
        f"/games/{game_id}/replay/table?move=3",
        f"/games/{game_id}/replay/table.svg?move=3",
        f"/games/{game_id}/audit",
        f"/games/{game_id}/audit.json",
        f"/games/{game_id}/audit.csv",
    ]
    return pages + [f"/players/{player}" for player in players[:1]]


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def site(request, tmp_path_factory):
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('pages-fuzz') / 'ledger.sqlite3'}"
        drop = None
    else:
        from pg_support import postgres_schema_url

        url, drop = postgres_schema_url()
    records = _store(url)
    app = create_app({"DATABASE_URL": url, "TESTING": True, "REPLAY_CACHE": False})
    client = signed_in(app, "admin")
    try:
        yield url, records, client
    finally:
        engine_for(url).dispose()
        if drop is not None:
            drop()


def _players(record: dict) -> list[str]:
    return [p["id"] if isinstance(p, dict) else p for p in record.get("players", [])]


def _answers(client, paths: list[str]) -> dict[str, int]:
    out = {}
    for path in paths:
        response = client.get(path, follow_redirects=True)
        out[path] = response.status_code
        if response.status_code >= 500:
            continue
        assert "Traceback" not in response.get_data(as_text=True), path
    return out


class Corrupted:
    """One case written into one game's row for the time of a ``with`` block."""

    def __init__(self, url: str, case: Case, game_id: str):
        self.engine, self.case, self.game_id = engine_for(url), case, game_id

    def __enter__(self):
        with self.engine.begin() as connection:
            self.row = target_row(connection, self.case.table, self.game_id)
            with connection.begin_nested():
                self.saved = corrupt(connection, self.case, self.row)
        return self

    def __exit__(self, *exc):
        with self.engine.begin() as connection:
            restore(connection, self.case, self.row, self.saved)


def test_every_column_wrong_kind_leaves_every_page_below_500(site):
    url, records, client = site
    # One game per variant gets the value; every page of it and the list are opened.
    by_variant = {}
    for record in records:
        by_variant.setdefault(record.get("variant") or record["format"], record)
    tried, failed = 0, []
    baseline = {}
    for record in by_variant.values():
        baseline.update(_answers(client, game_pages(record["game_id"], _players(record))))
    assert all(status == 200 for status in baseline.values()), {
        p: s for p, s in baseline.items() if s != 200
    }
    victims = list(by_variant.values())
    for number, case in enumerate(cases(url, per_column=1)):
        record = victims[number % len(victims)]
        try:
            corrupted = Corrupted(url, case, record["game_id"]).__enter__()
        except (sa.exc.IntegrityError, sa.exc.InternalError, sa.exc.ProgrammingError) as error:
            # The database itself refuses the value: a foreign key, or on PostgreSQL the
            # access log's append-only trigger.
            assert isinstance(error, sa.exc.IntegrityError) or "append-only" in str(error)
            continue
        try:
            pages = ["/games", *game_pages(record["game_id"], _players(record))]
            answers = _answers(client, pages)
        finally:
            corrupted.__exit__(None, None, None)
        tried += 1
        failed += [
            f"{case} in {record['game_id']}: {p} {s}" for p, s in answers.items() if s >= 500
        ]
    print(f"{tried} (table, column, value) cases x pages", file=sys.stderr)
    assert not failed, "\n".join(failed[:30]) + f"\n({len(failed)} answers of {tried} cases)"


def _set(url: str, sql: str, **params) -> None:
    with engine_for(url).begin() as connection:
        if connection.dialect.name == "postgresql":
            table, column = re.match(r"UPDATE (\w+) SET (\w+)", sql).groups()
            connection.execute(
                sa.text(f"ALTER TABLE {table} ALTER COLUMN {column} TYPE text USING {column}::text")
            )
        connection.execute(sa.text(sql), params)


def test_the_issues_cases_degrade_the_page_they_touch_only(site, tmp_path):
    url, records, client = site
    game = records[0]["game_id"]
    others = [r["game_id"] for r in records[1:]]
    case = Case("games", "started_at", "zzz", True)
    with Corrupted(url, case, game):
        listing = client.get("/games")
        assert listing.status_code == 200
        html = listing.get_data(as_text=True)
        # The rest are listed; the unreadable row is marked, naming what cannot be read.
        assert all(other in html for other in others[:3])
        assert "unreadable" in html and "started_at" in html
        # The game's own page draws (its start time is not needed there on every engine).
        assert client.get(f"/games/{game}", follow_redirects=True).status_code == 200
    for column, value in (("point_value", "abc"),):
        with Corrupted(url, Case("games", column, value, True), game):
            for path in ["/games", *game_pages(game, _players(records[0]))]:
                response = client.get(path, follow_redirects=True)
                assert response.status_code < 500, (path, response.status_code)
            page = client.get(f"/games/{game}", follow_redirects=True).get_data(as_text=True)
            assert "point_value" in page and "abc" in page
            health = client.get("/healthz")
            assert "unreadable" in health.get_data(as_text=True), health.get_data(as_text=True)


def test_swapped_events_and_bad_topics_leave_the_replay_and_audit_below_500(site):
    """Two events with their states swapped, an event stored as TEXT, a bytes or an empty
    topic: the game's replay, table fragment, SVG and audit still answer."""
    from replays.store.application import Ledger

    url, records, client = site
    record = next(r for r in records if r.get("variant") == "points")
    game = record["game_id"]
    pages = [p for p in game_pages(game, _players(record)) if "/players/" not in p]
    ledger = Ledger(url, env={"CREATE_TABLE": "no"})
    originator = ledger.aggregate_id(game)
    engine = engine_for(url)
    with engine.connect() as connection:
        from replays.integrity.store import id_param

        o = id_param(connection, originator.bytes)
        rows = dict(
            connection.execute(
                sa.text(
                    "SELECT originator_version, state FROM ledger_events "
                    "WHERE originator_id = :o AND originator_version IN (3, 4)"
                ),
                {"o": o},
            ).all()
        )
    assert len(rows) == 2

    def put(version: int, state) -> None:
        with engine.begin() as connection:
            connection.execute(
                sa.text(
                    "UPDATE ledger_events SET state = :s "
                    "WHERE originator_id = :o AND originator_version = :v"
                ),
                {"s": state, "o": o, "v": version},
            )

    put(3, rows[4])
    put(4, rows[3])
    try:
        answers = _answers(client, pages)
    finally:
        put(3, rows[3])
        put(4, rows[4])
    assert all(status < 500 for status in answers.values()), answers
    assert all(status == 200 for status in _answers(client, pages).values())
    for case in (
        Case("ledger_events", "topic", b"\x00\xff", True),
        Case("ledger_events", "topic", "", True),
        Case("ledger_events", "state", "{not bytes", True),
    ):
        with Corrupted(url, case, game):
            answers = _answers(client, pages)
        assert all(status < 500 for status in answers.values()), (case, answers)


@pytest.mark.parametrize("site", ["sqlite"], indirect=True)
def test_a_blob_in_a_text_column_is_named_by_the_period_report_pages(site):
    """SQLite reads a BLOB in a text column back as bytes without failing: the report page
    and its CSV printed ``b'...'`` as a table's id. They name the row and leave it out.
    SQLite only: on PostgreSQL a text column holds text."""
    url, records, client = site
    # A period of its own: the module's other tests may have kept the whole span's report.
    period = "from=2000-01-02&to=2100-12-30"
    with Corrupted(url, Case("games", "table_id", b"\x00\xffblob", True), records[0]["game_id"]):
        page = client.get(f"/reports?{period}")
        csv = client.get(f"/reports.csv?{period}")
    assert page.status_code == 200 and csv.status_code == 200
    html = page.get_data(as_text=True)
    assert 'data-unreadable="1"' in html and "table_id" in html, html[:2000]
    # The banner quotes the stored value; the figures below it leave its row out.
    assert "blob" not in html.split('<main id="main"')[1]
    # Findings may quote the value (this row, or a verification of an earlier case); no
    # figure carries it.
    lines = csv.get_data(as_text=True).splitlines()
    figures = [line for line in lines if not line.startswith("verification,")]
    assert not [line for line in figures if "blob" in line and "holds" not in line], lines


# games.players: the JSON list of a game's player ids. Values that do not parse, and JSON
# of another shape (which every reader would iterate or test membership in as if it were
# the players).
PLAYERS_VALUES = ("not json{", "1e999", "123", "null", "true", '["p1", 5]', "[]", "{}")
PLAYERS_STORED = (NOT_UTF8, BLOB)  # SQLite keeps them as they are; PostgreSQL as text


@contextmanager
def players_hold(url: str, game_id: str, value):
    """``value`` in the game's ``games.players`` for a ``with`` block: in the column as it
    is where it takes the value (any on SQLite; valid JSON in PostgreSQL's json column),
    else as :class:`Corrupted` writes it (PostgreSQL: the column changed to text)."""
    engine = engine_for(url)
    sqlite = engine.dialect.name == "sqlite"
    if not sqlite:
        try:
            json.loads(value)
        except (TypeError, ValueError):
            with Corrupted(url, Case("games", "players", value, True), game_id):
                yield
            return
    key = {"g": game_id}
    with engine.begin() as connection:
        old = connection.execute(
            sa.text("SELECT CAST(players AS TEXT) FROM games WHERE game_id = :g"), key
        ).scalar_one()
    put = ":v" if sqlite else "CAST(:v AS json)"
    put = "CAST(:v AS TEXT)" if type(value) is NotUtf8 else put
    with engine.begin() as connection:
        connection.execute(
            sa.text(f"UPDATE games SET players = {put} WHERE game_id = :g"), {"v": value, **key}
        )
    try:
        yield
    finally:
        with engine.begin() as connection:
            connection.execute(
                sa.text(
                    f"UPDATE games SET players = {':v' if sqlite else 'CAST(:v AS json)'} "
                    "WHERE game_id = :g"
                ),
                {"v": old, **key},
            )


def _banner(page: str) -> str:
    found = re.search(r'<div class="read-side-notice unreadable-notice".*?</div>', page, re.S)
    return html.unescape(found.group(0)) if found else ""


def _names(banner: str, game_id: str) -> bool:
    """Whether a staff banner names ``game_id``'s ``games.players`` as unreadable."""
    return f"games game_id='{game_id}'" in banner and ": players holds " in banner


def test_a_games_players_value_of_the_wrong_shape_is_named_or_refused(site):
    """``games.players`` that is no list of player ids (not JSON, not UTF-8, a BLOB, or JSON
    of another shape: ``true``, ``null``, ``123``, ``{}``, ``[]``, ``["p1", 5]``), in a game
    of each variant: a player of the game is refused its pages (403 naming the column, never
    let in on a value that cannot be read); staff see the game's page name the finding in
    its place; the games list, the player's history and a dispute case on the game are
    drawn without the row, naming it. It answered 500 from the player's access check, the
    list's template and the replay's players."""
    from replays.access import accounts
    from replays.disputes.cases import Disputes
    from replays.store.application import Ledger

    url, records, admin = site
    app = create_app({"DATABASE_URL": url, "TESTING": True, "REPLAY_CACHE": False})
    by_variant = {}
    for record in records:
        by_variant.setdefault(record.get("variant") or record["format"], record)
    values = PLAYERS_VALUES + PLAYERS_STORED
    failed, drawn = [], {}
    for variant, record in by_variant.items():
        game, seat = record["game_id"], _players(record)[0]
        player = signed_in(app, "player", player=seat)
        case = None
        if variant == "points":
            actor = accounts.find_user(ensure_account(url, "player", player=seat), url=url)
            disputes = Disputes(Ledger(url, env={"CREATE_TABLE": "no"}))
            case = disputes.open_case(actor, game, 3, "my discard was not recorded")
        for value in values:
            with players_hold(url, game, value):
                said = f"{variant} {game} players={value!r}"
                for path in (f"/games/{game}", f"/games/{game}/replay?move=3&seat={seat}"):
                    answer = player.get(path)
                    text = answer.get_data(as_text=True)
                    if answer.status_code != 403 or "games.players" not in text:
                        failed.append(f"{said}: player {path} {answer.status_code}")
                    elif "game_id=" in html.unescape(text):  # a finding: staff's to read
                        failed.append(f"{said}: player {path} quotes the value")
                    # Staff: the finding in the page's place, where the page reads the value
                    # (a pool or deals game's pages are drawn from its events alone).
                    answer = admin.get(path, follow_redirects=True)
                    text = answer.get_data(as_text=True)
                    if answer.status_code != 200:
                        failed.append(f"{said}: admin {path} {answer.status_code}")
                    elif "unreadable-page" in text and not _names(_banner(text), game):
                        failed.append(f"{said}: admin {path} does not name the value")
                    else:
                        drawn[variant] = drawn.get(variant, 0) + ("unreadable-page" in text)
                pages = [("admin", admin, f"/games?table={game.split('-')[0]}")]
                pages += [
                    (who, c, f"/players/{seat}")
                    for who, c in (("admin", admin), ("player", player))
                ]
                if case is not None:
                    pages += [
                        (who, c, f"/disputes/{case.case_id}")
                        for who, c in (("admin", admin), ("player", player))
                    ]
                for who, client, path in pages:
                    answer = client.get(path, follow_redirects=True)
                    text = answer.get_data(as_text=True)
                    banner = _banner(text)
                    if answer.status_code != 200 or not banner:
                        failed.append(f"{said}: {who} {path} {answer.status_code}")
                    elif who == "admin" and not _names(banner, game):
                        failed.append(f"{said}: {who} {path} does not name the value")
                    elif (
                        "/disputes/" not in path
                        and f">{game}</a>" in text.split('<main id="main"')[1]
                    ):
                        failed.append(f"{said}: {who} {path} lists the unreadable game")
        assert player.get(f"/games/{game}", follow_redirects=True).status_code == 200, game
    assert not failed, "\n".join(failed)
    # A 13-card game's pages read the value (its replay's players): named every time.
    assert drawn["points"] == 2 * len(values), drawn
