"""The verifiable shuffle: derivation from seeds, the deal procedure, and checking a deal."""

from __future__ import annotations

import doctest
import hashlib
import hmac
import itertools
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import domain.shuffle
from domain.cards import Card, deck_order, full_deck, parse_cards
from domain.shuffle import (
    DealMismatch,
    ShuffleError,
    ShuffleSeeds,
    UniformDraws,
    commitment,
    deal_from_order,
    deal_from_seeds,
    derive_deck_order,
    fisher_yates,
    shuffle_blocks,
    shuffle_stream,
    verify_deal,
)

PLAYERS = ["p1", "p2", "p3"]
SERVER_SEED = bytes.fromhex("9f2c1a7e5b3d4c6f8a0b1c2d3e4f5061")
CLIENT_SEEDS = {"p1": b"\x01" * 16, "p2": b"\x02" * 16, "p3": b"\x03" * 16}


def test_docstring_examples():
    assert doctest.testmod(domain.shuffle).failed == 0


def _reference_order(server_seed, client_seeds, decks, jokers):
    """docs/integrity.md's algorithm written out naively, independently of the module."""
    message = b"".join(len(s).to_bytes(2, "big") + s for s in client_seeds)
    stream = b""
    counter = 0

    def take(n):
        nonlocal stream, counter
        while len(stream) < n:
            stream += hmac.new(
                server_seed, message + counter.to_bytes(8, "big"), hashlib.sha256
            ).digest()
            counter += 1
        chunk, stream = stream[:n], stream[n:]
        return chunk

    deck = deck_order(decks, jokers)
    for i in range(len(deck) - 1, 0, -1):
        n = i + 1
        while True:
            x = int.from_bytes(take(4), "big")
            if x < 2**32 - (2**32 % n):
                break
        j = x % n
        deck[i], deck[j] = deck[j], deck[i]
    return deck


@pytest.mark.parametrize(("decks", "jokers"), [(1, 0), (2, 1), (2, 2), (3, 1)])
def test_derivation_matches_the_documented_algorithm(decks, jokers):
    seeds = [CLIENT_SEEDS[p] for p in PLAYERS]
    assert derive_deck_order(SERVER_SEED, seeds, decks, jokers) == _reference_order(
        SERVER_SEED, seeds, decks, jokers
    )


def test_known_answer_vector_from_the_docs():
    """Pinned so that a change to the algorithm cannot silently orphan old records."""
    order = derive_deck_order(b"rummy-ledger", [b"p1", b"p2", b"p3"], 2, 1)
    assert " ".join(map(str, order[:13])) == "2D JH JK 2S 8D QS KH QC 8C 3D TS KS TD"
    deal = deal_from_order(order, ["p1", "p2", "p3"], dealer="p3")
    assert " ".join(map(str, deal.hands["p1"])) == "2D 2S KH 3D TD 4H 7H TH 7D 6C QD 6H 5H"
    assert (str(deal.wild), str(deal.open_card)) == ("3H", "7C")
    assert " ".join(map(str, deal.stock[:5])) == "9S KD 3H 5S JS"
    first_block = next(shuffle_blocks(b"rummy-ledger", [b"p1", b"p2", b"p3"]))
    assert first_block.hex().startswith("2ff95406")


def test_the_byte_stream_is_the_blocks_in_order():
    stream = shuffle_stream(b"k", [b"c"])
    blocks = shuffle_blocks(b"k", [b"c"])
    assert bytes(next(stream) for _ in range(96)) == b"".join(next(blocks) for _ in range(3))


def test_order_is_a_permutation_and_depends_on_every_seed():
    seeds = [CLIENT_SEEDS[p] for p in PLAYERS]
    order = derive_deck_order(SERVER_SEED, seeds)
    assert Counter(order) == full_deck(2, 1)
    assert derive_deck_order(SERVER_SEED, seeds) == order
    assert derive_deck_order(SERVER_SEED + b"x", seeds) != order
    for seat in range(3):
        changed = list(seeds)
        changed[seat] = b"\x09" + changed[seat][1:]
        assert derive_deck_order(SERVER_SEED, changed) != order
    # Seat order matters, and length prefixes keep ["ab", "c"] apart from ["a", "bc"].
    assert derive_deck_order(SERVER_SEED, seeds[::-1]) != order
    assert derive_deck_order(SERVER_SEED, [b"ab", b"c"]) != derive_deck_order(
        SERVER_SEED, [b"a", b"bc"]
    )


