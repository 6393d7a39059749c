"""Tamper evidence over the real store, on SQLite and PostgreSQL.

Games are stored through the real :class:`~replays.store.application.Ledger`, whose saves seal
their own events; tampering is done the way an insider would, with SQL straight into the
database, and must be detected with the game id and the event number (the aggregate
version: 1 Started, 2 Dealt, 3... moves). ``tests/test_integrity_in_save.py`` covers the
sealing in the save itself: forged rows and seals, concurrent writers, old stores.
"""

from __future__ import annotations

import json
import uuid

import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from sql_support import sql

from domain.rummy13.table import TableConfig
from domain.shuffle import commitment, deal_from_seeds
from replays.integrity import evidence as integrity
from replays.integrity.canonical import event_bytes
from replays.integrity.evidence import (
    ALTERED,
    CHECKPOINT,
    DELETED,
    INSERTED,
    RESEALED,
    create_tables,
    inclusion_proof,
    integrity_verdict,
    make_checkpoint,
    seal_new_events,
    verify_store,
)
from replays.integrity.proofs import verify_proof
from replays.integrity.signing import Checkpoint, init_keys, load_public_key
from replays.store.application import Ledger
from replays.store.db import engine_for
from web.cli import main

PLAYERS = ("p1", "p2", "p3")


# -- building games ------------------------------------------------------------------------
def seeds_for(game_id: str) -> tuple[bytes, dict[str, bytes]]:
    server = ("server:" + game_id).encode()
    return server, {p: f"{game_id}:{p}".encode() for p in PLAYERS}


def shuffle_block(server: bytes, clients: dict[str, bytes], revealed: bool = True) -> dict:
    block = {
        "commitment": commitment(server),
        "client_seeds": {p: s.hex() for p, s in clients.items()},
    }
    if revealed:
        block["seed"] = server.hex()
    return block


def record(ledger: Ledger, game_id: str, turns: int = 6, *, deal=None, stock=True, picks=None):
    """A game dealt from its seeds: each turn picks the stock's top card and discards it."""
    server, clients = seeds_for(game_id)
    dealt = deal_from_seeds(server, clients, list(PLAYERS), "p3")
    config = TableConfig(
        game_id=game_id,
        variant="points",
        players=PLAYERS,
        point_value="1.00",
        dealer="p3",
        shuffle=shuffle_block(server, clients),
    )
    deal = deal or dealt.to_dict()
    if not stock:
        deal = dict(deal, stock=None)
    picks = picks or [str(c) for c in dealt.stock[:turns]]
    moves = []
    for turn, card in enumerate(picks[:turns]):
        player = PLAYERS[turn % 3]
        moves.append({"player": player, "type": "pick", "from": "closed", "card": card})
        moves.append({"player": player, "type": "discard", "card": card})
    ledger.record_game(config, deal, moves, settle=False)
    return ledger.get_game(game_id)


@pytest.fixture
def ledger(database_url):
    create_tables(database_url)
    return Ledger(database_url)


def old_ledger(url: str) -> Ledger:
    """A writer from before sealing moved into the save: the library's own recorder."""
    return Ledger(url, env={"PERSISTENCE_MODULE": "eventsourcing_sqlalchemy"})


INTEGRITY_TABLES = (
    "integrity_seals",
    "integrity_nodes",
    "integrity_games",
    "integrity_head",
    "integrity_checkpoints",
)


def forget_seals(url: str) -> None:
    """The store as it was before any sealing: no seals, no tree, no tree head."""
    for table in INTEGRITY_TABLES:
        sql(url, f"DELETE FROM {table}")


# -- tampering like an insider ---------------------------------------------------------------
def row_id(url, game_id, version):
    return sql(
        url,
        "SELECT id FROM ledger_events WHERE originator_id = :o AND originator_version = :v",
        o=_uuid_param(url, Ledger.aggregate_id(game_id)),
        v=version,
    ).scalar_one()


def _uuid_param(url, value: uuid.UUID):
    # eventsourcing-sqlalchemy stores UUIDs as 16 bytes on SQLite, native on PostgreSQL.
    return value.bytes if url.startswith("sqlite") else value


