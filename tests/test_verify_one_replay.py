"""One replay of a game serves its read rows, its snapshots and its deal (issue 16): the
snapshot the replay passes is checked as strictly as by a replay of its own, also when the
projection has not reached the game's last events (the replay goes on past the read rows'
events). SQLite and PostgreSQL.
"""

from __future__ import annotations

import orjson
import pytest
from sql_support import sql

from replays.integrity.evidence import verify_store
from replays.readmodels.projections import NAME
from replays.store.application import Ledger


@pytest.fixture
def snapshotted(database_url):
    """A projected store of simulated games, and one game with a snapshot: its id, its
    aggregate id as stored, the snapshot's version, its first and last event's row."""
    from replays.readmodels.projections import catch_up
    from replays.simulation import Floor, Simulation, store_games
    from replays.store.schema import migrate

    migrate(database_url)
    records = list(Simulation(Floor(seed=11, tables=3, players=12)).games(6))
    store_games(records, url=database_url, warn=lambda message: None)
    catch_up(database_url)
    for record in records:
        oid = Ledger.aggregate_id(record["game_id"])
        param = oid.bytes if database_url.startswith("sqlite") else oid
        found = sql(
            database_url,
            "SELECT originator_version FROM ledger_snapshots WHERE originator_id = :o",
            o=param,
        ).first()
        if found is not None:
            first, last = sql(
                database_url,
                "SELECT min(id), max(id) FROM ledger_events WHERE originator_id = :o",
                o=param,
            ).one()
            return record["game_id"], param, found[0], first, last
    raise AssertionError("no simulated game has a snapshot")


def _forge(url, originator, version):
    state = sql(
        url,
        "SELECT state FROM ledger_snapshots WHERE originator_id = :o AND originator_version = :v",
        o=originator,
        v=version,
    ).scalar_one()
    data = orjson.loads(bytes(state))
    data["state"]["_phase"] = "forged"
    sql(
        url,
        "UPDATE ledger_snapshots SET state = :s WHERE originator_id = :o "
        "AND originator_version = :v",
        s=orjson.dumps(data),
        o=originator,
        v=version,
    )


def findings(report, kind):
    return [(p.kind, p.game_id, p.event) for p in report.problems if p.kind == kind]


def test_a_game_s_snapshot_is_checked_by_its_read_model_replay(snapshotted, database_url):
    game_id, originator, version, _, _ = snapshotted
    report = verify_store(database_url, game_id=game_id)
    assert report.ok, report.problems
    assert "1 snapshot(s) checked against their events" in report.notes
    _forge(database_url, originator, version)
    for check_read_models in (True, False):  # one replay for everything, or its own
        report = verify_store(database_url, game_id=game_id, check_read_models=check_read_models)
        assert [(p.kind, p.game_id, p.event) for p in report.problems] == [
            ("snapshot", game_id, version)
        ]
    whole = verify_store(database_url)
    assert findings(whole, "snapshot") == [("snapshot", game_id, version)]
    assert not [p for p in whole.problems if p.kind != "snapshot"], whole.problems


def test_the_replay_goes_past_the_projection_for_the_snapshot(snapshotted, database_url):
    """The projection has not reached the game's last events: its read rows come from
    the events it reached, and the snapshot beyond them is still compared."""
    game_id, originator, version, first, last = snapshotted
    sql(
        database_url,
        "UPDATE projection_positions SET position = :p WHERE name = :n",
        p=(first + last) // 2,
        n=NAME,
    )
    _forge(database_url, originator, version)
    report = verify_store(database_url, game_id=game_id, check_deals=False)
    assert findings(report, "snapshot") == [("snapshot", game_id, version)]
