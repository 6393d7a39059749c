"""Red 3 deals derived from shuffle seeds (docs/integrity.md, "Red 3 deals") and their check."""

from __future__ import annotations

import doctest
import hashlib
import hmac
import random
from collections import Counter

import pytest

import domain.red3.shuffle
from domain.cards import Card, deck_order
from domain.red3.bot import play, setup_table
from domain.red3.game import Red3Match
from domain.red3.shuffle import (
    ShuffleError,
    check_red3_deal,
    check_red3_match,
    commitment,
    derive_red3_deal,
)
from domain.red3.table import Red3Config, Red3Deal, red3_deck
from domain.simulation.floor import Floor

PLAYERS = ["p1", "p2", "p3"]
SERVER = b"red3 server seed"
CLIENTS = {"p1": b"one", "p2": b"two", "p3": b"three"}


def block(server=SERVER, clients=CLIENTS, revealed=True):
    out = {
        "commitment": commitment(server),
        "client_seeds": {p: s.hex() for p, s in clients.items()},
    }
    if revealed:
        out["seed"] = server.hex()
    return out


def test_docstring_examples():
    result = doctest.testmod(domain.red3.shuffle)
    assert result.attempted > 0 and result.failed == 0


def _spec_order(server: bytes, clients: list[bytes], round_number: int, players: int) -> list:
    """docs/integrity.md's Red 3 steps written out again, independently of domain.shuffle."""
    key = hmac.new(
        server, b"rummy-ledger/red3 round " + round_number.to_bytes(2, "big"), hashlib.sha256
    ).digest()
    prefix = b"".join(len(seed).to_bytes(2, "big") + seed for seed in clients)
    stream, counter = b"", 0
    deck = deck_order(players, 2)
    for i in range(len(deck) - 1, 0, -1):
        n = i + 1
        while True:
            while len(stream) < 4:
                stream += hmac.new(
                    key, prefix + counter.to_bytes(8, "big"), hashlib.sha256
                ).digest()
                counter += 1
            x, stream = int.from_bytes(stream[:4], "big"), stream[4:]
            if x < 2**32 - 2**32 % n:
                break
        j = x % n
        deck[i], deck[j] = deck[j], deck[i]
    return deck


@pytest.mark.parametrize("round_number", [1, 2, 7])
def test_the_derivation_is_the_documented_one_byte_for_byte(round_number):
    first = PLAYERS[(round_number - 1) % 3]
    deal = derive_red3_deal(block(), PLAYERS, round_number, first=first)
    order = _spec_order(SERVER, [CLIENTS[p] for p in PLAYERS], round_number, 3)
    seating = PLAYERS[PLAYERS.index(first) :] + PLAYERS[: PLAYERS.index(first)]
    for k in range(7):
        for seat, player in enumerate(seating):
            assert deal.hands[player][k] == order[3 * k + seat]
            assert deal.second_hands[player][k] == order[21 + 3 * k + seat]
    assert list(deal.pile) == order[42:44]
    assert list(deal.stock) == order[44:]


def test_each_round_gets_its_own_deck_and_every_card_once():
    deals = [derive_red3_deal(block(), PLAYERS, r, first="p1") for r in (1, 2, 3)]
    for deal in deals:
        assert deal.cards() == red3_deck(3)
    assert len({deal.stock for deal in deals}) == 3
    other_clients = dict(CLIENTS, p2=b"TWO")
    assert derive_red3_deal(block(clients=other_clients), PLAYERS, 1, first="p1") != deals[0]


def test_a_derived_deal_checks_clean_even_with_sorted_hands_or_without_its_stock():
    deal = derive_red3_deal(block(), PLAYERS, 2, first="p2")
    assert check_red3_deal(deal, block(), PLAYERS, 2) is None
    record = deal.to_dict()
    record["hands"] = {p: sorted(cards) for p, cards in record["hands"].items()}
    del record["stock"]
    picks = [{"player": "p2", "type": "pick", "from": "stock", "card": str(deal.stock[0])}]
    assert check_red3_deal(record, block(), PLAYERS, 2, moves=picks) is None