def flip_byte(url, game_id, version, offset=40):
    rid = row_id(url, game_id, version)
    state = bytearray(sql(url, "SELECT state FROM ledger_events WHERE id = :i", i=rid).scalar_one())
    state[offset] ^= 0x01
    sql(url, "UPDATE ledger_events SET state = :s WHERE id = :i", s=bytes(state), i=rid)


def insert_row(
    url,
    game_id,
    version,
    state: bytes,
    *,
    row: int | None = None,
    topic="rummy_ledger:Game.Discarded",
):
    columns = "originator_id, originator_version, topic, state"
    values = ":o, :v, :t, :s"
    if row is not None:
        columns, values = "id, " + columns, ":i, " + values
    sql(
        url,
        f"INSERT INTO ledger_events ({columns}) VALUES ({values})",
        i=row,
        o=_uuid_param(url, Ledger.aggregate_id(game_id)),
        v=version,
        t=topic,
        s=state,
    )


def kinds(report):
    return [(p.kind, p.game_id, p.event) for p in report.problems]


# -- the store ---------------------------------------------------------------------------------
def test_an_untouched_store_verifies(ledger, database_url, keys):
    for n in range(3):
        record(ledger, f"G{n}", turns=4 + n)
    # Every save sealed its events: verification needs no step in between.
    assert verify_store(database_url).ok
    assert seal_new_events(database_url) == 0  # nothing left for the backfill
    make_checkpoint(database_url)
    report = verify_store(database_url)
    assert report.ok, report.problems
    assert (report.events, report.sealed, report.games) == (36, 36, 3)
    assert report.checkpoints == [36]
    assert "3 deal(s) checked against their shuffle seeds" in report.notes
    for n in range(3):
        game = verify_store(database_url, game_id=f"G{n}")
        assert game.ok and game.events == 10 + 2 * n


@pytest.mark.parametrize(("game_id", "version"), [("G1", 1), ("G1", 2), ("G2", 7), ("G2", 14)])
def test_a_flipped_byte_is_found_with_its_game_and_event(
    ledger, database_url, keys, game_id, version
):
    for name in ("G1", "G2", "G3"):
        record(ledger, name)
    make_checkpoint(database_url)
    flip_byte(database_url, game_id, version)

    report = verify_store(database_url, check_deals=False)
    assert not report.ok
    assert (ALTERED, game_id, version) in kinds(report)
    assert {p.game_id for p in report.problems if p.game_id} == {game_id}
    # The signed root no longer matches either.
    assert any(p.kind == CHECKPOINT for p in report.problems)

    one = verify_store(database_url, game_id=game_id)
    assert (ALTERED, game_id, version) in kinds(one)
    assert verify_store(database_url, game_id="G3").ok
    verdict = integrity_verdict(database_url, game_id)
    assert (verdict.status, verdict.event) == ("broken", version)
    assert verdict.label == f"broken at event {version}"


def test_a_deleted_row_is_found(ledger, database_url, keys):
    record(ledger, "G1")
    record(ledger, "G2")
    sql(database_url, "DELETE FROM ledger_events WHERE id = :i", i=row_id(database_url, "G1", 5))
    report = verify_store(database_url)
    assert kinds(report)[0] == (DELETED, "G1", 5)
    assert integrity_verdict(database_url, "G1").event == 5


def test_deleting_a_games_last_event_and_its_seal_is_found(ledger, database_url):
    record(ledger, "G1")
    record(ledger, "G2")
    last = row_id(database_url, "G1", 14)
    sql(database_url, "DELETE FROM ledger_events WHERE id = :i", i=last)
    sql(database_url, "DELETE FROM integrity_seals WHERE notification_id = :i", i=last)
    report = verify_store(database_url, check_deals=False)
    assert (DELETED, "G1", 14) in kinds(report)
    assert (DELETED, "G1", 14) in kinds(verify_store(database_url, game_id="G1"))


