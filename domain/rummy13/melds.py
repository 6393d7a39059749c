"""Groups (melds) of 13-card rummy and the score of a submitted grouping (docs/rules.md §1).

A group is a pure sequence, an impure sequence or a set; anything else is invalid and says why:

>>> from domain.cards import parse_cards
>>> wild = Card.parse("7D")
>>> classify(parse_cards("6S 7S 8S"), wild).kind        # 7S in its own place keeps it pure
<GroupKind.PURE: 'pure'>
>>> classify(parse_cards("7C JK JK"), wild).kind        # 7C stands as itself, jokers as 8C 9C
<GroupKind.IMPURE: 'impure'>
>>> classify(parse_cards("7S 7S 7H"), Card.parse("2C")).reason
'7S appears twice in a set'
>>> classify(parse_cards("KS AS 2S"), wild).reason
'K-A-2 wraps around (an Ace is low, A-2-3, or high, Q-K-A, never both)'

:func:`evaluate` scores a grouping as a player submitted it (a declaration or a show); the
best grouping of a hand is :mod:`domain.rummy13.solver`'s job.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cache
from typing import cast

from domain.cards import RANKS, Card, format_cards, full_deck, wild_rank
from domain.rummy13.profiles import RuleProfile, get_profile

MIN_GROUP = 3
# Ace low (A..K) or Ace high (2..A): never 14 places, so no sequence is longer than 13.
MAX_SEQUENCE = 13
ACE_HIGH = 14


class HandError(ValueError):
    """A hand or grouping that cannot be evaluated: wrong card count, cards beyond the deck."""


class GroupKind(StrEnum):
    PURE = "pure"
    IMPURE = "impure"
    SET = "set"


# The members as plain names: looking one up on its enum class costs ten times as much, and
# the solver classifies and scores every best grouping it finds.
_PURE, _IMPURE, _SET = GroupKind.PURE, GroupKind.IMPURE, GroupKind.SET


@dataclass(frozen=True)
class GroupVerdict:
    """One group as classified: ``kind`` is None for an invalid group, ``reason`` says why."""

    cards: tuple[Card, ...]
    kind: GroupKind | None
    reason: str | None = None

    @property
    def is_sequence(self) -> bool:
        return self.kind is _PURE or self.kind is _IMPURE

    @property
    def is_valid(self) -> bool:
        return self.kind is not None

    def __str__(self) -> str:
        label = self.kind.value if self.kind else f"invalid: {self.reason}"
        return f"{format_cards(self.cards)} ({label})"


# Building a frozen dataclass through its __init__ sets each field by object.__setattr__,
# about three times the cost of putting the fields into its __dict__; classify and
# score_grouping run for every arrangement the solver finds, so they build their answers
# the second way (tests/test_melds.py holds both equal to the constructors').
_new = object.__new__


def _verdict(
    cards: tuple[Card, ...], kind: GroupKind | None, reason: str | None = None
) -> GroupVerdict:
    """``GroupVerdict(cards, kind, reason)``, built straight into its ``__dict__``."""
    verdict = _new(GroupVerdict)
    fields = verdict.__dict__
    fields["cards"] = cards
    fields["kind"] = kind
    fields["reason"] = reason
    return verdict


_JUST_CARDS = {Card}


def classify(
    cards: Iterable[Card | str], wild: Card | str, profile: RuleProfile | str | None = None
) -> GroupVerdict:
    """Classify one group; when it is valid in several ways the best for the player counts.

    Jokers are the printed ``JK`` and every card of the wild rank. A wild-rank card may also
    stand as itself; a printed joker never does, and every group needs one card that does.
    """
    given = tuple(cards)
    if set(map(type, given)) == _JUST_CARDS:  # no texts among them (a type test per card in C)
        parsed = cast("tuple[Card, ...]", given)
    else:
        parsed = tuple(Card.parse(card) for card in given)
    profile = get_profile(profile)
    wild_rank_ = wild_rank(wild if type(wild) is Card else Card.parse(wild))
    return classify_cards(parsed, wild_rank_, profile.wild_natural_is_pure)


def classify_cards(
    cards: tuple[Card, ...], wild_rank_: int, wild_natural_is_pure: bool
) -> GroupVerdict:
    """:func:`classify` of cards already parsed, given the wild rank and the profile's
    reading of a wild card in its place (the solver checks every group it lays this way)."""
    if len(cards) < MIN_GROUP:
        return _verdict(cards, None, f"needs at least {MIN_GROUP} cards, has {len(cards)}")
    # Pure first, in one pass (the solver lays a pure sequence in every grouping it checks):
    # one suit, no printed joker, no rank twice (bit r: rank r), the ranks one run. A
    # printed joker has no suit, so it stops the pass unless it comes first; then a second
    # printed joker (rank 0 twice) or a card with a suit stops it.
    suit = cards[0].suit
    held = 0
    for card in cards:
        bit = 1 << card.rank
        if held & bit or card.suit != suit:
            break
        held |= bit
    else:
        wild_fits = wild_natural_is_pure or not held >> wild_rank_ & 1
        if not held & 1 and wild_fits and _one_run(held):
            return _verdict(cards, _PURE)
    # Cards that can only stand as themselves; wild-rank cards may stand in for anything.
    fixed = []
    suits = set()
    ranks = set()
    for card in cards:
        rank = card.rank
        if rank != 0 and rank != wild_rank_:
            fixed.append(card)
            suits.add(card.suit)
            ranks.add(rank)
    if not fixed:
        if all(card.rank == 0 for card in cards):
            return _verdict(
                cards,
                None,
                "only printed jokers: a group needs at least one card standing as itself",
            )
        # A wild-rank card stands as itself and the other jokers run on from it. Three or
        # more cards of one rank are never consecutive, so this is never pure.
        kind = _IMPURE if len(cards) <= MAX_SEQUENCE else _SET
        return _verdict(cards, kind)
    if len(suits) == 1:
        failure = _sequence_failure(fixed, len(cards))
        if failure is None:
            return _verdict(cards, _IMPURE)
        if len(ranks) > 1:
            return _verdict(cards, None, failure)
    if len(ranks) == 1:
        if len(suits) == len(fixed):
            return _verdict(cards, _SET)
        repeated = _first_repeat(fixed)
        times = "twice" if repeated[1] == 2 else f"{repeated[1]} times"
        return _verdict(cards, None, f"{repeated[0]} appears {times} in a set")
    suit_text = ", ".join(suit for suit in "SHDC" if suit in suits)
    return _verdict(
        cards,
        None,
        f"mixes suits ({suit_text}) and ranks: a sequence needs one suit, a set one rank",
    )


def _one_run(held: int) -> bool:
    """Whether the ranks of ``held`` (bit r: rank r, none twice) are consecutive, the Ace
    low or high."""
    # Distinct ranks are consecutive when their bits are one run: adding the lowest bit
    # carries through all of them.
    if (held + (held & -held)) & held == 0:
        return True
    if held & 2:  # try the Ace high
        held ^= 2 | 1 << ACE_HIGH
        return (held + (held & -held)) & held == 0
    return False


def _sequence_failure(fixed: Sequence[Card], size: int) -> str | None:
    """Why ``fixed`` (one suit) plus ``size - len(fixed)`` jokers is no sequence; None if it is."""
    held = 0  # bit r: rank r
    for card in fixed:
        held |= 1 << card.rank
    if held.bit_count() == len(fixed) and size <= MAX_SEQUENCE:  # no rank twice: quick yes
        if held.bit_length() - (held & -held).bit_length() < size:  # fits from low to high
            return None
        if held & 2:  # the Ace high
            held ^= 2 | 1 << ACE_HIGH
            if held.bit_length() - (held & -held).bit_length() < size:
                return None
    ranks = sorted(card.rank for card in fixed)
    if len(set(ranks)) != len(ranks):
        repeated = _first_repeat(fixed)
        times = "twice" if repeated[1] == 2 else f"{repeated[1]} times"
        return f"{repeated[0]} appears {times} in a sequence"
    if size > MAX_SEQUENCE:
        return f"has {size} cards but a sequence runs at most from A to K (13 cards)"
    jokers = size - len(fixed)
    if ranks[-1] - ranks[0] + 1 <= size:
        return None
    span = ranks[-1] - ranks[0] + 1
    if ranks[0] == 1:
        high = sorted(ACE_HIGH if rank == 1 else rank for rank in ranks)
        if high[-1] - high[0] + 1 <= size:
            return None
        span = min(span, high[-1] - high[0] + 1)
    # The shortest way round the ranks as a circle shows whether only a wrap would do.
    start, length = _shortest_arc(ranks)
    if length <= size:
        letters = [RANKS[(start - 1 + step) % 13] for step in range(length)]
        return (
            f"{'-'.join(letters)} wraps around (an Ace is low, A-2-3, or high, Q-K-A, never both)"
        )
    needed = span - len(fixed)
    low = min(fixed, key=lambda card: card.rank)
    top = max(fixed, key=lambda card: card.rank)
    return (
        f"not consecutive: {low} to {top} leaves {needed} gap(s) and the group has "
        f"{jokers} joker(s) to fill them"
    )


def _shortest_arc(ranks: Sequence[int]) -> tuple[int, int]:
    """(first rank, length) of the shortest stretch of the rank circle A..K,A covering ``ranks``."""
    present = sorted(set(ranks))
    best = (present[0], 14)
    for index, start in enumerate(present):
        end = present[index - 1]
        length = (end - start) % 13 + 1
        if length < best[1]:
            best = (start, length)
    return best


def _first_repeat(cards: Sequence[Card]) -> tuple[Card, int]:
    """The first card of ``cards`` held more than once, and how often (callers know one is)."""
    counts = Counter(cards)
    for card in cards:
        if counts[card] > 1:
            return card, counts[card]
    raise AssertionError("no card repeats")


_FACE_POINTS = tuple(Card(rank, "S").face_points if rank else 0 for rank in range(14))


class ScoringCase(StrEnum):
    """Which cards of a losing hand count (docs/rules.md §1.6)."""

    NO_PURE_SEQUENCE = "no_pure_sequence"  # all 13 cards count
    PURE_ONLY = "pure_but_fewer_than_two_sequences"  # all but the pure sequence count
    TWO_SEQUENCES = "two_sequences_with_pure"  # only cards outside valid groups count


_NO_PURE_SEQUENCE = ScoringCase.NO_PURE_SEQUENCE
_PURE_ONLY = ScoringCase.PURE_ONLY
_TWO_SEQUENCES = ScoringCase.TWO_SEQUENCES


@dataclass(frozen=True)
class HandEvaluation:
    """A 13-card hand as grouped: the case that applies, the score, and the declaration verdict.

    ``groups`` are the groups as submitted, each with its verdict; an invalid group
    (``kind`` None, ``reason`` set) counts as loose cards. ``loose`` are the cards submitted
    outside any group. ``hand_score`` is before the cap, ``points`` after it.
    """

    groups: tuple[GroupVerdict, ...]
    loose: tuple[Card, ...]
    case: ScoringCase
    counted: tuple[Card, ...]
    hand_score: int
    points: int
    valid_declaration: bool
    reasons: tuple[str, ...]

    @property
    def kinds(self) -> list[str | None]:
        return [group.kind.value if group.kind else None for group in self.groups]

    @property
    def cards(self) -> tuple[Card, ...]:
        """All 13 cards: the groups' in order, then the loose ones."""
        return tuple(card for group in self.groups for card in group.cards) + self.loose

    @property
    def unmatched(self) -> tuple[Card, ...]:
        """Cards outside valid groups: the loose ones and those of invalid groups."""
        bad = tuple(card for group in self.groups if not group.is_valid for card in group.cards)
        return bad + self.loose

    def to_json(self) -> dict:
        """The `rummy-ledger hand --batch` output line for this hand."""
        return {
            "valid_declaration": self.valid_declaration,
            "hand_score": self.hand_score,
            "points": self.points,
            "groups": [[str(card) for card in group.cards] for group in self.groups],
            "loose": [str(card) for card in self.loose],
            "kinds": self.kinds,
        }


