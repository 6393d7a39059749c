"""Groups and the scoring of a submitted grouping: every rule and example of docs/rules.md §1 and
the seed texts (seeds/001 and seeds/003 carry the group examples, seeds/000 and 004 the
scoring cases)."""

import pytest

from domain.cards import JOKER, Card, CardError, parse_cards
from domain.rummy13.melds import (
    GroupKind,
    HandError,
    ScoringCase,
    classify,
    evaluate,
)
from domain.rummy13.profiles import RuleProfile, UnknownProfile

PURE, IMPURE, SET = GroupKind.PURE, GroupKind.IMPURE, GroupKind.SET
STRICT = RuleProfile(name="strict", wild_natural_is_pure=False)


def kind(cards, wild, profile=None):
    return classify(parse_cards(cards), Card.parse(wild), profile).kind


def reason(cards, wild, profile=None):
    verdict = classify(parse_cards(cards), Card.parse(wild), profile)
    assert verdict.kind is None, f"{cards} should be invalid, is {verdict.kind}"
    return verdict.reason


# -- sequences ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cards", "wild", "expected"),
    [
        # seeds/003 pure sequences
        ("5H 6H 7H", "2C", PURE),
        ("3S 4S 5S 6S", "2C", PURE),
        # seeds/001: 3♠ 4♠ 5♠ is a pure sequence
        ("3S 4S 5S", "9D", PURE),
        # Ace low and Ace high (docs/rules.md, seeds/003)
        ("AS 2S 3S", "9D", PURE),
        ("QS KS AS", "9D", PURE),
        ("KS AS QS", "9D", PURE),  # order of submission does not matter
        ("TS JS QS KS AS", "9D", PURE),
        ("AH 2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH", "2C", PURE),  # A..K, 13 cards
        ("2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH", "5C", PURE),  # 2..A, 5H in place
        # seeds/003 impure sequences with Q♠ wild
        ("6D 7D QS 9D", "QS", IMPURE),
        ("5S QH 7S 8S JK", "QS", IMPURE),
        # seeds/001: 7♠ wild, 2♠ 3♠ 7♣ is a sequence
        ("2S 3S 7C", "7S", IMPURE),
        # jokers extend either end, also past an Ace
        ("QS KS JK", "9D", IMPURE),
        ("JK QS KS", "9D", IMPURE),
        ("KS JK JK", "9D", IMPURE),
        ("AS JK JK", "9D", IMPURE),
        ("AS 3S JK", "9D", IMPURE),
        ("QS AS JK", "9D", IMPURE),  # Q K A with the joker as K
        ("4H 5H JK", "7D", IMPURE),
    ],
)
def test_sequences(cards, wild, expected):
    assert kind(cards, wild) is expected


def test_wild_card_in_its_own_place_keeps_a_sequence_pure():
    # docs/rules.md: `6S 7S 8S` with 7s wild is pure (option wild_natural_is_pure, default true).
    assert kind("6S 7S 8S", "7D") is PURE
    assert kind("6S 7S 8S", "7D", "deccan") is PURE
    assert kind("6S 7S 8S", "7D", STRICT) is IMPURE
    # A printed joker as indicator makes Aces wild; an Ace in its place is natural too.
    assert kind("AS 2S 3S", "JK") is PURE
    assert kind("QS KS AS", "JK") is PURE
    assert kind("AS 2S 3S", "JK", STRICT) is IMPURE
    # A wild card out of its own place is a stand-in.
    assert kind("6S 7H 8S", "7D") is IMPURE
    assert kind("6S 8S 9S 7S 7H", "7D") is IMPURE  # 7H stands in for 5S or TS


def test_printed_joker_never_keeps_a_sequence_pure():
    assert kind("5H 6H JK", "2C") is IMPURE
    assert kind("5H JK 7H", "2C") is IMPURE
    # classify decides purity in one pass over the cards: a printed joker first (no suit to
    # compare with), a rank twice, or cards out of order must not fool it.
    assert kind("JK 6H 7H", "2C") is IMPURE
    assert kind("JK JK 7H", "2C") is IMPURE
    assert kind("7H 5H 6H", "2C") is PURE
    assert kind("KH AH QH", "2C") is PURE
    assert reason("6H 5H 6H", "2C") == "6H appears twice in a sequence"