def test_a_forged_row_is_found(ledger, database_url, keys):
    record(ledger, "G1")
    record(ledger, "G2")
    forged = b'{"player":"p1","card":"JK","at":null}'
    # Appended after the sealed ones, as the application would have written it: saves
    # seal their own events, so a row without a seal was inserted.
    insert_row(database_url, "G1", 15, forged)
    report = verify_store(database_url, check_deals=False)
    assert kinds(report) == [(INSERTED, "G1", 15)]
    assert integrity_verdict(database_url, "G1").label == "broken at event 15"
    # Slipped in among the sealed rows (an id no event had): certainly inserted.
    insert_row(database_url, "G2", 15, forged, row=0)
    report = verify_store(database_url, check_deals=False)
    assert (INSERTED, "G2", 15) in kinds(report)
    assert integrity_verdict(database_url, "G2").label == "broken at event 15"
    # A whole forged game is named by the game id in its first event.
    started = json.dumps({"config": {"game_id": "FORGED"}}).encode()
    insert_row(database_url, "FORGED", 1, started, row=-5, topic="rummy_ledger:Game.Started")
    assert (INSERTED, "FORGED", 1) in kinds(verify_store(database_url, check_deals=False))


def test_altered_seals_and_tree_nodes_are_found(ledger, database_url):
    for n in range(4):
        record(ledger, f"G{n}", turns=10)  # 22 events each: complete 16-leaf subtrees
    assert verify_store(database_url).ok
    sql(database_url, "UPDATE integrity_seals SET chain_hash = :h WHERE position = 30", h=bytes(32))
    report = verify_store(database_url, check_deals=False)
    assert [p.kind for p in report.problems] == ["chain"]
    assert (report.problems[0].game_id, report.problems[0].event) == ("G1", 9)
    sql(
        database_url,
        "UPDATE integrity_nodes SET hash = :h WHERE level = 4 AND " + '"index" = 2',
        h=bytes(32),
    )
    report = verify_store(database_url, check_deals=False)
    assert "stored tree node (level 4, index 2)" in str(report.problems[-1])


def test_the_backfill_continues_the_tree_across_batches_and_saves(ledger, database_url):
    """A store written before saves sealed: the backfill seals it in batches, then the
    saves go on from the tree it left."""
    record(old_ledger(database_url), "G1", turns=9)
    assert integrity.seal_new_events(database_url, batch_size=7) == 20
    record(old_ledger(database_url), "G2", turns=12)
    sql(database_url, "DELETE FROM integrity_head")  # as the store was before migration 0007
    assert integrity.seal_new_events(database_url, batch_size=5) == 26
    record(ledger, "G3", turns=3)  # sealed by its save
    assert integrity.seal_new_events(database_url) == 0
    report = verify_store(database_url)
    assert report.ok and report.sealed == 54, report.problems


# -- checkpoints and proofs ------------------------------------------------------------------
def test_consistency_holds_across_appends_and_proofs_verify_offline(ledger, database_url, keys):
    record(ledger, "G1")
    old = make_checkpoint(database_url)
    record(ledger, "G2", turns=9)
    record(ledger, "G3")
    new = make_checkpoint(database_url)
    assert (old.size, new.size) == (14, 48)
    public_key = load_public_key(keys)

    proof = integrity.consistency_proof(database_url, old, new)
    result = verify_proof(json.loads(json.dumps(proof)), public_key, [old])
    assert result.ok, result.failure
    assert "extends the tree of 14" in result.checked[-1]

    for game_id, checkpoint in (("G1", old), ("G2", new), ("G1", new)):
        document = inclusion_proof(database_url, game_id, checkpoint)
        result = verify_proof(json.loads(json.dumps(document)), public_key, [checkpoint])
        assert result.ok, result.failure
        assert document["complete"]
    # An old checkpoint cannot cover events written after it.
    with pytest.raises(integrity.IntegrityError, match="has no events in the checkpoint of 14"):
        inclusion_proof(database_url, "G2", old)
    assert verify_store(database_url, checkpoints=[old, new]).ok


