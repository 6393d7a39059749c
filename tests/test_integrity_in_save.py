"""Sealing in the save, on SQLite and PostgreSQL: every write seals its own events in the
transaction that stores them, so an event row without a seal was not written by the ledger.

Tampering is done as an insider would, with SQL straight into the database: rows inserted
at the end of the store or in the middle, with and without a seal forged for them. Each
must be found with its game id and event number. Concurrent writers must still build one
consistent, append-only tree whose checkpoints prove consistent with each other.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from test_integrity import PLAYERS, insert_row, kinds, old_ledger, record, row_id, sql

from domain.red3.records import parse_red3_record
from domain.rummy13.table import TableConfig
from replays.integrity import merkle
from replays.integrity.append import SealingError
from replays.integrity.canonical import chain_hash, event_leaf
from replays.integrity.evidence import (
    INSERTED,
    TREE,
    UNSEALED,
    IntegrityError,
    consistency_proof,
    inclusion_proof,
    integrity_verdict,
    make_checkpoint,
    seal_new_events,
    verify_store,
)
from replays.integrity.proofs import verify_proof
from replays.integrity.signing import load_public_key
from replays.integrity.store import raw_id
from replays.store.application import ConcurrentWrite, GameExists, Ledger
from replays.store.timeline import store_record

FORGED = b'{"player":"p1","card":"JK","at":null}'


@pytest.fixture
def ledger(database_url):
    # No create_tables(): the recorder builds the integrity tables with the event tables.
    return Ledger(database_url)


# -- reading the integrity tables ------------------------------------------------------------
def seals(url) -> list[tuple]:
    return [
        (r[0], r[1], raw_id(r[2]), r[3], r[4], bytes(r[5]), bytes(r[6]))
        for r in sql(
            url,
            "SELECT position, notification_id, originator_id, originator_version, game_id, "
            "leaf_hash, chain_hash FROM integrity_seals ORDER BY position",
        )
    ]


def head(url) -> tuple[int, int, bytes, bytes] | None:
    row = sql(url, "SELECT size, notification_id, frontier, root FROM integrity_head").first()
    return None if row is None else (row[0], row[1], bytes(row[2]), bytes(row[3]))


def event_ids(url) -> list[int]:
    return list(sql(url, "SELECT id FROM ledger_events ORDER BY id").scalars())


def stored_row(url, game_id, version) -> tuple[int, str, bytes]:
    rid = row_id(url, game_id, version)
    topic, state = sql(url, "SELECT topic, state FROM ledger_events WHERE id = :i", i=rid).one()
    return rid, topic, bytes(state)


def next_turn(ledger: Ledger, game_id: str) -> None:
    """The player to move picks the stock's top card and discards it: two saves."""
    game = ledger.get_game(game_id)
    player, card = game.current_player, str(game.stock_top)
    ledger.play(game_id, {"player": player, "type": "pick", "from": "closed", "card": card})
    ledger.play(game_id, {"player": player, "type": "discard", "card": card})


def forge_between(url, ledger: Ledger, before: str, after: str) -> int:
    """Store game ``before``, a forged event 15 of it, then game ``after``, so that the
    forged row's notification id lies between the two games' rows; return that id."""
    record(ledger, before)
    if url.startswith("sqlite"):
        # SQLite numbers a new row max(id) + 1: the genuine save goes on after the forgery.
        insert_row(url, before, 15, FORGED, row=50)
        record(ledger, after)
    else:
        # A sequence skips numbers anyway (on every rolled-back insert); the forger uses one.
        sql(url, "SELECT setval(pg_get_serial_sequence('ledger_events', 'id'), 100)")
        record(ledger, after)
        insert_row(url, before, 15, FORGED, row=50)
    ids = event_ids(url)
    assert ids.index(50) not in (0, len(ids) - 1)
    return 50


