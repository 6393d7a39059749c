"""Automatic failover on a real pg_auto_failover formation (tests/cluster_support.py): the
primary is killed (``kill -9`` of its postmaster and of its keeper, so that nothing restarts
it) in the middle of an import and of a stream of API moves. The standby is promoted; the
importer and the API client ride through on the app's multi-host URL; every game and move
acknowledged before the kill is there once, the rest are retried and stored once; the hash
chains and the Merkle tree go on without a fork (``verify`` with a checkpoint signed before
the kill and one after); the read models equal a rebuild.

The import is the issue's 500 games (simulated while the cluster starts), the kill after
the first 100 are acknowledged."""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.error
import urllib.request

import pytest
import sqlalchemy as sa
from api_support import check_response, header_of
from click.testing import CliRunner
from cluster_support import Cluster, require
from test_projections import dump
from werkzeug.serving import make_server

from domain.simulation.floor import Floor
from replays.access import tokens
from replays.readmodels import projections
from replays.records.codec import read_records
from replays.records.importer import IMPORTED, build_game, import_lines
from replays.simulation.batch import Simulation
from replays.store.application import Ledger
from replays.store.db import engine_for
from replays.store.schema import EVENTS_TABLE, migrate
from replays.store.settings import database_url
from web import create_app
from web.cli import main

pytestmark = pytest.mark.cluster

IMPORT_GAMES = 500
API_GAMES = 4
KILL_AFTER_GAMES = 100


@pytest.fixture(scope="module")
def simulated():
    """The games to import and to play over the API, simulated on a thread while the
    cluster starts (its start is mostly waiting on the servers)."""
    found = {}

    def simulate():
        found["import"] = list(Simulation(Floor(seed=31)).games(IMPORT_GAMES))
        found["api"] = list(Simulation(Floor(seed=32)).games(API_GAMES))

    worker = threading.Thread(target=simulate)
    worker.start()
    return worker, found


@pytest.fixture(scope="module")
def cluster(simulated):
    require()
    formation = Cluster().start()
    try:
        yield formation
    finally:
        formation.close()


class ApiClient:
    """Plays games move by move over HTTP, sending a request again (same body, same
    ``seq``) after a 503 or a lost connection, as the API's contract asks of operators."""

    def __init__(self, base: str, token: str):
        self.base, self.token = base, token
        # (game, seq, when the request that was answered was sent, when it was answered)
        self.acknowledged: list[tuple[str, int, float, float]] = []
        self.sent = 0.0
        self.retries = 0
        self.statuses: dict[int, int] = {}

    def call(self, method: str, path: str, body=None) -> tuple[int, dict]:
        deadline = time.monotonic() + 120
        while True:
            request = urllib.request.Request(
                self.base + path,
                method=method,
                data=None if body is None else json.dumps(body).encode(),
                headers={
                    "Authorization": f"Bearer {self.token}",
                    "Content-Type": "application/json",
                },
            )
            self.sent = time.monotonic()
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    status, payload = response.status, json.loads(response.read())
            except urllib.error.HTTPError as error:
                status, payload = error.code, json.loads(error.read() or b"{}")
                if status == 503:
                    assert error.headers.get("Retry-After"), "a 503 names when to come back"
                    template = re.sub(r"^/games/[^/]+", "/games/{game_id}", path)
                    check_response(method, template, status, payload)  # as documented
            except OSError:
                status, payload = 0, {}
            self.statuses[status] = self.statuses.get(status, 0) + 1
            if status not in (0, 503):
                return status, payload
            assert time.monotonic() < deadline, f"no primary answered {path} for 120 s"
            self.retries += 1
            time.sleep(0.2)

    def play(self, record: dict) -> None:
        game_id = record["game_id"]
        status, answer = self.call("POST", "/games", header_of(record))
        assert status == 201, answer
        for seq, move in enumerate(record["moves"]):
            status, answer = self.call("POST", f"/games/{game_id}/moves", {"seq": seq, **move})
            assert status == 201, (game_id, seq, answer)
            self.acknowledged.append((game_id, seq, self.sent, time.monotonic()))
        body = {"reported": record["reported"]} if "reported" in record else None
        status, answer = self.call("POST", f"/games/{game_id}/settle", body)
        assert status == 200, answer


def events_by_game(url: str) -> dict[str, int]:
    with engine_for(url).connect() as connection:
        rows = connection.execute(
            sa.text(
                f"SELECT originator_id, count(*), max(originator_version) FROM {EVENTS_TABLE}"
                " GROUP BY originator_id"
            )
        ).all()
    return {str(originator): (count, top) for originator, count, top in rows}


def cli(*args) -> tuple[int, str]:
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.output


