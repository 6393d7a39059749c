"""`rummy-ledger import` / `export` on SQLite and PostgreSQL: all or nothing per record,
idempotent re-import, conflicts left untouched, and an exact round trip."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from click.testing import CliRunner

from domain.shuffle import commitment, deal_from_order, derive_deck_order
from replays.records.codec import parse_record
from replays.records.exporter import export_record
from replays.records.importer import CONFLICT, IMPORTED, REJECTED, Importer, import_lines
from replays.store.application import Ledger
from web.cli import main

DATA = Path(__file__).parent / "data"
GAMES = DATA / "games.jsonl"
BROKEN = DATA / "broken.jsonl"


def records(path: Path = GAMES) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(main, list(args), input=input)


def stored_events(ledger: Ledger, game_id: str) -> list[tuple]:
    return [
        (e.originator_version, e.topic, bytes(e.state))
        for e in ledger.recorder.select_events(ledger.aggregate_id(game_id))
    ]


def ledger_for(url: str) -> Ledger:
    return Ledger(url, env={"CREATE_TABLE": "no"})


def test_import_stores_every_record_and_reimport_is_idempotent(database_url):
    first = run("import", str(GAMES))
    assert first.exit_code == 0, first.output
    assert "8 imported, 0 already recorded, 0 rejected" in first.stdout
    ledger = ledger_for(database_url)
    ids = [r["game_id"] for r in records()]
    assert ledger.list_game_ids() == ids
    before = {game_id: stored_events(ledger, game_id) for game_id in ids}
    assert all(ledger.get_game(game_id).phase == "settled" for game_id in ids)

    again = run("import", "-", input=GAMES.read_text())
    assert again.exit_code == 0, again.output
    assert "0 imported, 8 already recorded, 0 rejected" in again.stdout
    assert {game_id: stored_events(ledger, game_id) for game_id in ids} == before


def test_a_rejected_record_stores_nothing_and_the_others_still_import(database_url):
    result = run("import", str(BROKEN))
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert "bad-not-held: move 1 (p1 discard 9C): p1 cannot discard 9C: not in hand" in lines
    assert "bad-turn: move 2 (p3 drop): p3 cannot drop: it is p2's turn" in lines
    assert any(line.startswith("bad-stock: move 0 (p1 pick 5S): ") for line in lines)
    assert any(line.startswith("bad-card: move 1, field 'card': '1Z'") for line in lines)
    assert lines[-1] == "1 imported, 0 already recorded, 5 rejected"
    ledger = ledger_for(database_url)
    assert ledger.list_game_ids() == ["seed-points-200"]
    for game_id in ("bad-not-held", "bad-stock", "bad-card", "bad-type", "bad-turn"):
        assert not ledger.game_exists(game_id)
    assert "Traceback" not in result.output


def test_a_different_record_under_a_stored_id_is_a_conflict_and_changes_nothing(database_url):
    assert run("import", str(GAMES)).exit_code == 0
    ledger = ledger_for(database_url)
    before = stored_events(ledger, "T7-000123")
    changed = records()[0]
    changed["reported"]["gross"] = "50.00"
    result = run("import", "-", input=json.dumps(changed) + "\n")
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == (
        "T7-000123: conflict: a different game T7-000123 is already recorded; "
        "the stored game was left untouched"
    )
    assert result.stdout.splitlines()[-1] == (
        "0 imported, 0 already recorded, 1 rejected (1 conflicts)"
    )
    assert stored_events(ledger, "T7-000123") == before


def test_a_conflict_inside_a_batch_does_not_hold_back_the_new_games(database_url):
    ledger = ledger_for_migrated(database_url)
    games = records()
    import_lines(ledger, [json.dumps(games[0])], follow=False)
    changed = copy.deepcopy(games[0])
    changed["moves"][0]["at"] = "2025-03-01T18:05:00Z"
    lines = [json.dumps(g) for g in [games[1], changed, games[2], games[0], games[3]]]
    seen = []
    summary = import_lines(ledger, lines, batch=10, on_outcome=seen.append, follow=False)
    assert (summary.imported, summary.already, summary.rejected) == (3, 1, 1)
    assert [o.status for o in seen if o.game_id == "T7-000123"] == [CONFLICT, "already recorded"]
    assert ledger.game_exists("T2-000451")


def test_the_same_id_twice_in_one_file_is_judged_in_order(database_url):
    ledger = ledger_for_migrated(database_url)
    game = records()[0]
    other = copy.deepcopy(game)
    other["stakes"]["fee_percent"] = "5"
    summary = import_lines(ledger, [json.dumps(game), json.dumps(other)], follow=False)
    assert (summary.imported, summary.rejected) == (1, 1)
    assert ledger.get_game("T7-000123").config.fee_percent == 10


def test_round_trip_import_export_import_gives_identical_events_and_settlements(
    database_url, tmp_path
):
    assert run("import", str(GAMES)).exit_code == 0
    exported = run("export", "--all")
    assert exported.exit_code == 0, exported.output
    lines = exported.stdout.splitlines()
    assert [json.loads(line)["game_id"] for line in lines] == [r["game_id"] for r in records()]
    for line, original in zip(lines, records(), strict=True):
        out = json.loads(line)
        settlement = out.pop("settlement")
        assert out == original  # the record itself comes back exactly
        settled = json.loads(run("settle", "--json", "-", input=line).stdout)
        assert {k: v for k, v in settlement.items() if k in settled and k != "players"} == {
            k: v for k, v in settled.items() if k != "players"
        }
    first = ledger_for(database_url)

    fresh_url = f"sqlite:///{tmp_path / 'fresh.sqlite3'}"
    fresh = ledger_for_migrated(fresh_url)
    summary = import_lines(fresh, lines, follow=False)
    assert summary.imported == len(lines) and summary.ok
    for original in records():
        game_id = original["game_id"]
        assert stored_events(fresh, game_id) == stored_events(first, game_id)
        assert (
            fresh.get_game(game_id).recorded_settlement
            == first.get_game(game_id).recorded_settlement
        )
        assert export_record(fresh, game_id) == export_record(first, game_id)


def test_export_names_an_unknown_game_and_exits_1(database_url):
    assert run("import", str(GAMES)).exit_code == 0
    result = run("export", "T7-000123", "no-such-game")
    assert result.exit_code == 1
    assert json.loads(result.stdout.splitlines()[0])["game_id"] == "T7-000123"
    assert "no game no-such-game is recorded" in result.stderr
    assert run("export").exit_code == 2  # neither ids nor --all


def test_a_running_game_imports_and_exports_without_a_settlement(database_url):
    running = records()[0]
    running["moves"] = running["moves"][:3]
    del running["reported"]
    ledger = ledger_for_migrated(database_url)
    summary = import_lines(ledger, [json.dumps(running)], follow=False)
    assert summary.imported == 1
    game = ledger.get_game("T7-000123")
    assert game.phase == "playing" and game.current_player == "p3"
    out = json.loads(export_record(ledger, "T7-000123"))
    assert "settlement" not in out and out == running


def test_reported_figures_on_a_running_game_are_refused(database_url):
    running = records()[0]
    running["moves"] = running["moves"][:3]
    ledger = ledger_for_migrated(database_url)
    seen = []
    import_lines(ledger, [json.dumps(running)], on_outcome=seen.append, follow=False)
    assert seen[0].status == REJECTED
    assert "field 'reported': a running game cannot carry settled figures" in seen[0].message
    assert not ledger.game_exists("T7-000123")


def seeded_record(server_seed: bytes) -> dict:
    players = ["s1", "s2", "s3"]
    clients = {p: f"{i:02x}" * 4 for i, p in enumerate(players, start=1)}
    order = derive_deck_order(server_seed, [bytes.fromhex(clients[p]) for p in players])
    dealt = deal_from_order(order, players, "s3")
    return {
        "format": "rummy-ledger/game@1",
        "game_id": "SEEDED-1",
        "variant": "points",
        "rules": "rummycircle",
        "started_at": "2025-03-02T10:00:00Z",
        "stakes": {"currency": "INR", "point_value": "1.00", "fee_percent": "10"},
        "players": [{"id": p, "seat": i} for i, p in enumerate(players, start=1)],
        "dealer": "s3",
        "deal": {
            "hands": {p: [str(c) for c in cards] for p, cards in dealt.hands.items()},
            "wild": str(dealt.wild),
            "open": str(dealt.open_card),
            "stock": [str(c) for c in dealt.stock],
        },
        "moves": [{"player": "s1", "type": "pick", "from": "closed", "card": str(dealt.stock[0])}],
        "shuffle": {
            "commitment": commitment(server_seed),
            "seed": server_seed.hex(),
            "client_seeds": clients,
        },
    }


def test_a_deal_that_does_not_come_from_its_revealed_seed_is_rejected(database_url):
    ledger = ledger_for_migrated(database_url)
    good = seeded_record(b"server-seed-1")
    tampered = copy.deepcopy(good)
    tampered["game_id"] = "SEEDED-2"
    hand = tampered["deal"]["hands"]["s1"]
    stock = tampered["deal"]["stock"]
    position = next(i for i, card in enumerate(stock[1:], start=1) if card not in hand)
    hand[0], stock[position] = stock[position], hand[0]  # still a conserved deck
    seen = []
    import_lines(ledger, [json.dumps(good), json.dumps(tampered)], on_outcome=seen.append)
    assert {o.game_id: o.status for o in seen} == {"SEEDED-1": IMPORTED, "SEEDED-2": REJECTED}
    seen.sort(key=lambda o: o.game_id)
    assert "deal: cannot deal: the deal does not come from its shuffle seed" in seen[1].message
    assert not ledger.game_exists("SEEDED-2")
    assert ledger.get_game("SEEDED-1").config.shuffle == good["shuffle"]


def test_import_batches_are_equivalent_to_one_by_one(database_url):
    ledger = ledger_for_migrated(database_url)
    importer = Importer(ledger, batch=3)
    outcomes = []
    for raw in records():
        outcomes += importer.add(parse_record(raw))
    outcomes += importer.flush()
    assert [o.status for o in outcomes] == [IMPORTED] * len(records())


def ledger_for_migrated(url: str) -> Ledger:
    from replays.store.schema import migrate

    migrate(url)
    return ledger_for(url)


class _SaveSpy(Importer):
    """An importer that notes the games of each save it attempts."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.saves: list[list[str]] = []

    def _save(self, *games) -> None:
        self.saves.append([game.config.game_id for game in games])
        super()._save(*games)


