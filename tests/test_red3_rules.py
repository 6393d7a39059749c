"""Red 3 Rummy books and card values (docs/rules.md §2), one test per rule."""

import doctest
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import domain.red3.profile
import domain.red3.rules
from domain.cards import parse_cards
from domain.red3.profile import get_red3_rules
from domain.red3.rules import (
    BookError,
    BookKind,
    held_penalty,
    is_red_three,
    is_wild,
    kind_value,
    lay_down_value,
    make_book,
)
from domain.rummy13.profiles import UnknownProfile


def book(text):
    return make_book(parse_cards(text))


def rejects(text, reason):
    with pytest.raises(BookError) as error:
        book(text)
    assert reason in str(error.value)


@pytest.mark.parametrize("module", [domain.red3.rules, domain.red3.profile])
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.failed == 0 and result.attempted > 0


def test_twos_and_jokers_are_wild_and_only_3h_3d_are_red_threes():
    assert [c for c in parse_cards("2S 2H JK 3S AS") if is_wild(c)] == parse_cards("2S 2H JK")
    assert [c for c in parse_cards("3H 3D 3S 3C 2H") if is_red_three(c)] == parse_cards("3H 3D")


# -- kinds -------------------------------------------------------------------------------
def test_kind_of_three_or_more_of_one_rank():
    made = book("QS QH QD QC QS")
    assert made.kind is BookKind.KIND and made.rank == 12 and len(made) == 5


def test_kind_may_hold_identical_cards():
    assert book("9H 9H 9H").kind is BookKind.KIND


def test_kind_of_black_threes_is_allowed():
    assert book("3S 3C 3S").kind is BookKind.KIND


def test_kind_with_one_wild():
    assert book("KS JK KD").kind is BookKind.KIND
    assert book("AS AH 2C").kind is BookKind.KIND


def test_book_needs_three_cards():
    rejects("7S 7H", "a book needs at least 3 cards, got 2")


def test_at_most_one_wild_per_book():
    rejects("7S 7H JK 2D", "2 wild cards (2s and jokers) in one book; at most 1")
    rejects("5S 2S JK", "at most 1")


def test_twos_are_always_wild_so_a_kind_of_twos_is_three_wilds():
    rejects("2S 2H 2D", "3 wild cards")


@pytest.mark.parametrize("text", ["3H 3D 3S", "3D 3D 3D", "3S 3C 3H", "4H 5H 3H"])
def test_no_red_three_in_any_book(text):
    rejects(text, "is a red three: red threes are never in a book")


def test_mixed_ranks_and_suits_is_no_book():
    rejects("7S 8H 9S", "neither a kind (one rank) nor a run (one suit)")


# -- runs --------------------------------------------------------------------------------
def test_run_of_one_suit_is_kept_low_to_high():
    made = book("8C 6C 7C")
    assert made.kind is BookKind.RUN and str(made) == "6C 7C 8C" and (made.low, made.high) == (6, 8)


@pytest.mark.parametrize(("text", "low", "high"), [("AS 2S 3S", 1, 3), ("QD KD AD", 12, 14)])
def test_ace_low_or_high(text, low, high):
    made = book(text)
    assert (made.low, made.high) == (low, high)


def test_run_never_wraps():
    rejects("KS AS 3S", "not consecutive")  # K-A-3 would wrap
    # With the 2 wild, K A 2 is not a wrap: the 2 stands for the Queen.
    assert book("KS AS 2S").describe() == "run QS-AS (2S as QS)"
    rejects("QC KC AC JK 2C", "2 wild cards")
    rejects("4H 5H 6H 7H 8H 9H TH JH QH KH AH JK", "no place left for JK")


def test_run_gap_needs_a_wild():
    rejects("5S 7S 8S", "not consecutive: missing 6S")
    made = book("5S JK 7S 8S")
    assert made.wild_at == 6 and str(made) == "5S JK 7S 8S"
    rejects("5S JK 8S", "one wild cannot fill 2 gaps (6S 7S)")


def test_run_holds_each_rank_once():
    rejects("5S 5S 6S 7S", "")