@pytest.mark.parametrize(
    ("cards", "wild", "why"),
    [
        ("KS AS 2S", "9D", "K-A-2 wraps around"),
        ("QS KS AS 2S", "9D", "Q-K-A-2 wraps around"),
        ("KS JK 2S", "9D", "K-A-2 wraps around"),
        ("AS 2S KS", "7D", "K-A-2 wraps around"),
        ("5S 6H 7S", "2C", "mixes suits"),
        ("5S 5H 6S", "2C", "mixes suits"),
        ("5S 9S JK", "2C", "not consecutive: 5S to 9S leaves 3 gap(s)"),
        ("5S 5S 6S", "2C", "5S appears twice in a sequence"),
        ("AS 6S JK JK", "2C", "not consecutive"),
    ],
)
def test_invalid_sequences_say_why(cards, wild, why):
    assert why in reason(cards, wild)


# -- sets ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cards", "wild"),
    [
        # seeds/003 sets with Q♠ wild
        ("AH AC AD", "QS"),
        ("8D 8C 8S 8H", "QS"),
        ("9D QS 9S 9H", "QS"),
        ("5D 5C 5S JK", "QS"),
        ("5D 5C QS JK", "QS"),
        ("5D 5C JK QH QS", "QS"),  # docs/rules.md: 5 cards with jokers added
        ("JS JH JD", "2C"),
        ("7S 7H JK", "2C"),
    ],
)
def test_sets(cards, wild):
    assert kind(cards, wild) is SET


def test_identical_cards_never_share_a_set():
    # docs/rules.md and seeds/000, 001, 004: 7♠ 7♠ 7♥ (and 6♠ 6♠ 6♥) are not sets.
    assert reason("7S 7S 7H", "2C") == "7S appears twice in a set"
    assert reason("6S 6S 6H", "2C") == "6S appears twice in a set"
    assert reason("6S 6H 6S JK", "2C") == "6S appears twice in a set"


def test_wild_cards_can_stand_in_for_a_duplicate():
    # With 7s wild, one 7S stands as itself and the other stands in: 6S/8S around it.
    assert kind("7S 7S 7H", "7D") is IMPURE


def test_group_sizes():
    assert reason("AS 2S", "9D") == "needs at least 3 cards, has 2"
    assert reason("JK", "9D") == "needs at least 3 cards, has 1"
    assert reason("", "9D") == "needs at least 3 cards, has 0"


def test_every_group_needs_a_card_standing_as_itself():
    # docs/rules.md: `7C JK JK` with 7s wild is valid (7C stands for itself), `JK JK JK` is not.
    assert kind("7C JK JK", "7D") is IMPURE
    assert "only printed jokers" in reason("JK JK JK", "7D")
    # Three wild-rank cards: one stands as itself, the others run on from it.
    assert kind("7C 7H 7S", "7D") is IMPURE
    assert kind("AC JK AH", JOKER) is IMPURE


def test_best_reading_counts_pure_then_impure_then_set():
    # Valid as a set (three 7s) and as an impure sequence: the sequence counts.
    assert kind("7S 7H 7C", "7D") is IMPURE
    # Valid as an impure sequence (JK as 5S) and as a set (5S 5H + JK): the sequence.
    assert kind("5S JK JK", "2C") is IMPURE
    assert kind("5S 5H JK", "2C") is SET


def test_classify_accepts_text_and_names_the_profile():
    assert classify(["as", "2s", "3s"], "9d", "rummycircle").kind is PURE
    with pytest.raises(UnknownProfile, match="known: deccan, rummycircle"):
        classify(["AS", "2S", "3S"], "9D", "pointsbet")
    with pytest.raises(CardError, match="'1Z' is not a card"):
        classify(["AS", "2S", "1Z"], "9D")


def test_verdict_shape():
    verdict = classify(parse_cards("4H 5H JK"), Card.parse("7D"))
    assert verdict.cards == tuple(parse_cards("4H 5H JK"))
    assert verdict.kind == "impure" and verdict.reason is None and verdict.is_sequence
    assert not classify(parse_cards("9C 9D 9H"), Card.parse("7D")).is_sequence