# -- every save is sealed ----------------------------------------------------------------------
def test_a_save_seals_its_events_in_its_own_transaction(ledger, database_url):
    record(ledger, "G1")  # one save of 14 events
    sealed = seals(database_url)
    assert [s[0] for s in sealed] == list(range(14))
    assert [s[1] for s in sealed] == event_ids(database_url)
    assert {s[4] for s in sealed} == {"G1"}
    size, last, frontier, root = head(database_url)
    assert (size, last) == (14, event_ids(database_url)[-1])
    assert root == merkle.tree_hash([s[5] for s in sealed])
    assert frontier == merkle.TreeBuilder.from_frontier(14, frontier).frontier

    # One event per save from here on: each continues the game's chain and the tree.
    next_turn(ledger, "G1")
    record(ledger, "G2", turns=2)
    next_turn(ledger, "G1")
    sealed = seals(database_url)
    assert [s[0] for s in sealed] == list(range(14 + 2 + 6 + 2))
    assert [s[1] for s in sealed] == event_ids(database_url)
    g1 = [s for s in sealed if s[4] == "G1"]
    assert [s[3] for s in g1] == list(range(1, 19))
    _, topic, state = stored_row(database_url, "G1", 18)
    assert g1[-1][5] == event_leaf(g1[-1][2], 18, topic, state)
    assert g1[-1][6] == chain_hash(g1[-2][6], g1[-1][5])
    assert head(database_url)[3] == merkle.tree_hash([s[5] for s in sealed])
    report = verify_store(database_url)  # no sealing step in between
    assert report.ok, report.problems
    assert (report.events, report.sealed, report.games) == (24, 24, 2)
    assert seal_new_events(database_url) == 0


def test_red3_matches_are_sealed_in_their_save(ledger, database_url):
    example = Path(__file__).parent / "data" / "red3_example.jsonl"
    match = store_record(ledger, parse_red3_record(json.loads(example.read_text().splitlines()[0])))
    sealed = seals(database_url)
    assert len(sealed) == match.version and {s[4] for s in sealed} == {match.game_id}
    assert verify_store(database_url).ok
    assert verify_store(database_url, game_id=match.game_id).ok


def test_a_rejected_save_leaves_no_seal(ledger, database_url):
    record(ledger, "G1")
    before = (seals(database_url), head(database_url))
    with pytest.raises(GameExists):
        record(ledger, "G1")
    game = ledger.get_game("G1")
    with pytest.raises(ConcurrentWrite):
        ledger.play(
            "G1",
            {"player": game.current_player, "type": "pick", "from": "closed", "card": "AS"},
            expected_version=game.version - 1,
        )
    assert (seals(database_url), head(database_url)) == before


def test_events_and_seals_commit_together_or_not_at_all(ledger, database_url):
    """A save whose seals cannot be written stores no event either."""
    record(ledger, "G1")
    size = head(database_url)[0]
    # An insider's stray seal where the next save's first seal goes.
    sql(
        database_url,
        "INSERT INTO integrity_seals (position, notification_id, originator_id, "
        "originator_version, game_id, leaf_hash, chain_hash) "
        "VALUES (:p, :n, :o, 1, 'X', :h, :h)",
        p=size,
        n=10**9,
        o="00" * 16 if database_url.startswith("sqlite") else uuid.UUID(int=0),
        h=bytes(32),
    )
    events = len(event_ids(database_url))
    with pytest.raises(SealingError, match="changed outside the ledger"):
        record(ledger, "G2")
    assert len(event_ids(database_url)) == events
    assert not ledger.game_exists("G2")


