"""Red 3 matches are snapshotted like 13-card games, and ``verify`` checks those snapshots."""

from __future__ import annotations

from sql_support import sql

from domain import variants
from domain.red3.bot import play, setup_table
from domain.red3.records import parse_red3_record
from domain.simulation.floor import Floor
from replays.integrity.evidence import create_tables, make_checkpoint, verify_store
from replays.store.application import Ledger
from replays.store.timeline import game_of, state_at_step, store_record
from tests.red3_factory import random_record

LIBRARY = ("_id", "_version", "_pending_events")


def _attributes(match) -> dict:
    return {k: v for k, v in vars(match).items() if k not in LIBRARY}


def _oid(url, game_id):
    value = Ledger.aggregate_id(game_id)
    return value.bytes if url.startswith("sqlite") else value


def _long_match(rounds: int = 10) -> dict:
    import random

    floor = Floor(seed=5, variants=("red3",))
    table = setup_table(floor, 3, random.Random(3))
    return play(random.Random(4), floor, table, "R3-LONG", rounds=rounds)


def test_a_long_match_is_snapshotted_at_its_latest_version_and_loads_the_same(database_url):
    record = _long_match()
    built = parse_red3_record(record).build()
    assert built.config.rounds == 10 and built.version > 20
    ledger = Ledger(database_url)
    store_record(ledger, parse_red3_record(record))

    rows = sql(
        database_url,
        "SELECT originator_version FROM ledger_snapshots WHERE originator_id = :o",
        o=_oid(database_url, "R3-LONG"),
    ).all()
    assert [version for (version,) in rows] == [built.version]

    fresh = Ledger(database_url)
    loaded = game_of(fresh, "R3-LONG", variants.get("red3"))
    assert _attributes(loaded) == _attributes(built)
    assert loaded.version == built.version
    last = len(built.steps)
    assert state_at_step(fresh, "R3-LONG", last) == built.table_state()
    # A past step is rebuilt from the events: it does not depend on the snapshot.
    assert (
        state_at_step(fresh, "R3-LONG", 5)
        == game_of(fresh, "R3-LONG", variants.get("red3"), version=6).table_state()
    )


def test_a_short_match_under_the_interval_has_no_snapshot(database_url):
    record = random_record(1, rounds=1)
    match = parse_red3_record(record).build()
    ledger = Ledger(database_url)
    store_record(ledger, parse_red3_record(record))
    count = sql(database_url, "SELECT count(*) FROM ledger_snapshots").scalar_one()
    assert count == (1 if match.version >= 20 else 0)


def test_verify_checks_red3_snapshots_and_finds_an_altered_one(database_url, tmp_path, monkeypatch):
    from replays.integrity.signing import init_keys

    init_keys(tmp_path / "keys")
    monkeypatch.setenv("RUMMY_LEDGER_KEY_DIR", str(tmp_path / "keys"))
    create_tables(database_url)
    ledger = Ledger(database_url)
    record = _long_match(rounds=3)
    match = store_record(ledger, parse_red3_record(record))
    make_checkpoint(database_url)
    report = verify_store(database_url)
    assert report.ok, report.problems
    assert "1 snapshot(s) checked against their events" in report.notes

    oid = _oid(database_url, "R3-LONG")
    state = sql(
        database_url, "SELECT state FROM ledger_snapshots WHERE originator_id = :o", o=oid
    ).scalar_one()
    player = match.players[0]
    forged = bytes(state).replace(
        f'"totals":{{"{player}":{match.totals[player]}'.encode(),
        f'"totals":{{"{player}":{match.totals[player] + 100}'.encode(),
        1,
    )
    assert forged != bytes(state)
    sql(
        database_url,
        "UPDATE ledger_snapshots SET state = :s WHERE originator_id = :o",
        s=forged,
        o=oid,
    )
    # The forged total is what a fresh process would show...
    assert (
        game_of(Ledger(database_url), "R3-LONG", variants.get("red3")).totals[player]
        == match.totals[player] + 100
    )
    # ...and verify names the match and the snapshot's event.
    report = verify_store(database_url)
    assert [(p.kind, p.game_id, p.event) for p in report.problems] == [
        ("snapshot", "R3-LONG", match.version)
    ]
