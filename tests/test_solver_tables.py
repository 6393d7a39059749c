"""Suit tables (domain/rummy13/suit_tables.py): the tables kept for good, ONE_COPY, table shape.

- The tables of small suits are worked out once, at import, for every budget by keeping
  the entries of the largest budget within each smaller one; that rests on a claim (a
  table for a larger budget holds the smaller budget's table exactly) checked here against
  tables worked out afresh for each budget.
- ONE_COPY (in a suit holding one copy of each card, no sequence leaves out a card between
  its ends) is checked against the search that leaves cards out, for every such suit of
  the 13 ranks, with and without a wild card beside its cards, and for two Aces (one low,
  one high). Run once over every budget up to 8 and every wild rank, it found no
  difference in 800,000 tables; here it runs within 4 jokers and a few wild ranks.
"""

import itertools
import random

import pytest

from domain.rummy13.native import pure_modules

# The pure source, built or not: these tests replace its internals (domain/rummy13/native.py).
suit_tables, _ = pure_modules()
COVERS, NIBBLE, ONE_COPY_SUIT, SMALL_BUDGET, SMALL_SUIT, TWICE_SUIT, suit_table = (
    suit_tables.COVERS,
    suit_tables.NIBBLE,
    suit_tables.ONE_COPY_SUIT,
    suit_tables.SMALL_BUDGET,
    suit_tables.SMALL_SUIT,
    suit_tables.TWICE_SUIT,
    suit_tables.suit_table,
)


def triples(table, budget=99):
    """The entries within ``budget`` (a table may hold more: callers skip them)."""
    return sorted((used, state, loose) for used, state, loose, _ in table if used <= budget)


@pytest.fixture
def fresh(monkeypatch):
    """Tables worked out by the search itself, none kept from import."""
    monkeypatch.setattr(suit_tables, "_SMALL", {})
    monkeypatch.setattr(suit_tables, "_SMALL_SPLITS", {})
    monkeypatch.setattr(suit_tables, "_SMALL_WILD", {})
    monkeypatch.setattr(suit_tables, "_PACKED", {})
    monkeypatch.setattr(suit_tables, "_PACKED_WILD", {})
    suit_tables.clear_caches()
    yield
    suit_tables.clear_caches()


IMPORTED = dict(suit_tables._SMALL)  # read before any test empties it


def _suits(ranks: int, copies: int) -> int:
    """How many suits of ``ranks`` cards there are, at most ``copies`` of each of 13."""
    coefficients = [1]  # of (1 + x + ... + x^copies)^13
    for _ in range(13):
        coefficients = [
            sum(coefficients[k - j] for j in range(copies + 1) if 0 <= k - j < len(coefficients))
            for k in range(len(coefficients) + copies)
        ]
    return coefficients[ranks]


def test_every_small_suit_is_there():
    small = sum(_suits(size, 2) for size in range(SMALL_SUIT + 1))
    one_copy = sum(_suits(size, 1) for size in range(SMALL_SUIT + 1, ONE_COPY_SUIT + 1))
    assert small + one_copy == 547 + 715 + 1287
    # And, kept too (KEEP_FOUR_TWICE), the suits of four cards with a card twice.
    twice = sum(_suits(size, 2) for size in range(SMALL_SUIT + 1, TWICE_SUIT + 1)) - sum(
        _suits(size, 1) for size in range(SMALL_SUIT + 1, TWICE_SUIT + 1)
    )
    assert twice == 936
    assert len(IMPORTED) == small + one_copy + (twice if suit_tables.KEEP_FOUR_TWICE else 0)


def test_kept_tables_match_tables_worked_out_for_each_budget(fresh):
    for code, by_budget in IMPORTED.items():
        for budget, table in enumerate(by_budget):
            suit_tables.clear_caches()
            if table is None:  # not kept: the search works it out
                assert budget == len(by_budget) - 1 == SMALL_BUDGET + 1
                continue
            assert triples(table) == triples(suit_table(code, 0, budget), budget), (
                hex(code),
                budget,
            )


def test_a_budget_past_the_last_table_gets_the_last_or_the_search():
    code = 1 << (NIBBLE * 5) | 1 << (NIBBLE * 9)  # 5 and 9: at most 4 jokers help
    assert suit_table(code, 0, 9) is suit_table(code, 0, 4) is IMPORTED[code][-1]
    assert triples(suit_table(code, 0, 9)) != triples(suit_table(code, 0, 1))
    four = sum(1 << (NIBBLE * place) for place in (2, 5, 8, 11))  # kept within 4 jokers
    assert IMPORTED[four][-1] is None
    assert min(loose for _, _, loose in triples(suit_table(four, 0, 8))) == 0  # the search's


def _one_copy_matches(codes, pure_at, budget, monkeypatch):
    found = {}
    for one_copy in (False, True):
        monkeypatch.setattr(suit_tables, "ONE_COPY", one_copy)
        suit_tables.clear_caches()
        found[one_copy] = {code: suit_table(code, pure_at, budget) for code in codes}
    for code in codes:
        for within in range(budget + 1):
            assert triples(found[False][code], within) == triples(found[True][code], within), (
                hex(code),
                hex(pure_at),
                within,
            )