def test_rejection_sampling_skips_the_biased_tail():
    # For n = 3, 2**32 % 3 == 1, so only x == 0xFFFFFFFF is rejected.
    stream = bytes([0xFF] * 4 + [0xFF, 0xFF, 0xFF, 0xFE])
    assert UniformDraws(iter([stream])).below(3) == 0xFFFFFFFE % 3
    # Chunk boundaries do not matter.
    assert UniformDraws(iter([stream[:1], stream[1:6], stream[6:]])).below(3) == 0xFFFFFFFE % 3
    # For a power of two nothing is rejected.
    assert UniformDraws(iter([bytes([0xFF] * 4)])).below(4) == 3
    with pytest.raises(ValueError):
        UniformDraws(iter([b""])).below(0)


def test_shuffle_is_roughly_uniform_over_small_decks():
    """All 24 orders of 4 items, 4,800 shuffles: each within ±6σ of the expected 200."""
    counts = Counter(
        tuple(fisher_yates("abcd", UniformDraws(shuffle_blocks(i.to_bytes(4, "big"), [b"x"]))))
        for i in range(4800)
    )
    assert set(counts) == set(itertools.permutations("abcd"))
    assert all(120 < n < 290 for n in counts.values()), counts


def test_deal_procedure_positions():
    order = deck_order(2, 1)  # unshuffled, so positions are easy to read
    deal = deal_from_order(order, PLAYERS, dealer="p1")
    # p2 (after the dealer p1) gets positions 0, 3, 6, ...; p3 1, 4, ...; p1 2, 5, ...
    assert deal.hand_positions["p2"] == tuple(range(0, 39, 3))
    assert deal.hand_positions["p3"] == tuple(range(1, 39, 3))
    assert deal.hand_positions["p1"] == tuple(range(2, 39, 3))
    assert deal.hands["p2"][:2] == (order[0], order[3])
    assert (deal.wild, deal.open_card) == (order[39], order[40])
    assert deal.stock == tuple(order[41:])
    assert deal.to_dict()["open"] == str(order[40])
    # Without a dealer the first seat moves (and is dealt) first.
    assert deal_from_order(order, PLAYERS).hand_positions["p1"][0] == 0


def test_deal_errors():
    with pytest.raises(ShuffleError, match="dealer p9 is not one of the players"):
        deal_from_order(deck_order(), PLAYERS, dealer="p9")
    with pytest.raises(ShuffleError, match="need 80 cards, the deck has 54"):
        deal_from_order(deck_order(1, 2), ["a", "b", "c", "d", "e", "f"])
    with pytest.raises(ShuffleError, match="no client seed for seat p3"):
        deal_from_seeds(SERVER_SEED, {"p1": b"1", "p2": b"2"}, PLAYERS)


def _block(server_seed=SERVER_SEED, clients=CLIENT_SEEDS):
    return {
        "commitment": commitment(server_seed),
        "seed": server_seed.hex(),
        "client_seeds": {p: s.hex() for p, s in clients.items()},
    }


def _recorded():
    deal = deal_from_seeds(SERVER_SEED, CLIENT_SEEDS, PLAYERS, dealer="p3")
    return deal, deal.to_dict()


def test_a_recorded_deal_matches_its_seeds():
    _, record = _recorded()
    moves = [
        {"player": "p1", "type": "pick", "from": "closed", "card": record["stock"][0]},
        {"player": "p1", "type": "discard", "card": record["hands"]["p1"][0]},
        {"player": "p2", "type": "pick", "from": "open", "card": record["hands"]["p1"][0]},
        {"player": "p2", "type": "discard", "card": record["hands"]["p2"][0]},
        {"player": "p3", "type": "pick", "from": "closed", "card": record["stock"][1]},
    ]
    assert verify_deal(record, _block(), PLAYERS, dealer="p3", moves=moves) is None
    # Hands are multisets: the order a record lists them in does not matter.
    record["hands"]["p2"] = sorted(record["hands"]["p2"])
    assert verify_deal(record, ShuffleSeeds.from_dict(_block()), PLAYERS, dealer="p3") is None
    # A deal without a stock is checked through its closed picks alone.
    record["stock"] = None
    assert verify_deal(record, _block(), PLAYERS, dealer="p3", moves=moves) is None


def test_one_swapped_card_between_hands_is_found():
    deal, record = _recorded()
    a, b = record["hands"]["p1"][4], record["hands"]["p2"][7]
    assert a != b
    record["hands"]["p1"][4], record["hands"]["p2"][7] = b, a
    mismatch = verify_deal(record, _block(), PLAYERS, dealer="p3")
    assert mismatch == DealMismatch(
        "hand", deal.hand_positions["p1"][4], Card.parse(a), Card.parse(b), "p1"
    )
    assert str(mismatch) == (
        f"p1's hand holds {b}, but the shuffle deals {a} to p1 "
        f"(deck position {deal.hand_positions['p1'][4]})"
    )


