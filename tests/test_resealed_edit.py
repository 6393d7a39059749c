"""A resealed edit, located at its game and event (issue 13, finding 5).

An insider edits one stored event and rewrites what would give it away:

(a) its seal and its game's chain (seals after it, the chain head), but not the stored
    tree nodes or the tree head: the stored subtrees still hold the tree as first written,
    so `verify` bisects the recomputed tree against them down to the smallest stored
    subtree (16 events);
(b) everything, nodes and tree head included, exactly as saves would have written it: only
    the checkpoint file an auditor kept still commits to the old tree, and its block
    hashes (bound to the signed root) let `verify` bisect down to one block.

Inside a block no leaf's original hash is kept: the read rows projected from the event as
first written name the event when the edit changed anything projected; otherwise the
finding names the block's events (game, versions). Events here: four games of 26 events
(G1 at tree positions 0-25, G2 26-51, G3 52-77, G4 78-103); G2's event 9 is at 34, in the
block of positions 32-47, which lies within G2 (its events 7-22).
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from test_integrity import forget_seals, record, row_id, sql

from replays.integrity import merkle
from replays.integrity.canonical import GENESIS, chain_hash, event_leaf
from replays.integrity.checkpoint_blocks import Blocks, block_level
from replays.integrity.evidence import (
    CHECKPOINT,
    RESEALED,
    create_tables,
    seal_new_events,
    verify_store,
)
from replays.integrity.signing import Checkpoint
from replays.readmodels.projections import catch_up
from replays.store.application import Ledger
from web.cli import main

GAMES = ("G1", "G2", "G3", "G4")
EDITED, EVENT = "G2", 9


@pytest.fixture
def store(database_url, request):
    """Four games, stored, sealed and projected (the read rows as first written), and the
    ledger's signing key (the ``keys`` fixture of conftest.py)."""
    request.getfixturevalue("keys")
    from replays.store.schema import migrate

    migrate(database_url)
    create_tables(database_url)
    ledger = Ledger(database_url, env={"CREATE_TABLE": "no"})
    for game in GAMES:
        record(ledger, game, turns=12)
    catch_up(database_url)
    return database_url


# -- the insider's tools -------------------------------------------------------------------------
def edit_event(url: str, game: str, version: int, change) -> None:
    """Rewrite one stored event's state (its JSON, changed by ``change``)."""
    rid = row_id(url, game, version)
    state = json.loads(
        sql(url, "SELECT state FROM ledger_events WHERE id = :i", i=rid).scalar_one()
    )
    change(state)
    data = json.dumps(state, separators=(",", ":")).encode()
    sql(url, "UPDATE ledger_events SET state = :s WHERE id = :i", s=data, i=rid)
    # Snapshots are derived and unsealed: a careful insider drops the game's (always safe).
    originator = Ledger.aggregate_id(game)
    sql(
        url,
        "DELETE FROM ledger_snapshots WHERE originator_id = :o",
        o=originator.bytes if url.startswith("sqlite") else originator,
    )


def projected_edit(state: dict) -> None:
    """A move's time: projected into its `moves` row."""
    state["at"] = "2026-01-02T03:04:05Z"


def unprojected_edit(state: dict) -> None:
    """The library's own timestamp of a move event: no read row shows it."""
    state["timestamp"]["_data_"] = "2020-01-01T00:00:00+00:00"


def reseal_seal_and_chain(url: str, game: str) -> None:
    """Case (a): every seal of the game recomputed from its rows (leaf and chain), and its
    chain head; the tree nodes and the tree head are left as the saves wrote them."""
    originator = Ledger.aggregate_id(game)
    seal_id = originator.hex if url.startswith("sqlite") else originator
    rows = sql(
        url,
        "SELECT originator_version, topic, state FROM ledger_events WHERE originator_id = :o "
        "ORDER BY originator_version",
        o=originator.bytes if url.startswith("sqlite") else originator,
    ).all()
    chain = GENESIS
    for version, topic, state in rows:
        leaf = event_leaf(originator.bytes, version, topic, bytes(state))
        chain = chain_hash(chain, leaf)
        sql(
            url,
            "UPDATE integrity_seals SET leaf_hash = :l, chain_hash = :c "
            "WHERE originator_id = :o AND originator_version = :v",
            l=leaf,
            c=chain,
            o=seal_id,
            v=version,
        )
    sql(url, "UPDATE integrity_games SET chain_hash = :c WHERE game_id = :g", c=chain, g=game)