def test_wild_in_a_run_stands_for_a_specific_rank():
    # Not filling a gap, a wild stands on top unless it is written first.
    assert book("5C 6C JK").describe() == "run 5C-7C (JK as 7C)"
    assert book("JK 5C 6C").describe() == "run 4C-6C (JK as 4C)"
    # Past the Ace there is no room, so the wild goes below.
    assert book("KH AH JK").describe() == "run QH-AH (JK as QH)"
    # The same card cannot then be added where the wild stands.
    with pytest.raises(BookError, match="JK already stands for 7C"):
        book("5C 6C JK").add(parse_cards("7C"))


def test_red_suit_run_cannot_pass_the_red_three():
    # A wild may not stand for a red three either: the only gap would be 3D, so no book.
    rejects("AD 2D 4D", "one wild cannot fill 2 gaps")
    assert book("2H 4H 5H").describe() == "run 4H-6H (2H as 6H)"
    # Written first, the wild would be 3D: it goes on top instead.
    assert book("JK 4D 5D").describe() == "run 4D-6D (JK as 6D)"
    assert book("4D 5D 6D").kind is BookKind.RUN


def test_black_suit_run_through_three_is_fine():
    assert str(book("2S 3S 4S")) == "2S 3S 4S"


# -- adding to books --------------------------------------------------------------------
def test_add_like_cards_to_a_kind():
    assert str(book("7S 7H 7D").add(parse_cards("7S JK"))) == "7S 7H 7D 7S JK"
    with pytest.raises(BookError, match="8S cannot join a kind of 7s"):
        book("7S 7H 7D").add(parse_cards("8S"))
    with pytest.raises(BookError, match="at most 1"):
        book("7S 7H JK").add(parse_cards("2C"))
    with pytest.raises(BookError, match="red three"):
        book("3S 3C 3S").add(parse_cards("3D"))


def test_add_next_cards_higher_or_lower_to_a_run():
    run = book("5H 6H 7H")
    assert str(run.add(parse_cards("4H 8H 9H"))) == "4H 5H 6H 7H 8H 9H"
    assert run.add(parse_cards("8H JK")).describe() == "run 5H-9H (JK as 9H)"
    assert run.add(parse_cards("JK 9H")).describe() == "run 5H-9H (JK as 8H)"
    with pytest.raises(BookError, match="not consecutive: missing 8H"):
        run.add(parse_cards("9H"))
    # Written first the wild would stand low, but that is 3H: it goes on top.
    assert book("4H 5H 6H").add(parse_cards("JK")).describe() == "run 4H-7H (JK as 7H)"
    assert book("4C 5C 6C").add(parse_cards("JK")).describe() == "run 3C-6C (JK as 3C)"
    with pytest.raises(BookError, match="is not a hearts card"):
        run.add(parse_cards("8S"))


def test_add_to_a_run_with_the_ace():
    assert (book("JS QS KS").add(parse_cards("AS")).high) == 14
    assert (book("2C 3C 4C").add(parse_cards("AC")).low) == 1


def test_arranging_a_run_is_idempotent():
    for text in ["5C 6C JK", "JK 5C 6C", "KH AH JK", "5S JK 7S", "AS 2S 3S", "JK QD KD"]:
        made = book(text)
        assert book(str(made)) == made


# -- values ------------------------------------------------------------------------------
def test_kind_values():
    values = [kind_value(c) for c in parse_cards("3C 4S 9D TC JH QS KD AC 2H JK")]
    assert values == [5] * 3 + [10] * 4 + [15] * 3


def test_book_values_kinds_by_rank_runs_15_per_card():
    assert book("7S 7S 7H JK").value() == 5 + 5 + 5 + 15
    assert book("AS AH AD").value() == 45
    assert book("TS TH KS".replace("KS", "TD")).value() == 30
    assert book("3S 3C 3C").value() == 15  # black threes count in kinds
    assert book("4C 5C 6C 2C").value() == 60  # every run card, wild or not, 15


def test_held_cards_cost_their_kind_value_and_red_threes_30():
    penalties = [held_penalty(c) for c in parse_cards("3H 3D 3S 9C KD AS 2C JK")]
    assert penalties == [30, 30, 5, 5, 10, 15, 15, 15]


