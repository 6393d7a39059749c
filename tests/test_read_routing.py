"""Where reads go, without a cluster (the cluster tests cover real standbys): multi-host URLs
as SQLAlchemy takes them, the read-only pages on ``READ_DATABASE_URL``, a replica that does
not answer (reads from the primary, one log line, never a 500), and what ``/readyz`` is told."""

from __future__ import annotations

import logging
from urllib.parse import parse_qsl, urlsplit

import pytest
from auth_support import signed_in
from web_support import load_games

from replays.access import tokens
from replays.store import replicas
from replays.store.settings import database_url, read_database_url, reading_database_url
from web import create_app
from web.ledger import replica_readiness

# Nothing listens on loopback port 1: a refused connection, at once.
DEAD_REPLICA = "postgresql://postgres@127.0.0.1:1/test"


def test_a_libpq_multi_host_url_becomes_one_host_parameter_per_node():
    url = database_url("postgresql://u@h1:5432,h2:5433/db?target_session_attrs=read-write")
    parts = urlsplit(url)
    assert parts.scheme == "postgresql+psycopg" and parts.netloc == "u@" and parts.path == "/db"
    query = parse_qsl(parts.query)
    assert [value for name, value in query if name == "host"] == ["h1:5432", "h2:5433"]
    assert ("target_session_attrs", "read-write") in query
    # Bounded waits on a dead or cut-off node, unless the URL sets its own.
    assert ("tcp_user_timeout", "5000") in query and ("connect_timeout", "3") in query
    own = database_url("postgresql://u@h1,h2/db?connect_timeout=9")
    assert ("connect_timeout", "9") in parse_qsl(urlsplit(own).query)
    # One host is left as written.
    assert database_url("postgresql://u@h1:5432/db") == "postgresql+psycopg://u@h1:5432/db"


def test_the_read_url_and_what_read_only_commands_use(monkeypatch):
    monkeypatch.delenv("RUMMY_LEDGER_READ_DATABASE_URL", raising=False)
    monkeypatch.setenv("RUMMY_LEDGER_DATABASE_URL", "sqlite:///primary.sqlite3")
    assert read_database_url() is None
    assert reading_database_url() == "sqlite:///primary.sqlite3"
    monkeypatch.setenv("RUMMY_LEDGER_READ_DATABASE_URL", "postgresql://r@h9/db")
    assert read_database_url().startswith("postgresql+psycopg://r@h9/db?connect_timeout=3")
    assert reading_database_url() == read_database_url()
    assert reading_database_url("sqlite:///given.sqlite3") == "sqlite:///given.sqlite3"


@pytest.fixture
def games(database_url):
    return load_games(database_url)


def test_read_only_pages_go_to_the_read_url_and_the_rest_to_the_primary(database_url, games):
    # The same database under a second URL stands in for a replica: what is checked is
    # which URL each request reads.
    extra = "timeout=31" if database_url.startswith("sqlite") else "application_name=stand-in"
    stand_in = database_url + ("&" if "?" in database_url else "?") + extra
    app = create_app({"DATABASE_URL": database_url, "READ_DATABASE_URL": stand_in, "TESTING": True})
    client = signed_in(app, "admin")
    game_id = next(iter(games))
    for path in ("/games", f"/games/{game_id}", f"/games/{game_id}/replay?move=2", "/reports"):
        response = client.get(path)
        assert response.status_code == 200, path
        assert response.headers["X-Rummy-Ledger-Read"] == "replica", path
    for path in ("/disputes", "/admin/users"):
        response = client.get(path)
        assert response.status_code == 200, path
        assert response.headers.get("X-Rummy-Ledger-Read", "primary") == "primary", path
    token = tokens.create_token("acme-routing", url=database_url).token
    response = client.get(f"/api/v1/games/{game_id}", headers={"Authorization": f"Bearer {token}"})
    assert response.headers.get("X-Rummy-Ledger-Read", "primary") == "primary"
    # Equal URLs: no replica to speak of, the primary serves every page.
    same = create_app(
        {"DATABASE_URL": database_url, "READ_DATABASE_URL": database_url, "TESTING": True}
    )
    response = signed_in(same).get(f"/games/{game_id}")
    assert response.headers["X-Rummy-Ledger-Read"] == "primary"


def test_a_replica_that_does_not_answer_sends_reads_to_the_primary(database_url, games, caplog):
    replicas.forget()
    app = create_app(
        {"DATABASE_URL": database_url, "READ_DATABASE_URL": DEAD_REPLICA, "TESTING": True}
    )
    client = signed_in(app)
    game_id = next(iter(games))
    with caplog.at_level(logging.WARNING, logger="replays.replicas"):
        for path in ("/games", f"/games/{game_id}", f"/games/{game_id}/replay?move=2"):
            response = client.get(path)
            assert response.status_code == 200, (path, response.get_data(as_text=True)[:300])
            assert response.headers["X-Rummy-Ledger-Read"] == "primary"
    warnings = [
        r.getMessage() for r in caplog.records if "read replica unreachable" in r.getMessage()
    ]
    assert len(warnings) == 1, warnings  # said once, not on every request
    # Unreachable is logged, not a readiness failure: the primary serves the reads.
    assert replica_readiness(app) is None
    replicas.forget()


def test_readiness_without_a_replica_has_nothing_to_say(database_url):
    app = create_app({"DATABASE_URL": database_url, "TESTING": True})
    assert app.config["READ_DATABASE_URL"] is None
    assert replica_readiness(app) is None
    assert replicas.replica_lag_seconds(database_url, None) is None