def test_swapped_wild_open_stock_and_pick_are_found():
    deal, record = _recorded()
    swapped = dict(record, wild=record["open"], open=record["wild"])
    mismatch = verify_deal(swapped, _block(), PLAYERS, dealer="p3")
    assert (mismatch.what, mismatch.position) == ("wild", deal.wild_position)
    assert str(mismatch).startswith(f"the wild card is {record['open']}, but the shuffle puts")

    stock = list(record["stock"])
    i = next(i for i in range(5, len(stock)) if stock[i] != stock[5 - 1])
    stock[i - 1], stock[i] = stock[i], stock[i - 1]
    mismatch = verify_deal(dict(record, stock=stock), _block(), PLAYERS, dealer="p3")
    assert (mismatch.what, mismatch.position) == ("stock", deal.stock_start + i - 1)
    short = verify_deal(dict(record, stock=record["stock"][:-1]), _block(), PLAYERS, dealer="p3")
    assert (short.what, short.expected, short.found) == ("stock", deal.stock[-1], None)

    wrong = next(c for c in record["stock"] if c != record["stock"][0])
    moves = [{"player": "p1", "type": "pick", "from": "closed", "card": wrong}]
    mismatch = verify_deal(record, _block(), PLAYERS, dealer="p3", moves=moves)
    assert (mismatch.what, mismatch.move, mismatch.player) == ("pick", 0, "p1")
    assert str(mismatch).startswith(f"move 0 (p1 pick closed {wrong}): the shuffled stock has")
    # After a reshuffle the record's own new order rules; the seeds no longer speak.
    reshuffled = [{"type": "reshuffle", "stock": []}, *moves]
    assert verify_deal(record, _block(), PLAYERS, dealer="p3", moves=reshuffled) is None


def test_wrong_dealer_or_seed_or_commitment_is_found():
    _, record = _recorded()
    assert verify_deal(record, _block(), PLAYERS, dealer="p1") is not None
    other = dict(CLIENT_SEEDS, p2=b"\x07" * 16)
    assert verify_deal(record, _block(clients=other), PLAYERS, dealer="p3").what == "hand"
    lying = dict(_block(), commitment=commitment(b"another seed"))
    mismatch = verify_deal(record, lying, PLAYERS, dealer="p3")
    assert mismatch.what == "commitment"
    assert str(mismatch) == "the revealed seed does not match the shuffle commitment"


def test_shuffle_block_errors_are_clear():
    unrevealed = {"commitment": commitment(SERVER_SEED)}
    with pytest.raises(ShuffleError, match="seed has not been revealed"):
        verify_deal(_recorded()[1], unrevealed, PLAYERS, dealer="p3")
    cases = [
        ({"commitment": "md5:00"}, "shuffle.commitment must be 'sha256:<hex>'"),
        ({"commitment": "sha256:zz"}, "shuffle.commitment is not hex"),
        ({"commitment": "sha256:00"}, "must be 32 bytes of hex, got 1"),
        (dict(_block(), seed="xyz"), "shuffle.seed is not hex: 'xyz'"),
        (dict(_block(), client_seeds=["a"]), "client_seeds must be an object"),
        (dict(_block(), client_seeds={"p1": 5}), "shuffle.client_seeds.p1 must be a hex string"),
    ]
    for block, message in cases:
        with pytest.raises(ShuffleError, match=message.replace("(", r"\(")):
            ShuffleSeeds.from_dict(block)
    extra = ShuffleSeeds.from_dict(dict(_block(), client_seeds={"p1": "01", "p9": "02"}))
    with pytest.raises(ShuffleError, match="client seed for p9, who is not seated"):
        extra.seeds_for(PLAYERS)
    assert ShuffleSeeds.from_dict(_block()).to_dict() == _block()


