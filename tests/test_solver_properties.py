"""The solver against the brute-force oracle (tests/oracle.py) on generated hands.

Hands come from two decks with their printed jokers and a wild indicator drawn from the same
cards (a printed joker as indicator, making Aces wild, is forced one time in ten on top of
its plain chance). Three families:

- random hands (2,000 examples): what a deal looks like;
- near-complete hands (600): built from random pure and impure sequences, sets and
  joker-only groups, then a few cards swapped, so most are at or near a declaration;
- joker-rich hands (200): 3 to 6 jokers forced in, where joker-only groups, wild cards in
  their own place and stand-ins interact most;
- suited hands (200): 7 or 8 cards of one suit (repeats from two decks) and 2 or 3 jokers,
  where sequences overlap and one sequence leaves a card to another;
- hands by class (300), as the solver benchmark deals them: exactly 0, 1 or 2 jokers, 3 to
  6 jokers, or a printed joker as indicator (every Ace wild), each half random, half near a
  declaration;
- joker-rich hands under a printed-joker indicator (150): 3 to 6 jokers, Aces among them,
  so an Ace can stand as itself (low or high) or for any card;
- the solver benchmark's joker-rich batch (150, tests/oracle.py ``deal_joker_rich``): 2 to 4
  jokers, wild cards beside natural runs of their suit, a printed joker as indicator one
  time in four.

The oracle tries every candidate group in a joker-rich hand with every subset of the
jokers, so it is slow there; that is why that family has fewer examples. No hand is
skipped: every generated hand is checked.

For each hand: ``min_hand_score`` equals the oracle's minimum; ``best_grouping`` returns
an arrangement of exactly the hand, with valid groups only, scoring that minimum; the
declaration verdicts agree; ``declaration`` returns a valid declaration exactly when the
oracle finds one.
"""

import random
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import (
    JOKER_CLASSES,
    deal_in_class,
    deal_joker_rich,
    deal_near_complete,
    deal_random,
    deal_suited,
    joker_class,
    oracle,
)

from domain.rummy13.profiles import RuleProfile
from domain.rummy13.solver import best_grouping, declaration, min_hand_score

STRICT = RuleProfile(name="strict", wild_natural_is_pure=False)
SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}


def agree(hand, wild, profile=None):
    answer = oracle(hand, wild, profile)
    score = min_hand_score(hand, wild, profile)
    assert score == answer.min_score, (answer, score)
    best = best_grouping(hand, wild, profile)
    assert best.hand_score == answer.min_score
    assert Counter(best.cards) == Counter(hand)
    assert all(group.kind is not None for group in best.groups)
    assert best.valid_declaration == answer.can_declare
    found = declaration(hand, wild, profile)
    assert (found is not None) == answer.can_declare
    if found is not None:
        assert found.valid_declaration and Counter(found.cards) == Counter(hand)


@settings(max_examples=2000, **SETTINGS)
@given(st.randoms(use_true_random=False))
def test_random_hands(rng):
    agree(*deal_random(rng))


@settings(max_examples=600, **SETTINGS)
@given(st.randoms(use_true_random=False))
def test_near_complete_hands(rng):
    agree(*deal_near_complete(rng))


@settings(max_examples=200, **SETTINGS)
@given(st.randoms(use_true_random=False), st.integers(3, 6))
def test_joker_rich_hands(rng, jokers):
    agree(*deal_random(rng, jokers=jokers))


@settings(max_examples=300, **SETTINGS)
@given(st.integers(0, 2**64), st.sampled_from(JOKER_CLASSES))
def test_hands_by_joker_class(seed, name):
    # A seed rather than st.randoms(): drawing a near-complete hand until it falls in the
    # class takes many random numbers, too much data for hypothesis to draw one by one.
    hand, wild = deal_in_class(random.Random(seed), name)
    assert joker_class(hand, wild) == name
    agree(hand, wild)


@settings(max_examples=150, **SETTINGS)
@given(st.randoms(use_true_random=False), st.integers(3, 6))
def test_joker_rich_hands_with_printed_joker_wild(rng, jokers):
    hand, wild = deal_random(rng, jk_indicator=1.0, jokers=jokers)
    assert wild.rank == 0 and sum(card.is_joker(wild) for card in hand) >= jokers
    agree(hand, wild)


@settings(max_examples=150, **SETTINGS)
@given(st.integers(0, 2**64))
def test_joker_rich_batch(seed):
    # A seed rather than st.randoms(), as for the classes: the deal draws many numbers.
    hand, wild = deal_joker_rich(random.Random(seed))
    assert sum(card.is_joker(wild) for card in hand) >= 2
    agree(hand, wild)


@settings(max_examples=200, **SETTINGS)
@given(st.randoms(use_true_random=False))
def test_suited_hands(rng):
    agree(*deal_suited(rng))


@settings(max_examples=200, **SETTINGS)
@given(st.randoms(use_true_random=False), st.booleans())
def test_wild_card_in_place_is_impure_profile(rng, near):
    """The `wild_natural_is_pure = false` reading: a wild card in its place is a stand-in."""
    hand, wild = deal_near_complete(rng) if near else deal_random(rng, jokers=2)
    agree(hand, wild, STRICT)


def test_oracle_is_not_vacuous():
    """The oracle itself on known hands (so a broken oracle cannot agree with a broken solver)."""
    from domain.cards import parse_cards

    answer = oracle(parse_cards("AS 2S 3S 4H 5H JK 9C 9D 9H KS KD 2C 5D"), parse_cards("7D")[0])
    assert (answer.min_score, answer.can_declare) == (27, False)
    assert (answer.no_pure, answer.pure_only, answer.two_sequences) == (78, 63, 27)
    full = oracle(parse_cards("AS 2S 3S 4H 5H JK 9D 9H 9S KS KD KC KH"), parse_cards("7D")[0])
    assert (full.min_score, full.can_declare) == (0, True)