# -- evaluating a grouping --------------------------------------------------------------------


def groups_of(text):
    return [parse_cards(segment) for segment in text.split("|")]


def test_case_three_example_from_seed_001():
    # seeds/001 Case 3: K♣ Q♣ J♣, 2♦ 3♦ 4♦ Joker, 6♥ 6♦ 6♣, and 10, 8, 3 left: 21.
    result = evaluate(groups_of("KC QC JC | 2D 3D 4D JK | 6H 6D 6C"), parse_cards("TS 8H 3C"), "5H")
    assert result.case is ScoringCase.TWO_SEQUENCES
    assert result.kinds == ["pure", "impure", "set"]
    assert result.hand_score == 21 and result.points == 21
    assert result.counted == tuple(parse_cards("TS 8H 3C"))
    assert not result.valid_declaration
    assert result.reasons == ("3 card(s) not in a group: TS 8H 3C",)


def test_case_two_pure_sequence_only_excludes_that_sequence():
    # seeds/001 Case 2: only a pure sequence (K♣ Q♣ J♣): the other 10 cards count.
    # Sets do not help without a second sequence (docs/rules.md).
    result = evaluate(groups_of("KC QC JC | 6H 6D 6C"), parse_cards("2D 3D 4D JK TS 8H 3C"), "5H")
    assert result.case is ScoringCase.PURE_ONLY
    assert result.hand_score == 18 + 2 + 3 + 4 + 10 + 8 + 3
    assert len(result.counted) == 10
    assert "1 sequence(s): a declaration needs at least two, one of them pure" in result.reasons


def test_case_one_no_pure_sequence_counts_everything_capped_at_80():
    # seeds/001 Case 1 and Case 4: no pure sequence, all 13 cards count, at most 80 points.
    result = evaluate(
        groups_of("2D 3D JK | 6H 6D 6C | KS KH KD"),
        parse_cards("QC JC TS 8H"),
        "5H",
    )
    assert result.case is ScoringCase.NO_PURE_SEQUENCE
    assert result.hand_score == 2 + 3 + 18 + 30 + 10 + 10 + 10 + 8
    assert result.points == 80
    assert "no pure sequence" in result.reasons


def test_points_below_the_cap_are_awarded_as_is():
    # seeds/000: a hand score of 75 gives 75 points, 85 gives 80.
    result = evaluate([], parse_cards("KS KH KD KC QS QH QD 9C 9D 4S 3S 2S JK"), "5H")
    assert result.hand_score == 40 + 30 + 18 + 9 - 0 and result.points == 80
    low = evaluate([], parse_cards("2S 2H 3D 3C 4S 4H 5D 5C 6S 6H 8D 9C JK"), "7D")
    assert low.hand_score == 4 + 6 + 8 + 10 + 12 + 8 + 9 and low.points == low.hand_score


def test_card_points_and_jokers_score_zero():
    # J Q K A and T are 10, 2-9 face value, jokers (printed, wild rank) 0.
    result = evaluate([], parse_cards("AS KS QS JS TS 9H 2H 7C 7D JK 3C 4C 5D"), "7H")
    assert result.hand_score == 50 + 9 + 2 + 0 + 0 + 0 + 3 + 4 + 5
    # A printed joker as indicator: every Ace scores 0.
    aces = evaluate([], parse_cards("AS AH AD KS QS JS TS 9H 2H 3C 4C 5D 6D"), JOKER)
    assert aces.hand_score == 40 + 9 + 2 + 3 + 4 + 5 + 6


def test_valid_declaration_from_format_example():
    # docs/record-format.md's declaration, wild 7D.
    result = evaluate(
        [parse_cards(g) for g in ("AS 2S 3S", "4H 5H JK", "9D 9H 9S", "KS KD KC KH")], [], "7D"
    )
    assert result.valid_declaration and result.reasons == ()
    assert result.hand_score == 0 and result.points == 0
    assert result.to_json() == {
        "valid_declaration": True,
        "hand_score": 0,
        "points": 0,
        "groups": [
            ["AS", "2S", "3S"],
            ["4H", "5H", "JK"],
            ["9D", "9H", "9S"],
            ["KS", "KD", "KC", "KH"],
        ],
        "loose": [],
        "kinds": ["pure", "impure", "set", "set"],
    }