def _add_all(importer: Importer, raws: list[dict]) -> list:
    outcomes = []
    for raw in raws:
        outcomes += importer.add(parse_record(raw))
    return outcomes + importer.flush()


def test_a_save_closes_once_its_games_hold_batch_events(database_url):
    """Memory per save is bounded by events, not games: long matches share fewer saves."""
    ledger = ledger_for_migrated(database_url)
    raws = records()
    sizes = [len(_built(raw).pending_events) for raw in raws]
    importer = _SaveSpy(ledger, batch=50, batch_events=sizes[0] + sizes[1])
    outcomes = _add_all(importer, raws)
    assert [o.status for o in outcomes] == [IMPORTED] * len(raws)
    ids = [raw["game_id"] for raw in raws]
    assert importer.saves[0] == ids[:2]
    assert [game for save in importer.saves for game in save] == ids
    bound = sizes[0] + sizes[1]
    for save in importer.saves[:-1]:  # each closed with the game that reached the bound
        held = [sizes[ids.index(game)] for game in save]
        assert sum(held) >= bound > sum(held[:-1])
    assert ledger.list_game_ids() == ids


def _built(raw: dict):
    from replays.records.importer import build_game

    return build_game(parse_record(raw))


def test_recorded_games_are_compared_without_a_save_and_new_ones_still_save(database_url):
    ledger = ledger_for_migrated(database_url)
    raws = records()
    import_lines(ledger, [json.dumps(raws[1]), json.dumps(raws[3])], follow=False)
    changed = copy.deepcopy(raws[3])
    changed["moves"][0]["at"] = "2025-03-01T18:05:00Z"
    batch = [raws[0], raws[1], raws[2], changed, raws[4]]
    importer = _SaveSpy(ledger, batch=10)
    outcomes = _add_all(importer, batch)
    assert [(o.game_id, o.status) for o in outcomes] == [
        (raws[0]["game_id"], IMPORTED),
        (raws[1]["game_id"], "already recorded"),
        (raws[2]["game_id"], IMPORTED),
        (raws[3]["game_id"], CONFLICT),
        (raws[4]["game_id"], IMPORTED),
    ]
    # One save, of the new games only: none was attempted for a recorded one.
    assert importer.saves == [[raws[0]["game_id"], raws[2]["game_id"], raws[4]["game_id"]]]


