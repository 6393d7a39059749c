"""The corruption fuzzer, pages side (issue 29): with a value of the wrong kind in any column
of any table the project owns, every page of every game of the five variants and the games
list answer below 500, on SQLite and PostgreSQL; the issue's own cases show the rest of the
list, mark the unreadable row, and draw a game's page with the finding in its place.

One store per engine (simulated games of every variant, projected), built once; each case
writes one value into one row of one game (tests/corruption_support.py, shared with
verify's fuzzer), opens the pages through Flask's test client, and writes the row back.
"""

from __future__ import annotations

import re
import sys

import pytest
import sqlalchemy as sa
from auth_support import signed_in
from corruption_support import Case, cases, corrupt, restore, target_row

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
