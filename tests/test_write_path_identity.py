"""The write path's identity shortcuts (issue 16) keep their answers for cards that are equal
but not the interned instances (``Card(rank, suit)`` built directly), and still find every
mismatch the slow path found."""

from __future__ import annotations

import pytest
from game_tables import dealt_game

from domain.cards import Card
from domain.errors import CardNotHeld
from domain.shuffle import commitment, deal_from_seeds, verify_deal

PLAYERS = ["p1", "p2", "p3"]
SERVER_SEED = bytes.fromhex("9f2c1a7e5b3d4c6f8a0b1c2d3e4f5061")
CLIENT_SEEDS = {"p1": b"\x01" * 16, "p2": b"\x02" * 16, "p3": b"\x03" * 16}
BLOCK = {
    "commitment": commitment(SERVER_SEED),
    "seed": SERVER_SEED.hex(),
    "client_seeds": {p: s.hex() for p, s in CLIENT_SEEDS.items()},
}


def _copy(card: Card) -> Card:
    copy = Card(card.rank, card.suit)
    assert copy == card and copy is not card
    return copy


def _deal_of_copies() -> tuple:
    deal = deal_from_seeds(SERVER_SEED, CLIENT_SEEDS, PLAYERS, dealer="p3")
    record = {
        "hands": {p: [_copy(c) for c in cards] for p, cards in deal.hands.items()},
        "wild": _copy(deal.wild),
        "open": _copy(deal.open_card),
        "stock": [_copy(c) for c in deal.stock],
    }
    return deal, record


def test_a_deal_of_equal_but_not_interned_cards_matches_its_seeds():
    _, record = _deal_of_copies()
    assert verify_deal(record, BLOCK, PLAYERS, dealer="p3") is None


def test_a_changed_last_stock_card_is_still_found_where_it_is():
    deal, record = _deal_of_copies()
    wrong = next(c for c in deal.hands["p1"] if c != deal.stock[-1])
    record["stock"][-1] = wrong
    mismatch = verify_deal(record, BLOCK, PLAYERS, dealer="p3")
    assert (mismatch.what, mismatch.position) == ("stock", deal.stock_start + len(deal.stock) - 1)
    assert mismatch.found == wrong


def test_a_hand_with_one_card_changed_is_still_found():
    deal, record = _deal_of_copies()
    held = deal.hands["p2"][0]
    other = next(c for c in deal.stock if c not in deal.hands["p2"])
    record["hands"]["p2"][0] = other
    mismatch = verify_deal(record, BLOCK, PLAYERS, dealer="p3")
    assert (mismatch.what, mismatch.player, mismatch.expected) == ("hand", "p2", held)


def test_discarding_a_held_card_given_as_an_equal_copy():
    game = dealt_game()
    game.pick("p1", "closed", "4H")
    game.discard("p1", Card(9, "S"))  # equal to the interned 9S p1 holds, not the same object
    assert game.moves[-1] == {"player": "p1", "type": "discard", "card": "9S"}
    assert Card.parse("9S") not in game.hand("p1")


def test_discarding_a_card_not_held_is_still_refused():
    game = dealt_game()
    game.pick("p1", "closed", "4H")
    version = game.version
    with pytest.raises(CardNotHeld, match="not in hand"):
        game.discard("p1", Card(8, "D"))
    assert game.version == version


def _game_of(deal_cards: dict):
    from domain.rummy13.game import Game, TableConfig

    config = TableConfig(
        game_id="identity-deal",
        variant="points",
        players=tuple(PLAYERS),
        point_value="1",
        dealer="p3",
    )
    game = Game(config)
    game.deal(deal_cards["hands"], deal_cards["wild"], deal_cards["open"], deal_cards["stock"])
    return game


def test_a_whole_deck_deal_of_equal_but_not_interned_cards_is_taken():
    deal, record = _deal_of_copies()
    game = _game_of(record)
    assert game.hand("p1") == deal.hands["p1"] and game.stock_count == len(deal.stock)


@pytest.mark.parametrize("copies", [False, True])
def test_a_deal_with_a_card_twice_is_still_refused_by_name(copies: bool):
    from domain.errors import BadDeal

    deal, record = _deal_of_copies()
    if not copies:
        record = {
            "hands": {p: list(cards) for p, cards in deal.hands.items()},
            "wild": deal.wild,
            "open": deal.open_card,
            "stock": list(deal.stock),
        }
    twice = record["stock"][0]
    record["stock"][-1] = twice
    with pytest.raises(BadDeal, match=f"{twice} is dealt 3 times but 2 deck"):
        _game_of(record)


def test_closed_picks_given_as_equal_copies_match_the_seed_and_a_wrong_one_is_found():
    deal, record = _deal_of_copies()
    picks = [
        {"player": "p1", "type": "pick", "from": "closed", "card": _copy(deal.stock[0])},
        {"player": "p1", "type": "discard", "card": _copy(deal.stock[0])},
        {"player": "p2", "type": "pick", "from": "closed", "card": deal.stock[1]},
    ]
    assert verify_deal(record, BLOCK, PLAYERS, dealer="p3", moves=picks) is None
    picks[2]["card"] = _copy(deal.stock[2])
    mismatch = verify_deal(record, BLOCK, PLAYERS, dealer="p3", moves=picks)
    assert (mismatch.what, mismatch.move, mismatch.expected) == ("pick", 2, deal.stock[1])


def test_a_saves_recordings_are_the_librarys(tmp_path):
    """``LedgerEventStore.put`` builds Recording and Notification without their __init__:
    the same values, types and field order as the constructors give."""
    from dataclasses import fields

    from eventsourcing.persistence import Notification, Recording

    from replays.store.application import Ledger
    from replays.store.schema import migrate

    url = f"sqlite:///{tmp_path}/put.sqlite3"
    migrate(url)
    ledger = Ledger(url, env={"CREATE_TABLE": "no"})
    game = dealt_game()
    game.pick("p1", "closed", "4H")
    events = list(game._pending_events)
    recordings = ledger.save(game)
    assert len(recordings) == len(events) > 2
    for number, (recording, event) in enumerate(zip(recordings, events, strict=True), 1):
        note = recording.notification
        reference = Recording(
            event,
            Notification(
                originator_id=note.originator_id,
                originator_version=event.originator_version,
                topic=note.topic,
                state=note.state,
                id=note.id,
            ),
        )
        assert type(recording) is Recording and type(note) is Notification
        assert recording == reference and recording.domain_event is event
        assert list(vars(note)) == [f.name for f in fields(Notification)]
        assert list(vars(recording)) == [f.name for f in fields(Recording)]
        assert note.id == number and note.originator_id == event.originator_id
    stored = ledger.events.recorder.select_events(game.id)
    assert [s.state for s in stored] == [r.notification.state for r in recordings]
