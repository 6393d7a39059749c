"""A wild card's place that is not beside a small suit's cards leaves the suit's table the
one kept for good (domain/rummy13/suit_tables.py), and one beside them still changes it."""

from __future__ import annotations

import random

from domain.rummy13 import suit_tables
from domain.rummy13.suit_tables import ACE_LOW_UNIT, IMPURE_ONE, NIBBLE, PURE_ONE, suit_table


def test_a_wild_place_not_beside_the_cards_takes_the_kept_table():
    three_four = 1 << (NIBBLE * 3) | 1 << (NIBBLE * 4)
    far = 1 << (NIBBLE * 9)  # a wild 9 is beside neither 3 nor 4
    assert suit_table(three_four, far, 2) is suit_table(three_four, 0, 2)


def test_a_wild_king_is_beside_an_ace_held_low():
    ace_queen = ACE_LOW_UNIT | 1 << (NIBBLE * 12)
    king = 1 << (NIBBLE * 13)  # Q K A, the King a wild card standing as itself: pure
    assert next(entry[:3] for entry in suit_table(ace_queen, king, 1)) == (1, PURE_ONE, 0)
    assert next(entry[:3] for entry in suit_table(ace_queen, 0, 1)) == (1, IMPURE_ONE, 0)


def _triples(table, budget):
    return sorted((used, state, loose) for used, state, loose, _ in table if used <= budget)


def test_small_suits_with_any_wild_place_match_the_search():
    rng = random.Random(16)
    codes = rng.sample(sorted(suit_tables._SMALL), 120)
    places = [1 << (NIBBLE * rank) for rank in range(2, 14)]
    places.append(ACE_LOW_UNIT | 1 << (NIBBLE * 14))  # Aces wild: either end
    for code in codes:
        for pure_at in rng.sample(places, 3):
            if pure_at & code or (pure_at >> (NIBBLE * 14) and code & (15 << NIBBLE)):
                continue  # a suit never holds a card of the wild rank as a natural card
            for budget in (0, 1, 2, 4):
                suit_tables.clear_caches()
                served = suit_table(code, pure_at, budget)
                suit_tables.clear_caches()
                searched = suit_tables._suit_entries(code, pure_at, budget)
                assert _triples(served, budget) == _triples(searched, budget), (
                    hex(code),
                    hex(pure_at),
                    budget,
                )