def test_declaration_needs_two_sequences_one_pure():
    # Two impure sequences and sets: no pure sequence.
    no_pure = evaluate(groups_of("AS 2S JK | 4H 5H 7C | 9D 9H 9S | KS KD KC KH"), [], "7D")
    assert not no_pure.valid_declaration and no_pure.reasons == ("no pure sequence",)
    assert no_pure.hand_score == 10 + 2 + 4 + 5 + 27 + 40
    # One pure sequence and sets: fewer than two sequences.
    one = evaluate(groups_of("AS 2S 3S | 4H 4S 4D | 9D 9H 9S | KS KD KC KH"), [], "7D")
    assert not one.valid_declaration and one.case is ScoringCase.PURE_ONLY
    # Two pure sequences are two sequences.
    two = evaluate(groups_of("AS 2S 3S | 4H 5H 6H | 9D 9H 9S | KS KD KC KH"), [], "7D")
    assert two.valid_declaration


def test_joker_only_group_counts_as_a_sequence():
    # 7C JK JK (7s wild) is an impure sequence, so with a pure one the hand has two.
    result = evaluate(groups_of("AS 2S 3S | 7C JK JK | 9D 9H 9S | KS KD KC KH"), [], "7D")
    assert result.kinds == ["pure", "impure", "set", "set"] and result.valid_declaration
    # With only printed jokers the group is invalid and counts as loose.
    fine = evaluate(groups_of("AS 2S 3S | JK JK 5C | 9D 9H 9S | KS KD KC KH"), [], "6C")
    assert fine.kinds == ["pure", "impure", "set", "set"]
    printed = evaluate(groups_of("AS 2S 3S 4S | JK JK | 9D 9H 9S | KS KD KC KH"), [], "7D")
    assert printed.kinds == ["pure", None, "set", "set"]
    assert printed.case is ScoringCase.PURE_ONLY


def test_an_invalid_group_counts_as_loose_and_says_why():
    # docs/record-format.md's show: ["QD", "2H", "8S"] is no group; cards not listed are loose.
    result = evaluate(groups_of("5C 6C 7C | QD 2H 8S | TH JH QH"), parse_cards("4S 4D 9S 9H"), "3D")
    assert result.kinds == ["pure", None, "pure"]
    assert result.groups[1].reason.startswith("mixes suits")
    assert result.case is ScoringCase.TWO_SEQUENCES
    assert result.hand_score == 10 + 2 + 8 + 4 + 4 + 9 + 9
    assert result.unmatched == tuple(parse_cards("QD 2H 8S 4S 4D 9S 9H"))
    assert any(r.startswith("group 2 (QD 2H 8S): mixes suits") for r in result.reasons)


def test_duplicates_from_two_decks_may_sit_in_different_groups():
    # Two 5S: one in a sequence, one in a set.
    result = evaluate(groups_of("4S 5S 6S | 5S 5H 5D | 9C TC JK | KS KD KC"), ["2H"], "8D")
    assert result.kinds == ["pure", "set", "impure", "set"]
    assert result.hand_score == 2


# -- bad input ----------------------------------------------------------------------------


def test_wrong_card_count():
    with pytest.raises(HandError, match="a hand has 13 cards, got 12"):
        evaluate(groups_of("AS 2S 3S | 4H 5H JK | 9D 9H 9S | KS KD KC"), [], "7D")
    with pytest.raises(HandError, match="a hand has 13 cards, got 14"):
        evaluate(groups_of("AS 2S 3S | 4H 5H JK | 9D 9H 9S | KS KD KC KH"), ["2C"], "7D")


