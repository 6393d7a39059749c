"""Suit tables (domain/suit_tables.py): the tables worked out at import, and table shape.

The tables of small suits are worked out once, at import, for every budget by keeping the
entries of the largest budget within each smaller one; that rests on a claim (a table for
a larger budget holds the smaller budget's table exactly) checked here against tables
worked out afresh for each budget.
"""

import random

import pytest

from domain import suit_tables
from domain.suit_tables import COVERS, NIBBLE, SMALL_SUIT, suit_table


def triples(table, budget=99):
    """The entries within ``budget`` (a table may hold more: callers skip them)."""
    return [(used, state, loose) for used, state, loose, _ in table if used <= budget]


@pytest.fixture
def fresh(monkeypatch):
    """Tables worked out by the search itself, none from import."""
    monkeypatch.setattr(suit_tables, "_SMALL", {})
    monkeypatch.setattr(suit_tables, "_SMALL_SPLITS", {})
    suit_tables.clear_caches()
    yield
    suit_tables.clear_caches()


IMPORTED = dict(suit_tables._SMALL)  # read before any test empties it


def test_every_small_suit_is_there():
    # Suits of up to SMALL_SUIT cards of 13 ranks, at most two copies of a card (two decks):
    # the coefficients of (1 + x + x^2)^13.
    coefficients = [1]
    for _ in range(13):
        coefficients = [
            sum(coefficients[k - j] for j in range(3) if 0 <= k - j < len(coefficients))
            for k in range(len(coefficients) + 2)
        ]
    assert len(IMPORTED) == sum(coefficients[: SMALL_SUIT + 1]) == 547


def test_small_tables_match_tables_worked_out_for_each_budget(fresh):
    for code, by_budget in IMPORTED.items():
        for budget, table in enumerate(by_budget):
            suit_tables.clear_caches()
            assert triples(table) == triples(suit_table(code, 0, budget), budget), (
                hex(code),
                budget,
            )


def test_a_budget_past_the_last_table_gets_the_last(monkeypatch):
    code = 1 << (NIBBLE * 5) | 1 << (NIBBLE * 9)  # 5 and 9: at most 4 jokers help
    assert suit_table(code, 0, 9) == suit_table(code, 0, 4)
    assert triples(suit_table(code, 0, 9)) != triples(suit_table(code, 0, 1))


@pytest.mark.parametrize("seed", range(3))
def test_tables_are_sorted_and_no_entry_beats_another(seed, fresh):
    rng = random.Random(seed)
    for _ in range(300):
        code = 0
        for _ in range(rng.randint(1, 8)):
            place = rng.randint(1, 13)
            if (code >> (NIBBLE * place)) & 15 < 2:
                code += 1 << (NIBBLE * place)
        pure_at = rng.choice((0, 0, 1 << (NIBBLE * rng.randint(1, 13))))
        table = triples(suit_table(code, pure_at, rng.randint(0, 6)))
        assert [loose for _, _, loose in table] == sorted(loose for _, _, loose in table)
        for a in table:
            for b in table:
                if a is not b:
                    beaten = a[0] >= b[0] and COVERS[b[1]][a[1]] and a[2] >= b[2]
                    assert not beaten, (hex(code), a, b)