class _Statements:
    """The statements each database was sent that name a table (SQLAlchemy's cursor events,
    and the access-log lines sent on PostgreSQL without a cursor: ``send_access``)."""

    def __init__(self, table: str):
        from types import SimpleNamespace

        import sqlalchemy as sa

        from replays.access import access_log

        self.table, self.seen = table, []
        sa.event.listen(sa.engine.Engine, "before_cursor_execute", self._before)
        self._pending = access_log._PendingLine.__init__

        def pending(line, engine, statement):
            compiled = str(statement.compile(dialect=engine.dialect))
            self._before(SimpleNamespace(engine=engine), None, compiled)
            return self._pending(line, engine, statement)

        access_log._PendingLine.__init__ = pending

    def _before(self, connection, _cursor, statement, *_):
        if self.table in statement:
            self.seen.append((connection.engine.url, statement.split()[0].upper()))

    def on(self, url: str) -> list[str]:
        from sqlalchemy.engine import make_url

        wanted = make_url(url)
        return [kind for where, kind in self.seen if where == wanted]

    def close(self):
        import sqlalchemy as sa

        from replays.access import access_log

        sa.event.remove(sa.engine.Engine, "before_cursor_execute", self._before)
        access_log._PendingLine.__init__ = self._pending


def _copy_accounts(primary: str, replica: str) -> None:
    """The replica stand-in's accounts as the primary has them now (a replica that later
    falls behind the primary's sign-outs keeps these)."""
    import sqlalchemy as sa

    from replays.access.accounts import UserRow
    from replays.store.db import engine_for

    table = UserRow.__table__
    with engine_for(primary).connect() as source:
        rows = [dict(row._mapping) for row in source.execute(sa.select(table))]
    with engine_for(replica).begin() as target:
        target.execute(table.delete())
        target.execute(table.insert(), rows)


def _log_lines(url: str, username: str) -> int:
    import sqlalchemy as sa

    from replays.access.access_log import TABLE
    from replays.store.db import engine_for

    with engine_for(url).connect() as connection:
        query = sa.select(sa.func.count()).where(TABLE.c.username == username)
        return connection.execute(query).scalar()


def test_a_replica_page_reads_the_account_there_and_the_primary_confirms_it(
    database_url, second_url, games
):
    """A page a replica serves reads the signed-in account on the replica; the primary gets
    one statement, the access-log INSERT that also checks the account is still signed in.
    A session signed out (or an account disabled) on the primary is refused at once, even
    while the replica still has the old session key, and leaves no log line."""
    from replays.access import accounts

    load_games(second_url)  # the replica stand-in: the same games, its own copy
    app = create_app(
        {"DATABASE_URL": database_url, "READ_DATABASE_URL": second_url, "TESTING": True}
    )
    auditor, officer = signed_in(app, "auditor"), signed_in(app, "dispute_officer")
    _copy_accounts(database_url, second_url)
    game_id = next(iter(games))
    replay = f"/games/{game_id}/replay?move=2"
    primary, replica = app.config["DATABASE_URL"], app.config["READ_DATABASE_URL"]
    statements = _Statements("users")
    try:
        response = auditor.get(replay)
        assert response.status_code == 200, response.get_data(as_text=True)[:300]
        assert response.headers["X-Rummy-Ledger-Read"] == "replica"
        # The account read on the replica; on the primary only the log line's INSERT.
        assert statements.on(replica) == ["SELECT"]
        assert statements.on(primary) == ["INSERT"]
        assert _log_lines(database_url, "test-auditor") == 1
        assert _log_lines(second_url, "test-auditor") == 0
        # A page with no log line: the account is confirmed by a SELECT on the primary.
        statements.seen.clear()
        assert auditor.get("/games").status_code == 200
        assert statements.on(primary) == ["SELECT"]
    finally:
        statements.close()

    # Signed out and disabled on the primary; the replica still has the old rows.
    auditor_id = accounts.find_user("test-auditor", url=database_url).id
    accounts.end_sessions(auditor_id, url=database_url)
    accounts.disable_user("test-dispute-officer", url=database_url)
    for client, username in ((auditor, "test-auditor"), (officer, "test-dispute-officer")):
        for path in (replay, "/games", f"/games/{game_id}/replay/table?move=3"):
            response = client.get(path)
            body = response.get_data(as_text=True)
            assert response.status_code in (302, 401), (username, path, body[:300])
            assert game_id not in body or response.status_code == 302, (username, path)
            if response.status_code == 302:
                assert "/login" in response.headers["Location"]
        assert _log_lines(database_url, username) == (1 if username == "test-auditor" else 0)

    # An account the replica does not know yet (created after it last caught up): read on
    # the primary, as without a replica.
    player = games[game_id]["players"][0]["id"]
    response = signed_in(app, "player", player=player).get(f"/games/{game_id}")
    assert response.status_code == 200
    assert response.headers["X-Rummy-Ledger-Read"] == "replica"


def test_a_replica_page_is_withheld_when_the_primary_cannot_confirm_the_account(
    database_url, second_url, games, monkeypatch
):
    from replays.access import accounts

    load_games(second_url)
    app = create_app(
        {"DATABASE_URL": database_url, "READ_DATABASE_URL": second_url, "TESTING": True}
    )
    client = signed_in(app, "auditor")
    _copy_accounts(database_url, second_url)

    def no_primary(*_args, **_kwargs):
        raise ConnectionError("the primary does not answer")

    monkeypatch.setattr(accounts, "confirm_signed_in", no_primary)
    response = client.get("/games")
    assert response.status_code == 503
    assert "could not be checked" in response.get_data(as_text=True)