def _swap(cards, old: Card, new: Card):
    cards = list(cards)
    cards[cards.index(old)] = new
    return cards


def test_a_changed_first_hand_names_the_round_the_player_and_the_first_dealt_card():
    deal = derive_red3_deal(block(), PLAYERS, 1, first="p1")
    record = deal.to_dict()
    # p3's fourth card (dealt 4th time round, third seat: deck position 11) becomes the
    # stock's top card.
    wanted, planted = deal.hands["p3"][3], deal.stock[0]
    record["hands"]["p3"] = [str(c) for c in _swap(deal.hands["p3"], wanted, planted)]
    record["stock"] = [str(c) for c in _swap(deal.stock, planted, wanted)]
    mismatch = check_red3_deal(record, block(), PLAYERS, 1)
    assert (mismatch.round, mismatch.what, mismatch.player) == (1, "first hand", "p3")
    assert (mismatch.position, mismatch.expected, mismatch.found) == (11, wanted, planted)
    assert str(mismatch) == (
        f"round 1: p3's first hand holds {planted}, but the shuffle deals {wanted} to p3 "
        "(deck position 11)"
    )


def test_second_hands_swapped_between_players_are_found_at_the_earliest_position():
    deal = derive_red3_deal(block(), PLAYERS, 3, first="p3")  # seating p3, p1, p2
    record = deal.to_dict()
    record["second_hands"]["p1"], record["second_hands"]["p2"] = (
        record["second_hands"]["p2"],
        record["second_hands"]["p1"],
    )
    mismatch = check_red3_deal(record, block(), PLAYERS, 3)
    assert (mismatch.what, mismatch.player, mismatch.position) == ("second hand", "p1", 22)
    assert mismatch.expected == deal.second_hands["p1"][0]


def test_pile_and_stock_are_checked_card_by_card():
    deal = derive_red3_deal(block(), PLAYERS, 1, first="p1")
    record = deal.to_dict()
    record["pile"] = list(reversed(record["pile"]))
    mismatch = check_red3_deal(record, block(), PLAYERS, 1)
    assert (mismatch.what, mismatch.position, mismatch.expected) == ("pile", 42, deal.pile[0])

    record = deal.to_dict()
    record["stock"][5], record["stock"][6] = record["stock"][6], record["stock"][5]
    mismatch = check_red3_deal(record, block(), PLAYERS, 1)
    assert (mismatch.what, mismatch.position) == ("stock", 44 + 5)
    assert (mismatch.expected, mismatch.found) == (deal.stock[5], deal.stock[6])


def test_with_no_recorded_stock_a_stock_pick_must_take_the_derived_top_card():
    deal = derive_red3_deal(block(), PLAYERS, 1, first="p1")
    record = deal.to_dict()
    del record["stock"]
    moves = [
        {"player": "p1", "type": "pick", "from": "stock", "card": str(deal.stock[0])},
        {"player": "p1", "type": "discard", "card": str(deal.hands["p1"][0])},
        {"player": "p2", "type": "pick", "from": "pile"},
        {"player": "p2", "type": "discard", "card": str(deal.hands["p2"][0])},
        {"player": "p3", "type": "pick", "from": "stock", "card": str(deal.stock[2])},
    ]
    mismatch = check_red3_deal(record, block(), PLAYERS, 1, moves=moves)
    assert (mismatch.what, mismatch.move, mismatch.player) == ("pick", 4, "p3")
    assert (mismatch.position, mismatch.expected, mismatch.found) == (
        45,
        deal.stock[1],
        deal.stock[2],
    )
    assert str(mismatch).startswith("round 1: move 4 (p3 pick stock ")


