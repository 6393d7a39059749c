"""The solver's bound and its lean answer, as the fair-play walk asks for them.

Before a discard the walk holds 14 cards: the 13 it scored the turn before and the card
just picked. ``best_grouping(..., bound=s13 + points)`` must give the very arrangement the
unbounded call gives (the search visits branches in the same order; only strictly better
ones replace the best), a wrong bound must not change it either, and ``deadwood`` must be
``best_grouping``'s (hand_score, counted) without the arrangement scored again.

Hands: the property tests' families (tests/oracle.py), each with a 14th card drawn from
what the decks have left, under the default profile and one where a wild card in its own
place does not keep a sequence pure.
"""

import random
from collections import Counter
from dataclasses import replace

import pytest
from oracle import (
    JOKER_CLASSES,
    deal_in_class,
    deal_joker_rich,
    deal_near_complete,
    deal_random,
    deal_suited,
)

from domain.cards import full_deck, wild_rank
from domain.rummy13.native import pure_modules
from domain.rummy13.profiles import RuleProfile, get_profile
from domain.rummy13.solver import best_grouping, deadwood, min_hand_score

STRICT = RuleProfile(name="strict", wild_natural_is_pure=False)
POINTS = [0] + [10 if rank in (1, 10, 11, 12, 13) else rank for rank in range(1, 14)]


def _deals(count: int):
    rng = random.Random(32)
    makers = [
        lambda: deal_random(rng),
        lambda: deal_near_complete(rng),
        lambda: deal_random(rng, jokers=rng.randint(1, 4)),
        lambda: deal_suited(rng),
        lambda: deal_joker_rich(rng),
    ]
    for number in range(count):
        hand, wild = makers[number % len(makers)]()
        left = Counter(full_deck(2, 1)) - Counter([*hand, wild])
        picked = rng.choice(sorted(left.elements(), key=str))
        yield hand, wild, picked


def _points(card, wild) -> int:
    return 0 if card.rank in (0, wild_rank(wild)) else POINTS[card.rank]


@pytest.mark.parametrize("profile", [get_profile(None), STRICT], ids=["default", "strict"])
def test_bound_and_deadwood_give_the_unbounded_arrangement(profile):
    wide = replace(profile, hand_size=profile.hand_size + 1)
    below_least = 0
    for hand, wild, picked in _deals(600):
        best13 = best_grouping(hand, wild, profile)
        assert deadwood(hand, wild, profile) == (best13.hand_score, best13.counted)
        held = [*hand, picked]
        plain = best_grouping(held, wild, wide)
        bound = min_hand_score(hand, wild, profile) + _points(picked, wild)
        assert plain.hand_score <= bound
        assert best_grouping(held, wild, wide, bound) == plain, (hand, wild, picked)
        assert deadwood(held, wild, wide, bound) == (plain.hand_score, plain.counted)
        # A bound the hand does not reach is dropped, not believed.
        if plain.hand_score > 0:
            below_least += 1
            wrong = plain.hand_score - 1
            assert best_grouping(held, wild, wide, wrong) == plain
            assert deadwood(held, wild, wide, 0) == (plain.hand_score, plain.counted)
    assert below_least > 400  # most hands tried a wrong bound


def test_the_bound_cuts_the_search(monkeypatch):
    """The bound is there to save work: over the same hands, the bounded searches decide
    fewer choices of sets than the unbounded ones. Counted in the pure source, whose
    method calls go through its class (a compiled module calls its own directly)."""
    _, solver = pure_modules()
    profile = get_profile(None)
    wide = replace(profile, hand_size=14)
    hands = [
        ([*hand, picked], solver.min_hand_score(hand, wild, profile) + _points(picked, wild), wild)
        for hand, wild, picked in _deals(300)
    ]
    calls = Counter()
    decide = solver._Search.decide

    def counted(self, *args):
        calls[counting] += 1
        return decide(self, *args)

    monkeypatch.setattr(solver._Search, "decide", counted)
    for counting in ("unbounded", "bounded"):
        for held, bound, wild in hands:
            solver.deadwood(held, wild, wide, bound if counting == "bounded" else None)
    assert 0 < calls["bounded"] < calls["unbounded"]


def test_deadwood_of_hands_by_class():
    rng = random.Random(7)
    for number in range(150):
        hand, wild = deal_in_class(rng, JOKER_CLASSES[number % len(JOKER_CLASSES)])
        best = best_grouping(hand, wild)
        assert deadwood(hand, wild) == (best.hand_score, best.counted)


@pytest.mark.parametrize(
    "cards, wild",
    [
        ("AS 2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS JK", "7D"),  # a joker beside 13 in a row
        ("AS 2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS 7D", "7D"),  # a wild card, its own suit not
        ("AS 2S 3S 4H 5H JK 9C 9D 9H KS KD 2C 5D JK", "7D"),
        ("AS 2S 3S 7H 7C JK JK 9C 9D 9H KS KD 2C 5D", "7D"),  # joker-only group, jokers over
        ("4H 5H 6H 7H 8C 8D 8S JK JK 7D 7S 2C 3C 9D", "7C"),
    ],
)
def test_deadwood_where_jokers_go_into_groups(cards, wild):
    from domain.cards import parse_cards

    hand = parse_cards(cards)
    wide = replace(get_profile(None), hand_size=len(hand))
    best = best_grouping(hand, wild, wide)
    assert deadwood(hand, wild, wide) == (best.hand_score, best.counted)
