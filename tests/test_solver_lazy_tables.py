"""The search's lazy joining of suit tables against the search that asks for every table.

The search (domain/rummy13/solver.py, ``_Search.decide``) joins the tables of the suits a
choice of sets makes final one by one, and asks for a suit's table only while the
combination so far is not empty (the last suit's only if something reaches it). Before, it
asked for every final suit's table first. Joining is order-free (each combination keeps
its least loose points), so the answers must not change: ``Eager`` below is the search as
it was, and every answer (score, groups, loose cards, declaration) must equal its answer,
while the lazy search asks for no more tables, and on some hands for fewer (else this file
tests nothing).
"""

import random

import pytest
from oracle import JOKER_CLASSES, deal_in_class, deal_joker_rich

from domain.rummy13.native import pure_modules

# The pure source, built or not: these tests replace its internals (domain/rummy13/native.py).
suit_tables, solver = pure_modules()
_add_all, _goal, _Search, best_grouping, clear_caches, declaration, min_hand_score = (
    solver._add_all,
    solver._goal,
    solver._Search,
    solver.best_grouping,
    solver.clear_caches,
    solver.declaration,
    solver.min_hand_score,
)


class Eager(_Search):
    """The search before lazy joining: every final suit's table asked for, then joined."""

    __slots__ = ()

    def decide(self, index, codes, budget, states):
        shift, choices = self.per_rank[index]
        final = self.final[index]
        last = index + 1 == len(self.per_rank)
        for choice in choices:
            _, needed, _, takes = choice
            if needed > budget:
                continue
            left = codes.copy()
            for suit, copies in takes:
                left[suit] -= copies << shift
            more = budget - needed
            tables = [self.table(suit, left[suit]) for suit in final]
            if last:
                end = tables.pop()
                merged = _add_all(states, tables, more, self.loose) if tables else states
                if merged:
                    loose = _goal(merged, end, more, self.loose)
                    if loose < self.loose:
                        self.loose, self.sets = loose, [*self.picked, (shift, choice)]
            else:
                merged = _add_all(states, tables, more, self.loose) if tables else states
                if merged:
                    self.picked.append((shift, choice))
                    self.decide(index + 1, left, more, merged)
                    self.picked.pop()
            if self.loose == 0:
                return


def hands(count: int) -> list:
    rng = random.Random(16)
    dealt = []
    for name in JOKER_CLASSES:
        dealt += [deal_in_class(rng, name) for _ in range(count)]
    dealt += [deal_joker_rich(rng) for _ in range(count)]
    return dealt


def answers(hand, wild) -> tuple:
    """Every answer for one hand, from empty caches, and how many tables it asked for."""
    asked = 0
    table = suit_tables.suit_table

    def counted(*args):
        nonlocal asked
        asked += 1
        return table(*args)

    clear_caches()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(solver, "suit_table", counted)
        found = (
            repr(best_grouping(hand, wild)),
            repr(declaration(hand, wild)),
            min_hand_score(hand, wild),
        )
    return found, asked


def test_lazy_joining_gives_the_eager_answers_and_asks_for_fewer_tables(monkeypatch):
    fewer = 0
    for hand, wild in hands(150):
        lazy, lazy_asked = answers(hand, wild)
        with monkeypatch.context() as patch:
            patch.setattr(solver, "_Search", Eager)
            eager, eager_asked = answers(hand, wild)
        assert lazy == eager, ([str(card) for card in hand], str(wild))
        assert lazy_asked <= eager_asked
        fewer += lazy_asked < eager_asked
    assert fewer > 0  # the lazy search did skip tables


def test_the_answers_do_not_depend_on_the_caches():
    """The same answers from empty caches and after other hands filled them (tables are
    asked for in another order than before, so a table may be worked out for another
    budget first)."""
    dealt = hands(60)
    alone = [answers(hand, wild)[0] for hand, wild in dealt]
    clear_caches()
    for (hand, wild), expected in zip(reversed(dealt), reversed(alone), strict=True):
        found = (
            repr(best_grouping(hand, wild)),
            repr(declaration(hand, wild)),
            min_hand_score(hand, wild),
        )
        assert found == expected, ([str(card) for card in hand], str(wild))


def test_the_memos_of_tables_asked_for_hold_suit_tables_answers_and_are_forgotten():
    """The searches share their memos of suit tables (by wild places and budget) across
    hands: each holds exactly suit_table's answer, and clear_caches forgets them."""
    clear_caches()
    for hand, wild in hands(20):
        best_grouping(hand, wild)
    assert solver._ASKED
    for key, memo in solver._ASKED.items():
        pure_at, budget = key >> 8, key & 255
        for code, table in memo.items():
            assert table == suit_tables.suit_table(code, pure_at, budget)
    clear_caches()
    assert not solver._ASKED


def test_the_memos_of_tables_asked_for_stay_bounded(monkeypatch):
    monkeypatch.setattr(solver, "ASKED_LIMIT", 3)
    monkeypatch.setattr(solver, "ASKED_TABLES_LIMIT", 4)
    dealt = hands(20)
    expected = [answers(hand, wild)[0] for hand, wild in dealt]
    clear_caches()
    most = 0
    for (hand, wild), answer in zip(dealt, expected, strict=True):
        found = (
            repr(best_grouping(hand, wild)),
            repr(declaration(hand, wild)),
            min_hand_score(hand, wild),
        )
        assert found == answer
        most = max(most, len(solver._ASKED))
        # a memo is emptied when a search starts with it full (one search adds a few)
        assert all(len(memo) <= 4 + 16 for memo in solver._ASKED.values())
    assert most <= 3
