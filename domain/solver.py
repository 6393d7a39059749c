"""The best grouping of a 13-card hand: exact minimum hand score, and whether it can declare.

>>> from domain.cards import parse_cards
>>> hand = parse_cards("AS 2S 3S 4H 5H JK 9C 9D 9H KS KD 2C 5D")
>>> min_hand_score(hand, "7D")
27
>>> best = best_grouping(hand, "7D")
>>> [str(group) for group in best.groups]
['AS 2S 3S (pure)', '4H 5H JK (impure)', '9H 9D 9C (set)']
>>> declaration(hand, "7D") is None
True

How it works (docs/rules-engine.md has the long version). The hand score is the minimum of
three candidates, one per scoring case: all cards; all cards less the best pure sequence;
and the least loose points of any arrangement with two sequences, one pure. For the last,
every choice of sets is tried; for each, the cards left in every suit are split into
sequences by an exhaustive search whose result (a small table: jokers used, pure and
sequence counts, loose points) depends only on that suit's cards and is cached; the four
suit tables are then combined under the joker budget.

Jokers are the printed jokers and the wild-rank cards. A wild-rank card either stands in
for anything (then it is one of the hand's interchangeable jokers) or stands as itself in a
sequence of its own suit; the search treats the latter as a zero-point card of that suit
that uses up one joker, so joker-only groups such as ``7C JK JK`` come out naturally.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import lru_cache
from itertools import combinations, product

from domain.cards import ALL_CARDS, SUITS, Card, wild_rank
from domain.melds import (
    MAX_SEQUENCE,
    GroupKind,
    HandError,
    HandEvaluation,
    check_hand,
    classify,
    score_grouping,
)
from domain.profiles import RuleProfile, get_profile

__all__ = ["HandError", "best_grouping", "declaration", "min_hand_score"]

ACE_HIGH = 14
# Places in a suit run from 1 (Ace low) to 14 (Ace high); card points by place.
PLACE_POINTS = (0, 10, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 10, 10, 10)
RANK_BITS = 4  # a suit's cards as one int: 4 bits of count per rank
NO_SEQUENCES = 0  # (pure, sequences) packed as pure * 3 + min(sequences, 2)
GOAL = 5  # one pure sequence and at least two sequences
_STATE_PURE_SEQS = ((0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2))
# Combining two (pure, sequences) states, capped at (1, 2).
_MERGE = tuple(
    tuple(min(1, a[0] + b[0]) * 3 + min(2, a[1] + b[1]) for b in _STATE_PURE_SEQS)
    for a in _STATE_PURE_SEQS
)


class _Hand:
    """A hand broken down for the search: per-suit card counts, jokers, points."""

    __slots__ = ("codes", "jokers", "printed", "total", "wild_rank", "wilds")

    def __init__(self, cards: Sequence[Card], wild_rank_: int) -> None:
        codes = [0, 0, 0, 0]
        wilds = [0, 0, 0, 0]
        printed = total = 0
        for card in cards:
            rank = card.rank
            if rank == 0:
                printed += 1
            elif rank == wild_rank_:
                wilds[_SUIT_INDEX[card.suit]] += 1
            else:
                codes[_SUIT_INDEX[card.suit]] += 1 << (RANK_BITS * (rank - 1))
                total += PLACE_POINTS[rank]
        self.codes = codes
        self.wilds = wilds
        self.printed = printed
        self.jokers = printed + sum(wilds)
        self.total = total
        self.wild_rank = wild_rank_


_SUIT_INDEX = {suit: index for index, suit in enumerate(SUITS)}


def _count(code: int, rank: int) -> int:
    return (code >> (RANK_BITS * (rank - 1))) & 15


# -- the best pure sequence ------------------------------------------------------------------


def _pure_places(hand: _Hand, suit: int, wild_pure: bool) -> int:
    """Bit mask of the places in ``suit`` a card can fill as itself in a pure sequence."""
    code = hand.codes[suit]
    mask = 0
    for rank in range(1, 14):
        if (code >> (RANK_BITS * (rank - 1))) & 15:
            mask |= 1 << rank
    if wild_pure and hand.wilds[suit]:
        mask |= 1 << hand.wild_rank
    if mask & 2:
        mask |= 1 << ACE_HIGH
    return mask


@lru_cache(maxsize=1 << 14)
def _best_run(mask: int, zero_place: int) -> tuple[int, int, int]:
    """(points, first, last) of the best run of 3+ places in ``mask``; points -1 if none.

    ``zero_place`` holds a wild-rank card (worth 0) rather than a natural card.
    """
    best = (-1, 0, 0)
    if mask == (0b111111111111111 & ~1):  # all 14 places: a run may cover 13 of them
        points = sum(PLACE_POINTS[1:14]) - (10 if zero_place == 1 else PLACE_POINTS[zero_place])
        return (points, 1, 13)
    place = 1
    while place <= ACE_HIGH:
        if not mask >> place & 1:
            place += 1
            continue
        first = place
        points = 0
        while place <= ACE_HIGH and mask >> place & 1:
            is_zero = place == zero_place or (zero_place == 1 and place == ACE_HIGH)
            points += 0 if is_zero else PLACE_POINTS[place]
            place += 1
        if place - first >= 3 and points > best[0]:
            best = (points, first, place - 1)
    return best


def _best_pure(hand: _Hand, wild_pure: bool) -> tuple[int, int, int, int]:
    """(points, suit, first, last) of the best pure sequence; points -1 when there is none."""
    best = (-1, 0, 0, 0)
    zero_place = hand.wild_rank if wild_pure else 0
    for suit in range(4):
        mask = _pure_places(hand, suit, wild_pure)
        if mask & (mask >> 1) & (mask >> 2):
            points, first, last = _best_run(mask, zero_place if hand.wilds[suit] else 0)
            if points > best[0]:
                best = (points, suit, first, last)
    return best


# -- one suit's sequences ----------------------------------------------------------------------


@lru_cache(maxsize=1 << 16)
def _suit_table(
    code: int, wild_count: int, wild_rank_: int, wild_pure: bool, budget: int
) -> tuple[tuple[tuple[int, int, int], ...], tuple[tuple[tuple[int, ...], ...], ...]]:
    """Every worthwhile way to split one suit's cards into sequences and loose cards.

    Returns (entries, witnesses): each entry is (jokers used, pure-and-sequences state,
    loose points), none dominated by another; its witness lists the sequences as tuples of
    places (1..14) of the cards standing as themselves. ``wild_count`` wild-rank cards of
    this suit may stand as themselves (each then uses up one of the hand's jokers).
    """
    counts = [0] * 15
    for rank in range(2, 14):
        counts[rank] = _count(code, rank)
    wild_places: tuple[int, ...] = ()
    if wild_count:
        wild_places = (1, ACE_HIGH) if wild_rank_ == 1 else (wild_rank_,)
    # An Ace sits low or high; try every split of the copies (and of wild Aces).
    aces = wild_count if wild_rank_ == 1 else _count(code, 1)
    memo: dict[tuple[int, ...], dict] = {}
    found: dict[tuple[int, int], tuple[int, tuple]] = {}
    if wild_count and wild_rank_ != 1:
        counts[wild_rank_] = wild_count
    for low in range(aces + 1):
        counts[1], counts[ACE_HIGH] = low, aces - low
        for key, value in _split(tuple(counts), wild_places, wild_pure, budget, memo).items():
            if key not in found or value[0] < found[key][0]:
                found[key] = value
    entries, witnesses = [], []
    for (used, state), (loose, witness) in _pareto(found):
        entries.append((used, state, loose))
        witnesses.append(witness)
    return tuple(entries), tuple(witnesses)


def _split(
    counts: tuple[int, ...],
    wild_places: tuple[int, ...],
    wild_pure: bool,
    budget: int,
    memo: dict,
) -> dict[tuple[int, int], tuple[int, tuple]]:
    """{(jokers used, state): (least loose points, sequences)} for the cards in ``counts``.

    The lowest card left is either loose or the lowest card standing as itself in a
    sequence; that sequence takes any choice of higher cards within 13 places.
    """
    cached = memo.get(counts)
    if cached is not None:
        return cached
    low = next((place for place in range(1, 15) if counts[place]), 0)
    if not low:
        return {(0, NO_SEQUENCES): (0, ())}
    result: dict[tuple[int, int], tuple[int, tuple]] = {}
    rest = list(counts)
    rest[low] -= 1
    low_is_wild = low in wild_places
    points = 0 if low_is_wild else PLACE_POINTS[low]
    for key, (loose, witness) in _split(tuple(rest), wild_places, wild_pure, budget, memo).items():
        _keep(result, key, loose + points, witness)
    higher = [place for place in range(low + 1, min(ACE_HIGH, low + 12) + 1) if counts[place]]
    for size in range(len(higher) + 1):
        for chosen in combinations(higher, size):
            span = (chosen[-1] if chosen else low) - low + 1
            fillers = max(span, 3) - size - 1
            wild_used = low_is_wild + sum(place in wild_places for place in chosen)
            cost = fillers + wild_used
            if cost > budget:
                continue
            pure = 1 if fillers == 0 and (wild_used == 0 or wild_pure) else 0
            remaining = rest.copy()
            for place in chosen:
                remaining[place] -= 1
            sequence = (low, *chosen)
            for (used, state), (loose, witness) in _split(
                tuple(remaining), wild_places, wild_pure, budget, memo
            ).items():
                if used + cost <= budget:
                    merged = _MERGE[state][3 * pure + 1]
                    _keep(result, (used + cost, merged), loose, (*witness, sequence))
    memo[counts] = result
    return result


def _keep(result: dict, key: tuple[int, int], loose: int, witness: tuple) -> None:
    current = result.get(key)
    if current is None or loose < current[0]:
        result[key] = (loose, witness)


def _pareto(found: dict) -> list:
    """Drop entries another entry beats: no more jokers, no fewer sequences, no more loose."""
    items = sorted(found.items(), key=lambda item: (item[1][0], item[0][0]))
    kept: list = []
    for (used, state), value in items:
        pure, sequences = _STATE_PURE_SEQS[state]
        if any(
            other_used <= used
            and _STATE_PURE_SEQS[other_state][0] >= pure
            and _STATE_PURE_SEQS[other_state][1] >= sequences
            for (other_used, other_state), _ in kept
        ):
            continue
        kept.append(((used, state), value))
    return kept


# -- sets -------------------------------------------------------------------------------------


def _set_choices(hand: _Hand, rank: int) -> list[tuple[tuple[int, ...], int, tuple]]:
    """Ways to lay sets of ``rank``: (cards taken per suit, jokers needed, sets as suit tuples).

    A set of one natural card and two jokers is left out: the same three cards make an
    impure sequence, which is never worse.
    """
    available = [_count(code, rank) for code in hand.codes]
    choices: list[tuple[tuple[int, ...], int, tuple]] = []

    def extend(left: list[int], jokers: int, sets: tuple, smallest: tuple) -> None:
        choices.append((tuple(a - b for a, b in zip(available, left, strict=True)), jokers, sets))
        suits = [suit for suit in range(4) if left[suit]]
        for size in range(len(suits), 1, -1):
            for chosen in combinations(suits, size):
                if smallest and (size, chosen) > smallest:
                    continue  # each collection of sets once, largest set first
                taken = left.copy()
                for suit in chosen:
                    taken[suit] -= 1
                extend(taken, jokers + (1 if size == 2 else 0), (*sets, chosen), (size, chosen))

    extend(available.copy(), 0, (), ())
    return choices


# -- the search -------------------------------------------------------------------------------


def _two_sequences(hand: _Hand, wild_pure: bool) -> tuple[int, tuple] | None:
    """Least loose points with two sequences, one pure, and the choice of sets behind it."""
    per_rank = []
    for rank in range(1, 14):
        if rank == hand.wild_rank:
            continue
        present = sum(1 for code in hand.codes if _count(code, rank))
        if present >= 2:
            choices = [c for c in _set_choices(hand, rank) if c[1] <= hand.jokers]
            if len(choices) > 1:
                per_rank.append((rank, choices))
    best: tuple[int, tuple] | None = None
    for combo in product(*(choices for _, choices in per_rank)):
        jokers = sum(choice[1] for choice in combo)
        if jokers > hand.jokers:
            continue
        codes = hand.codes.copy()
        for (rank, _), (taken, _, _) in zip(per_rank, combo, strict=True):
            shift = RANK_BITS * (rank - 1)
            for suit in range(4):
                codes[suit] -= taken[suit] << shift
        budget = hand.jokers - jokers
        loose = _combine(hand, codes, budget, wild_pure)
        if loose is not None and (best is None or loose < best[0]):
            best = (loose, combo)
    if best is None:
        return None
    return best[0], tuple(
        (rank, choice) for (rank, _), choice in zip(per_rank, best[1], strict=True)
    )


def _tables(hand: _Hand, codes: list[int], budget: int, wild_pure: bool) -> Iterator:
    for suit in range(4):
        wilds = hand.wilds[suit]
        yield _suit_table(
            codes[suit], wilds, hand.wild_rank if wilds else 0, wild_pure if wilds else True, budget
        )


def _combine(hand: _Hand, codes: list[int], budget: int, wild_pure: bool) -> int | None:
    """Least loose points over the four suits with two sequences, one pure, within budget."""
    states = {(0, NO_SEQUENCES): 0}
    for entries, _ in _tables(hand, codes, budget, wild_pure):
        merged: dict[tuple[int, int], int] = {}
        for (used, state), loose in states.items():
            row = _MERGE[state]
            for extra, other, more in entries:
                total = used + extra
                if total > budget:
                    continue
                key = (total, row[other])
                value = loose + more
                if value < merged.get(key, 1 << 30):
                    merged[key] = value
        states = merged
    goal = [loose for (_, state), loose in states.items() if state == GOAL]
    return min(goal) if goal else None


def _combine_witness(
    hand: _Hand, codes: list[int], budget: int, wild_pure: bool
) -> list[tuple[tuple[int, ...], ...]]:
    """The sequences per suit behind :func:`_combine`'s answer."""
    states: dict[tuple[int, int], tuple[int, tuple]] = {(0, NO_SEQUENCES): (0, ())}
    for entries, witnesses in _tables(hand, codes, budget, wild_pure):
        merged: dict[tuple[int, int], tuple[int, tuple]] = {}
        for (used, state), (loose, chosen) in states.items():
            for (extra, other, more), witness in zip(entries, witnesses, strict=True):
                total = used + extra
                if total > budget:
                    continue
                key = (total, _MERGE[state][other])
                if key not in merged or loose + more < merged[key][0]:
                    merged[key] = (loose + more, (*chosen, witness))
        states = merged
    goal = [value for (_, state), value in states.items() if state == GOAL]
    return list(min(goal)[1])


# -- public API -------------------------------------------------------------------------------


def _prepare(
    cards: Sequence[Card | str], wild: Card | str, profile: RuleProfile | str | None
) -> tuple[list[Card], Card, RuleProfile, _Hand]:
    profile = get_profile(profile)
    wild = Card.parse(wild)
    cards = [Card.parse(card) for card in cards]
    check_hand(cards, wild, profile)
    return cards, wild, profile, _Hand(cards, wild_rank(wild))


def min_hand_score(
    cards: Sequence[Card | str], wild: Card | str, profile: RuleProfile | str | None = None
) -> int:
    """The least hand score (before the 80 cap) any grouping of ``cards`` can have.

    >>> from domain.cards import parse_cards
    >>> min_hand_score(parse_cards("AS 2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS"), "7D")
    0
    """
    _, _, profile, hand = _prepare(cards, wild, profile)
    return _scores(hand, profile.wild_natural_is_pure)[0]


def _scores(hand: _Hand, wild_pure: bool) -> tuple[int, tuple, tuple | None]:
    """(least hand score, best pure sequence, best two-sequence result or None)."""
    pure = _best_pure(hand, wild_pure)
    if pure[0] < 0:
        return hand.total, pure, None
    two = _two_sequences(hand, wild_pure)
    score = hand.total - pure[0]
    if two is not None and two[0] <= score:
        score = two[0]
    return score, pure, two


def best_grouping(
    cards: Sequence[Card | str], wild: Card | str, profile: RuleProfile | str | None = None
) -> HandEvaluation:
    """The arrangement of ``cards`` with the least hand score under the scoring cases.

    When that arrangement has two sequences, one pure, loose jokers are put into groups, so a
    hand that can declare comes back as a valid declaration.
    """
    cards, wild, profile, hand = _prepare(cards, wild, profile)
    score, pure, two = _scores(hand, profile.wild_natural_is_pure)
    if two is not None and two[0] == score:
        groups, loose = _arrange_two_sequences(cards, hand, two[1], wild, profile)
    elif pure[0] >= 0:
        groups, loose = _arrange_pure(cards, hand, pure)
    else:
        groups, loose = [], list(cards)
    verdicts = tuple(classify(group, wild, profile) for group in groups)
    result = score_grouping(verdicts, tuple(loose), wild, profile)
    if result.hand_score != score:  # the search and the scoring rules must agree
        raise AssertionError(
            f"solver bug: searched score {score} but the arrangement scores {result.hand_score}"
        )
    return result


def declaration(
    cards: Sequence[Card | str], wild: Card | str, profile: RuleProfile | str | None = None
) -> HandEvaluation | None:
    """A valid declaration of all of ``cards`` if one exists, else None."""
    cards, wild, profile, hand = _prepare(cards, wild, profile)
    if _best_pure(hand, profile.wild_natural_is_pure)[0] < 0:
        return None
    two = _two_sequences(hand, profile.wild_natural_is_pure)
    if two is None or two[0] != 0:
        return None
    result = best_grouping(cards, wild, profile)
    return result if result.valid_declaration else None


# -- building the arrangement ----------------------------------------------------------------


def _card(suit: int, place: int) -> Card:
    return ALL_CARDS[suit * 13 + (0 if place == ACE_HIGH else place - 1)]


def _take(pool: list[Card], card: Card) -> Card:
    pool.remove(card)
    return card


def _arrange_pure(cards: list[Card], hand: _Hand, pure: tuple) -> tuple[list, list]:
    _, suit, first, last = pure
    pool = list(cards)
    run = [_take(pool, _card(suit, place)) for place in range(first, last + 1)]
    return [run], pool


def _arrange_two_sequences(
    cards: list[Card], hand: _Hand, sets: tuple, wild: Card, profile: RuleProfile
) -> tuple[list, list]:
    wild_pure = profile.wild_natural_is_pure
    pool = list(cards)
    codes = hand.codes.copy()
    joker_count = hand.jokers
    set_groups = []
    for rank, (taken, jokers, chosen_sets) in sets:
        shift = RANK_BITS * (rank - 1)
        for suit in range(4):
            codes[suit] -= taken[suit] << shift
        joker_count -= jokers
        for suits in chosen_sets:
            set_groups.append([_take(pool, _card(suit, rank)) for suit in suits])
    per_suit = _combine_witness(hand, codes, joker_count, wild_pure)
    sequences: list[tuple[int, list[int]]] = []  # (suit, places with the filler slots)
    for suit, witness in enumerate(per_suit):
        for places in witness:
            sequences.append((suit, list(places)))
    cards_in_sequences = []
    for suit, places in sequences:
        cards_in_sequences.append([_take(pool, _card(suit, place)) for place in places])
    jokers = [card for card in pool if card.rank == 0 or card.rank == hand.wild_rank]
    jokers.sort(key=lambda card: card.rank != 0)  # printed jokers stand in first
    groups = []
    for (_suit, places), naturals in zip(sequences, cards_in_sequences, strict=True):
        groups.append(_lay_sequence(places, naturals, jokers, pool))
    for group in set_groups:
        if len(group) == 2:
            group.append(_take(pool, jokers.pop(0)))
        groups.append(group)
    _absorb_jokers(groups, jokers, pool, wild, profile)
    return groups, pool


def _lay_sequence(places: list[int], naturals: list[Card], jokers: list, pool: list) -> list:
    """The cards of one sequence in order, jokers in the gaps (and at an end if too short)."""
    first, last = places[0], places[-1]
    if last - first < 2:
        last = first + 2
        if last > ACE_HIGH:
            first, last = ACE_HIGH - 2, ACE_HIGH
    by_place = dict(zip(places, naturals, strict=True))
    laid = []
    for place in range(first, last + 1):
        card = by_place.get(place)
        laid.append(card if card is not None else _take(pool, jokers.pop(0)))
    return laid


def _absorb_jokers(
    groups: list, jokers: list, pool: list, wild: Card, profile: RuleProfile
) -> None:
    """Put jokers left loose into groups where they change nothing, so the hand can declare.

    A set or an impure sequence takes any number of jokers (up to 13 cards); a pure one
    would turn impure, so only a second pure sequence may take one.
    """
    while jokers:
        verdicts = [classify(group, wild, profile) for group in groups]
        target = next(
            (
                group
                for kind in (GroupKind.SET, GroupKind.IMPURE)
                for group, verdict in zip(groups, verdicts, strict=True)
                if verdict.kind is kind and len(group) < MAX_SEQUENCE
            ),
            None,
        )
        if target is None:
            pure = [g for g, v in zip(groups, verdicts, strict=True) if v.kind is GroupKind.PURE]
            if len(pure) < 2 or len(pure[-1]) >= MAX_SEQUENCE:
                return
            target = pure[-1]
        target.append(_take(pool, jokers.pop(0)))
