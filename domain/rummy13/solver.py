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
and the least loose points of any arrangement with two sequences, one pure. For the last, a
depth-first search decides the sets rank by rank; the cards left in each suit are split
into sequences by :mod:`domain.rummy13.suit_tables` (an exhaustive, cached search per suit), and the
four suit tables are combined under the joker budget.

Jokers are the printed jokers and the wild-rank cards, all interchangeable but for two
things a wild card can do by standing as itself: keep a sequence of its suit pure (the
suit tables know where), and be the one card standing as itself in a joker-only group such
as ``7C JK JK`` (the search adds those groups as a table of their own).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from itertools import combinations
from typing import Final, cast

from domain.cards import ALL_CARDS, SUITS, Card, wild_rank
from domain.rummy13 import suit_tables
from domain.rummy13.melds import (
    MAX_SEQUENCE,
    HandError,
    HandEvaluation,
    check_hand,
    classify_cards,
    score_grouping,
)
from domain.rummy13.profiles import RuleProfile, get_profile
from domain.rummy13.suit_tables import (
    ACE_HIGH,
    ACE_LOW_UNIT,
    EMPTY,
    GOAL,
    IMPURE_ONE,
    IMPURE_TWO,
    MERGE,
    NIBBLE,
    NOTHING,
    PLACE_BITS,
    PLACE_POINTS,
    Entry,
    Table,
    suit_table,
    witness_sequences,
)

__all__ = [
    "HandError",
    "best_grouping",
    "clear_caches",
    "deadwood",
    "declaration",
    "load_kept_tables",
    "min_hand_score",
]

_SUIT_INDEX = {suit: index for index, suit in enumerate(SUITS)}
_PRINTED: Final = 52  # the printed joker's card index
# The places (a suit-table place mask) where a card of the wild rank stands as itself: an
# Ace at either end.
_WILD_PLACES = (
    0,
    1 << NIBBLE | 1 << (NIBBLE * ACE_HIGH),
    *(1 << (NIBBLE * r) for r in range(2, 14)),
)
# A group whose only card standing as itself is a wild card (``7C JK JK``) takes three
# jokers and covers no points.
JOKER_GROUP: Final = 3


class _Hand:
    """A hand broken down for the search: per-suit card counts, jokers, points."""

    __slots__ = (
        "codes",
        "copies",
        "crowded",
        "indices",
        "jokers",
        "present",
        "pure_at",
        "sizes",
        "total",
        "wild_count",
        "wild_pure",
        "wild_rank",
        "wilds",
    )

    def __init__(self, cards: Sequence[Card], wild: Card, profile: RuleProfile) -> None:
        wild_rank = wild.rank or 1  # a printed joker as indicator makes Aces wild
        # Each suit's code (4 bits of count per place, domain.rummy13.suit_tables) and
        # present ranks (bit r: rank r held) are added up in plain locals, one per suit, and
        # put in lists once at the end: added up in the lists, every card's sum was a Python
        # int made anew (a hand is broken down for every grouping the walk asks for).
        c0 = c1 = c2 = c3 = 0
        p0 = p1 = p2 = p3 = 0
        wilds = [0, 0, 0, 0]
        indices: list[int] = []
        self.indices = indices
        self.copies = copies = [0] * 53  # by card index (the arrangement takes from them)
        total = 0
        repeats = 0  # cards held again: a second copy (or third) of a card held before
        most = 0  # the most copies of one card, the printed joker aside
        by_id = _FACTS
        for card in cards:
            facts = by_id.get(id(card))
            if facts is None:
                facts = _facts(card)
            index, rank, suit, unit, bit, points = facts
            indices.append(index)
            before = copies[index]  # printed jokers too: copies[_PRINTED] is their count
            if before:
                repeats += 1
            copies[index] = before + 1
            if before >= most and index != _PRINTED:
                most = before + 1
            if rank == wild_rank:
                wilds[suit] += 1
            elif rank:
                if suit == 0:
                    c0 += unit
                    p0 |= bit
                elif suit == 1:
                    c1 += unit
                    p1 |= bit
                elif suit == 2:
                    c2 += unit
                    p2 |= bit
                else:
                    c3 += unit
                    p3 |= bit
                total += points
        printed = copies[_PRINTED]
        self.codes = codes = [c0, c1, c2, c3]
        if len(indices) < 15:  # a suit's cards: its code's digits (base 16), its code mod 15
            self.sizes = [c0 % 15, c1 % 15, c2 % 15, c3 % 15]
        else:
            self.sizes = [_count(code) for code in codes]
        self.present = [p0, p1, p2, p3]
        self.wilds = wilds
        self.wild_count = count = wilds[0] + wilds[1] + wilds[2] + wilds[3]
        self.jokers = printed + count
        self.total = total
        self.wild_rank = wild_rank
        self.wild_pure = wild_pure = profile.wild_natural_is_pure
        # More copies of a card than the decks hold, counting the wild indicator, which
        # comes from the same decks (check_hand then says which card).
        decks = profile.decks
        # Of a card other than the printed joker. A card held more often than the decks
        # hold repeats as often as there are decks: with fewer repeats, none is.
        if repeats < decks:
            most = 0
        if wild.rank:
            most = max(most, copies[(by_id.get(id(wild)) or _facts(wild))[0]] + 1)
        else:
            printed += 1
        self.crowded = most > decks or printed > decks * profile.jokers_per_deck
        # Where a wild card may keep a sequence of its suit pure: only beside a card of that
        # suit (an Ace held low is beside 13 when high).
        self.pure_at = pure_at = [0, 0, 0, 0]
        if wild_pure and count:
            places = _WILD_PLACES[wild_rank]
            for suit in range(4):
                if wilds[suit]:
                    code = codes[suit]
                    held = (code | code >> 1 | code >> 2 | code >> 3) & PLACE_BITS
                    beside = held << NIBBLE | held >> NIBBLE | (held & ACE_LOW_UNIT) << 48
                    pure_at[suit] = places & beside