def evaluate(
    groups: Sequence[Sequence[Card | str]],
    loose: Sequence[Card | str],
    wild: Card | str,
    profile: RuleProfile | str | None = None,
) -> HandEvaluation:
    """Score a grouping as submitted: ``groups`` plus ``loose`` must be the whole hand.

    >>> from domain.cards import parse_cards
    >>> result = evaluate([parse_cards("AS 2S 3S"), parse_cards("4H 5H JK")],
    ...                   parse_cards("9C 9D KS KD 2C 5D 8H"), "7D")
    >>> result.case.value, result.hand_score, result.points, result.valid_declaration
    ('two_sequences_with_pure', 53, 53, False)
    """
    profile = get_profile(profile)
    wild_card = Card.parse(wild)
    parsed = [tuple(Card.parse(card) for card in group) for group in groups]
    loose_cards = tuple(Card.parse(card) for card in loose)
    hand = [card for group in parsed for card in group] + list(loose_cards)
    check_hand(hand, wild_card, profile)
    verdicts = tuple(classify(group, wild_card, profile) for group in parsed)
    return score_grouping(verdicts, loose_cards, wild_card, profile)


def score_grouping(
    verdicts: tuple[GroupVerdict, ...], loose: tuple[Card, ...], wild: Card, profile: RuleProfile
) -> HandEvaluation:
    """Apply the scoring cases to already classified groups (no input checks)."""
    # Written for speed: the solver scores every best grouping it finds through here.
    pure = []
    sequences = 0
    invalid = False
    for verdict in verdicts:
        kind = verdict.kind
        if kind is _PURE:
            pure.append(verdict)
            sequences += 1
        elif kind is _IMPURE:
            sequences += 1
        elif kind is None:
            invalid = True
    if not pure:
        case = _NO_PURE_SEQUENCE
        counted = tuple([card for verdict in verdicts for card in verdict.cards]) + loose
    elif sequences < 2:
        case = _PURE_ONLY
        first = pure[0]
        counted = tuple(
            [card for verdict in verdicts if verdict is not first for card in verdict.cards]
        )
        counted += loose
    else:
        case = _TWO_SEQUENCES
        if invalid:
            counted = tuple(
                [card for verdict in verdicts if verdict.kind is None for card in verdict.cards]
            )
            counted += loose
        else:
            counted = tuple(loose)
    wild_rank_ = wild_rank(wild)
    points = _FACE_POINTS
    hand_score = 0
    for card in counted:
        rank = card.rank
        if rank != wild_rank_:
            hand_score += points[rank]
    reasons = _declaration_faults(verdicts, loose, len(pure), sequences, invalid)
    # HandEvaluation(...), built straight into its __dict__ (see _verdict).
    result = _new(HandEvaluation)
    fields = result.__dict__
    fields["groups"] = verdicts
    fields["loose"] = loose
    fields["case"] = case
    fields["counted"] = counted
    fields["hand_score"] = hand_score
    fields["points"] = min(hand_score, profile.max_points)
    fields["valid_declaration"] = not reasons
    fields["reasons"] = reasons
    return result


