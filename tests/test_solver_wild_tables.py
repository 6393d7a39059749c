"""A wild card's place that is not beside a small suit's cards leaves the suit's table the
one kept for good (domain/rummy13/suit_tables.py), and one beside them still changes it."""

from __future__ import annotations

import marshal
import random

from domain.rummy13.native import pure_modules

# The pure source, built or not: these tests replace its internals (domain/rummy13/native.py).
suit_tables, _ = pure_modules()
ACE_LOW_UNIT, IMPURE_ONE, NIBBLE, PURE_ONE, suit_table = (
    suit_tables.ACE_LOW_UNIT,
    suit_tables.IMPURE_ONE,
    suit_tables.NIBBLE,
    suit_tables.PURE_ONE,
    suit_tables.suit_table,
)


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


def _served_fresh(code, pure_at, budget, monkeypatch):
    """suit_table's answer worked out afresh, none of the wild tables kept for good used."""
    with monkeypatch.context() as patch:
        patch.setattr(suit_tables, "_SMALL_WILD", {})
        suit_tables.clear_caches()
        table = suit_table(code, pure_at, budget)
    suit_tables.clear_caches()
    return table


def test_kept_wild_tables_are_the_tables_worked_out(monkeypatch):
    """Every kept table with a wild card beside, within every budget it serves, holds the
    very entries (witnesses too: they decide the grouping a settlement records) that
    suit_table works out without it, and on a sample the search's triples."""
    kept = suit_tables._SMALL_WILD
    assert len(kept) > 5000
    rng = random.Random(1625)
    sample = set(rng.sample(sorted(kept), 300))
    for key in sorted(kept):
        code, pure_at = key & ((1 << 64) - 1), key >> 64
        most, table = marshal.loads(kept[key])
        for budget in range(most + 1):
            served = suit_table(code, pure_at, budget)
            assert served == table
            fresh = _served_fresh(code, pure_at, budget, monkeypatch)
            assert _within(served, budget) == _within(fresh, budget), (
                hex(code),
                hex(pure_at),
                budget,
            )
            if key in sample:
                searched = suit_tables._suit_entries(code, pure_at, budget)
                assert _triples(served, budget) == _triples(searched, budget)
        # Beyond the budget kept, worked out as before.
        beyond = _served_fresh(code, pure_at, most + 1, monkeypatch)
        assert suit_table(code, pure_at, most + 1) == beyond


def _within(table, budget):
    """The entries of ``table`` within ``budget``, in order (callers skip the others)."""
    return [entry for entry in table if entry[0] <= budget]


def test_a_kept_wild_table_is_served_without_working_it_out(monkeypatch):
    three_four = 1 << (NIBBLE * 3) | 1 << (NIBBLE * 4)
    five = 1 << (NIBBLE * 5)  # 3 4 and a wild 5 standing as itself: pure
    expected = _served_fresh(three_four, five, 2, monkeypatch)

    def worked_out(*args):
        raise AssertionError("a kept table was worked out")

    monkeypatch.setattr(suit_tables, "_wild_pure_entries", worked_out)
    suit_tables.clear_caches()
    assert _within(suit_table(three_four, five, 2), 2) == _within(expected, 2)
    assert next(entry[:3] for entry in expected) == (1, PURE_ONE, 0)