def _facts(card: Card) -> tuple[int, int, int, int, int, int]:
    """(index, rank, suit, its unit in a suit's code, its rank bit, points) of a card."""
    rank = card.rank
    if rank == 0:
        return (_PRINTED, 0, -1, 0, 0, 0)
    assert card.suit is not None  # every card but the printed joker has one
    suit = _SUIT_INDEX[card.suit]
    return (suit * 13 + rank - 1, rank, suit, 1 << (NIBBLE * rank), 1 << rank, PLACE_POINTS[rank])


def _count(code: int) -> int:
    """The cards ``code`` holds (its 4-bit counts added up)."""
    count = 0
    while code:
        count += code & 15
        code >>= NIBBLE
    return count


# The 53 cards are interned (domain.cards): looking them up by id() skips hashing them.
_FACTS = {id(card): _facts(card) for card in ALL_CARDS}


# -- the best pure sequence ------------------------------------------------------------------


@lru_cache(maxsize=1 << 14)
def _best_run(mask: int, zero_place: int) -> tuple[int, int, int]:
    """(points, first, last) of the best run of 3+ places in ``mask`` (Ace high at bit 14).

    ``zero_place`` holds a wild-rank card (worth 0) rather than a natural card.
    """
    if mask == 0b111111111111110:  # all 14 places: a run may cover 13 of them
        points = sum(PLACE_POINTS[1:14]) - PLACE_POINTS[zero_place]
        return (points, 1, 13)
    best = (-1, 0, 0)
    # The runs of places held, each from a place held above one not held (a start) to the
    # next place held below one not held (its end): a few steps instead of one a place.
    starts = mask & ~(mask << 1)
    ends = mask & ~(mask >> 1)
    while starts:
        start = starts & -starts
        starts ^= start
        end = ends & -ends
        ends ^= end
        first = start.bit_length() - 1
        last = end.bit_length() - 1
        if last - first >= 2:
            points = _RUN_POINTS[last] - _RUN_POINTS[first - 1]
            if first <= zero_place <= last:
                points -= PLACE_POINTS[zero_place]
            elif zero_place == 1 and last == ACE_HIGH:  # the wild Ace held high
                points -= PLACE_POINTS[ACE_HIGH]
            if points > best[0]:
                best = (points, first, last)
    return best


# The points of places 1 to p, for each p (a run's points are a difference of two).
_RUN_POINTS: Final = tuple(sum(PLACE_POINTS[1 : place + 1]) for place in range(ACE_HIGH + 1))


def _best_pure(hand: _Hand) -> tuple[int, int, int, int]:
    """(points, suit, first, last) of the best pure sequence; points -1 when there is none."""
    best = (-1, 0, 0, 0)
    for suit in range(4):
        mask = hand.present[suit]
        zero_place = 0
        if hand.wild_pure and hand.wilds[suit]:
            zero_place = hand.wild_rank
            mask |= 1 << zero_place
        if mask & 2:
            mask |= 1 << ACE_HIGH
        if mask & (mask >> 1) & (mask >> 2):
            run = _best_run(mask, zero_place)
            if run[0] > best[0]:
                best = (run[0], suit, run[1], run[2])
    return best


# -- sets -------------------------------------------------------------------------------------

Sets = tuple[tuple[int, ...], ...]  # sets of one rank, each as its suits
# A way to lay sets of one rank: (copies taken per suit, jokers needed, the sets, the
# (suit, copies) taken).
SetChoice = tuple[tuple[int, ...], int, Sets, tuple[tuple[int, int], ...]]


def _set_choices(available: tuple[int, ...], jokers: int) -> tuple[SetChoice, ...]:
    """Ways to lay sets of one rank given its copies per suit, within ``jokers``.

    Each way is (copies taken per suit, jokers needed, the sets as tuples of suits, the
    (suit, copies) taken), one per distinct choice of cards taken. A set of one card and
    two jokers is left out: the same cards make an impure sequence, never worse. Ways
    taking more cards come first, since they tend to leave fewer points, so the search
    finds a low score early.

    The ways for each count of copies per suit are worked out the first time a hand asks
    for them (81 counts at most with two decks, about 5 ms for all of them: a one-hand
    command asks for a few) and kept for good; those within a number of jokers are kept as
    they are asked for (every hand asks, and there are 81 × 14 of them at most with two
    decks) and forgotten by :func:`clear_caches`.
    """
    key = (available, jokers)
    found = _WITHIN.get(key)
    if found is None:
        every = _SET_CHOICES.get(available)
        if every is None:
            every = _SET_CHOICES[available] = _list_set_choices(available)
        found = _WITHIN[key] = tuple(choice for choice in every if choice[1] <= jokers)
    return found