def test_kill_the_primary_mid_import_and_mid_api_stream(
    cluster, simulated, tmp_path, keys, monkeypatch
):
    started = time.monotonic()

    def lap(what):
        print(f"{time.monotonic() - started:6.1f} s {what}")

    url = database_url(cluster.url())
    monkeypatch.setenv("RUMMY_LEDGER_DATABASE_URL", cluster.url())
    migrate(url)
    worker, found = simulated
    worker.join()
    records, api_records = found["import"], found["api"]
    lines = [json.dumps(record) for record in records]

    lap("simulated")
    app = create_app({"DATABASE_URL": cluster.url(), "TESTING": True})
    http = make_server("127.0.0.1", 0, app, threaded=True)
    serving = threading.Thread(target=http.serve_forever, daemon=True)
    serving.start()
    client = ApiClient(
        f"http://127.0.0.1:{http.server_port}/api/v1", tokens.create_token("acme-ha", url=url).token
    )

    ledger = Ledger(url, env={"CREATE_TABLE": "no"})
    acknowledged: dict[str, float] = {}
    outcomes: list = []
    errors: list[BaseException] = []

    def on_outcome(outcome):
        outcomes.append(outcome)
        acknowledged[outcome.game_id] = time.monotonic()

    def importing():
        try:
            import_lines(ledger, lines, batch=10, on_outcome=on_outcome)
        except BaseException as error:
            errors.append(error)

    def playing():
        try:
            for record in api_records:
                client.play(record)
        except BaseException as error:
            errors.append(error)

    workers = [threading.Thread(target=importing), threading.Thread(target=playing)]
    try:
        for worker in workers:
            worker.start()
        deadline = time.monotonic() + 120
        while (
            len(acknowledged) < KILL_AFTER_GAMES or len(client.acknowledged) < 10
        ) and not errors:
            assert time.monotonic() < deadline, "the import and the API did not get going"
            time.sleep(0.05)
        assert not errors, errors
        before = tmp_path / "before.json"
        code, out = cli("checkpoint", "--out", before)
        assert code == 0, out

        lap("checkpoint before")
        old_primary = cluster.node("node1")
        killed_at = time.monotonic()
        cluster.kill(old_primary)
        acked_games = {game for game, when in acknowledged.items() if when < killed_at}
        acked_moves = {
            (game, seq) for game, seq, _, when in client.acknowledged if when < killed_at
        }

        for worker in workers:
            worker.join(timeout=180)
        assert not any(worker.is_alive() for worker in workers), "a writer never finished"
        assert not errors, errors
    finally:
        http.shutdown()
        serving.join(timeout=10)

    lap("writers done")
    states = cluster.states()
    assert states["node2"] in ("wait_primary", "primary"), states
    new_primary = cluster.node("node2")
    assert cluster.sql(new_primary, "SELECT pg_is_in_recovery()") == "f"

    # A move sent after the kill and accepted: the first write the new primary took.
    failover_seconds = min(when for *_, sent, when in client.acknowledged if sent > killed_at)
    failover_seconds -= killed_at
    print(
        f"\nfailover: first accepted write {failover_seconds:.1f} s after the kill; "
        f"{len(acked_games)} games and {len(acked_moves)} moves acknowledged before it; "
        f"API retries {client.retries}, statuses {client.statuses}"
    )

    # Every game imported exactly once, whatever side of the kill it was sent on; every
    # move acknowledged once.
    assert [o.status for o in outcomes] == [IMPORTED] * IMPORT_GAMES, outcomes
    assert [o.game_id for o in outcomes] == [r["game_id"] for r in records]
    assert acked_games <= {r["game_id"] for r in records}
    stored = events_by_game(url)
    for _number, record in read_records(lines):
        expected = len(build_game(record).pending_events)
        count, top = stored[str(ledger.aggregate_id(record.game_id))]
        assert count == top == expected, (record.game_id, count, top, expected)
    live = Ledger(url, env={"CREATE_TABLE": "no"})
    for record in api_records:
        game = live.get_game(record["game_id"])
        assert game.phase == "settled"
        moves = [(record["game_id"], seq) for seq in range(len(record["moves"]))]
        assert set(moves) >= {m for m in acked_moves if m[0] == record["game_id"]}
        count, top = stored[str(live.aggregate_id(record["game_id"]))]
        assert count == top  # versions 1..n without a gap or a repeat

    # The chains and the tree go on without a fork: a checkpoint signed on the old primary
    # and one signed on the new one both verify, with the read models and every deal.
    lap("counted")
    after = tmp_path / "after.json"
    assert cli("checkpoint", "--out", after)[0] == 0
    code, out = cli("verify", "--checkpoint", before, "--checkpoint", after)
    assert code == 0, out

    lap("verified")
    # The read models equal a rebuild from the events.
    projections.catch_up(url, ledger=live)
    projected = dump(url)
    assert len(projected["games"]) == IMPORT_GAMES + API_GAMES
    lap("caught up")
    projections.rebuild(url, ledger=live)
    assert dump(url) == projected
    lap("rebuilt")
