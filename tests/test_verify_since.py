"""`rummy-ledger verify --since OLD.json --state DIR` (issue 33): detection parity with the
full `verify`, on SQLite and PostgreSQL.

The store is test_resealed_edit's: four games of 26 events (G1 at tree positions 0-25, G2
26-51, G3 52-77, G4 78-103), sealed, projected, with the ledger's keys. The auditor kept
a checkpoint of those 104 events and ran `verify --since` once (a full verify that wrote
the state); then G5 was recorded (new events after the kept checkpoint). Every tamper case
of the suite is then done with the suite's own tools, and both `verify --since` and the
full `verify` must find it, naming at least the games the full `verify` names. Where the
consistency proof itself is the finding (the whole tree rewritten under the kept
checkpoint, or cut short), the test says so and asserts it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from test_integrity import flip_byte, forget_seals, insert_row, record, row_id, sql
from test_read_model_verify import forge_consistently, settled_game, store_simulated
from test_resealed_edit import (
    edit_event,
    projected_edit,
    reseal_everything,
    reseal_seal_and_chain,
    store,  # noqa: F401 (the fixture)
    unprojected_edit,
)

from domain.shuffle import deal_from_seeds
from replays.integrity.evidence import seal_new_events, verify_store
from replays.integrity.incremental import verify_since
from replays.integrity.signing import Checkpoint
from replays.integrity.state_dir import STATE_FILE, load_state
from replays.readmodels.projections import catch_up
from replays.store.application import Ledger
from web.cli import main

PLAYERS = ("p1", "p2", "p3")


def run(*args):
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.output


def audit_once(url: str, where: Path) -> Path:
    """The auditor's first day: a kept checkpoint, a first `--since` run (full) that
    writes the state directory."""
    kept = where / "kept.json"
    code, out = run("checkpoint", "--out", kept)
    assert code == 0, out
    state = where / "state"
    code, out = run("verify", "--since", kept, "--state", state)
    assert code == 0, out
    assert "first run: the whole store verified" in out
    assert (state / STATE_FILE).exists() and (state / "checkpoint.json").exists()
    return state


def since(url: str, state: Path):
    return verify_since(url, Checkpoint.load(state / "checkpoint.json"), state)


def named(report) -> set[str]:
    return {p.game_id for p in report.problems if p.game_id is not None}


@pytest.fixture
def audited(store, tmp_path):  # noqa: F811 (store is the imported fixture)
    state = audit_once(store, tmp_path)
    ledger = Ledger(store, env={"CREATE_TABLE": "no"})
    record(ledger, "G5", turns=12)
    catch_up(store)
    return store, state


# -- a clean day -----------------------------------------------------------------------------
def test_a_clean_day_replays_only_the_new_game_and_keeps_the_new_checkpoint(audited):
    url, state = audited
    before = load_state(state)
    report, coverage = since(url, state)
    assert report.ok, report.problems
    assert not [n for n in report.notes if "batched replay stopped" in n]
    assert coverage.replayed == ["G5"]
    assert coverage.compared == 4
    assert (coverage.old_size, coverage.proven, coverage.new_size) == (104, 104, 130)
    after = load_state(state)
    assert (after.size, before.size) == (130, 104)
    assert Checkpoint.load(state / "checkpoint.json").size == 130
    # The next day with nothing new replays nothing and proves everything.
    report, coverage = since(url, state)
    assert report.ok and coverage.replayed == [] and coverage.compared == 5
    # No temporary files are left beside the state.
    assert sorted(os.listdir(state)) == ["checkpoint.json", "state.json"]


def test_the_command_line_says_what_it_covered(audited):
    _url, state = audited
    code, out = run("verify", "--since", state / "checkpoint.json", "--state", state)
    assert code == 0, out
    assert "covered: 1 game(s) replayed in full, 4 compared with their kept digests" in out
    assert "104 event(s) proven unchanged by the consistency proof from 104 to 130" in out
    code, out = run("verify", "--since", state / "checkpoint.json", "--state", state, "--json")
    assert code == 0
    assert json.loads(out)["since"]["compared_by_digest"] == 5
    # The new tree head given as a file (an auditor without the signing key).
    record(Ledger(_url, env={"CREATE_TABLE": "no"}), "G6", turns=3)
    new = state.parent / "new.json"
    assert run("checkpoint", "--out", new)[0] == 0
    code, out = run(
        "verify", "--since", state / "checkpoint.json", "--state", state, "--checkpoint", new
    )
    assert code == 0, out
    assert "1 game(s) replayed in full" in out and "from 130 to 138 events" in out
    assert Checkpoint.load(state / "checkpoint.json") == Checkpoint.load(new)


def test_a_state_for_another_checkpoint_or_a_broken_file_is_refused_by_name(audited, tmp_path):
    _url, state = audited
    other = tmp_path / "other.json"
    assert run("checkpoint", "--out", other)[0] == 0
    code, out = run("verify", "--since", other, "--state", state)
    assert code == 1 and "was written for the checkpoint of 104 events" in out
    assert "Traceback" not in out
    (state / STATE_FILE).write_text(
        '{"format": "rummy-ledger/verify-state@1", "size": -1, "games": {}}'
    )
    code, out = run("verify", "--since", state / "checkpoint.json", "--state", state)
    assert code == 1 and "size must be an integer" in out
    code, out = run("verify", "--since", state / "checkpoint.json")
    assert code == 2 and "--since and --state go together" in out


# -- detection parity ------------------------------------------------------------------------
def _forged_row_appended(url):
    insert_row(url, "G1", 27, b'{"player":"p1","card":"JK","at":null}')


def _forged_row_among_sealed(url):
    insert_row(url, "G2", 27, b'{"player":"p1","card":"JK","at":null}', row=0)


def _forged_game(url):
    started = json.dumps({"config": {"game_id": "FORGED"}}).encode()
    insert_row(url, "FORGED", 1, started, row=-5, topic="rummy_ledger:Game.Started")


def _deleted_row(url):
    sql(url, "DELETE FROM ledger_events WHERE id = :i", i=row_id(url, "G1", 5))


def _deleted_last_event_and_seal(url):
    last = row_id(url, "G1", 26)
    sql(url, "DELETE FROM ledger_events WHERE id = :i", i=last)
    sql(url, "DELETE FROM integrity_seals WHERE notification_id = :i", i=last)


def _swapped_rows(url):
    """Two events of a game trade their stored states (each row keeps its identity)."""
    a, b = row_id(url, "G3", 5), row_id(url, "G3", 7)
    sa_, sb = (
        sql(url, "SELECT state FROM ledger_events WHERE id = :i", i=i).scalar_one() for i in (a, b)
    )
    sql(url, "UPDATE ledger_events SET state = :s WHERE id = :i", s=sb, i=a)
    sql(url, "UPDATE ledger_events SET state = :s WHERE id = :i", s=sa_, i=b)


def _altered_chain(url):
    sql(url, "UPDATE integrity_seals SET chain_hash = :h WHERE position = 30", h=bytes(32))


def _altered_node(url):
    sql(url, 'UPDATE integrity_nodes SET hash = :h WHERE level = 4 AND "index" = 2', h=bytes(32))


def _altered_leaf_seal(url):
    sql(url, "UPDATE integrity_seals SET leaf_hash = :h WHERE position = 3", h=bytes(32))


def _resealed_projected(url):
    edit_event(url, "G2", 9, projected_edit)
    reseal_seal_and_chain(url, "G2")


def _resealed_unprojected(url):
    edit_event(url, "G2", 9, unprojected_edit)
    reseal_seal_and_chain(url, "G2")


def _resealed_everything(url):
    edit_event(url, "G2", 9, projected_edit)
    reseal_everything(url)


def _rolled_back(url):
    """The store cut back to before G4, and its integrity tables rebuilt to match."""
    originator = Ledger.aggregate_id("G4")
    o = originator.bytes if url.startswith("sqlite") else originator
    sql(url, "DELETE FROM ledger_events WHERE originator_id = :o", o=o)
    sql(url, "DELETE FROM ledger_snapshots WHERE originator_id = :o", o=o)
    for table in ("moves", "player_results", "ledger_entries", "games"):
        sql(url, f"DELETE FROM {table} WHERE game_id IN ('G4', 'G5')")
    g5 = Ledger.aggregate_id("G5")
    sql(
        url,
        "DELETE FROM ledger_events WHERE originator_id = :o",
        o=g5.bytes if url.startswith("sqlite") else g5,
    )
    forget_seals(url)
    seal_new_events(url)


def _move_row_edited(url):
    sql(url, "UPDATE moves SET card = '2C' WHERE game_id = 'G1' AND move_index = 1")


def _move_row_deleted(url):
    sql(url, "DELETE FROM moves WHERE game_id = 'G3' AND move_index = 0")


def _move_row_added(url):
    sql(
        url,
        "INSERT INTO moves (game_id, move_index, version, player, move_type, round, point_value)"
        " SELECT game_id, 9999, version, player, move_type, round, point_value FROM moves"
        " WHERE game_id = 'G4' AND move_index = 1",
    )


def _memo_forged(url):
    """A move row edited and every remembered replay made to agree (their MACs fail)."""
    sql(url, "UPDATE moves SET card = '2C' WHERE game_id = 'G1' AND move_index = 1")
    sql(url, "UPDATE integrity_replay_memos SET rows_digest = NULL, body = :b", b=b"forged")


def _snapshot_edited(url):
    originator = Ledger.aggregate_id("G3")
    o = originator.bytes if url.startswith("sqlite") else originator
    state = bytes(
        sql(url, "SELECT state FROM ledger_snapshots WHERE originator_id = :o", o=o).scalar_one()
    )
    forged = state.replace(b'"p1"', b'"p2"', 1)
    assert forged != state
    sql(url, "UPDATE ledger_snapshots SET state = :s WHERE originator_id = :o", s=forged, o=o)


def _corrupted_state(url):
    """A stored state no decoder accepts (as TEXT on SQLite; cut short on PostgreSQL)."""
    originator = Ledger.aggregate_id("G4")
    if url.startswith("sqlite"):
        sql(
            url,
            "UPDATE ledger_events SET state = CAST(state AS TEXT) "
            "WHERE originator_id = :o AND originator_version = 3",
            o=originator.bytes,
        )
    else:
        sql(
            url,
            "UPDATE ledger_events SET state = substring(state from 1 for 5) "
            "WHERE originator_id = :o AND originator_version = 3",
            o=originator,
        )


def _game_removed(url):
    """A whole verified game gone: its events, seals, chain head and read rows."""
    originator = Ledger.aggregate_id("G3")
    o = originator.bytes if url.startswith("sqlite") else originator
    sql(url, "DELETE FROM ledger_events WHERE originator_id = :o", o=o)
    sql(url, "DELETE FROM ledger_snapshots WHERE originator_id = :o", o=o)
    sql(url, "DELETE FROM integrity_seals WHERE game_id = 'G3'")
    sql(url, "DELETE FROM integrity_games WHERE game_id = 'G3'")
    for table in ("moves", "player_results", "ledger_entries", "games"):
        sql(url, f"DELETE FROM {table} WHERE game_id = 'G3'")


def _new_game_edited(url):
    flip_byte(url, "G5", 7)


# (tamper, what --since must report: (kind, game, event) triples, None where any)
CASES = {
    "event edited (old game)": (lambda url: flip_byte(url, "G2", 9), {("altered", "G2", 9)}),
    "first event edited": (lambda url: flip_byte(url, "G1", 1), {("altered", "G1", 1)}),
    "event edited (new game)": (_new_game_edited, {("altered", "G5", 7)}),
    "row deleted": (_deleted_row, {("deleted", "G1", 5)}),
    "last event and seal deleted": (_deleted_last_event_and_seal, {("deleted", "G1", 26)}),
    "row forged at the end": (_forged_row_appended, {("inserted", "G1", 27)}),
    "row forged among sealed": (_forged_row_among_sealed, {("inserted", "G2", 27)}),
    "game forged": (_forged_game, {("inserted", "FORGED", 1)}),
    "rows swapped": (_swapped_rows, {("altered", "G3", 5), ("altered", "G3", 7)}),
    "chain value altered": (_altered_chain, {("chain", "G2", 5)}),
    "tree node altered": (_altered_node, {("tree", None, None)}),
    "leaf seal altered": (_altered_leaf_seal, {("altered", "G1", 4)}),
    "resealed edit, projected": (_resealed_projected, {("resealed", "G2", 9)}),
    "resealed edit, unprojected": (_resealed_unprojected, {("resealed", "G2", None)}),
    "move row edited": (_move_row_edited, {("read_model", "G1", None)}),
    "move row deleted": (_move_row_deleted, {("read_model", "G3", None)}),
    "move row added": (_move_row_added, {("read_model", "G4", None)}),
    "memo forged": (_memo_forged, {("read_model", "G1", None)}),
    "snapshot edited": (_snapshot_edited, {("snapshot", "G3", None)}),
    # As TEXT on SQLite it is unreadable; cut short on PostgreSQL, its bytes fail its seal.
    "state corrupted": (_corrupted_state, {("unreadable|altered", "G4", 3)}),
    "game removed": (_game_removed, {("deleted", "G3", None)}),
}

# Where the consistency proof from the kept checkpoint is itself the finding.
PROOF_CASES = {
    # Every seal, chain, node and the tree head rewritten to match the edit: the stored
    # tree now gives another root over the kept checkpoint's 104 events.
    "everything resealed": _resealed_everything,
    # The history cut back before G4 and the integrity tables rebuilt: the new tree is
    # smaller than the kept one.
    "rolled back": _rolled_back,
}


def _matches(report, kind, game, event) -> bool:
    return any(
        p.kind in kind.split("|")
        and (game is None or p.game_id == game)
        and (event is None or p.event == event)
        for p in report.problems
    )


@pytest.mark.parametrize("case", list(CASES))
def test_every_tamper_case_is_found_by_since_as_by_the_full_verify(audited, case):
    url, state = audited
    kept = Checkpoint.load(state / "checkpoint.json")
    tamper, expected = CASES[case]
    tamper(url)
    report, _coverage = since(url, state)
    assert not report.ok, case
    for kind, game, event in expected:
        assert _matches(report, kind, game, event), (case, report.problems)
    full = verify_store(url, checkpoints=[kept])
    assert not full.ok, case
    # The games whose own rows the full verify blames are blamed by --since too (the
    # findings about the tree as a whole, which the full pass pins on whichever seal
    # follows a gap, or on the blocks its rebuilt tree shifted, may name others).
    blamed = {p.game_id for p in full.problems if p.kind not in ("tree", "checkpoint", "resealed")}
    assert blamed - {None} <= named(report), (case, full.problems, report.problems)
    # The state is left as it was, so the next run still sees the tamper.
    assert load_state(state).size == 104


@pytest.mark.parametrize("case", list(PROOF_CASES))
def test_a_rewritten_or_cut_history_fails_the_consistency_proof(audited, case):
    url, state = audited
    kept = Checkpoint.load(state / "checkpoint.json")
    PROOF_CASES[case](url)
    report, coverage = since(url, state)
    proof = [
        p
        for p in report.problems
        if p.kind == "checkpoint"
        and ("consistency proof" in p.message or "history was cut short" in p.message)
    ]
    assert proof, report.problems
    assert coverage.proven == 0
    assert not verify_store(url, checkpoints=[kept]).ok


def test_a_seed_that_did_not_deal_a_new_game_is_found(audited):
    url, state = audited
    from test_integrity import seeds_for

    server, clients = seeds_for("S1")
    deal = deal_from_seeds(server, clients, list(PLAYERS), "p3").to_dict()
    deal["hands"]["p1"][3], deal["hands"]["p2"][8] = deal["hands"]["p2"][8], deal["hands"]["p1"][3]
    record(Ledger(url, env={"CREATE_TABLE": "no"}), "S1", deal=deal)
    catch_up(url)
    report, _ = since(url, state)
    assert ("deal", "S1", 2) in {(p.kind, p.game_id, p.event) for p in report.problems}


# -- settled games: money in the read rows ------------------------------------------------------
def test_a_consistent_forgery_of_a_settled_games_money_is_found(database_url, keys, tmp_path):
    games = store_simulated(database_url)
    state = audit_once(database_url, tmp_path)
    game_id, winner = settled_game(database_url, games)
    forge_consistently(database_url, game_id, winner)
    report, coverage = since(database_url, state)
    assert named(report) == {game_id}, report.problems
    messages = [p.message for p in report.problems]
    assert any(m.startswith("games.gross: stored ") for m in messages), messages
    assert coverage.replayed == [game_id]


# -- disputes: a case's events are new, its lines belong to its game ----------------------------
def test_a_dispute_case_is_replayed_and_a_forged_adjustment_line_found(
    database_url, keys, tmp_path
):
    from web_support import load_games

    from replays.access import accounts
    from replays.disputes.cases import Disputes

    load_games(database_url)
    catch_up(database_url)
    state = audit_once(database_url, tmp_path)
    officer = accounts.add_user("officer-1", "dispute_officer", "password-123", url=database_url)
    p2 = accounts.add_user("player-p2", "player", "password-123", player="p2", url=database_url)
    disputes = Disputes(Ledger(database_url))
    case = disputes.open_case(p2, "T7-000123", 3, "my drop was recorded a turn early")
    disputes.close_case(
        officer, case.case_id, "adjusted", reason="early drop", amount="5.00",
        credited="p2", debited="p1",
    )  # fmt: skip
    catch_up(database_url)
    report, coverage = since(database_url, state)
    assert report.ok, report.problems
    assert "T7-000123" in coverage.replayed

    sql(
        database_url,
        "UPDATE ledger_entries SET credit = 900 WHERE dispute_id = :d AND account = 'player:p2'",
        d=case.case_id,
    )
    report, _ = since(database_url, state)
    assert named(report) == {"T7-000123"}, report.problems
    assert any(
        p.message.startswith(f"ledger_entries[dispute {case.case_id}]") for p in report.problems
    )


# -- values of the wrong kind (tests/corruption_support.py, issue 29's fuzzer) ---------------------
def test_a_value_of_the_wrong_kind_in_any_table_is_named_without_a_traceback(audited):
    """One wrong value per owned table, in an old game's rows where the table has games'
    rows: named with its table and column wherever the full verify names it, and never a
    traceback."""
    from corruption_support import _table, cases, corrupt, nullable, restore, target_row

    from replays.store.db import engine_for

    url, state = audited
    engine = engine_for(url)
    seen, missed, tried = set(), [], 0
    for case in cases(url, per_column=1):
        if (
            not case.wrong_kind
            or case.table in seen
            or _table(case.table).c[case.column].primary_key
        ):
            continue  # one value a table, in a column that does not name the row
        if case.value == "NaN" and url.startswith("sqlite") and nullable(case):
            continue  # SQLite keeps a NaN as NULL: no wrong value there
        with engine.begin() as connection:
            row = target_row(connection, case.table, "G1")
            try:
                with connection.begin_nested():
                    saved = corrupt(connection, case, row)
            except sa.exc.IntegrityError:
                continue  # the database itself refuses it (a foreign key)
        seen.add(case.table)
        try:
            report, _ = since(url, state)
            full = verify_store(url)
        finally:
            with engine.begin() as connection:
                restore(connection, case, row, saved)
        tried += 1

        def names_it(found, case=case) -> bool:
            return any(
                case.table in t and (case.column in t or "unknown topic" in t)
                for t in map(str, found.problems)
            )

        # Where the full verify names the value, --since names it too (on PostgreSQL a
        # blob written into a text column is a text like any other: neither names it,
        # though --since still sees the game's chain head changed).
        if names_it(full) and not names_it(report):
            missed.append(f"{case}: not named; found {[str(p) for p in report.problems][:3]}")
        if not full.ok and report.ok:
            missed.append(f"{case}: the full verify finds {full.problems[:2]}, --since nothing")
    assert tried >= 10, seen
    assert not missed, "\n".join(missed)
    assert since(url, state)[0].ok  # every row was written back


# -- the state directory ---------------------------------------------------------------------
def test_a_write_that_fails_leaves_the_previous_state_whole(tmp_path, monkeypatch):
    from replays.integrity import state_dir
    from replays.integrity.state_dir import GameState, VerifyState, save_state

    game = GameState("aa" * 32, "bb" * 32, "cc" * 32, 7)
    first = VerifyState(8, bytes(32), "2026-01-01T00:00:00Z", "dd" * 32, {"G1": game}, {"x": 1})
    save_state(tmp_path, first, "{}\n")
    assert load_state(tmp_path) == first

    def refuse(source, target):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(state_dir.os, "replace", refuse)
    second = VerifyState(9, bytes(32), "2026-01-02T00:00:00Z", "ee" * 32, {}, {})
    with pytest.raises(state_dir.StateError, match=r"cannot write the state to .*No space left"):
        save_state(tmp_path, second, "{}\n")
    assert load_state(tmp_path) == first
    assert sorted(os.listdir(tmp_path)) == ["checkpoint.json", "state.json"]


def test_a_settlement_line_stored_twice_is_found(database_url, keys, tmp_path):
    # ledger_entries has no key but its id: an insider's copy of a line (a payout paid
    # twice) is a row of its own. Every verify names it, --since through the game's digest.
    from replays.integrity.evidence import verify_game, verify_read_models

    games = store_simulated(database_url)
    state = audit_once(database_url, tmp_path)
    game_id, _ = settled_game(database_url, games)
    sql(
        database_url,
        "INSERT INTO ledger_entries (game_id, dispute_id, kind, line, account, player, debit, "
        "credit, currency, posted_at, posted_on) SELECT game_id, dispute_id, kind, line, "
        "account, player, debit, credit, currency, posted_at, posted_on FROM ledger_entries "
        "WHERE game_id = :g AND line = 1 AND dispute_id IS NULL",
        g=game_id,
    )
    twice = "ledger_entries[settlement line 1]: stored twice, the game's events give one"
    for report in (
        verify_store(database_url),
        verify_store(database_url, jobs=2),
        verify_read_models(database_url),
        verify_game(database_url, game_id),
        since(database_url, state)[0],
    ):
        assert [(p.game_id, p.message) for p in report.problems] == [(game_id, twice)]
