"""Suit tables with a wild card beside (domain/rummy13/suit_tables.py, ``_wild_pure_entries``) and
the second search's bound (domain/rummy13/solver.py, ``_two_sequences``).

A suit's table with a wild card of its suit beside its cards is built from tables without
one: the plain table, and each sequence the wild card makes pure beside the table of the
cards it leaves. Here it is checked against the search that takes the wild card's places
itself (``_split`` with ``pure_at``, the way every such table was built before), on random
suits of up to ten cards with repeats and Aces, every wild rank (Aces wild: both ends),
every budget up to six jokers.
"""

from __future__ import annotations

import random

import pytest
from oracle import deal_near_complete, deal_random, oracle

from domain.cards import JOKER, Card, parse_cards, wild_rank
from domain.rummy13 import solver, suit_tables
from domain.rummy13.solver import best_grouping, clear_caches, declaration, min_hand_score
from domain.rummy13.suit_tables import ACE_HIGH, NIBBLE, suit_table


def triples(table, budget):
    return sorted((used, state, loose) for used, state, loose, _ in table if used <= budget)


def wild_places(rank: int) -> int:
    """The place mask of a wild card of ``rank`` (an Ace at either end)."""
    return 1 << (NIBBLE * rank) | (1 << (NIBBLE * ACE_HIGH) if rank == 1 else 0)


def random_suit(rng: random.Random, wild: int) -> int:
    code = 0
    for _ in range(rng.randint(1, 10)):
        place = rng.randint(1, 13)
        if place != wild and (code >> (NIBBLE * place)) & 15 < 2:
            code += 1 << (NIBBLE * place)
    return code


@pytest.mark.parametrize("seed", range(4))
def test_tables_with_a_wild_card_beside_match_the_search(seed):
    rng = random.Random(seed)
    differ = 0
    for _ in range(1500):
        wild = rng.randint(1, 13)
        code, budget = random_suit(rng, wild), rng.randint(0, 6)
        suit_tables.clear_caches()
        served = suit_table(code, wild_places(wild), budget)
        suit_tables.clear_caches()
        searched = suit_tables._suit_entries(code, wild_places(wild), budget)
        assert triples(served, budget) == triples(searched, budget), (hex(code), wild, budget)
        differ += triples(searched, budget) != triples(suit_table(code, 0, budget), budget)
    assert differ > 100  # the wild card changes many of these tables: the check bites


def test_a_wild_card_beside_one_card_only_leaves_the_plain_table():
    five_nine = 1 << (NIBBLE * 5) | 1 << (NIBBLE * 9)
    assert suit_table(five_nine, wild_places(6), 2) is suit_table(five_nine, 0, 2)
    five_six = 1 << (NIBBLE * 5) | 1 << (NIBBLE * 6)  # 5 6 and a wild 7: pure
    assert suit_table(five_six, wild_places(7), 2) is not suit_table(five_six, 0, 2)


def test_the_witness_of_a_wild_pure_sequence_is_its_own_cards():
    # 5H 6H 8H 9H with 7s wild: one pure sequence 5H..9H, the wild 7 in its place.
    code = sum(1 << (NIBBLE * place) for place in (5, 6, 8, 9))
    table = suit_table(code, wild_places(7), 1)
    used, state, loose, witness = table[0]
    assert (used, state, loose) == (1, suit_tables.PURE_ONE, 0)
    assert suit_tables.witness_sequences(witness) == [(5, 6, 8, 9)]


def test_the_second_search_only_ever_helps_with_no_loose_points():
    """The claim behind the second search's bound (domain/rummy13/solver.py, _two_sequences): with
    every wild card in a joker-only group and a natural card loose, the first search
    already does better. Checked on hands where the second search runs (one wild card
    beside two of its suit's cards, two printed jokers): the second search without the
    bound never finds fewer loose points than the first unless it finds none."""
    rng = random.Random(16)
    ran = 0
    for _ in range(600):
        hand, wild = one_wild_beside_two(rng)
        cards, _, _, broken = solver._prepare(hand, wild, None)
        if not (broken.wild_count == 1 and broken.jokers == 3 and any(broken.pure_at)):
            continue
        pure = solver._best_pure(broken)
        if pure[0] < 0:
            continue
        below = broken.total - pure[0] + 1
        first = solver._search(broken, below, broken.pure_at, solver._joker_groups(0, 3))
        second = solver._search(broken, below, [0, 0, 0, 0], solver._joker_groups(1, 3))
        ran += 1
        if second is not None and (first is None or second[0] < first[0]):
            assert second[0] == 0, (" ".join(map(str, cards)), str(wild))
    assert ran > 300


def one_wild_beside_two(rng: random.Random):
    """(hand, wild): one wild card, both printed jokers, two cards of the wild card's suit
    beside its place, the rest random (near-complete one time in two)."""
    while True:
        hand, wild = deal_near_complete(rng) if rng.random() < 0.5 else deal_random(rng)
        rank = wild_rank(wild)
        plain = [card for card in hand if not card.is_joker(wild)]
        suit = rng.choice("SHDC")
        if rank == 1 or Card(rank, suit) == wild:
            continue
        # Three places in a row holding the wild card's, the other two held.
        low = rng.choice([start for start in (rank - 2, rank - 1, rank) if 1 <= start <= 11])
        beside = [Card(place, suit) for place in range(low, low + 3) if place != rank]
        own = [Card(rank, suit), JOKER, JOKER, *beside]
        rest = [card for card in plain if card not in own][: 13 - len(own)]
        if len(rest) == 13 - len(own):
            return own + rest, wild


@pytest.mark.parametrize(
    ("text", "wild", "score"),
    [
        # 7C JK JK is the second sequence, or 7C keeps 5C 6C pure and the jokers join sets.
        ("9S TS JS QS 5C 5H 5D 6C 6H 6D 7C JK JK", "7D", 0),
        # Two wild cards, neither beside two cards of its suit: joker-only groups and
        # stand-ins in one search.
        ("AS 2S 3S 4D 5D 6D 9C 9H 9S 7C JK JK 7H", "7D", 0),
        ("2H 3H 4H 9S 9D 9C 5C 6C KS 7C JK JK QD", "7D", 10),
    ],
)
def test_joker_only_groups_against_the_oracle(text, wild, score):
    cards = parse_cards(text)
    clear_caches()
    answer = oracle(cards, parse_cards(wild)[0])
    assert answer.min_score == score
    assert min_hand_score(cards, wild) == score
    best = best_grouping(cards, wild)
    assert best.hand_score == score and all(group.kind for group in best.groups)
    assert (declaration(cards, wild) is not None) == answer.can_declare