def test_cards_beyond_the_decks():
    with pytest.raises(HandError, match="AS appears 3 times but 2 deck"):
        evaluate(groups_of("AS AS AS | 4H 5H JK | 9D 9H 9S | KS KD KC KH"), [], "7D")
    # The wild indicator is drawn from the same decks.
    with pytest.raises(HandError, match=r"7D appears 3 times \(counting the wild indicator\)"):
        evaluate(groups_of("7D 7D 3S | 4H 5H JK | 9D 9H 9S | KS KD KC KH"), [], "7D")
    with pytest.raises(HandError, match="JK appears 3 times"):
        evaluate(groups_of("JK JK JK | 4H 5H 6H | 9D 9H 9S | KS KD KC KH"), [], "7D")
    # A table with more decks is a profile with more decks.
    three = RuleProfile(name="three-decks", decks=3)
    assert evaluate(groups_of("AS AS AS | 4H 5H JK | 9D 9H 9S | KS KD KC KH"), [], "7D", three)


def test_bad_card_text():
    with pytest.raises(CardError, match=r"'1Z' is not a card \(rank A,2-9,T,J,Q,K"):
        evaluate([["AS", "2S", "1Z"]], ["4H"] * 10, "7D")
    with pytest.raises(CardError, match="'XX' is not a card"):
        evaluate([], parse_cards("AS 2S 3S 4S 5S 6S 7S 8S 9S TS JS QS"), "XX")


def test_unknown_profile():
    with pytest.raises(UnknownProfile, match=r"unknown rule profile 'nope' \(known: deccan"):
        evaluate(groups_of("AS 2S 3S | 4H 5H JK | 9D 9H 9S | KS KD KC KH"), [], "7D", "nope")


# classify and score_grouping build their frozen answers straight into __dict__ (speed):
# they must be the very objects the dataclasses' own constructors make.
BUILT_GROUPS = [
    ("AS 2S 3S", "7D"),  # pure
    ("4H 5H JK", "7D"),  # impure
    ("7C JK JK", "7D"),  # a wild card standing as itself
    ("9H 9D 9C", "7D"),  # set
    ("9H 9H 9C", "7D"),  # a card twice in a set
    ("KS AS 2S", "7D"),  # wraps around
    ("JK JK", "7D"),  # too short
    ("JK JK JK", "7D"),  # printed jokers only
    ("5H 9C JK", "7D"),  # mixes suits and ranks
]


@pytest.mark.parametrize(("cards", "wild"), BUILT_GROUPS)
def test_verdicts_equal_the_constructors(cards, wild):
    from dataclasses import FrozenInstanceError, asdict, fields

    from domain.rummy13.melds import GroupVerdict

    verdict = classify(parse_cards(cards), Card.parse(wild))
    made = GroupVerdict(verdict.cards, verdict.kind, verdict.reason)
    assert type(verdict) is GroupVerdict
    assert verdict == made and hash(verdict) == hash(made)
    assert vars(verdict) == vars(made)
    assert [f.name for f in fields(verdict)] == list(vars(verdict))
    assert asdict(verdict) == asdict(made)
    with pytest.raises(FrozenInstanceError):
        verdict.kind = None


def test_evaluations_equal_the_constructor():
    from dataclasses import FrozenInstanceError, fields

    from domain.rummy13.melds import HandEvaluation

    for groups, loose in (
        (["AS 2S 3S", "4H 5H JK"], "9C 9D KS KD 2C 5D 8H"),  # two sequences, loose cards
        (["AS 2S 3S", "4H 5H 6H 7H", "9C 9D 9S", "KS KD KH"], ""),  # a declaration
        (["AS 2S 3S"], "4H 5H JK 9C 9D KS KD 2C 5D 8H"),  # the pure sequence only
        (["4H 5H JK", "9C 9D 9S"], "AS 2S 3H KS KD 2C 5D"),  # no pure sequence
    ):
        result = evaluate([parse_cards(g) for g in groups], parse_cards(loose), "7D")
        made = HandEvaluation(**{f.name: getattr(result, f.name) for f in fields(result)})
        assert type(result) is HandEvaluation
        assert result == made and vars(result) == vars(made)
        assert [f.name for f in fields(result)] == list(vars(result))
        with pytest.raises(FrozenInstanceError):
            result.hand_score = 0