@settings(max_examples=60, deadline=None)
@given(
    server_seed=st.binary(min_size=1, max_size=40),
    client_seeds=st.lists(st.binary(max_size=20), min_size=2, max_size=6),
    dealer_seat=st.integers(min_value=0, max_value=5),
    jokers=st.integers(min_value=0, max_value=2),
    swap=st.tuples(st.integers(0, 105), st.integers(0, 105)),
)
def test_property_derived_deals_verify_and_any_real_swap_is_caught(
    server_seed, client_seeds, dealer_seat, jokers, swap
):
    players = [f"s{i}" for i in range(len(client_seeds))]
    clients = dict(zip(players, client_seeds, strict=True))
    dealer = players[dealer_seat % len(players)]
    deal = deal_from_seeds(server_seed, clients, players, dealer, 2, jokers)
    block = _block(server_seed, clients)
    cards = [c for hand in deal.hands.values() for c in hand]
    assert Counter([*cards, deal.wild, deal.open_card, *deal.stock]) == full_deck(2, jokers)
    assert (
        verify_deal(deal.to_dict(), block, players, dealer=dealer, decks=2, jokers_per_deck=jokers)
        is None
    )

    # Swap two cards anywhere in the dealt order (hands, wild, open, stock).
    flat = [*cards, deal.wild, deal.open_card, *deal.stock]
    i, j = (k % len(flat) for k in swap)
    sizes = [len(h) for h in deal.hands.values()]
    owner = [p for p, n in zip(deal.hands, sizes, strict=True) for _ in range(n)]
    same_hand = i < len(cards) and j < len(cards) and owner[i] == owner[j]
    flat[i], flat[j] = flat[j], flat[i]
    hands, pos = {}, 0
    for player, n in zip(deal.hands, sizes, strict=True):
        hands[player] = [str(c) for c in flat[pos : pos + n]]
        pos += n
    record = {"hands": hands, "wild": flat[pos], "open": flat[pos + 1], "stock": flat[pos + 2 :]}
    mismatch = verify_deal(record, block, players, dealer=dealer, decks=2, jokers_per_deck=jokers)
    if flat[i] == flat[j] or same_hand:
        assert mismatch is None
    else:
        assert mismatch is not None


def test_cards_may_be_given_as_cards_or_text():
    deal, record = _recorded()

    class Deal:
        hands = deal.hands
        wild = deal.wild
        open_card = deal.open_card
        stock = None

    assert verify_deal(Deal(), _block(), PLAYERS, dealer="p3") is None
    record["hands"]["p1"] = parse_cards(record["hands"]["p1"])
    assert verify_deal(record, _block(), PLAYERS, dealer="p3") is None


@settings(max_examples=60, deadline=None)
@given(
    server_seed=st.binary(min_size=0, max_size=40),
    client_seeds=st.lists(st.binary(max_size=20), max_size=6),
    decks=st.integers(min_value=1, max_value=4),
    jokers_per_deck=st.integers(min_value=0, max_value=2),
)
def test_derive_deck_order_is_the_reference_fisher_yates(
    server_seed, client_seeds, decks, jokers_per_deck
):
    # derive_deck_order unpacks the draws itself; the documented steps, one class each,
    # must give the same deck for any seeds and table.
    from domain.shuffle import UniformDraws, derive_deck_order, fisher_yates, shuffle_blocks

    reference = fisher_yates(
        deck_order(decks, jokers_per_deck), UniformDraws(shuffle_blocks(server_seed, client_seeds))
    )
    derived = derive_deck_order(server_seed, client_seeds, decks, jokers_per_deck)
    assert [id(card) for card in derived] == [id(card) for card in reference]


@pytest.mark.parametrize("key_size", [0, 1, 32, 63, 64, 65, 200])
def test_the_blocks_are_the_library_hmac_for_any_key(key_size):
    # derive_deck_order keys its HMAC once and copies it for each block (domain.shuffle._blocks).
    from itertools import islice

    from domain.shuffle import _blocks

    key = bytes(range(key_size % 256)) * (1 + key_size // 256)
    for seeds in ([], [b""], [b"p1", b"p2"], [bytes(300)] * 3):
        assert list(islice(_blocks(key, seeds), 20)) == list(islice(shuffle_blocks(key, seeds), 20))


def test_a_rejected_draw_is_drawn_again_as_the_reference_does():
    # About one deal in 400,000 meets a draw the rejection sampling refuses; force some.
    import struct

    from domain.shuffle import UniformDraws, _shuffled, fisher_yates

    deck = deck_order(2, 1)
    for rejected in ([0], [3, 50], [104, 105, 106], list(range(0, 200, 7))):
        words = [(i * 2654435761) % 2**32 for i in range(400)]
        for at in rejected:
            words[at] = 2**32 - 1 - at % 3  # above the limit for any n that does not divide it
        data = struct.pack(f">{len(words)}I", *words)
        reference = fisher_yates(deck, UniformDraws(iter([data])))
        assert _shuffled(list(deck), iter(words)) == reference
    plain = [(i * 40503) % (2**32 - 200) for i in range(400)]
    data = struct.pack(f">{len(plain)}I", *plain)
    assert _shuffled(list(deck), iter(plain)) == fisher_yates(deck, UniformDraws(iter([data])))