def test_a_game_recorded_after_the_look_is_still_found_by_the_failed_save(
    database_url, monkeypatch
):
    """Another importer may store a game between the look and the save: the batch's save
    fails whole, and each game is then saved alone and judged."""
    ledger = ledger_for_migrated(database_url)
    raws = records()
    import_lines(ledger, [json.dumps(raws[1])], follow=False)
    monkeypatch.setattr(ledger, "stored_games", lambda game_ids: set())
    importer = _SaveSpy(ledger, batch=10)
    outcomes = _add_all(importer, raws[:3])
    assert [o.status for o in outcomes] == [IMPORTED, "already recorded", IMPORTED]
    assert len(importer.saves) == 4  # the batch, then each game alone
    assert ledger.list_game_ids() == [raws[1]["game_id"], raws[0]["game_id"], raws[2]["game_id"]]


def test_stored_games_names_the_recorded_ids_only(database_url):
    ledger = ledger_for_migrated(database_url)
    raws = records()
    import_lines(ledger, [json.dumps(raws[0]), json.dumps(raws[2])], follow=False)
    asked = [raw["game_id"] for raw in raws] + ["never-recorded"]
    assert ledger.stored_games(asked) == {raws[0]["game_id"], raws[2]["game_id"]}
    assert ledger.stored_games([]) == set()