def _list_set_choices(available: tuple[int, ...]) -> tuple[SetChoice, ...]:
    choices: list[tuple[tuple[int, ...], int, Sets]] = []

    def extend(left: list[int], jokers: int, sets: Sets, largest: tuple) -> None:
        taken = tuple(a - b for a, b in zip(available, left, strict=True))
        choices.append((taken, jokers, sets))
        suits = [suit for suit in range(4) if left[suit]]
        for size in range(len(suits), 1, -1):
            for chosen in combinations(suits, size):
                if largest and (size, chosen) > largest:
                    continue  # each collection of sets once, largest set first
                rest = left.copy()
                for suit in chosen:
                    rest[suit] -= 1
                extend(rest, jokers + (size == 2), (*sets, chosen), (size, chosen))

    extend(list(available), 0, (), ())
    # Only which cards leave the suits, and for how many jokers, matters to the search.
    fewest: dict[tuple[int, ...], tuple[tuple[int, ...], int, Sets]] = {}
    for choice in choices:
        if choice[0] not in fewest or choice[1] < fewest[choice[0]][1]:
            fewest[choice[0]] = choice
    ordered = sorted(fewest.values(), key=lambda choice: (-sum(choice[0]), choice[1]))
    # Each with the (suit, copies) it takes, for the search to take them from the suits.
    return tuple(
        (*choice, tuple((suit, copies) for suit, copies in enumerate(choice[0]) if copies))
        for choice in ordered
    )


# copies per suit: every way (kept for good)
_SET_CHOICES: dict[tuple[int, ...], tuple[SetChoice, ...]] = {}
# (copies per suit, jokers): ways
_WITHIN: dict[tuple[tuple[int, ...], int], tuple[SetChoice, ...]] = {}


# -- the search -------------------------------------------------------------------------------


def _two_sequences(hand: _Hand, below: int) -> Found | None:
    """The least loose points under ``below`` with two sequences, one pure, and its groups.

    Returns (loose points, the search that found them) or None; the search says which sets
    and tables are behind them (:meth:`_Search.behind`), which only an arrangement asks.

    A joker-only group needs a wild card standing as itself, and so may the pure sequence
    (``pure_at``); with one or two wild cards both cannot always have one. Joker-only groups
    that leave a wild card over are searched with the suits as they are; those that take
    every wild card, with no sequence leaning on one for purity, by a second search that
    looks only for no loose points at all: with a natural card loose, one joker-only group
    would do better as that card and the group's two other jokers (an impure sequence all
    the same, one joker fewer, fewer points), which leaves a wild card over, so the first
    search has seen it.
    """
    wilds = hand.wild_count
    spare = wilds - 1 if any(hand.pure_at) else wilds
    found = _search(hand, below, hand.pure_at, _joker_groups(spare, hand.jokers))
    least = found[0] if found else below
    if least > 0 and spare < wilds <= 2 and hand.jokers >= JOKER_GROUP * wilds:
        other = _search(hand, 1, [0, 0, 0, 0], _joker_groups(wilds, hand.jokers))
        if other is not None:
            found = other
    return found


