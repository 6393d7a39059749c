"""The shipped tables of small suits with a wild card beside them (domain/wild_suit_tables.py,
written by ``python -m domain.suit_tables``): they are what the search works out today, for
every budget, and the solver takes them where it used to work them out."""

from __future__ import annotations

import marshal
import random

from domain import suit_tables
from domain.suit_tables import (
    ACE_HIGH,
    ACE_LOW_UNIT,
    IMPURE_ONE,
    NIBBLE,
    PURE_ONE,
    suit_table,
    wild_small_tables,
)


def _shipped() -> dict[int, tuple]:
    return {key: marshal.loads(packed) for key, packed in suit_tables._wild_small().items()}


def test_the_shipped_tables_are_the_ones_the_search_works_out():
    # Regenerate with `python -m domain.suit_tables` when the search or _SMALL changes.
    assert _shipped() == wild_small_tables()


def _triples(table, budget):
    return sorted((used, state, loose) for used, state, loose, _ in table if used <= budget)


def test_each_budget_of_a_shipped_table_is_the_table_worked_out_for_that_budget():
    rng = random.Random(16)
    shipped = _shipped()
    for key in rng.sample(sorted(shipped), 150):
        code, pure_at = key & ((1 << 64) - 1), key >> 64
        size = sum((code >> (NIBBLE * place)) & 15 for place in range(1, ACE_HIGH))
        for budget in range(2 * size + 1):
            suit_tables.clear_caches()
            served = suit_table(code, pure_at, budget)
            suit_tables.clear_caches()
            searched = suit_tables._suit_entries(code, pure_at, budget)
            assert _triples(served, budget) == _triples(searched, budget), (hex(key), budget)


def test_a_wild_place_not_beside_the_cards_is_the_table_without_it():
    three_four = 1 << (NIBBLE * 3) | 1 << (NIBBLE * 4)
    far = 1 << (NIBBLE * 9)  # a wild 9 is beside neither 3 nor 4
    assert suit_table(three_four, far, 2) is suit_table(three_four, 0, 2)
    # An Ace held low is beside a wild King (as Ace high): Q K A is pure for one joker.
    ace_queen = ACE_LOW_UNIT | 1 << (NIBBLE * 12)
    king = 1 << (NIBBLE * 13)
    assert next(entry[:3] for entry in suit_table(ace_queen, king, 1)) == (1, PURE_ONE, 0)
    assert next(entry[:3] for entry in suit_table(ace_queen, 0, 1)) == (1, IMPURE_ONE, 0)
