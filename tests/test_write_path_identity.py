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