def test_a_tampered_proof_or_a_foreign_checkpoint_fails(ledger, database_url, keys, tmp_path):
    record(ledger, "G1")
    checkpoint = make_checkpoint(database_url)
    public_key = load_public_key(keys)
    document = inclusion_proof(database_url, "G1", checkpoint)

    altered = json.loads(json.dumps(document))
    event = altered["events"][4]
    state = bytearray(__import__("base64").b64decode(event["state"]))
    state[30] ^= 1
    event["state"] = __import__("base64").b64encode(bytes(state)).decode()
    result = verify_proof(altered, public_key)
    assert not result.ok
    assert result.failure.startswith("game G1, event 5: not included in the checkpoint")

    dropped = json.loads(json.dumps(document))
    del dropped["events"][2]
    assert "expected event 3 next" in verify_proof(dropped, public_key).failure

    other_keys = init_keys(tmp_path / "other")
    assert "signed by key" in verify_proof(document, load_public_key(other_keys)).failure
    forged = json.loads(json.dumps(document))
    forged["checkpoint"]["size"] += 1
    assert "signature is not valid" in verify_proof(forged, public_key).failure
    older = Checkpoint.sign(
        __import__("replays.integrity.signing", fromlist=["x"]).load_private_key(keys), 3, bytes(32)
    )
    assert "not a checkpoint you gave" in verify_proof(document, public_key, [older]).failure


def test_a_checkpoint_from_a_tampered_history_fails(ledger, database_url, keys):
    """An insider alters an event, rebuilds every integrity table, and signs anew."""
    record(ledger, "G1")
    record(ledger, "G2")
    kept = make_checkpoint(database_url)  # the auditor keeps this one
    record(ledger, "G3")

    flip_byte(database_url, "G1", 6)
    forget_seals(database_url)
    rewritten = make_checkpoint(database_url)
    assert rewritten.size == 42

    # The seals now agree with the altered rows; only the auditor's checkpoint knows better.
    assert verify_store(database_url).ok
    report = verify_store(database_url, checkpoints=[kept])
    assert [p.kind for p in report.problems] == [RESEALED, CHECKPOINT]
    # The kept file's block hashes narrow it to the first 16 events (tests/test_resealed_edit.py).
    assert "tree positions 0-15 (G1 events 1-14, G2 events 1-2)" in report.problems[0].message
    assert "first 28 events does not match the checkpoint" in report.problems[1].message

    proof = integrity.consistency_proof(database_url, kept, rewritten)
    result = verify_proof(proof, load_public_key(keys), [kept])
    assert not result.ok
    assert "does not extend the tree of 28" in result.failure


def test_checkpoint_refuses_to_sign_a_rewritten_tree(ledger, database_url, keys):
    record(ledger, "G1")
    make_checkpoint(database_url)
    sql(database_url, "UPDATE integrity_seals SET leaf_hash = :h WHERE position = 3", h=bytes(32))
    with pytest.raises(integrity.IntegrityError, match="no longer matches the previous checkpoint"):
        make_checkpoint(database_url)


def test_verdicts_on_game_pages(ledger, database_url, keys):
    record(ledger, "G1")
    verdict = integrity_verdict(database_url, "G1")
    assert (verdict.status, verdict.label) == ("not_checkpointed", "not yet checkpointed")
    assert verdict.message == "no checkpoint has been signed yet"
    make_checkpoint(database_url)
    verdict = integrity_verdict(database_url, "G1")
    assert verdict.status == "verified", verdict.message
    assert verdict.checkpoint_size == 14
    assert verdict.to_dict()["label"] == "verified"

    record(ledger, "G2")  # sealed by its save, not in a checkpoint yet
    assert integrity_verdict(database_url, "G1").status == "verified"
    assert "after the latest checkpoint" in integrity_verdict(database_url, "G2").message
    with pytest.raises(integrity.UnknownGame, match="no game NOPE in the ledger"):
        integrity_verdict(database_url, "NOPE")