def _codes(places, most=13, aces=0):
    return [
        (aces << NIBBLE) + sum(1 << (NIBBLE * place) for place in chosen)
        for size in range(most + 1)
        for chosen in itertools.combinations(places, size)
    ]


def test_one_copy_leaves_no_card_out_and_loses_nothing(fresh, monkeypatch):
    _one_copy_matches(_codes(range(1, 14))[1:], 0, 4, monkeypatch)


@pytest.mark.parametrize("wild", [1, 4, 9, 13])
def test_one_copy_with_a_wild_card_beside(wild, fresh, monkeypatch):
    # A wild card stands at its own place (an Ace at either end); no card of its rank is
    # a natural card.
    places = [place for place in range(1, 14) if place != wild]
    pure_at = 1 << (NIBBLE * wild) | (1 << (NIBBLE * 14) if wild == 1 else 0)
    _one_copy_matches(_codes(places, 7)[1:], pure_at, 4, monkeypatch)


def test_one_copy_with_two_aces(fresh, monkeypatch):
    # Two Aces: one may sit low and the other high, each place then holding one copy.
    _one_copy_matches(_codes(range(2, 14), 6, aces=2), 0, 4, monkeypatch)


def test_the_one_copy_switch_reaches_the_search(fresh, monkeypatch):
    """Switched off, the search tries more (else the tests above compare a thing with itself)."""
    code = sum(1 << (NIBBLE * place) for place in (3, 4, 5, 6, 7, 8, 10, 11))
    tried = {}
    for one_copy in (False, True):
        monkeypatch.setattr(suit_tables, "ONE_COPY", one_copy)
        suit_tables.clear_caches()
        suit_table(code, 0, 6)
        tried[one_copy] = len(suit_tables._SPLITS)
    assert tried[False] > 4 * tried[True]


def _random_suit(rng, most_cards):
    """A suit's code: up to ``most_cards`` cards, a card twice at most (two decks)."""
    code = 0
    for _ in range(rng.randint(1, most_cards)):
        place = rng.randint(1, 13)
        if (code >> (NIBBLE * place)) & 15 < 2:
            code += 1 << (NIBBLE * place)
    return code


RULES = ("ONE_COPY", "ONE_STAND_IN", "SPLIT_LONG")  # sequences the search does not lay


def _searched_both_ways(cases, monkeypatch):
    """The tables of ``cases`` (code, pure_at, budget) by the search that lays every
    sequence (RULES off, a wild card's places taken by the search itself) and as served."""
    for rule in RULES:
        monkeypatch.setattr(suit_tables, rule, False)
    suit_tables.clear_caches()
    reference = [suit_tables._suit_entries(*case) for case in cases]
    for rule in RULES:
        monkeypatch.setattr(suit_tables, rule, True)
    suit_tables.clear_caches()
    return reference, [suit_table(*case) for case in cases]


@pytest.mark.parametrize("seed", range(4))
def test_sequences_not_laid_lose_nothing(seed, fresh, monkeypatch):
    """ONE_STAND_IN and SPLIT_LONG (with ONE_COPY) on suits with repeated cards, a wild
    card beside them or not, every budget up to 6 (run once over 80,000 such suits, 20,000
    with a wild card beside: no difference)."""
    rng = random.Random(1600 + seed)
    cases = []
    for _ in range(1500):
        code = _random_suit(rng, 10)
        pure_at = 0
        wild = rng.randint(1, 13)
        if rng.random() < 0.4 and not (code >> (NIBBLE * wild)) & 15:
            pure_at = 1 << (NIBBLE * wild) | (1 << (NIBBLE * 14) if wild == 1 else 0)
        cases.append((code, pure_at, rng.randint(0, 6)))
    reference, searched = _searched_both_ways(cases, monkeypatch)
    for case, expected, found in zip(cases, reference, searched, strict=True):
        for within in range(case[2] + 1):
            assert triples(expected, within) == triples(found, within), (*map(hex, case), within)


@pytest.mark.parametrize(
    ("rule", "places", "budget"),
    [
        ("ONE_STAND_IN", (3, 4, 5, 5, 6, 7, 8, 8, 10, 11), 1),  # a card twice, one joker
        ("SPLIT_LONG", (2, 3, 4, 5, 6, 7, 8, 9, 11, 12), 2),  # a long run
    ],
)
def test_each_rule_reaches_the_search(rule, places, budget, fresh, monkeypatch):
    """Switched off, the search tries more (else the test above compares a thing with
    itself)."""
    code = sum(1 << (NIBBLE * place) for place in places)
    search = suit_tables._split
    tried = {False: 0, True: 0}
    for on in (False, True):

        def counted(*args, on=on):
            tried[on] += 1
            return search(*args)

        monkeypatch.setattr(suit_tables, "_split", counted)
        monkeypatch.setattr(suit_tables, rule, on)
        suit_tables.clear_caches()
        suit_table(code, 0, budget)
    assert tried[False] > tried[True]


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
        loose = [entry[2] for entry in suit_table(code, pure_at, 6)]
        assert loose == sorted(loose)
        for a in table:
            for b in table:
                if a is not b:
                    beaten = a[0] >= b[0] and COVERS[b[1]][a[1]] and a[2] >= b[2]
                    assert not beaten, (hex(code), a, b)