def reseal_everything(url: str) -> None:
    """Case (b): every seal, chain, tree node and the tree head written anew from the
    (edited) events, exactly as saves would have: the seals alone see nothing."""
    forget_seals(url)
    seal_new_events(url)
    assert verify_store(url, check_read_models=False).ok


def kept_checkpoint(tmp_path) -> Checkpoint:
    """`rummy-ledger checkpoint --out FILE`, as an auditor receives it."""
    path = tmp_path / "kept.json"
    result = CliRunner().invoke(main, ["checkpoint", "--out", str(path)])
    assert result.exit_code == 0, result.output
    kept = Checkpoint.load(path)
    assert kept.blocks is not None and kept.size == 104
    return kept


def blamed(report) -> set[str]:
    return {p.game_id for p in report.problems if p.game_id is not None}


def assert_untouched_games_not_blamed(url, kept) -> None:
    for game in set(GAMES) - {EDITED}:
        one = verify_store(url, game_id=game, checkpoints=[kept])
        assert game not in blamed(one), one.problems
        assert "Traceback" not in "".join(map(str, one.problems))


# -- case (a): the stored subtrees still hold the old tree ----------------------------------------
@pytest.mark.parametrize("with_checkpoint", [False, True])
def test_a_resealed_edit_is_named_by_the_stored_subtrees_and_its_read_rows(
    store, tmp_path, with_checkpoint
):
    kept = kept_checkpoint(tmp_path) if with_checkpoint else None
    edit_event(store, EDITED, EVENT, projected_edit)
    reseal_seal_and_chain(store, EDITED)

    report = verify_store(store, checkpoints=[kept] if kept else [])
    located = [p for p in report.problems if p.kind == RESEALED]
    assert [(p.game_id, p.event) for p in located] == [(EDITED, EVENT)], report.problems
    assert "tree positions 32-47" in located[0].message
    assert "moves[" in located[0].message  # the read row that names it
    assert blamed(report) == {EDITED}, report.problems

    one = verify_store(store, game_id=EDITED, checkpoints=[kept] if kept else [])
    assert (RESEALED, EDITED, EVENT) in [(p.kind, p.game_id, p.event) for p in one.problems]
    if kept:
        assert_untouched_games_not_blamed(store, kept)


def test_an_unprojected_resealed_edit_is_narrowed_to_its_block(store, tmp_path):
    kept = kept_checkpoint(tmp_path)
    edit_event(store, EDITED, EVENT, unprojected_edit)
    reseal_seal_and_chain(store, EDITED)

    report = verify_store(store, checkpoints=[kept])
    located = [p for p in report.problems if p.kind == RESEALED]
    assert [(p.game_id, p.event) for p in located] == [(EDITED, None)], report.problems
    # The block of 16 events lies within G2: its events 7-22, event 9 among them.
    assert "tree positions 32-47" in located[0].message
    assert "G2 events 7-22" in located[0].message
    assert blamed(report) == {EDITED}
    assert_untouched_games_not_blamed(store, kept)


# -- case (b): only the kept checkpoint knows ----------------------------------------------------
def test_a_fully_resealed_edit_is_located_with_the_kept_checkpoint(store, tmp_path):
    kept = kept_checkpoint(tmp_path)
    edit_event(store, EDITED, EVENT, projected_edit)
    reseal_everything(store)

    report = verify_store(store, checkpoints=[kept])
    kinds = [(p.kind, p.game_id, p.event) for p in report.problems]
    assert (RESEALED, EDITED, EVENT) in kinds, report.problems
    assert CHECKPOINT in {p.kind for p in report.problems}
    assert blamed(report) == {EDITED}, report.problems
    assert_untouched_games_not_blamed(store, kept)
    one = verify_store(store, game_id=EDITED, checkpoints=[kept])
    assert (RESEALED, EDITED, EVENT) in [(p.kind, p.game_id, p.event) for p in one.problems]


def test_a_fully_resealed_unprojected_edit_names_the_blocks_events(store, tmp_path):
    kept = kept_checkpoint(tmp_path)
    edit_event(store, EDITED, EVENT, unprojected_edit)
    reseal_everything(store)

    report = verify_store(store, checkpoints=[kept])
    located = [p for p in report.problems if p.kind == RESEALED]
    assert [(p.game_id, p.event) for p in located] == [(EDITED, None)], report.problems
    assert "tree positions 32-47" in located[0].message
    assert "G2 events 7-22" in located[0].message
    assert_untouched_games_not_blamed(store, kept)