# -- deals against their seeds ---------------------------------------------------------------
def test_a_deal_with_one_swapped_card_is_found(ledger, database_url):
    server, clients = seeds_for("S1")
    deal = deal_from_seeds(server, clients, list(PLAYERS), "p3").to_dict()
    deal["hands"]["p1"][3], deal["hands"]["p2"][8] = deal["hands"]["p2"][8], deal["hands"]["p1"][3]
    assert deal["hands"]["p1"][3] != deal["hands"]["p2"][8]
    record(ledger, "S1", deal=deal)
    record(ledger, "S2")
    report = verify_store(database_url)
    assert [(p.kind, p.game_id, p.event) for p in report.problems] == [("deal", "S1", 2)]
    assert "p1's hand holds" in report.problems[0].message
    assert integrity_verdict(database_url, "S1").label == "broken at event 2"


def test_closed_picks_are_checked_when_the_record_has_no_stock(ledger, database_url):
    server, clients = seeds_for("S3")
    stock = [str(c) for c in deal_from_seeds(server, clients, list(PLAYERS), "p3").stock]
    record(ledger, "S3", stock=False)
    picks = [stock[0], stock[1], stock[3], stock[2]]  # the third pick jumps the queue
    record(ledger, "S4", stock=False, picks=picks, turns=4)
    # S4's deal is S4's own; reuse S3's seeds' stock order only for S3.
    report = verify_store(database_url)
    problems = [(p.kind, p.game_id, p.event) for p in report.problems]
    assert problems == [("deal", "S4", 3)]  # S4's very first pick is not its stock's top


def test_unrevealed_seeds_are_noted_not_failed(ledger, database_url):
    server, clients = seeds_for("U1")
    dealt = deal_from_seeds(server, clients, list(PLAYERS), "p3")
    config = TableConfig(
        game_id="U1",
        variant="points",
        players=PLAYERS,
        point_value="1",
        dealer="p3",
        shuffle=shuffle_block(server, clients, revealed=False),
    )
    ledger.record_game(config, dealt.to_dict(), [], settle=False)
    report = verify_store(database_url)
    assert report.ok
    assert "1 game(s) commit to a shuffle whose seed is not revealed yet" in report.notes


def test_canonical_bytes_are_the_same_on_both_engines(ledger, database_url):
    game = record(ledger, "C1")
    with engine_for(database_url).connect() as connection:
        state = connection.execute(
            sa.text("SELECT state FROM ledger_events WHERE id = :i"),
            {"i": row_id(database_url, "C1", 1)},
        ).scalar_one()
    data = event_bytes(game.id, 1, "rummy_ledger:Game.Started", bytes(state))
    assert data[:4] == b"RLE1" and data[4:20] == game.id.bytes


# -- the command line --------------------------------------------------------------------------
def run(*args):
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.output


def test_command_line_round_trip(ledger, database_url, tmp_path, monkeypatch):
    key_dir = tmp_path / "k"
    monkeypatch.setenv("RUMMY_LEDGER_KEY_DIR", str(key_dir))
    code, out = run("keys", "init")
    assert code == 0 and "signing-key.pub" in out
    assert oct((key_dir / "signing-key.pem").stat().st_mode & 0o777) == "0o600"
    code, out = run("keys", "init")
    assert code == 1 and "already exists" in out

    record(ledger, "G1")
    old_file = tmp_path / "cp1.json"
    code, out = run("checkpoint", "--out", old_file)
    assert code == 0, out
    assert json.loads(old_file.read_text())["size"] == 14
    record(ledger, "G2")
    new_file = tmp_path / "cp2.json"
    assert run("checkpoint", "--out", new_file)[0] == 0

    code, out = run("verify", "--checkpoint", old_file)
    assert code == 0, out
    assert "verified" in out
    assert run("verify", "--game", "G2", "--checkpoint", new_file)[0] == 0

    inclusion = tmp_path / "g1.json"
    assert run("proof", "inclusion", "G1", "--checkpoint", old_file, "--out", inclusion)[0] == 0
    consistency = tmp_path / "c.json"
    code, out = run("proof", "consistency", old_file, new_file, "--out", consistency)
    assert code == 0, out
    public = key_dir / "signing-key.pub"
    monkeypatch.setenv("RUMMY_LEDGER_DATABASE_URL", "sqlite:///" + str(tmp_path / "absent.db"))
    code, out = run("verify-proof", inclusion, "--key", public, "--checkpoint", old_file)
    assert code == 0, out
    assert "events 1-14" in out
    code, out = run("verify-proof", consistency, "--key", public, "--checkpoint", old_file)
    assert code == 0, out
    monkeypatch.setenv("RUMMY_LEDGER_DATABASE_URL", database_url)

    flip_byte(database_url, "G2", 9)
    code, out = run("verify", "--checkpoint", new_file)
    assert code == 1
    assert "game G2, event 9: altered" in out
    code, out = run("verify", "--json")
    assert code == 1 and json.loads(out)["problems"][0]["event"] == 9
    code, out = run("proof", "inclusion", "G2")
    assert code == 1 and "event 9: the stored event no longer matches its seal" in out

    code, out = run("verify-proof", tmp_path / "missing.json", "--key", public)
    assert code == 1 and "missing.json" in out