# -- rows inserted directly ------------------------------------------------------------------
def test_a_row_inserted_at_the_end_is_found_and_never_sealed_by_routine(ledger, database_url, keys):
    record(ledger, "G1")
    record(ledger, "G2")
    insert_row(database_url, "G1", 15, FORGED)
    assert kinds(verify_store(database_url, check_deals=False)) == [(INSERTED, "G1", 15)]
    verdict = integrity_verdict(database_url, "G1")
    assert verdict.label == "broken at event 15"
    assert "it was inserted directly" in verdict.message
    # The backfill does not seal it: that would pass a forgery off as a save...
    with pytest.raises(IntegrityError, match=r"game G1 event 15 \(row \d+\)"):
        seal_new_events(database_url)
    # ...nor does the next save, which seals only its own events.
    record(ledger, "G3")
    report = verify_store(database_url, check_deals=False)
    assert kinds(report) == [(INSERTED, "G1", 15)]
    assert verify_store(database_url, game_id="G3").ok
    # Behind a sealed save now, it cannot be sealed at all: the tree only grows at its end.
    assert seal_new_events(database_url, force=True) == 0
    assert kinds(verify_store(database_url, check_deals=False)) == [(INSERTED, "G1", 15)]


def test_an_operator_may_seal_a_checked_row_on_purpose(ledger, database_url):
    record(ledger, "G1")
    insert_row(database_url, "G1", 15, FORGED)
    assert seal_new_events(database_url, force=True) == 1
    assert verify_store(database_url, check_deals=False).ok


def test_a_row_inserted_in_the_middle_is_found(ledger, database_url):
    forge_between(database_url, ledger, "G1", "G2")
    assert kinds(verify_store(database_url, check_deals=False)) == [(INSERTED, "G1", 15)]
    assert kinds(verify_store(database_url, game_id="G1", check_deals=False)) == [
        (INSERTED, "G1", 15)
    ]


def _forge_seal(url, game_id, version, *, position, notification_id, chain_from) -> bytes:
    """A seal computed exactly as a save computes it, inserted by hand; its leaf."""
    originator = Ledger.aggregate_id(game_id)
    state = FORGED
    leaf = event_leaf(originator, version, "rummy_ledger:Game.Discarded", state)
    sql(
        url,
        "INSERT INTO integrity_seals (position, notification_id, originator_id, "
        "originator_version, game_id, leaf_hash, chain_hash) VALUES (:p, :n, :o, :v, :g, :l, :c)",
        p=position,
        n=notification_id,
        o=originator.hex if url.startswith("sqlite") else originator,
        v=version,
        g=game_id,
        l=leaf,
        c=chain_hash(chain_from, leaf),
    )
    return leaf


def _chain_head(url, game_id) -> bytes:
    return bytes(
        sql(url, "SELECT chain_hash FROM integrity_games WHERE game_id = :g", g=game_id).scalar()
    )


def test_a_row_with_a_forged_seal_at_the_end_is_found(ledger, database_url):
    record(ledger, "G1")
    record(ledger, "G2")
    size = head(database_url)[0]
    insert_row(database_url, "G1", 15, FORGED)
    forged_id = row_id(database_url, "G1", 15)
    _forge_seal(
        database_url,
        "G1",
        15,
        position=size,
        notification_id=forged_id,
        chain_from=_chain_head(database_url, "G1"),
    )
    report = verify_store(database_url, check_deals=False)
    assert (INSERTED, "G1", 15) in kinds(report)
    assert "lies beyond the tree head's 28 events" in str(report.problems[0])
    game = verify_store(database_url, game_id="G1", check_deals=False)
    assert (INSERTED, "G1", 15) in kinds(game)
    assert integrity_verdict(database_url, "G1").label == "broken at event 15"


def test_a_forged_seal_with_a_rewritten_tree_head_is_found_by_its_chain_head(ledger, database_url):
    """The insider also moves the tree head on (a correct frontier and root), but not the
    game's chain head: the game's seals now run past it."""
    record(ledger, "G1")
    record(ledger, "G2")
    size, _, frontier, _ = head(database_url)
    insert_row(database_url, "G1", 15, FORGED)
    forged_id = row_id(database_url, "G1", 15)
    leaf = _forge_seal(
        database_url,
        "G1",
        15,
        position=size,
        notification_id=forged_id,
        chain_from=_chain_head(database_url, "G1"),
    )
    builder = merkle.TreeBuilder.from_frontier(size, frontier)
    builder.append(leaf)
    sql(
        database_url,
        "UPDATE integrity_head SET size = :s, notification_id = :n, frontier = :f, root = :r",
        s=builder.size,
        n=forged_id,
        f=builder.frontier,
        r=builder.root(),
    )
    report = verify_store(database_url, check_deals=False)
    assert kinds(report) == [(INSERTED, "G1", 15)]
    assert "its chain head stops at 14" in report.problems[0].message
    assert (INSERTED, "G1", 15) in kinds(verify_store(database_url, game_id="G1"))


