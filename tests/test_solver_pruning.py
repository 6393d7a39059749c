"""The solver's pruning rules against the same search with those rules switched off.

This complements the oracle (tests/test_solver_properties.py): the oracle is independent but
slow, so it sees a few thousand hands a run; this check is cheap, so it sees many more, and
aims at the rules most likely to hide a rare mistake (docs/rules-engine.md, "Sequences that
splitting beats are never kept"): no kept sequence has a run of 4+ stand-ins, or two or
more stand-ins per card of its own, and suits are split where cards are too far apart.
An off-by-one in the first rule once cost one hand in 8,000 a better arrangement; the
benchmark's oracle check found it (tests/test_solver.py keeps that hand).
"""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import deal_near_complete, deal_random, deal_suited

from domain.cards import parse_cards
from domain.rummy13 import suit_tables
from domain.rummy13.solver import clear_caches, min_hand_score

FAMILIES = (
    deal_random,
    deal_near_complete,
    deal_suited,
    lambda rng: deal_random(rng, jokers=rng.randint(3, 5)),
)


def unpruned(hand, wild, monkeypatch):
    with monkeypatch.context() as patch:
        patch.setattr(suit_tables, "_SMALL", {})  # worked out at import, with the rules on
        patch.setattr(suit_tables, "_SMALL_SPLITS", {})
        patch.setattr(suit_tables, "_SMALL_WILD", {})
        patch.setattr(suit_tables, "_PACKED", {})
        patch.setattr(suit_tables, "_PACKED_WILD", {})
        patch.setattr(suit_tables, "ONE_COPY", False)
        patch.setattr(suit_tables, "WIDEST_GAP", 20)
        patch.setattr(suit_tables, "STAND_INS_PER_CARD", 20)
        clear_caches()
        score = min_hand_score(hand, wild)
    clear_caches()  # the caches must not carry unpruned tables into the pruned search
    return score


def test_the_switch_reaches_the_search(monkeypatch):
    """Patching the rules changes what the search finds (else this file tests nothing)."""
    # 4H JK JK 7H is a sequence with a run of two stand-ins, two per card of its own.
    hand, wild = parse_cards("AS 2S 3S 4H 7H JK JK 9C 9D 9H KS KD KC"), parse_cards("5C")[0]
    clear_caches()
    assert min_hand_score(hand, wild) == 0
    for name, value in (("WIDEST_GAP", 1), ("STAND_INS_PER_CARD", 1)):
        with monkeypatch.context() as patch:
            patch.setattr(suit_tables, "_SMALL", {})
            patch.setattr(suit_tables, "_SMALL_SPLITS", {})
            patch.setattr(suit_tables, "_SMALL_WILD", {})
            patch.setattr(suit_tables, "_PACKED", {})
            patch.setattr(suit_tables, "_PACKED_WILD", {})
            patch.setattr(suit_tables, name, value)
            clear_caches()
            assert min_hand_score(hand, wild) == 4, name  # 4H or 7H left loose
    clear_caches()


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture])  # fmt: skip
@given(st.randoms(use_true_random=False), st.integers(0, len(FAMILIES) - 1))
def test_pruning_never_loses_a_better_arrangement(monkeypatch, rng, family):
    hand, wild = FAMILIES[family](rng)
    expected = unpruned(hand, wild, monkeypatch)
    assert min_hand_score(hand, wild) == expected