# -- end to end: the simulator deals verifiably ------------------------------------------------
def test_simulated_games_verify_end_to_end(database_url, keys):
    from replays.simulation import Floor, Simulation, store_games

    create_tables(database_url)
    records = list(Simulation(Floor(seed=11, tables=3, players=12)).games(8))
    assert all("shuffle" in record for record in records)
    store_games(records, url=database_url, warn=lambda message: None)
    make_checkpoint(database_url)
    report = verify_store(database_url)
    assert report.ok, report.problems
    assert f"{len(records)} deal(s) checked against their shuffle seeds" in report.notes
    game_id = records[3]["game_id"]
    assert integrity_verdict(database_url, game_id).status == "verified"

    # One swapped card in a stored deal (hands and stock stay a full deck) is caught.
    dealt = row_id(database_url, game_id, 2)
    state = json.loads(
        sql(database_url, "SELECT state FROM ledger_events WHERE id = :i", i=dealt).scalar_one()
    )
    hands = state["hands"]
    first, second = list(hands)[:2]
    hands[first][0], hands[second][0] = hands[second][0], hands[first][0]
    assert hands[first][0] != hands[second][0]
    sql(
        database_url,
        "UPDATE ledger_events SET state = :s WHERE id = :i",
        s=json.dumps(state).encode(),
        i=dealt,
    )
    report = verify_store(database_url)
    assert (ALTERED, game_id, 2) in kinds(report)  # the seal notices first
    # Sealed that way from the start (a deal recorded wrong), only the seeds can tell.
    forget_seals(database_url)
    seal_new_events(database_url)
    report = verify_store(database_url)
    assert kinds(report) == [("deal", game_id, 2)]
    assert f"{first}'s hand holds" in report.problems[0].message


# -- the verdict on the site -------------------------------------------------------------------
def test_game_and_audit_pages_show_the_verdict(sqlite_url, keys):
    from web_support import load_games

    from web import create_app

    records = load_games(sqlite_url)
    game_id = "T7-000123"
    assert game_id in records
    from auth_support import signed_in

    client = signed_in(create_app({"DATABASE_URL": sqlite_url, "TESTING": True}))
    pages = (f"/games/{game_id}", f"/games/{game_id}/audit", f"/games/{game_id}/replay")

    for page in pages:
        html = client.get(page).get_data(as_text=True)
        assert "Not yet checkpointed" in html, page
    make_checkpoint(sqlite_url)
    for page in pages:
        html = client.get(page).get_data(as_text=True)
        assert "integrity-verified" in html and "Ledger verified" in html, page
    flip_byte(sqlite_url, game_id, 4)
    for page in pages:
        html = client.get(page).get_data(as_text=True)
        assert "Ledger broken at event 4" in html, page


# -- formats -----------------------------------------------------------------------------------
def test_documented_examples_hold():
    import doctest

    import replays.integrity.canonical

    assert doctest.testmod(replays.integrity.canonical).failed == 0