def test_a_row_with_a_forged_seal_in_the_middle_is_found(ledger, database_url):
    forged_id = forge_between(database_url, ledger, "G1", "G2")
    _forge_seal(
        database_url,
        "G1",
        15,
        position=head(database_url)[0],
        notification_id=forged_id,
        chain_from=_chain_head(database_url, "G1"),
    )
    report = verify_store(database_url, check_deals=False)
    assert (INSERTED, "G1", 15) in kinds(report)
    assert (TREE, "G1", 15) in kinds(report)  # sealed out of notification order
    assert (INSERTED, "G1", 15) in kinds(verify_store(database_url, game_id="G1"))


def test_deleting_the_tree_head_is_found(ledger, database_url):
    record(ledger, "G1")
    sql(database_url, "DELETE FROM integrity_head")
    report = verify_store(database_url, check_deals=False)
    assert [p.kind for p in report.problems] == [TREE]
    assert "tree head (integrity_head) is missing although 14 events" in report.problems[0].message


def test_rows_deleted_at_the_end_stop_the_next_save_on_sqlite(ledger, database_url):
    record(ledger, "G1")
    record(ledger, "G2")
    sql(database_url, "DELETE FROM ledger_events WHERE id > :i", i=row_id(database_url, "G2", 2))
    if database_url.startswith("sqlite"):
        # SQLite hands the deleted ids out again; they are sealed already.
        with pytest.raises(SealingError, match="rows at the end of ledger_events were deleted"):
            record(ledger, "G3")
        assert not ledger.game_exists("G3")
    else:
        record(ledger, "G3")  # a sequence never goes back: the save is sealed after them
    assert ("deleted", "G2", 3) in kinds(verify_store(database_url, check_deals=False))


# -- concurrent writers -----------------------------------------------------------------------
def test_concurrent_writers_build_one_consistent_tree(database_url, keys):
    """Four writers, each with its own Ledger (its own connections, like separate
    processes), save whole games and single moves at once while checkpoints are signed."""
    Ledger(database_url)  # builds the tables once
    writers, rounds = 4, 5
    errors: list[BaseException] = []
    checkpoints = []
    done = threading.Event()

    def signed(count: int) -> None:
        """Wait until the signer has signed ``count`` checkpoints (the interleaving this
        test is about must happen however loaded the machine is)."""
        deadline = time.monotonic() + 60
        while len(checkpoints) < count and not errors and time.monotonic() < deadline:
            time.sleep(0.01)

    def write(n: int) -> None:
        ledger = Ledger(database_url)
        try:
            for r in range(rounds):
                game_id = f"C{n}-{r}"
                record(ledger, game_id, turns=2 + (n + r) % 3)  # one save, 6-10 events
                next_turn(ledger, game_id)  # two saves of one event
                if n == 0 and r == 0:
                    signed(2)  # at least one checkpoint between saves
        except BaseException as error:  # reported below
            errors.append(error)
        finally:
            ledger.close()

    def sign() -> None:
        try:
            while not done.is_set():
                checkpoints.append(make_checkpoint(database_url))
                done.wait(0.05)
        except BaseException as error:
            errors.append(error)

    signer = threading.Thread(target=sign)
    signer.start()
    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.set()
    signer.join()
    assert not errors, errors
    checkpoints.append(make_checkpoint(database_url))

    sealed = seals(database_url)
    ids = event_ids(database_url)
    assert [s[0] for s in sealed] == list(range(len(ids)))
    assert [s[1] for s in sealed] == ids  # positions follow notification order
    report = verify_store(database_url, checkpoints=checkpoints)
    assert report.ok, report.problems
    assert report.games == writers * rounds
    assert len(checkpoints) > 2

    public_key = load_public_key(keys)
    sizes = sorted({c.size for c in checkpoints})
    by_size = {c.size: c for c in checkpoints}
    latest = by_size[sizes[-1]]
    for size in sizes[:-1]:
        proof = consistency_proof(database_url, by_size[size], latest)
        result = verify_proof(json.loads(json.dumps(proof)), public_key, [by_size[size]])
        assert result.ok, result.failure
    for n in range(writers):
        proof = inclusion_proof(database_url, f"C{n}-{rounds - 1}", latest)
        assert verify_proof(proof, public_key, [latest]).ok