def test_a_seed_that_breaks_its_commitment_or_is_not_revealed():
    deal = derive_red3_deal(block(), PLAYERS, 1, first="p1")
    forged = dict(block(), seed=b"another seed".hex())
    mismatch = check_red3_deal(deal, forged, PLAYERS, 1)
    assert mismatch.what == "commitment"
    assert str(mismatch) == "round 1: the revealed seed does not match the shuffle commitment"
    with pytest.raises(ShuffleError, match="not been revealed"):
        check_red3_deal(deal, block(revealed=False), PLAYERS, 1)
    with pytest.raises(
        ShuffleError, match="round 1: the deal has a hand for p3, who is not seated"
    ):
        check_red3_deal(deal, block(), ["p1", "p2"], 1)


def test_a_match_is_checked_round_by_round_and_the_first_bad_round_is_named():
    rounds = [
        (derive_red3_deal(block(), PLAYERS, r, first=PLAYERS[(r - 1) % 3]), []) for r in (1, 2, 3)
    ]
    assert check_red3_match(rounds, block(), PLAYERS) is None
    bad = rounds[2][0].to_dict()
    bad["pile"] = list(reversed(bad["pile"]))
    mismatch = check_red3_match([rounds[0], rounds[1], (bad, [])], block(), PLAYERS)
    assert (mismatch.round, mismatch.what) == (3, "pile")


def test_the_simulator_deals_every_round_from_its_recorded_shuffle_block():
    floor = Floor(seed=9, variants=("red3",))
    for index in range(4):
        record = play(
            random.Random(index),
            floor,
            setup_table(floor, 1 + index, random.Random(index)),
            f"R3-S{index}",
        )
        players = [seat["id"] for seat in record["players"]]
        shuffle = record["shuffle"]
        assert shuffle["commitment"] == commitment(bytes.fromhex(shuffle["seed"]))
        rounds = [(r["deal"], r["moves"]) for r in record["rounds"]]
        assert check_red3_match(rounds, shuffle, players) is None
        # The seed decides the cards: another seed's deal fails the check.
        other = dict(shuffle, seed=b"x".hex(), commitment=commitment(b"x"))
        assert check_red3_match(rounds, other, players) is not None


def test_a_deal_from_seeds_plays_through_the_match_aggregate():
    config = Red3Config(game_id="R3-SEEDED", players=tuple(PLAYERS), rounds=1, shuffle=block())
    match = Red3Match.start(config)
    match.deal(derive_red3_deal(block(), PLAYERS, 1, first=config.first_player_of(1)))
    assert Counter(match.deals[0].cards()) == red3_deck(3)
    assert isinstance(match.deals[0], Red3Deal)


def test_the_known_answer_in_docs_integrity():
    server = b"rummy-ledger"
    seeds = {
        "commitment": commitment(server),
        "seed": server.hex(),
        "client_seeds": {"p1": b"p1".hex(), "p2": b"p2".hex()},
    }
    key = domain.red3.shuffle.round_key(server, 1)
    assert key.hex() == "058317ad1cd84993186db49592bae974eec902ef442410fc680ec0d79c769013"
    order = domain.red3.shuffle.derive_red3_order(server, [b"p1", b"p2"], 1, 2)
    assert " ".join(map(str, order[:10])) == "9H JK 6C 8D 3D 2S 2H JD KH 5D"
    deal = derive_red3_deal(seeds, ["p1", "p2"], 1, first="p1")
    assert " ".join(map(str, deal.hands["p1"])) == "9H 6C 3D 2H KH TS QH"
    assert " ".join(map(str, deal.second_hands["p2"])) == "9C TC 2S 4D 7S KC KS"
    assert [str(c) for c in deal.pile] == ["7H", "5S"]
    assert " ".join(map(str, deal.stock[:5])) == "AS 8C 8C 6S 6D"
    deal = derive_red3_deal(seeds, ["p1", "p2"], 2, first="p2")
    assert " ".join(map(str, deal.hands["p1"])) == "5S TH 3C 3D 2C 8H 7S"