def _declaration_faults(
    verdicts: Sequence[GroupVerdict],
    loose: Sequence[Card],
    pure: int,
    sequences: int,
    invalid: bool,
) -> tuple[str, ...]:
    """Why the grouping is no valid declaration (none: it is one). ``invalid``: whether any
    group is invalid (False spares looking through them for reasons)."""
    reasons = []
    if invalid:
        for number, verdict in enumerate(verdicts, 1):
            if verdict.kind is None:
                reasons.append(f"group {number} ({format_cards(verdict.cards)}): {verdict.reason}")
    if loose:
        reasons.append(f"{len(loose)} card(s) not in a group: {format_cards(loose)}")
    if not pure:
        reasons.append("no pure sequence")
    if sequences < 2:
        reasons.append(
            f"{sequences} sequence(s): a declaration needs at least two, one of them pure"
        )
    return tuple(reasons)


def check_hand(hand: Sequence[Card], wild: Card, profile: RuleProfile) -> None:
    """Raise :class:`HandError` unless ``hand`` is a full hand the table's decks can hold.

    The wild indicator is a card drawn from the same decks, so it counts against them too.
    """
    if len(hand) != profile.hand_size:
        raise HandError(f"a hand has {profile.hand_size} cards, got {len(hand)}")
    counts: dict[tuple, int] = {(wild.rank, wild.suit): 1}
    for card in hand:  # by (rank, suit): cheaper to hash than the card itself
        key = (card.rank, card.suit)
        counts[key] = counts.get(key, 0) + 1
    most = max(counts.values())
    if most <= profile.decks and (0, None) not in counts:
        return  # no card more often than there are packs, and no printed joker
    available = _deck(profile.decks, profile.jokers_per_deck)
    for (rank, suit), count in counts.items():
        card = Card(rank, suit)
        if count > available.get(card, 0):
            with_wild = " (counting the wild indicator)" if card == wild else ""
            times = "once" if count == 1 else f"{count} times"
            raise HandError(
                f"{card} appears {times}{with_wild} but {profile.decks} deck(s) with "
                f"{profile.jokers_per_deck} printed joker(s) each hold only "
                f"{available.get(card, 0)}"
            )


@cache
def _deck(decks: int, jokers_per_deck: int) -> dict[Card, int]:
    return dict(full_deck(decks, jokers_per_deck))