def _write_games(url: str, prefix: str, games: int, start) -> None:
    """One writer process: whole games, then single moves, through its own Ledger."""
    ledger = Ledger(url)
    start.wait(120)  # every writer has imported and connected: they write at once
    for n in range(games):
        record(ledger, f"{prefix}-{n}", turns=2 + n % 3)
        next_turn(ledger, f"{prefix}-{n}")
    ledger.close()


def test_concurrent_processes_build_one_consistent_tree(database_url):
    import multiprocessing

    Ledger(database_url)
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(3)
    writers = [
        context.Process(target=_write_games, args=(database_url, f"W{n}", 6, start))
        for n in range(3)
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(300)
    assert [writer.exitcode for writer in writers] == [0, 0, 0]
    sealed = seals(database_url)
    assert [s[1] for s in sealed] == event_ids(database_url)
    assert [s[0] for s in sealed] == list(range(len(sealed)))
    report = verify_store(database_url)
    assert report.ok, report.problems
    assert report.games == 18


def test_the_core_insert_path_seals_too(database_url, monkeypatch):
    """The driver path (a pipeline on PostgreSQL) and the Core fallback both seal, and
    one continues the other's tree and chains."""
    from replays.store.recorders import LedgerApplicationRecorder

    record(Ledger(database_url), "P1")  # driver path
    monkeypatch.setattr(LedgerApplicationRecorder, "driver_inserts", False)
    record(Ledger(database_url), "P2")  # Core, new game
    next_turn(Ledger(database_url), "P1")  # Core, continuing a game the driver path began
    sealed = seals(database_url)
    assert [s[1] for s in sealed] == event_ids(database_url)
    assert [s[3] for s in sealed if s[4] == "P1"] == list(range(1, 17))
    assert head(database_url)[0] == len(sealed) == 30
    assert verify_store(database_url).ok


# -- stores written before sealing moved into the save -----------------------------------------
def test_an_old_store_is_sealed_once_then_saves_go_on(database_url, keys):
    old = old_ledger(database_url)
    record(old, "G1")
    record(old, "G2")
    ledger = Ledger(database_url)  # creates the integrity tables, empty
    report = verify_store(database_url, check_deals=False)
    assert {p.kind for p in report.problems} == {UNSEALED}  # waiting, not forged
    assert integrity_verdict(database_url, "G1").status == "not_checkpointed"

    with pytest.raises(SealingError, match=r"28 stored event\(s\) after the last seal"):
        record(ledger, "G3")
    assert not ledger.game_exists("G3")  # the refused save stored nothing

    assert seal_new_events(database_url, batch_size=10) == 28
    record(ledger, "G3")
    make_checkpoint(database_url)
    assert verify_store(database_url).ok
    assert integrity_verdict(database_url, "G3").status == "verified"


def test_an_old_store_with_seals_gets_its_tree_head(database_url, keys):
    """Sealed by the old after-write step, then upgraded: seals, but no tree head yet."""
    old = old_ledger(database_url)
    record(old, "G1")
    Ledger(database_url)
    assert seal_new_events(database_url) == 14
    kept = make_checkpoint(database_url)
    sql(database_url, "DELETE FROM integrity_head")  # as before migration 0007
    assert "tree head (integrity_head) is missing" in str(verify_store(database_url).problems)

    assert seal_new_events(database_url) == 0  # nothing to seal, but the head is back
    assert head(database_url)[:2] == (14, row_id(database_url, "G1", 14))
    record(Ledger(database_url), "G2")
    assert verify_store(database_url, checkpoints=[kept]).ok


@pytest.mark.parametrize("driver_inserts", [True, False])
def test_a_store_without_integrity_tables_refuses_saves(database_url, monkeypatch, driver_inserts):
    from replays.store.recorders import LedgerApplicationRecorder

    monkeypatch.setattr(LedgerApplicationRecorder, "driver_inserts", driver_inserts)
    old_ledger(database_url)  # the event tables only
    ledger = Ledger(database_url, env={"CREATE_TABLE": "no"})
    config = TableConfig(game_id="N1", variant="points", players=PLAYERS, point_value="1")
    with pytest.raises(SealingError, match=r"integrity tables are missing.*db upgrade"):
        ledger.start_game(config)
    assert not ledger.game_exists("N1")
    with sa.create_engine(database_url).connect() as connection:
        assert "integrity_head" not in sa.inspect(connection).get_table_names()


def test_checkpoints_refuse_a_tree_head_that_does_not_match(ledger, database_url, keys):
    record(ledger, "G1")
    sql(database_url, "UPDATE integrity_head SET root = :r", r=bytes(32))
    with pytest.raises(IntegrityError, match="does not match the tree head the saves keep"):
        make_checkpoint(database_url)
    report = verify_store(database_url, check_deals=False)
    assert [p.kind for p in report.problems] == [TREE]
    assert "does not match the seals" in report.problems[0].message


def test_the_seal_command_refuses_forgeries_unless_forced(ledger, database_url):
    from click.testing import CliRunner

    from web.cli import main

    def run(*args):
        result = CliRunner().invoke(main, list(args), catch_exceptions=False)
        return result.exit_code, result.output

    record(ledger, "G1")
    assert run("seal") == (0, "sealed 0 event(s)\n")
    insert_row(database_url, "G1", 15, FORGED)
    code, out = run("seal")
    assert code == 1
    assert "1 stored event(s) are not sealed" in out and "game G1 event 15" in out
    code, out = run("verify", "--no-snapshots")
    assert code == 1 and "game G1, event 15: inserted" in out
    assert run("seal", "--force") == (0, "sealed 1 event(s)\n")
    assert run("verify")[0] == 0


def test_one_save_of_many_games_seals_each_event_at_its_own_row(database_url):
    """A save of several games inserts their rows at once (PostgreSQL: one statement over
    arrays): each row's notification id is the one its seal names, in the save's order."""
    from domain.simulation.floor import Floor
    from replays.records.codec import parse_record
    from replays.records.importer import build_game
    from replays.simulation.batch import Simulation

    records = [parse_record(json.dumps(r)) for r in Simulation(Floor(seed=5)).games(5)]
    games = [build_game(r) for r in records]
    # Given against the ids' order, so that rows sorted any other way would not line up.
    games.sort(key=lambda game: game.id, reverse=True)
    ledger = Ledger(database_url)
    recordings = ledger.save(*games)
    expected = [
        (raw_id(r.domain_event.originator_id), r.domain_event.originator_version)
        for r in recordings
    ]
    rows = sql(
        database_url,
        "SELECT id, originator_id, originator_version, topic, state FROM ledger_events ORDER BY id",
    ).all()
    assert [(raw_id(r[1]), r[2]) for r in rows] == expected
    assert [r.notification.id for r in recordings] == [r[0] for r in rows]
    sealed = seals(database_url)
    assert [(s[1], s[2], s[3]) for s in sealed] == [(r[0], raw_id(r[1]), r[2]) for r in rows]
    assert [s[5] for s in sealed] == [
        event_leaf(raw_id(r[1]), r[2], r[3], bytes(r[4])) for r in rows
    ]
    report = verify_store(database_url)
    assert report.ok, report.problems
