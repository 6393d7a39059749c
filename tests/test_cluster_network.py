"""Failover across a network: each database node is its own host in a network namespace,
joined to this one by veth pairs on a switch (tests/cluster_support.py; addresses in a
private /29 the fixture creates). Mid-import, the primary's link is taken down (no process
is killed): the monitor promotes the standby, the old primary, cut off from the monitor,
demotes itself; the importer, on the app's multi-host URL with bounded TCP timeouts, rides
through; every game is stored once and the store verifies on the new primary."""

from __future__ import annotations

import json
import threading
import time

import pytest
from click.testing import CliRunner
from cluster_support import Cluster, require

from domain.simulation.floor import Floor
from replays.records.importer import IMPORTED, import_lines
from replays.simulation.batch import Simulation
from replays.store.application import Ledger
from replays.store.schema import migrate
from replays.store.settings import database_url
from web.cli import main

pytestmark = pytest.mark.cluster

GAMES = 80
CUT_AFTER = 30


@pytest.fixture(scope="module")
def records():
    found: list[dict] = []
    worker = threading.Thread(
        target=lambda: found.extend(Simulation(Floor(seed=51)).games(GAMES)), daemon=True
    )
    worker.start()
    return worker, found


@pytest.fixture(scope="module")
def cluster(records):
    require()
    formation = Cluster(netns=True).start()
    try:
        yield formation
    finally:
        formation.close()


def test_cutting_the_primarys_link_mid_import(cluster, records, keys, monkeypatch):
    worker, games = records
    worker.join()
    url = database_url(cluster.url())
    assert "10.231." in url and "tcp_user_timeout" in url
    monkeypatch.setenv("RUMMY_LEDGER_DATABASE_URL", cluster.url())
    migrate(url)
    ledger = Ledger(url, env={"CREATE_TABLE": "no"})
    acknowledged: dict[str, float] = {}
    outcomes = []
    failures: list[BaseException] = []

    def on_outcome(outcome):
        outcomes.append(outcome)
        acknowledged[outcome.game_id] = time.monotonic()

    def importing():
        try:
            import_lines(ledger, [json.dumps(g) for g in games], batch=5, on_outcome=on_outcome)
        except BaseException as error:
            failures.append(error)

    writer = threading.Thread(target=importing)
    writer.start()
    deadline = time.monotonic() + 120
    while len(acknowledged) < CUT_AFTER and writer.is_alive():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    old_primary = cluster.node("node1")
    cut_at = time.monotonic()
    cluster.cut(old_primary)
    before = {game for game, when in acknowledged.items() if when < cut_at}
    writer.join(timeout=180)
    assert not writer.is_alive(), "the import never finished"
    assert not failures, failures
    after = sorted(when for when in acknowledged.values() if when > cut_at + 0.5)
    print(
        f"\nlink cut: {len(before)} games acknowledged before; next acknowledged "
        f"{after[0] - cut_at:.1f} s after the cut"
        if after
        else "\nlink cut: none after"
    )

    assert cluster.states().get("node2") in ("wait_primary", "primary"), cluster.states()
    assert cluster.sql(cluster.node("node2"), "SELECT pg_is_in_recovery()") == "f"
    assert [o.status for o in outcomes] == [IMPORTED] * GAMES
    assert len(before) >= CUT_AFTER
    stored = ledger.stored_games(g["game_id"] for g in games)
    assert set(stored) == {g["game_id"] for g in games}

    result = CliRunner().invoke(main, ["verify"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