def test_checkpoint_files_are_checked_field_by_field(tmp_path):
    init_keys(tmp_path)
    from replays.integrity.signing import SigningError, load_private_key

    checkpoint = Checkpoint.sign(
        load_private_key(tmp_path), 7, bytes(range(32)), "2025-03-01T18:30:00Z"
    )
    assert (
        checkpoint.message
        == (
            "rummy-ledger/checkpoint@1\n7\n"
            "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n"
            f"2025-03-01T18:30:00Z\n{checkpoint.key_id}\n"
        ).encode()
    )
    assert Checkpoint.from_dict(json.loads(checkpoint.to_json())) == checkpoint
    assert checkpoint.verify(load_public_key(tmp_path)) is None
    good = checkpoint.to_dict()
    for field, value, message in [
        ("format", "x", "format must be 'rummy-ledger/checkpoint@1'"),
        ("size", -1, "size must be a non-negative integer"),
        ("root", "AB", "root must be 64 lowercase hex digits"),
        ("time", "yesterday", "time must look like 2025-03-01T18:04:05Z"),
        ("key_id", "k", "key_id must be 16 hex digits"),
        ("signature", "00", "signature must be 128 hex digits"),
    ]:
        with pytest.raises(SigningError, match=f"cp.json: {message}"):
            Checkpoint.from_dict(dict(good, **{field: value}), "cp.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(SigningError, match=r"bad\.json is not JSON"):
        Checkpoint.load(tmp_path / "bad.json")
    raw = tmp_path / "raw.pub"
    code, out = run("keys", "show", "--dir", tmp_path)
    assert code == 0 and f"key id: {checkpoint.key_id}" in out
    raw.write_text(out.split("raw:    ")[1].split()[0])
    assert checkpoint.verify(load_public_key(raw)) is None
    with pytest.raises(SigningError, match="no signing key at"):
        load_private_key(tmp_path / "nowhere")


def test_concurrent_backfills_agree(database_url):
    """Backfills of an old store may race; each batch takes the saves' lock, so the loser
    goes on from where the winner stopped."""
    import threading

    create_tables(database_url)
    writer = old_ledger(database_url)
    for n in range(6):
        record(writer, f"R{n}", turns=8)
    errors, counts = [], []

    def seal():
        try:
            counts.append(integrity.seal_new_events(database_url, batch_size=7))
        except Exception as error:  # surfaced below with the thread's error
            errors.append(error)

    threads = [threading.Thread(target=seal) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert sum(counts) == 6 * 18
    report = verify_store(database_url)
    assert report.ok and report.sealed == 6 * 18, report.problems


def test_an_altered_snapshot_is_found(ledger, database_url, keys):
    """Games load from snapshots, so a snapshot edited in place would change every page."""
    game = record(ledger, "N1", turns=12)  # 26 events: a snapshot at the last one
    record(ledger, "N2", turns=12)
    make_checkpoint(database_url)
    report = verify_store(database_url)
    assert report.ok, report.problems
    assert "2 snapshot(s) checked against their events" in report.notes

    oid = _uuid_param(database_url, Ledger.aggregate_id("N1"))
    version, state = sql(
        database_url,
        "SELECT originator_version, state FROM ledger_snapshots WHERE originator_id = :o",
        o=oid,
    ).one()
    assert version == game.version == 26
    hand = game.hand("p1")
    forged = bytes(state).replace(f'"{hand[0]}"'.encode(), f'"{hand[1]}"'.encode(), 1)
    assert forged != bytes(state)
    sql(
        database_url,
        "UPDATE ledger_snapshots SET state = :s WHERE originator_id = :o",
        s=forged,
        o=oid,
    )
    report = verify_store(database_url)
    assert kinds(report) == [("snapshot", "N1", 26)]
    assert "deleting the game's snapshots is a safe repair" in report.problems[0].message
    assert integrity_verdict(database_url, "N1").label == "broken at event 26"
    assert integrity_verdict(database_url, "N2").status == "verified"
    assert verify_store(database_url, check_snapshots=False).ok
