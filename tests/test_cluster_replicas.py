"""Read replicas on a real pg_auto_failover formation (tests/cluster_support.py): the app's
``READ_DATABASE_URL`` is the standby, its ``DATABASE_URL`` both nodes (read-write).

- Pages served by the standby while the primary imports show only committed games, each
  whole, with a true integrity badge (never "broken" or "Read model differs").
- A game the standby has not replayed yet (its WAL replay paused) is a page that says so,
  with how far behind it is; a game it has only part of says how many events it has.
- The standby down: pages answer from the primary, with a log line. Both down: a clear 503
  page with Retry-After.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time

import pytest
from auth_support import signed_in
from cluster_support import Cluster, require

from domain.simulation.floor import Floor
from replays.access import tokens
from replays.readmodels.projections import catch_up
from replays.records.importer import import_lines
from replays.simulation.batch import Simulation
from replays.store import replicas
from replays.store.application import Ledger
from replays.store.schema import migrate
from replays.store.settings import database_url
from web import create_app

pytestmark = pytest.mark.cluster

FALSE_BADGES = ("integrity-broken", "integrity-read_model_differs", "Ledger broken")


@pytest.fixture(scope="module")
def games():
    """Simulated on a thread while the cluster starts."""
    found: list[dict] = []
    worker = threading.Thread(
        target=lambda: found.extend(Simulation(Floor(seed=41)).games(90)), daemon=True
    )
    worker.start()
    return worker, found


@pytest.fixture(scope="module")
def cluster(games):
    require()
    formation = Cluster().start()
    try:
        yield formation
    finally:
        formation.close()


@pytest.fixture
def app(cluster, keys):
    replicas.forget()
    url = database_url(cluster.url())
    migrate(url)
    standby = cluster.node("node2")
    return create_app(
        {
            "DATABASE_URL": cluster.url(),
            "READ_DATABASE_URL": cluster.url(attrs="prefer-standby", nodes=[standby]),
            "TESTING": True,
        }
    )


def wait_caught_up(app) -> None:
    deadline = time.monotonic() + 30
    primary, replica = app.config["DATABASE_URL"], app.config["READ_DATABASE_URL"]
    while replicas.replica_lag_seconds(primary, replica, fresh=True):
        assert time.monotonic() < deadline, "the standby never caught up"
        time.sleep(0.2)


def page(client, path: str):
    response = client.get(path)
    return response.status_code, response.headers, response.get_data(as_text=True)


def test_the_standby_serves_committed_games_whole_and_never_a_false_badge(cluster, app, games):
    worker, records = games
    worker.join()
    url = app.config["DATABASE_URL"]
    ledger = Ledger(url, env={"CREATE_TABLE": "no"})
    first, rest = records[:20], records[20:]
    assert import_lines(ledger, [json.dumps(r) for r in first]).ok
    catch_up(url)
    client = signed_in(app)

    acknowledged: list[str] = []
    failures: list[BaseException] = []

    def importing():
        try:
            import_lines(
                ledger,
                [json.dumps(r) for r in rest],
                batch=5,
                on_outcome=lambda outcome: acknowledged.append(outcome.game_id),
            )
        except BaseException as error:
            failures.append(error)

    writer = threading.Thread(target=importing)
    writer.start()
    seen_on_replica = 0
    lists = 0
    try:
        while writer.is_alive() or seen_on_replica < 10:
            for game_id in [*acknowledged[-3:], first[seen_on_replica % 20]["game_id"]]:
                status, headers, body = page(client, f"/games/{game_id}/replay?move=5")
                assert status in (200, 503), (game_id, status, body[:500])
                assert headers["X-Rummy-Ledger-Read"] == "replica"
                for false in FALSE_BADGES:
                    assert false not in body, (game_id, false)
                if status == 503:  # acknowledged on the primary, not replayed here yet
                    assert "has not reached it yet" in body and headers["Retry-After"]
                else:
                    seen_on_replica += 1
            status, headers, body = page(client, "/games")
            assert status == 200 and headers["X-Rummy-Ledger-Read"] == "replica"
            lists += 1
            if not writer.is_alive() and seen_on_replica >= 10:
                break
    finally:
        writer.join(timeout=120)
    assert not failures, failures
    assert len(acknowledged) == len(rest)
    assert seen_on_replica >= 10 and lists > 0
    wait_caught_up(app)
    status, headers, body = page(client, "/games?page=1")
    assert status == 200 and "replica" in headers["X-Rummy-Ledger-Read"]


def test_a_game_the_standby_has_not_reached_says_how_far_behind(cluster, app, games):
    _, records = games
    url = app.config["DATABASE_URL"]
    ledger = Ledger(url, env={"CREATE_TABLE": "no"})
    standby = cluster.node("node2")
    late = dict(records[0], game_id="LATE-REPLICA-1")
    assert cluster.sql(standby, "SELECT pg_wal_replay_pause()") is not None
    try:
        assert import_lines(ledger, [json.dumps(late)]).ok
        client = signed_in(app)
        status, headers, body = page(client, "/games/LATE-REPLICA-1")
        assert status == 503, body[:500]
        assert headers["X-Rummy-Ledger-Read"] == "replica" and headers["Retry-After"]
        assert "Game LATE-REPLICA-1 is recorded" in body
        assert re.search(r"0 of its \d+ events; the replica is [\d.]+ s behind", body), body
        time.sleep(1.1)  # the lag is measured at most once a second
        lag = replicas.replica_lag_seconds(url, app.config["READ_DATABASE_URL"], fresh=True)
        assert lag is not None and lag > 0
        status, _, body = page(client, "/games")
        assert status == 200
        assert "Served by a read replica" in body and "the newest games may not appear" in body
    finally:
        cluster.sql(standby, "SELECT pg_wal_replay_resume()")
    deadline = time.monotonic() + 30
    while True:
        status, headers, body = page(client, "/games/LATE-REPLICA-1")
        if status == 200:
            break
        assert time.monotonic() < deadline, "the standby never reached the game"
        time.sleep(0.2)
    assert headers["X-Rummy-Ledger-Read"] == "replica" and "LATE-REPLICA-1" in body


def test_a_session_signed_out_on_the_primary_is_refused_by_a_standbys_page(cluster, app, games):
    """The standby's page reads the account there and the primary confirms it in the
    access-log line's INSERT: the line is on the primary once the page is shown, and a
    session signed out on the primary is refused while the standby (its replay paused)
    still has the old session key."""
    from replays.access import accounts

    worker, records = games
    worker.join()
    url = app.config["DATABASE_URL"]
    import_lines(Ledger(url, env={"CREATE_TABLE": "no"}), [json.dumps(records[1])])
    catch_up(url)
    client = signed_in(app)
    wait_caught_up(app)  # the account, as signed in, on the standby too
    game_id = records[1]["game_id"]
    path = f"/games/{game_id}/replay?move=3"
    lines = "SELECT count(*) FROM access_log WHERE username = 'test-auditor'"
    primary, standby = cluster.node("node1"), cluster.node("node2")
    before = int(cluster.sql(primary, lines))
    status, headers, body = page(client, path)
    assert status == 200 and headers["X-Rummy-Ledger-Read"] == "replica", body[:300]
    assert int(cluster.sql(primary, lines)) == before + 1

    key = "SELECT session_key FROM users WHERE username = 'test-auditor'"
    old_key = cluster.sql(standby, key)
    assert cluster.sql(standby, "SELECT pg_wal_replay_pause()") is not None
    try:
        account = accounts.find_user("test-auditor", url=url)
        accounts.end_sessions(account.id, url=url)
        assert cluster.sql(standby, key) == old_key != cluster.sql(primary, key)
        for where in (path, "/games"):
            status, headers, body = page(client, where)
            assert status == 302 and "/login" in headers["Location"], (where, status)
            assert 'data-card="' not in body and "aria-current" not in body
        assert int(cluster.sql(primary, lines)) == before + 1
    finally:
        cluster.sql(standby, "SELECT pg_wal_replay_resume()")


def test_standby_down_pages_come_from_the_primary_and_both_down_a_503_page(
    cluster, app, games, caplog
):
    worker, records = games
    worker.join()
    url = app.config["DATABASE_URL"]
    # Already there after the tests above; imported here when this test runs alone.
    import_lines(Ledger(url, env={"CREATE_TABLE": "no"}), [json.dumps(records[0])])
    catch_up(url)
    wait_caught_up(app)
    client = signed_in(app)
    token = tokens.create_token("acme-down", url=url).token
    game_id = records[0]["game_id"]
    status, headers, _ = page(client, f"/games/{game_id}")
    assert status == 200 and headers["X-Rummy-Ledger-Read"] == "replica"

    cluster.kill(cluster.node("node2"))
    with caplog.at_level(logging.WARNING, logger="replays.replicas"):
        for path in (f"/games/{game_id}", f"/games/{game_id}/replay?move=3", "/games"):
            status, headers, body = page(client, path)
            assert status == 200, (path, body[:500])
            assert headers["X-Rummy-Ledger-Read"] == "primary"
            for false in FALSE_BADGES:
                assert false not in body
    assert any("read replica unreachable" in r.getMessage() for r in caplog.records)

    cluster.kill(cluster.node("node1"))
    replicas.forget()
    status, headers, body = page(client, f"/games/{game_id}")
    assert status == 503
    assert headers["Retry-After"]
    assert "Database unavailable" in body and "Traceback" not in body
    response = client.get("/api/v1/games/x", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 503 and response.headers["Retry-After"]
    assert "not answering" in response.get_json()["error"]