def _joker_groups(most: int, jokers: int) -> Table:
    """The table of up to ``most`` joker-only groups (two are as many as progress counts)."""
    most = min(most, 2, jokers // JOKER_GROUP)
    return _JOKER_GROUPS[most] if most > 0 else EMPTY


_JOKER_GROUPS: list[Table] = [
    tuple(
        (JOKER_GROUP * count, (NOTHING, IMPURE_ONE, IMPURE_TWO)[count], 0, count)
        for count in range(most + 1)
    )
    for most in range(3)
]  # by the most groups (1 or 2)


def _search(hand: _Hand, below: int, pure_at: list[int], joker_groups: Table) -> Found | None:
    """:func:`_two_sequences` for one choice of where wild cards may keep a sequence pure.

    A depth-first search decides the sets rank by rank, each rank held in two suits or more:
    which copies go into sets, for how many jokers. Once the last rank a suit holds is
    decided, the cards left in it are final, and its suit table joins the running
    combination (jokers used and progress: least loose points); a branch whose every
    combination already has as many loose points as the best found so far is cut.
    """
    p0, p1, p2, p3 = hand.present
    two_suits = (p0 & p1) | (p0 & p2) | (p0 & p3) | (p1 & p2) | (p1 & p3) | (p2 & p3)
    codes = hand.codes
    jokers = hand.jokers
    per_rank: list[tuple[int, tuple[SetChoice, ...]]] = []
    within = _WITHIN  # the ways to lay sets already asked for (_set_choices)
    last_step = [-1, -1, -1, -1]  # the last step deciding a rank each suit holds
    while two_suits:
        bit = two_suits & -two_suits
        two_suits ^= bit
        shift = NIBBLE * (bit.bit_length() - 1)
        available = (
            (codes[0] >> shift) & 15,
            (codes[1] >> shift) & 15,
            (codes[2] >> shift) & 15,
            (codes[3] >> shift) & 15,
        )
        choices = within.get((available, jokers)) or _set_choices(available, jokers)
        if len(choices) > 1:
            step = len(per_rank)
            for suit in 0, 1, 2, 3:
                if available[suit]:
                    last_step[suit] = step
            per_rank.append((shift, choices))
    search = _Search(hand, pure_at, per_rank, below)
    final: list[list[int]] = []
    for _ in per_rank:
        final.append([])
    for suit in 0, 1, 2, 3:
        if last_step[suit] >= 0:
            final[last_step[suit]].append(suit)
    search.final = final
    if final:
        search.ahead = final[-1][:-1]  # the last step's suits but the one joining the goal
    fixed = []
    for suit in 0, 1, 2, 3:
        if last_step[suit] < 0:
            fixed.append(search.table(suit, codes[suit]))
    if not per_rank:  # no sets to choose: the suits as they are, straight to the goal
        fixed.append(joker_groups)
        last = fixed.pop(0)
        states = _add_all({NOTHING: 0}, fixed, jokers, below)
        search.loose = _goal(states, last, jokers, below) if states else below
    else:
        fixed.append(joker_groups)
        states = _add_all({NOTHING: 0}, fixed, jokers, below)
        if states:
            search.decide(0, codes, jokers, states)
    if search.loose >= below:
        return None
    search.codes, search.jokers, search.joker_groups = codes, jokers, joker_groups
    return search.loose, search


class _Search:
    """The depth-first search over sets of :func:`_search`, and the best found so far."""

    # Set by _search once the search is done: what behind() needs to rebuild its tables.
    codes: list[int]
    jokers: int
    joker_groups: Table
    # The last step's suits but the one joining the goal (decide); set by _search.
    ahead: list[int]

    __slots__ = (
        "ahead",
        "caps",
        "codes",
        "final",
        "joker_groups",
        "jokers",
        "loose",
        "memos",
        "per_rank",
        "picked",
        "pure_at",
        "sets",
    )

    def __init__(
        self,
        hand: _Hand,
        pure_at: list[int],
        per_rank: list[tuple[int, tuple[SetChoice, ...]]],
        below: int,
    ) -> None:
        self.pure_at = pure_at
        self.per_rank = per_rank
        # More jokers than this never help a suit: a sequence with two stand-ins or more per
        # card of its own does no better than that many one-card sequences with two each.
        # Tables are asked for with the hand's budget (or this), whatever the sets take, so
        # one table serves every choice of sets.
        jokers = hand.jokers
        s0, s1, s2, s3 = hand.sizes
        self.caps = [
            min(jokers, 2 * s0),
            min(jokers, 2 * s1),
            min(jokers, 2 * s2),
            min(jokers, 2 * s3),
        ]
        # The tables asked for, per suit by code: choices of sets leave the same cards in a
        # suit again and again, and so do other hands, and a dictionary's lookup is cheaper
        # than suit_table's. One memo serves every search asking with the same wild places
        # and budget (_ASKED), so a suit seen in an earlier hand costs no call at all.
        self.memos: list[dict[int, Table]] = [
            _asked(pure_at[0], self.caps[0]),
            _asked(pure_at[1], self.caps[1]),
            _asked(pure_at[2], self.caps[2]),
            _asked(pure_at[3], self.caps[3]),
        ]
        self.final: list[list[int]] = []  # the suits whose cards each step makes final
        self.loose = below  # the least loose points so far, and its sets
        self.sets: list[tuple[int, SetChoice]] = []  # (shift, choice) per rank decided
        self.picked: list[tuple[int, SetChoice]] = []

    def behind(self) -> tuple[list[tuple[int, SetChoice]], list[Table], int]:
        """(the best's sets as (shift, choice), the tables it joined: the four suits' once
        those sets are laid, then the joker-only groups', the jokers left for them)."""
        codes = self.codes.copy()
        budget = self.jokers
        for shift, (_, needed, _, takes) in self.sets:
            budget -= needed
            for suit, copies in takes:
                codes[suit] -= copies << shift
        tables = [
            self.table(0, codes[0]),
            self.table(1, codes[1]),
            self.table(2, codes[2]),
            self.table(3, codes[3]),
        ]
        tables.append(self.joker_groups)
        return self.sets, tables, budget

    def table(self, suit: int, code: int) -> Table:
        memo = self.memos[suit]
        table = memo.get(code)
        if table is None:
            table = memo[code] = suit_table(code, self.pure_at[suit], self.caps[suit])
        return table

    def decide(self, index: int, codes: list[int], budget: int, states: dict[int, int]) -> None:
        """Decide the sets of ``per_rank[index:]``: ``codes`` are the cards left in the suits,
        ``states`` the combination of the tables of the suits already final.

        The final suits' tables join one by one, each asked for only if the combination so
        far is not empty: a choice of sets that leaves nothing under the best found so far
        costs no table of the suits after (each a search of its own the first time).
        """
        shift, choices = self.per_rank[index]
        final = self.final[index]
        last = final is self.final[-1]
        if last:  # the last suit joins straight to the goal (final holds this rank's suits)
            final, end_suit = self.ahead, final[-1]
        # self.table is called as a method, not taken once as a bound method: compiled, the
        # bound method was made at every step and each call went through a generic call.
        memos = self.memos
        for choice in choices:
            _, needed, _, takes = choice
            if needed > budget:
                continue
            if takes:
                left = codes.copy()
                for suit, copies in takes:
                    # Not "-=": on a list's item that compiled to a generic subtraction.
                    left[suit] = left[suit] - (copies << shift)
            else:
                left = codes
            more = budget - needed
            merged = states
            below = self.loose
            for suit in final:
                code = left[suit]
                found = memos[suit].get(code) or self.table(suit, code)
                # _add, written out: most calls join a table of one to three entries to
                # one or two states, where the call itself is much of the cost.
                joined: dict[int, int] = {}
                least = below - found[0][2]  # states with as many loose points gain nothing
                for slot, loose in merged.items():
                    if loose >= least:
                        continue
                    used = slot >> 3
                    row = MERGE[slot & 7]
                    for extra, state, points, _ in found:
                        value = loose + points
                        if value >= below:
                            break
                        total = used + extra
                        if total <= more:
                            key = total << 3 | row[state]
                            before = joined.get(key)
                            if before is None or value < before:
                                joined[key] = value
                merged = joined
                if not merged:
                    break
            else:
                if last:
                    code = left[end_suit]
                    end = memos[end_suit].get(code)
                    if end is None:
                        end = self.table(end_suit, code)
                    # _goal, written out (a call a choice of the last rank).
                    best = self.loose
                    for slot, loose in merged.items():
                        spare = more - (slot >> 3)
                        row = MERGE[slot & 7]
                        for extra, state, points, _ in end:
                            value = loose + points
                            if value >= best:
                                break
                            if row[state] == GOAL and extra <= spare:
                                best = value
                                break  # entries come by loose points: none after does better
                    if best < self.loose:
                        self.loose, self.sets = best, [*self.picked, (shift, choice)]
                else:
                    self.picked.append((shift, choice))
                    self.decide(index + 1, left, more, merged)
                    self.picked.pop()
            if self.loose == 0:
                return  # nothing does better


# The two-sequence search's answer: (least loose points, the search that found them).
Found = tuple[int, _Search]


def _asked(pure_at: int, budget: int) -> dict[int, Table]:
    """The memo of suit tables asked for with ``pure_at`` and ``budget``: {code: table}."""
    key = pure_at << 8 | budget
    memo = _ASKED.get(key)
    if memo is None:
        if len(_ASKED) >= ASKED_LIMIT:
            _ASKED.clear()
        memo = _ASKED[key] = {}
    elif len(memo) >= ASKED_TABLES_LIMIT:
        memo.clear()
    return memo


# Memos of suit_table's answers by (wild places, budget), each {code: table}; bounded like
# suit_tables' own caches (a full memo is simply emptied) and forgotten by clear_caches.
_ASKED: dict[int, dict[int, Table]] = {}
ASKED_LIMIT = 256
# 4,096: the fair-play walk's busiest memos reach thousands of codes in a few hundred games;
# at 1,024 they were emptied so often that 200 games called suit_table 22,651 times (12,035).
ASKED_TABLES_LIMIT = 4_096


def _add_all(
    states: dict[int, int], tables: list[Table], budget: int, below: int
) -> dict[int, int]:
    """``states`` (jokers used << 3 | progress: least loose points) with ``tables`` joined.

    Combinations using more than ``budget`` jokers, or with ``below`` loose points or more,
    are dropped.
    """
    for table in tables:
        states = _add(states, table, budget, below)
        if not states:
            break
    return states


def _add(states: dict[int, int], table: Table, budget: int, below: int) -> dict[int, int]:
    """:func:`_add_all` of one table (its entries come by loose points, least first)."""
    if len(table) == 1 and table[0][1] == NOTHING:  # every card loose: add the points
        more = table[0][2]
        merged: dict[int, int] = {}
        for slot, loose in states.items():
            if loose + more < below:
                merged[slot] = loose + more
        return merged
    merged = {}
    least = below - table[0][2]  # states with as many loose points gain nothing
    for slot, loose in states.items():
        if loose >= least:
            continue
        used = slot >> 3
        row = MERGE[slot & 7]
        for extra, state, more, _ in table:
            value = loose + more
            if value >= below:
                break
            total = used + extra
            if total <= budget:
                key = total << 3 | row[state]
                before = merged.get(key)
                if before is None or value < before:
                    merged[key] = value
    return merged


def _goal(states: dict[int, int], table: Table, budget: int, below: int) -> int:
    """The least loose points under ``below`` of ``states`` with ``table`` joined, with two
    sequences, one pure, within budget (``below`` if none)."""
    best = below
    for slot, loose in states.items():
        used = slot >> 3
        row = MERGE[slot & 7]
        for extra, state, more, _ in table:
            value = loose + more
            if value >= best:
                break
            if row[state] == GOAL and used + extra <= budget:
                best = value
                break  # the table's entries come by loose points: none after does better
    return best


def _witness(tables: list[Table], budget: int, loose: int) -> list[Entry]:
    """An entry of each table that together make two sequences, one pure, with ``loose``
    loose points within ``budget`` (the search found they exist).

    ``tables`` are the four suits' and the joker-only groups'. The first such entries in
    the tables' order are taken (the arrangement depends on which): one loop a table
    rather than a recursion, since there are always five. Entries come by loose points, so
    a loop ends once the points so far and the least of the tables after pass ``loose``.
    """
    t0, t1, t2, t3, t4 = tables
    after3 = t4[0][2]  # the least loose points of the tables after each
    after2 = t3[0][2] + after3
    after1 = t2[0][2] + after2
    after0 = t1[0][2] + after1
    for e0 in t0:
        l0 = e0[2]
        if l0 + after0 > loose:
            break
        u0 = e0[0]
        if u0 > budget:
            continue
        row0 = MERGE[e0[1]]
        for e1 in t1:
            l1 = l0 + e1[2]
            if l1 + after1 > loose:
                break
            u1 = u0 + e1[0]
            if u1 > budget:
                continue
            row1 = MERGE[row0[e1[1]]]
            for e2 in t2:
                l2 = l1 + e2[2]
                if l2 + after2 > loose:
                    break
                u2 = u1 + e2[0]
                if u2 > budget:
                    continue
                row2 = MERGE[row1[e2[1]]]
                for e3 in t3:
                    l3 = l2 + e3[2]
                    if l3 + after3 > loose:
                        break
                    u3 = u2 + e3[0]
                    if u3 > budget:
                        continue
                    row3 = MERGE[row2[e3[1]]]
                    for e4 in t4:
                        l4 = l3 + e4[2]
                        if l4 > loose:
                            break
                        if u3 + e4[0] <= budget and row3[e4[1]] == GOAL and l4 == loose:
                            return [e0, e1, e2, e3, e4]
    raise AssertionError("solver bug: no entries behind the searched score")


# -- public API -------------------------------------------------------------------------------


def _prepare(
    cards: Sequence[Card | str], wild: Card | str, profile: RuleProfile | str | None
) -> tuple[list[Card], Card, RuleProfile, _Hand]:
    if type(profile) is not RuleProfile:  # a profile given itself needs no look-up
        profile = get_profile(profile)
    wild = wild if type(wild) is Card else Card.parse(wild)
    held: list[Card]
    # A type test per card, compiled (a set of the cards' types cost 3,600 instructions a
    # hand, a seventh of the breakdown). No cards at all: [] either way.
    if all(type(card) is Card for card in cards):
        held = cast("list[Card]", list(cards))
    else:
        held = [card if type(card) is Card else Card.parse(card) for card in cards]
    hand = _Hand(held, wild, profile)
    if hand.crowded or len(held) != profile.hand_size:
        check_hand(held, wild, profile)  # says what is wrong
    return held, wild, profile, hand


def min_hand_score(
    cards: Sequence[Card | str], wild: Card | str, profile: RuleProfile | str | None = None
) -> int:
    """The least hand score (before the 80 cap) any grouping of ``cards`` can have.

    >>> from domain.cards import parse_cards
    >>> min_hand_score(parse_cards("AS 2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS"), "7D")
    0
    """
    _, _, _, hand = _prepare(cards, wild, profile)
    pure = _best_pure(hand)
    if pure[0] < 0:
        return hand.total
    score = hand.total - pure[0]
    two = _two_sequences(hand, score)
    return two[0] if two is not None else score


def best_grouping(
    cards: Sequence[Card | str],
    wild: Card | str,
    profile: RuleProfile | str | None = None,
    bound: int | None = None,
) -> HandEvaluation:
    """The arrangement of ``cards`` with the least hand score under the scoring cases.

    On a tie the arrangement with two sequences wins, and loose jokers are then put into its
    groups, so a hand that can declare comes back as a valid declaration.

    ``bound``: a score some grouping of ``cards`` is known to reach (the hand less its last
    card scored ``s``: with that card loose, ``s`` plus its points). The search then cuts
    every branch that cannot beat it from the start, and the arrangement is the same: the
    search visits branches in the same order and only a strictly better one replaces the
    best, so the first branch reaching the least score, which no bound at or above that
    score cuts, is the one kept either way. A bound the hand does not reach finds nothing
    under it and is dropped (the search runs again without it).

    >>> from domain.cards import parse_cards
    >>> hand = parse_cards("AS 2S 3S 4H 5H JK 9C 9D 9H KS KD 2C 5D")
    >>> best_grouping(hand, "7D", bound=40) == best_grouping(hand, "7D")
    True
    """
    cards, wild, profile, hand = _prepare(cards, wild, profile)
    score, pure, two = _least(hand, bound)
    if pure[0] < 0:
        return _evaluation(score, [], cards, wild, profile)
    if two is None:
        groups, loose = _arrange_pure(cards, hand, pure)
    else:
        groups, loose = _arrange_two_sequences(cards, hand, two)
    return _evaluation(score, groups, loose, wild, profile)


def deadwood(
    cards: Sequence[Card | str],
    wild: Card | str,
    profile: RuleProfile | str | None = None,
    bound: int | None = None,
) -> tuple[int, tuple[Card, ...]]:
    """``best_grouping``'s ``(hand_score, counted)``: the least score and the cards it counts,
    in hand order, for a caller that asks nothing else of the arrangement (the fair-play
    walk, a grouping a discard). The groups are not built, nor scored again through
    :mod:`~domain.rummy13.melds` (a check of the solver that cost an eighth of the walk);
    tests hold the two equal.

    >>> from domain.cards import parse_cards
    >>> score, counted = deadwood(parse_cards("AS 2S 3S 4H 5H JK 9C 9D 9H KS KD 2C 5D"), "7D")
    >>> score, " ".join(map(str, counted))
    (27, 'KS KD 2C 5D')
    """
    cards, _, _, hand = _prepare(cards, wild, profile)
    score, pure, two = _least(hand, bound)
    if pure[0] < 0:
        return score, tuple(cards)
    if two is None:
        return score, tuple(_arrange_pure(cards, hand, pure)[1])
    return score, tuple(_loose_two_sequences(cards, hand, two))


def _least(hand: _Hand, bound: int | None) -> tuple[int, tuple[int, int, int, int], Found | None]:
    """(the least score, the best pure sequence, the two-sequence search's answer or None)."""
    pure = _best_pure(hand)
    if pure[0] < 0:
        return hand.total, pure, None
    score = hand.total - pure[0]
    if bound is not None and bound < score:
        two = _two_sequences(hand, bound + 1)
        if two is None:  # not reached: the bound was wrong
            two = _two_sequences(hand, score + 1)
    else:
        two = _two_sequences(hand, score + 1)
    return (score, pure, None) if two is None else (two[0], pure, two)


def declaration(
    cards: Sequence[Card | str], wild: Card | str, profile: RuleProfile | str | None = None
) -> HandEvaluation | None:
    """A valid declaration of all of ``cards`` if one exists, else None."""
    cards, wild, profile, hand = _prepare(cards, wild, profile)
    if _best_pure(hand)[0] < 0:
        return None
    two = _two_sequences(hand, 1)
    if two is None:
        return None
    groups, loose = _arrange_two_sequences(cards, hand, two)
    result = _evaluation(0, groups, loose, wild, profile)
    return result if result.valid_declaration else None


def _evaluation(
    score: int, groups: list, loose: list[Card], wild: Card, profile: RuleProfile
) -> HandEvaluation:
    """The arrangement scored by :mod:`domain.rummy13.melds`' own rules, which must agree."""
    verdicts = []
    valid = True
    rank = wild_rank(wild)
    wild_pure = profile.wild_natural_is_pure
    for group in groups:
        verdict = classify_cards(tuple(group), rank, wild_pure)
        if verdict.kind is None:
            valid = False
        verdicts.append(verdict)
    result = score_grouping(tuple(verdicts), tuple(loose), wild, profile)
    if result.hand_score != score or not valid:
        raise AssertionError(
            f"solver bug: searched score {score} but the arrangement scores {result.hand_score}"
        )
    return result


# -- building the arrangement ----------------------------------------------------------------


def _arrange_pure(
    cards: list[Card], hand: _Hand, pure: tuple[int, int, int, int]
) -> tuple[list[list[Card]], list[Card]]:
    _, suit, first, last = pure
    indices = hand.indices
    left = hand.copies.copy()
    run = []
    for place in range(first, last + 1):
        index = suit * 13 + (0 if place == ACE_HIGH else place - 1)
        left[index] -= 1
        run.append(ALL_CARDS[index])
    return [run], _rest(cards, indices, left)


def _rest(cards: list[Card], indices: list[int], left: list[int]) -> list[Card]:
    """The cards of ``left`` (copies by card index), in hand order."""
    rest = []
    for card, index in zip(cards, indices, strict=True):
        if left[index]:
            left[index] -= 1
            rest.append(card)
    return rest


def _loose_two_sequences(cards: list[Card], hand: _Hand, two: Found) -> list[Card]:
    """The loose cards of :func:`_arrange_two_sequences`' arrangement, the groups not built.

    The cards the sets and the sequences' witnesses take, and every joker: jokers go into
    groups where they change nothing (:func:`_absorb_jokers`), and with two sequences there
    is always room for them in a hand of up to 15 cards: with ``r`` jokers over, the group
    that takes them first (a set, else the second sequence) holds at most ``n - r - 3`` of
    the ``n`` cards, which leaves ``16 - n + r`` places of :data:`MAX_SEQUENCE` (13).
    Larger hands are arranged in full.
    """
    if len(cards) > MAX_SEQUENCE + 2:
        return _arrange_two_sequences(cards, hand, two)[1]
    loose, search = two
    sets, tables, budget = search.behind()
    left = hand.copies.copy()
    for shift, (_, _, _, takes) in sets:
        rank = (shift >> 2) - 1
        for suit, copies in takes:
            left[suit * 13 + rank] -= copies
    entries = _witness(tables, budget, loose)
    for suit in 0, 1, 2, 3:
        witness = entries[suit][3]
        if witness is None:
            continue
        for places in witness_sequences(witness):
            for place in places:
                left[suit * 13 + (0 if place == ACE_HIGH else place - 1)] -= 1
    left[_PRINTED] = 0
    for index in _WILD_INDICES[hand.wild_rank]:
        left[index] = 0
    return _rest(cards, hand.indices, left)


def _arrange_two_sequences(
    cards: list[Card], hand: _Hand, two: Found
) -> tuple[list[list[Card]], list[Card]]:
    """The groups behind the search's answer: pure sequences, impure ones (joker-only groups
    among them), then sets, jokers in.

    Wild cards go first where only they will do: one to the sequence that leans on a wild
    card for purity (when no sequence is pure without), one to each joker-only group.
    """
    loose, search = two
    sets, tables, budget = search.behind()
    indices = hand.indices
    left = hand.copies.copy()
    wild_rank = hand.wild_rank
    laid_sets = []
    for shift, (_, _, chosen_sets, _) in sets:
        for suits in chosen_sets:
            group = []
            for suit in suits:
                index = suit * 13 + (shift >> 2) - 1
                left[index] -= 1
                group.append(ALL_CARDS[index])
            laid_sets.append(group)
    entries = _witness(tables, budget, loose)
    # (suit, {place: card}, the places jokers fill)
    sequences: list[tuple[int, dict[int, Card], list[int]]] = []
    leaning = True  # every sequence needs a joker so far
    for suit in 0, 1, 2, 3:
        witness = entries[suit][3]
        if witness is None:
            continue
        for places in witness_sequences(witness):
            by_place = {}
            for place in places:
                index = suit * 13 + (0 if place == ACE_HIGH else place - 1)
                left[index] -= 1
                by_place[place] = ALL_CARDS[index]
            missing = _missing(places)
            if not missing:
                leaning = False
            sequences.append((suit, by_place, missing))
    if leaning:  # one may lean on a wild card for purity
        for suit, by_place, missing in sequences:
            place = _wild_place(by_place, missing, hand.pure_at[suit])
            index = suit * 13 + wild_rank - 1
            if place and left[index]:
                left[index] -= 1
                by_place[place] = ALL_CARDS[index]
                missing.clear()
                break
    # Printed jokers first: a wild card may also stand as itself in a joker-only group.
    jokers = [_PRINTED] * left[_PRINTED]
    wilds = []
    for index in _WILD_INDICES[wild_rank]:
        if left[index]:
            wilds += [index] * left[index]
    joker_groups = entries[4][3] or 0
    own, wilds = wilds[:joker_groups], wilds[joker_groups:]
    jokers += wilds
    jokers.reverse()  # taken from the end
    for index in jokers + own:
        left[index] -= 1
    pure: list[list[Card]] = []
    impure: list[list[Card]] = []
    for _, by_place, missing in sequences:
        for place in missing:
            by_place[place] = ALL_CARDS[jokers.pop()]
        group = [by_place[place] for place in sorted(by_place)]
        (impure if missing else pure).append(group)
    for index in own:
        impure.append([ALL_CARDS[index], ALL_CARDS[jokers.pop()], ALL_CARDS[jokers.pop()]])
    for group in laid_sets:
        if len(group) == 2:
            group.append(ALL_CARDS[jokers.pop()])
    _absorb_jokers(pure, impure, laid_sets, jokers)
    for index in jokers:  # none can go into a group: they stay loose
        left[index] += 1
    return pure + impure + laid_sets, _rest(cards, indices, left)


# The card indices of a wild rank's cards, by the rank.
_WILD_INDICES = tuple(tuple(suit * 13 + rank - 1 for suit in range(4)) for rank in range(14))


def _missing(places: tuple[int, ...]) -> list[int]:
    """The places jokers fill: the gaps, and an end if the sequence is under 3 places."""
    first, last = places[0], places[-1]
    if last - first == len(places) - 1 >= 2:
        return []  # no gap, three places or more
    if last - first < 2:
        last = first + 2
        if last > ACE_HIGH:
            first, last = ACE_HIGH - 2, ACE_HIGH
    missing = []
    for place in range(first, last + 1):
        if place not in places:
            missing.append(place)
    return missing


def _wild_place(by_place: dict[int, Card], missing: list[int], pure_at: int) -> int:
    """Where a wild card of the suit (``pure_at``) would make the sequence pure, or 0."""
    if len(missing) != 1 or len(by_place) < 2:
        return 0
    first, last = min(by_place), max(by_place)
    ends = (first - 1, last + 1) if last - first == 1 else (missing[0],)  # side by side: either
    for place in ends:
        if 1 <= place <= ACE_HIGH and pure_at >> (NIBBLE * place) & 1:
            return place
    return 0


def _absorb_jokers(pure: list, impure: list, sets: list, jokers: list[int]) -> None:
    """Put jokers left loose into groups where they change nothing, so the hand can declare.

    A set or an impure sequence takes any number of jokers (up to 13 cards); a pure one
    would turn impure, so only a second pure sequence may take one.
    """
    while jokers:
        target = _first_open(sets)
        if target is None:
            target = _first_open(impure)
        if target is None:
            if len(pure) < 2 or len(pure[-1]) >= MAX_SEQUENCE:
                return
            target = pure.pop()
            impure.append(target)
        target.append(ALL_CARDS[jokers.pop()])


def _first_open(groups: list) -> list | None:
    """The first of ``groups`` with room for another card, or None."""
    for group in groups:
        if len(group) < MAX_SEQUENCE:
            return group
    return None


def load_kept_tables() -> None:
    """Read now the tables kept for good that are otherwise read the first time a hand asks
    for one (the wild cards' beside the larger suits, about 0.34 G instructions): a process
    about to fork workers that will solve hands (the fair-play catch-up's) reads them once
    for all of them, not once a worker."""
    if suit_tables._PACKED_WILD is None:
        suit_tables._read_packed_wild()


def clear_caches() -> None:
    """Forget every cached suit table (the benchmark's cold start).

    The ways to lay sets (:func:`_set_choices`) stay once worked out; those within a
    number of jokers are forgotten.
    """
    suit_tables.clear_caches()
    _ASKED.clear()
    _best_run.cache_clear()
    _WITHIN.clear()
