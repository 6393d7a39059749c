"""The tables kept for good of small suits with a wild card beside (domain/rummy13/
suit_tables.py, ``_SMALL_WILD``) against the same tables worked out per hand.

A settlement records the grouping the solver gives a loser who did not show, and
``verify`` recomputes it: the kept tables must not change any answer, not only the score
but the groups, their order and the loose cards. Every answer on a few thousand seeded
joker-rich hands (tests/oracle.py ``deal_joker_rich``, where wild cards sit beside natural
runs of their suit) and one- and two-joker hands must equal the answers without the kept
tables, and the kept tables must be asked for (else this file tests nothing).
"""

import random

from oracle import deal_in_class, deal_joker_rich

from domain.rummy13.native import pure_modules

# The pure source, built or not: these tests replace its internals (domain/rummy13/native.py).
suit_tables, solver = pure_modules()
best_grouping, clear_caches, declaration, min_hand_score = (
    solver.best_grouping,
    solver.clear_caches,
    solver.declaration,
    solver.min_hand_score,
)


def _hands() -> list:
    rng = random.Random(2025)
    dealt = [deal_joker_rich(rng) for _ in range(2000)]
    dealt += [deal_in_class(rng, name) for name in ("1 joker", "2 jokers") for _ in range(500)]
    return dealt


def _answers(dealt) -> list:
    clear_caches()
    found = []
    for hand, wild in dealt:
        best = best_grouping(hand, wild)
        found.append((repr(best), repr(declaration(hand, wild)), min_hand_score(hand, wild)))
    clear_caches()
    return found


def test_kept_wild_tables_change_no_answer(monkeypatch):
    dealt = _hands()
    served = 0
    kept = suit_tables._SMALL_WILD

    class Counted(dict):
        def get(self, key, default=None):
            nonlocal served
            found = dict.get(self, key, default)
            served += found is not None
            return found

    monkeypatch.setattr(suit_tables, "_SMALL_WILD", Counted(kept))
    with_kept = _answers(dealt)
    assert served > 1000
    monkeypatch.setattr(suit_tables, "_SMALL_WILD", {})
    worked_out = _answers(dealt)
    assert with_kept == worked_out
