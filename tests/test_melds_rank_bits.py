"""classify's purity and sequence checks on every set of ranks of one suit.

domain/rummy13/melds.py tests a group's ranks as bits (``_is_pure``, the quick yes of
``_sequence_failure``): a run of distinct ranks is one run of bits. Here the rule is
spelt out plainly (a group is a sequence when its cards, Ace low or Ace high, fit in
``size`` consecutive places, 13 at most) and checked against classify for every subset
of the 13 ranks, with up to three printed jokers, so a wrong bit trick fails here.
"""

from itertools import combinations

import pytest

from domain.cards import Card
from domain.rummy13.melds import GroupKind, classify
from domain.rummy13.profiles import RuleProfile

STRICT = RuleProfile(name="strict", wild_natural_is_pure=False)
JOKER = Card(0, None)


def _fits(ranks: list[int], size: int) -> bool:
    """Whether ``ranks`` (distinct) fit in ``size`` consecutive places, Ace low or high."""
    if size > 13:
        return False
    if max(ranks) - min(ranks) < size:
        return True
    if 1 in ranks:
        high = [14 if rank == 1 else rank for rank in ranks]
        return max(high) - min(high) < size
    return False


def _subsets():
    for count in range(1, 14):
        yield from combinations(range(1, 14), count)


@pytest.mark.parametrize("jokers", [0, 1, 2, 3])
def test_every_set_of_ranks_of_one_suit(jokers):
    wild = Card(0, None)  # a printed joker as indicator: Aces are wild, so no Aces here
    plain_wild = Card(2, "C")  # twos wild: hearts other than 2H stand as themselves
    checked = 0
    for ranks in _subsets():
        size = len(ranks) + jokers
        if size < 3:
            continue
        cards = [Card(rank, "H") for rank in ranks] + [JOKER] * jokers
        if 2 not in ranks:
            verdict = classify(cards, plain_wild)
            if jokers == 0:
                expected = GroupKind.PURE if _fits(list(ranks), size) else None
            else:
                expected = GroupKind.IMPURE if _fits(list(ranks), size) else None
            assert verdict.kind is expected, (ranks, jokers, verdict)
            checked += 1
        if 1 not in ranks and jokers == 0:
            # With Aces wild and none held, a run is pure exactly when consecutive.
            verdict = classify(cards, wild, STRICT)
            expected = GroupKind.PURE if _fits(list(ranks), size) else None
            assert verdict.kind is expected, (ranks, verdict)
    assert checked > 3000


def test_a_rank_twice_is_never_a_sequence():
    for first in range(1, 14):
        for second in range(1, 14):
            cards = [Card(first, "S"), Card(first, "S"), Card(second, "S")]
            wild_rank = next(rank for rank in range(1, 14) if rank not in (first, second))
            verdict = classify(cards, Card(wild_rank, "D"))
            assert verdict.kind is None
            assert "appears" in verdict.reason