def test_lay_down_value_is_the_opening_measure():
    books = [book("KS KH KD"), book("9C TC JC")]
    assert lay_down_value(books) == 30 + 45


def test_rule_values_come_from_the_rules():
    rules = replace(get_red3_rules(), run_card_value=20)
    assert book("4C 5C 6C").value(rules) == 60


def test_unknown_rules_name_lists_the_known():
    with pytest.raises(UnknownProfile, match="known: standard"):
        get_red3_rules("nope")


# -- an independent oracle ------------------------------------------------------------------
def oracle_is_book(cards):
    """Deliberately simple: a book is valid if it matches some kind or some enumerated run.

    Runs are enumerated outright (every suit, every start, every length), each position
    filled by its natural card or by a wild; nothing is shared with domain.red3.rules.
    """
    if len(cards) < 3 or any(c.rank == 3 and c.suit in "HD" for c in cards):
        return False
    wilds = [c for c in cards if c.rank in (0, 2)]
    naturals = [c for c in cards if c.rank not in (0, 2)]
    if len(wilds) > 1:
        return False
    if len({c.rank for c in naturals}) == 1:
        return True
    want = sorted(str(c) for c in naturals)
    for suit in "SHDC":
        for low in range(1, 15):
            high = low + len(cards) - 1
            if high > 14 or (low == 1 and high == 14):
                continue
            positions = range(low, high + 1)
            if suit in "HD" and 3 in positions:
                continue
            # Which positions the naturals take, the rest (at most one) is the wild's.
            texts = [("A" if p in (1, 14) else "23456789TJQK"[p - 2]) + suit for p in positions]
            for hole in [None, *positions] if wilds else [None]:
                filled = sorted(t for p, t in zip(positions, texts, strict=True) if p != hole)
                if filled == want and (hole is None) == (not wilds):
                    return True
    return False


NATURAL_TEXTS = [r + s for s in "SHDC" for r in "A3456789TJQK"] + ["2S", "2H", "JK"]


@st.composite
def near_books(draw):
    """Kinds and runs, then maybe one card swapped for a wild or for any card, and shuffled."""
    if draw(st.booleans()):
        rank = draw(st.sampled_from("A3456789TJQK"))
        texts = [rank + draw(st.sampled_from("SHDC")) for _ in range(draw(st.integers(2, 5)))]
    else:
        suit = draw(st.sampled_from("SHDC"))
        low = draw(st.integers(1, 12))
        length = draw(st.integers(2, 6))
        texts = [
            ("A" if p in (1, 14) else "23456789TJQK"[p - 2]) + suit
            for p in range(low, min(low + length, 15))
        ]
    change = draw(st.sampled_from(["none", "wild", "any", "add_wild"]))
    if change == "wild":
        texts[draw(st.integers(0, len(texts) - 1))] = draw(st.sampled_from(["2C", "JK"]))
    elif change == "any":
        texts[draw(st.integers(0, len(texts) - 1))] = draw(st.sampled_from(NATURAL_TEXTS))
    elif change == "add_wild":
        texts.insert(draw(st.integers(0, len(texts))), draw(st.sampled_from(["2D", "JK"])))
    return draw(st.permutations(texts))


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.lists(st.sampled_from(NATURAL_TEXTS), min_size=1, max_size=7), near_books()))
def test_make_book_agrees_with_a_brute_force_oracle(texts):
    cards = parse_cards(texts)
    try:
        made = make_book(cards)
    except BookError:
        assert not oracle_is_book(cards), texts
        return
    assert oracle_is_book(cards), texts
    assert sorted(map(str, made.cards)) == sorted(texts)
    assert make_book(made.cards) == made


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=1, max_value=11), st.sampled_from("SC"), st.integers(3, 5))
def test_runs_built_from_consecutive_cards_are_books(low, suit, length):
    ranks = [r for r in range(low, min(low + length, 14))]
    texts = [("A" if r in (1, 14) else "23456789TJQK"[r - 2]) + suit for r in ranks]
    if len(texts) >= 3:
        assert oracle_is_book(parse_cards(texts)) and make_book(parse_cards(texts))