def test_the_command_line_names_the_event_without_a_traceback(store, tmp_path):
    kept_checkpoint(tmp_path)
    edit_event(store, EDITED, EVENT, projected_edit)
    reseal_everything(store)
    path = str(tmp_path / "kept.json")

    result = CliRunner().invoke(main, ["verify", "--checkpoint", path])
    assert result.exit_code == 1, result.output
    assert f"game {EDITED}, event {EVENT}: resealed:" in result.output
    assert "Traceback" not in result.output
    other = CliRunner().invoke(main, ["verify", "--game", "G4", "--checkpoint", path])
    assert "FAIL game G4" not in other.output, other.output
    assert "Traceback" not in other.output


# -- the checkpoint file's blocks --------------------------------------------------------------
def test_block_level_keeps_the_file_small():
    assert block_level(0) == 4
    assert block_level(104) == 4
    assert block_level(16 * 4096) == 4
    assert block_level(16 * 4096 + 15) == 4  # 4,096 blocks and a rest
    assert block_level(16 * 4097) == 5
    assert (10_000_000 >> block_level(10_000_000)) <= 4096
    assert block_level(104, most=3) == 5  # 104 >> 5: 3 blocks of 32 and a rest of 8


@pytest.mark.parametrize("size", [1, 15, 16, 17, 104, 1000])
def test_blocks_fold_to_the_root_they_are_bound_to(size):
    leaves = [merkle.leaf_hash(bytes([i % 256, i // 256])) for i in range(size)]
    root = merkle.tree_hash(leaves)
    for level in (4, 5, 7):
        count = size >> level
        hashes = [merkle.tree_hash(leaves[i << level : (i + 1) << level]) for i in range(count)]
        rest_start = count << level
        rest = [
            merkle.tree_hash(leaves[i << lv : (i + 1) << lv])
            for lv, i in (merkle.subtrees_of(rest_start, size) if rest_start < size else [])
        ]
        blocks = Blocks(level, tuple(hashes), tuple(rest))
        assert blocks.root(size) == root
        forged = Blocks(level, tuple(hashes), (*tuple(rest[:-1]), bytes(32))) if rest else None
        if forged is not None:
            assert forged.root(size) != root


def test_altered_blocks_in_a_kept_file_are_a_finding_not_a_crash(store, tmp_path):
    kept_checkpoint(tmp_path)
    path = tmp_path / "kept.json"
    data = json.loads(path.read_text())
    data["blocks"]["hashes"][2] = "00" * 32
    path.write_text(json.dumps(data))
    report = verify_store(store, checkpoints=[Checkpoint.load(path)], check_read_models=False)
    assert [p.kind for p in report.problems] == [CHECKPOINT]
    assert "block hashes" in report.problems[0].message


def test_an_edit_left_unsealed_is_altered_not_resealed(store, tmp_path):
    """The seal still holds the old leaf: the seal names the event; no block is blamed."""
    kept = kept_checkpoint(tmp_path)
    edit_event(store, EDITED, EVENT, projected_edit)
    for report in (
        verify_store(store, checkpoints=[kept]),
        verify_store(store, game_id=EDITED, checkpoints=[kept]),
    ):
        kinds = {(p.kind, p.game_id, p.event) for p in report.problems}
        assert ("altered", EDITED, EVENT) in kinds, report.problems
        assert RESEALED not in {p.kind for p in report.problems}, report.problems


@pytest.mark.parametrize("everything", [False, True])
def test_an_edit_after_the_last_complete_stored_subtree_is_located(store, tmp_path, everything):
    """Position 97 (G4's event 20) lies after the last subtree of 16: the tree head's
    frontier (case a) or the file's rest hashes (case b) hold its smaller subtree."""
    kept = kept_checkpoint(tmp_path)
    edit_event(store, "G4", 20, unprojected_edit)
    if everything:
        reseal_everything(store)
    else:
        reseal_seal_and_chain(store, "G4")
    report = verify_store(store, checkpoints=[kept])
    located = [p for p in report.problems if p.kind == RESEALED]
    assert [p.game_id for p in located] == ["G4"], report.problems
    assert "tree positions 96-103 (G4 events 19-26)" in located[0].message
    for game in ("G1", "G2", "G3"):
        assert game not in blamed(verify_store(store, game_id=game, checkpoints=[kept]))


def test_malformed_blocks_in_a_file_are_refused_by_field(tmp_path, store):
    kept_checkpoint(tmp_path)
    path = tmp_path / "kept.json"
    data = json.loads(path.read_text())
    data["blocks"]["hashes"].pop()
    path.write_text(json.dumps(data))
    result = CliRunner().invoke(main, ["verify", "--checkpoint", str(path)])
    assert result.exit_code == 1
    assert "blocks.hashes must be a list of 6 hashes for 104 events at level 4" in result.output
    assert "Traceback" not in result.output


def test_a_kept_file_without_blocks_narrows_it_as_before(store, tmp_path):
    """An old file (no blocks) and a rewritten stored tree: no block can be vouched for;
    the failing checkpoint is reported, and no untouched game is blamed with it."""
    kept = kept_checkpoint(tmp_path)
    old = Checkpoint(kept.size, kept.root, kept.time, kept.key_id, kept.signature)
    edit_event(store, EDITED, EVENT, projected_edit)
    reseal_everything(store)
    report = verify_store(store, checkpoints=[old])
    assert RESEALED not in {p.kind for p in report.problems}, report.problems
    assert CHECKPOINT in {p.kind for p in report.problems}
    assert "tree positions 0-103" in str(report.problems)


def test_a_resealed_event_that_cannot_be_replayed_leaves_the_other_snapshots_checked(store):
    """G2's event 3 names a player the game does not have (replaying it raises); G4 lies
    beyond a lagging projection and its snapshot is edited: the snapshot step names G2's
    event and still finds G4's snapshot."""
    from test_integrity import _uuid_param

    rid = row_id(store, EDITED, 3)  # edited as edit_event does, G2's snapshots kept
    picked = json.loads(sql(store, "SELECT state FROM ledger_events WHERE id = :i", i=rid).one()[0])
    picked["player"] = "nobody"
    data = json.dumps(picked, separators=(",", ":")).encode()
    sql(store, "UPDATE ledger_events SET state = :s WHERE id = :i", s=data, i=rid)
    reseal_seal_and_chain(store, EDITED)
    g4 = _uuid_param(store, Ledger.aggregate_id("G4"))
    snapshots = sql(
        store, "SELECT count(*) FROM ledger_snapshots WHERE originator_id = :o", o=g4
    ).scalar_one()
    assert snapshots, "G4 has a snapshot to edit"
    first = sql(
        store, "SELECT min(notification_id) FROM integrity_seals WHERE game_id = 'G4'"
    ).scalar_one()
    sql(store, "UPDATE projection_positions SET position = :p", p=first - 1)
    for table in ("player_results", "moves", "ledger_entries", "games"):
        sql(store, f"DELETE FROM {table} WHERE game_id = 'G4'")
    state = json.loads(
        sql(store, "SELECT state FROM ledger_snapshots WHERE originator_id = :o", o=g4).first()[0]
    )
    state["state"]["_modified_on"] = "2025-03-09T18:59:59+00:00"
    data = json.dumps(state, separators=(",", ":")).encode()
    sql(store, "UPDATE ledger_snapshots SET state = :s WHERE originator_id = :o", s=data, o=g4)
    for jobs in (1, 2):
        problems = [str(p) for p in verify_store(store, jobs=jobs).problems]
        assert not any("stopped early" in p for p in problems), problems
        assert any(
            p.startswith(f"game {EDITED}, event 3: unreadable: snapshots cannot be checked")
            and "'nobody'" in p
            for p in problems
        ), problems
        assert any(p.startswith("game G4, event ") and ": snapshot: " in p for p in problems)


@pytest.mark.parametrize(
    ("field", "words"),
    [
        ("decks", "decks must be a whole number from 1 to 4, got 1000000000000"),
        (
            "jokers_per_deck",
            "jokers_per_deck must be a whole number from 0 to 2, got 1000000000000",
        ),
    ],
)
def test_a_resealed_deck_count_beyond_the_rules_is_named_not_built(store, field, words):
    """G2's first event asks for 10**12 packs (or jokers a pack), resealed: verify once
    built that deck, without end. Now the deal check names the event, promptly, and G3's
    edited read row is still found."""
    edit_event(store, EDITED, 1, lambda state: state["config"].__setitem__(field, 10**12))
    reseal_seal_and_chain(store, EDITED)
    sql(store, "UPDATE games SET moves_count = moves_count + 1 WHERE game_id = 'G3'")
    for jobs in (1, 2):
        problems = [str(p) for p in verify_store(store, jobs=jobs).problems]
        assert not any("stopped early" in p for p in problems), problems
        assert any(p.startswith(f"game {EDITED}, event 1: ") and words in p for p in problems)
        assert any(p.startswith("game G3") and "moves_count" in p for p in problems), problems
