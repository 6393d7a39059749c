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

from collections.abc import Sequence
from functools import lru_cache
from itertools import combinations, pairwise

from domain.cards import ALL_CARDS, JOKER, SUITS, Card, wild_rank
from domain.melds import (
    MAX_SEQUENCE,
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
# A suit's cards are one int, 4 bits of count per place: place p at bit 4p.
NIBBLE = 4
ACE_LOW_UNIT = 1 << NIBBLE
ACE_HIGH_UNIT = 1 << (NIBBLE * ACE_HIGH)
PLACE_BITS = sum(1 << (NIBBLE * place) for place in range(ACE_HIGH + 1))
# Progress towards a declaration, (pure sequences, sequences) capped at (1, 2), as 0..5.
STATES = ((0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2))
NOTHING, IMPURE_ONE, PURE_ONE, GOAL = 0, 1, 4, 5
MERGE = tuple(tuple(min(1, a[0] + b[0]) * 3 + min(2, a[1] + b[1]) for b in STATES) for a in STATES)
COVERS = tuple(tuple(a[0] >= b[0] and a[1] >= b[1] for b in STATES) for a in STATES)
UNREACHED = 1 << 30
_COVERED = tuple(tuple(b for b in range(6) if COVERS[a][b]) for a in range(6))
# Slots (jokers used << 3 | progress) in the order _pareto needs: fewer jokers first, and at
# equal jokers the progress that covers the others first.
_SLOT_ORDER = {
    used << 3 | state: used * 8 + rank
    for used in range(64)
    for rank, state in enumerate((GOAL, PURE_ONE, 2, IMPURE_ONE, 3, NOTHING))
}
# Splitting a sequence at a run of 4 or more stand-ins never costs more jokers (each part
# needs at most 2 to reach 3 cards) and gives one more sequence; nor does splitting one with
# at least two stand-ins per card of its own into one-card sequences. So no sequence the
# search keeps has a gap of more than 3 places, or that many stand-ins.
WIDEST_GAP = 3
_SUIT_INDEX = {suit: index for index, suit in enumerate(SUITS)}


class _Hand:
    """A hand broken down for the search: per-suit card counts, jokers, points."""

    __slots__ = (
        "codes",
        "crowded",
        "jokers",
        "present",
        "sizes",
        "total",
        "wild_pure",
        "wild_rank",
        "wilds",
    )

    def __init__(self, cards: Sequence[Card], wild: Card, profile: RuleProfile) -> None:
        wild_rank_ = wild_rank(wild)
        codes = [0, 0, 0, 0]
        present = [0, 0, 0, 0]  # bit r: rank r held in that suit
        sizes = [0, 0, 0, 0]
        wilds = [0, 0, 0, 0]
        copies = [0] * 53  # by card index, to spot more copies than the decks hold
        printed = total = 0
        for card in cards:
            rank = card.rank
            if rank == 0:
                printed += 1
                copies[52] += 1
                continue
            suit = _SUIT_INDEX[card.suit]
            copies[suit * 13 + rank - 1] += 1
            if rank == wild_rank_:
                wilds[suit] += 1
            else:
                codes[suit] += 1 << (NIBBLE * rank)
                present[suit] |= 1 << rank
                sizes[suit] += 1
                total += PLACE_POINTS[rank]
        copies[52 if wild.rank == 0 else _SUIT_INDEX[wild.suit] * 13 + wild.rank - 1] += 1
        self.crowded = (
            max(copies[:52]) > profile.decks or copies[52] > profile.decks * profile.jokers_per_deck
        )
        self.codes = codes
        self.present = present
        self.sizes = sizes
        self.wilds = wilds
        self.jokers = printed + wilds[0] + wilds[1] + wilds[2] + wilds[3]
        self.total = total
        self.wild_rank = wild_rank_
        self.wild_pure = profile.wild_natural_is_pure


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
    for suit in range(4):
        mask = hand.present[suit]
        zero_place = 0
        if wild_pure and hand.wilds[suit]:
            zero_place = hand.wild_rank
            mask |= 1 << zero_place
        if mask & 2:
            mask |= 1 << ACE_HIGH
        if mask & (mask >> 1) & (mask >> 2):
            run = _best_run(mask, zero_place)
            if run[0] > best[0]:
                best = (run[0], suit, run[1], run[2])
    return best


# -- one suit's sequences ----------------------------------------------------------------------
#
# A suit table lists every worthwhile way to split one suit's cards into sequences and loose
# cards, as entries (jokers used, state, loose points, witness), none beaten by another on
# all of jokers (fewer), state (covers) and loose points (fewer). The witness is a linked
# list (sequence, rest) of sequences, each a tuple of the places of its own cards.
#
# Wild-rank cards of the suit sit at their own place as zero-point cards; using one in a
# sequence uses up one of the hand's jokers, the same as a joker standing in at that place,
# but keeps a pure sequence pure (profile option) and lets a joker-only group stand.

_SPLITS: dict[tuple, tuple[int, tuple]] = {}
_TABLES: dict[tuple, tuple[int, tuple]] = {}
# Bounds on the caches (about 40 MB together when full); a full cache is simply emptied.
SPLITS_LIMIT = 50_000
TABLES_LIMIT = 25_000
_EMPTY = ((0, NOTHING, 0, None),)


def _split(code: int, wild: int, wild_pure: bool, budget: int, zero: int = 0) -> tuple:
    """The suit table of the cards in ``code`` (Aces already placed low or high).

    ``wild`` has all four bits set at the places that hold wild-rank cards. The lowest card
    is either loose or the lowest card standing as itself in a sequence; that sequence runs
    to some higher card within 13 places, leaving out any cards in between that a joker
    replaces (each costs one joker), all within ``budget``.

    A table worked out for a larger budget serves a smaller one (its entries within the
    smaller budget are exactly the smaller table), so callers skip entries over budget.
    ``zero`` marks places (lowest bit of the place's 4) whose cards score nothing: the
    search's bound for cards that may yet go into sets.
    """
    held = (code | code >> 1 | code >> 2 | code >> 3) & PLACE_BITS  # lowest bit per place held
    if wild:
        wild &= held * 15
        if not wild:
            wild_pure = True
    if zero:
        zero &= held
    key = (code, wild, wild_pure, zero)
    cached = _SPLITS.get(key)
    if cached is not None and cached[0] >= budget:
        return cached[1]
    low = ((code & -code).bit_length() - 1) >> 2
    higher = []  # the places above the lowest card that hold cards, in order
    bits = held >> (NIBBLE * (low + 1))
    while bits:
        bit = bits & -bits
        bits ^= bit
        higher.append(low + 1 + ((bit.bit_length() - 1) >> 2))
    # Cards beyond more empty places than there are jokers (or than any kept sequence
    # spans) never share a sequence with the lowest card: split them off and combine the two
    # tables, which are small and recur often.
    reach = min(budget, WIDEST_GAP)
    previous = low
    for place in higher:
        if place - previous - 1 > reach:
            cut = (1 << (NIBBLE * place)) - 1
            found = _merge(
                _split(code & cut, wild, wild_pure, budget, zero),
                _split(code & ~cut, wild, wild_pure, budget, zero),
                budget,
            )
            return _remember(key, budget, found)
        previous = place
    low_unit = 1 << (NIBBLE * low)
    rest = code - low_unit
    low_wild = (wild >> (NIBBLE * low)) & 1
    points = 0 if low_wild or (zero >> (NIBBLE * low)) & 1 else PLACE_POINTS[low]
    best: dict[int, tuple[int, object]] = {}
    if rest:
        for used, state, loose, witness in _split(rest, wild, wild_pure, budget, zero):
            if used <= budget:
                best[used << 3 | state] = (loose + points, witness)
    else:
        best[0] = (points, None)
    inside: list[int] = []  # places of the cards between low and top
    inside_units = inside_wild = 0
    previous = low
    for top in (low, *higher):
        empty = top - low - 1 - len(inside) if top != low else 0
        if top - low > 12 or empty > budget or top - previous - 1 > WIDEST_GAP:
            break
        previous = top
        top_unit = 1 << (NIBBLE * top)
        length = top - low + 1 if top - low >= 2 else 3
        top_wild = 0 if top == low else (wild >> (NIBBLE * top)) & 1
        for skip in range(min(len(inside), budget - empty) + 1):
            for left_out in combinations(inside, skip) if skip else ((),):
                if top == low:
                    sequence: tuple[int, ...] = (low,)
                    remaining, wild_used = rest, low_wild
                else:
                    remaining = rest - inside_units - top_unit
                    wild_used = low_wild + inside_wild + top_wild
                    if skip:
                        sequence = (low, *(p for p in inside if p not in left_out), top)
                        for place in left_out:
                            remaining += 1 << (NIBBLE * place)
                            wild_used -= (wild >> (NIBBLE * place)) & 1
                    else:
                        sequence = (low, *inside, top)
                fillers = length - len(sequence)
                cost = fillers + wild_used
                if cost > budget or (top != low and _beaten(sequence, fillers, skip)):
                    continue
                pure = fillers == 0 and (wild_used == 0 or wild_pure)
                row = MERGE[PURE_ONE if pure else IMPURE_ONE]
                subtable = (
                    _split(remaining, wild, wild_pure, budget - cost, zero) if remaining else _EMPTY
                )
                for used, state, loose, witness in subtable:
                    used += cost
                    if used <= budget:
                        slot = used << 3 | row[state]
                        current = best.get(slot)
                        if current is None or loose < current[0]:
                            best[slot] = (loose, (sequence, witness))
        if top != low:
            inside.append(top)
            inside_units += top_unit
            inside_wild += top_wild
    return _remember(key, budget, _pareto(best))


def _beaten(sequence: tuple[int, ...], fillers: int, left_out: int) -> bool:
    """Whether splitting ``sequence`` (2+ cards of its own) does at least as well.

    See WIDEST_GAP. Runs of empty places are already kept short by the caller; cards left
    out make runs of stand-ins too.
    """
    if fillers >= 2 * len(sequence):
        return True
    return bool(left_out) and any(b - a > WIDEST_GAP for a, b in pairwise(sequence))


def _remember(key: tuple, budget: int, found: tuple) -> tuple:
    if len(_SPLITS) >= SPLITS_LIMIT:
        _SPLITS.clear()
    _SPLITS[key] = (budget, found)
    return found


MERGED = "merged"  # a witness made of two witnesses: (MERGED, first, second)


def _merge(first: tuple, second: tuple, budget: int) -> tuple:
    """The table of two groups of cards that never share a sequence."""
    best: dict[int, tuple[int, object]] = {}
    for used, state, loose, witness in first:
        if used > budget:
            continue
        row = MERGE[state]
        for more_used, other, more, other_witness in second:
            total = used + more_used
            if total <= budget:
                slot = total << 3 | row[other]
                value = loose + more
                current = best.get(slot)
                if current is None or value < current[0]:
                    best[slot] = (value, (MERGED, witness, other_witness))
    return _pareto(best)


def _sequences(witness) -> list[tuple[int, ...]]:
    """The sequences (tuples of places) a witness stands for."""
    found, stack = [], [witness]
    while stack:
        node = stack.pop()
        if node is None:
            continue
        if node[0] is MERGED:
            stack += node[1:]
        else:
            found.append(node[0])
            stack.append(node[1])
    return found


def _pareto(best: dict[int, tuple[int, object]]) -> tuple:
    """The entries of ``best`` (slot: (loose, witness)) that no other entry beats.

    An entry is beaten by one using no more jokers, covering its progress, with no more loose
    points. Going through the slots by jokers used, the best progress first, each entry
    only has to be compared with the least loose points seen so far for its progress.
    """
    if len(best) == 1:
        ((slot, (loose, witness)),) = best.items()
        return ((slot >> 3, slot & 7, loose, witness),)
    least = [UNREACHED] * 6
    kept = []
    for slot in sorted(best, key=_SLOT_ORDER.__getitem__):
        loose, witness = best[slot]
        state = slot & 7
        if loose < least[state]:
            kept.append((slot >> 3, state, loose, witness))
            for covered in _COVERED[state]:
                if loose < least[covered]:
                    least[covered] = loose
    kept.sort(key=_loose)  # the first entry has the least loose points (see _combine)
    return tuple(kept)


def _loose(entry: tuple) -> int:
    return entry[2]


def _suit_table(
    code: int, wilds: int, wild_rank_: int, wild_pure: bool, budget: int, zero: int
) -> tuple:
    """The suit table of one suit's cards (Aces at place 1) and ``wilds`` wild-rank cards.

    Entries may use more jokers than ``budget`` (see :func:`_split`).
    """
    key = (code, wilds, wild_rank_, wild_pure, zero)
    cached = _TABLES.get(key)
    if cached is None or cached[0] < budget:
        cached = (budget, _suit_entries(code, wilds, wild_rank_, wild_pure, budget, zero))
        if len(_TABLES) >= TABLES_LIMIT:
            _TABLES.clear()
        _TABLES[key] = cached
    return cached[1]


def _suit_entries(
    code: int, wilds: int, wild_rank_: int, wild_pure: bool, budget: int, zero: int
) -> tuple:
    wild = 0
    if wilds:
        if wild_rank_ == 1:
            wild = 15 << NIBBLE | 15 << (NIBBLE * ACE_HIGH)
        else:
            wild = 15 << (NIBBLE * wild_rank_)
        code += wilds << (NIBBLE * wild_rank_)
    aces = (code >> NIBBLE) & 15
    if not aces:
        return _split(code, wild, wild_pure, budget, zero) if code else _EMPTY
    if zero & ACE_LOW_UNIT:
        zero |= ACE_HIGH_UNIT
    # Each Ace sits low or high: try every split of the copies.
    best: dict[int, tuple[int, object]] = {}
    for high in range(aces + 1):
        placed = code - high * ACE_LOW_UNIT + high * ACE_HIGH_UNIT
        for used, state, loose, witness in _split(placed, wild, wild_pure, budget, zero):
            if used <= budget:
                slot = used << 3 | state
                current = best.get(slot)
                if current is None or loose < current[0]:
                    best[slot] = (loose, witness)
    return _pareto(best)


def _table(
    hand: _Hand, suit: int, code: int, size: int, budget: int, wild_pure: bool, zero: int = 0
) -> tuple:
    wilds = hand.wilds[suit]
    # More jokers than this never help: a sequence with more than two stand-ins per own
    # card does worse than that many one-card sequences with two stand-ins each.
    budget = min(budget, 2 * size + 3 * wilds)
    if wilds:
        return _suit_table(code, wilds, hand.wild_rank, wild_pure, budget, zero)
    return _suit_table(code, 0, 0, True, budget, zero)


# -- sets -------------------------------------------------------------------------------------


@lru_cache(maxsize=1 << 10)
def _set_choices(available: tuple[int, ...]) -> tuple[tuple[tuple[int, ...], int, tuple], ...]:
    """Ways to lay sets of one rank given its copies per suit.

    Each way is (copies taken per suit, jokers needed, the sets as tuples of suits), one per
    distinct choice of cards taken. A set of one card and two jokers is left out: the same
    cards make an impure sequence, never worse. Ways taking more cards come first, since
    they tend to leave fewer points and so tighten the search's bound early.
    """
    choices: list[tuple[tuple[int, ...], int, tuple]] = []

    def extend(left: list[int], jokers: int, sets: tuple, largest: tuple) -> None:
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
    fewest: dict[tuple[int, ...], tuple[tuple[int, ...], int, tuple]] = {}
    for choice in choices:
        if choice[0] not in fewest or choice[1] < fewest[choice[0]][1]:
            fewest[choice[0]] = choice
    return tuple(sorted(fewest.values(), key=lambda choice: (-sum(choice[0]), choice[1])))


# -- the search -------------------------------------------------------------------------------


def _two_sequences(hand: _Hand, wild_pure: bool, below: int) -> tuple | None:
    """The least loose points under ``below`` with two sequences, one pure, and its sets.

    A depth-first search decides the sets rank by rank. At each step the cards of the ranks
    not yet decided count zero points in their suits (they may still go into sets), which
    makes the combined suit tables a lower bound for every choice below; a branch that
    cannot get under the best found so far is cut. Returns (loose points,
    ((shift, choice), ...), suit tables, joker budget) or None.
    """
    p0, p1, p2, p3 = hand.present
    two_suits = (p0 & p1) | (p0 & p2) | (p0 & p3) | (p1 & p2) | (p1 & p3) | (p2 & p3)
    per_rank = []
    codes = hand.codes
    jokers = hand.jokers
    zero = [0, 0, 0, 0]
    while two_suits:
        bit = two_suits & -two_suits
        two_suits ^= bit
        shift = NIBBLE * (bit.bit_length() - 1)
        available = tuple((code >> shift) & 15 for code in codes)
        choices = [c for c in _set_choices(available) if c[1] <= jokers]
        if len(choices) > 1:
            suits = [suit for suit in range(4) if available[suit]]
            per_rank.append((shift, choices, suits))
            for suit in suits:
                zero[suit] |= 1 << shift
    tables = [
        _table(hand, suit, codes[suit], hand.sizes[suit], jokers, wild_pure, zero[suit])
        for suit in range(4)
    ]
    best: list = [below, None, None, 0]
    _decide(hand, wild_pure, per_rank, 0, list(codes), list(hand.sizes), jokers, zero, tables,
            [], best)  # fmt: skip
    return None if best[1] is None else (best[0], tuple(best[1]), best[2], best[3])


def _decide(
    hand: _Hand,
    wild_pure: bool,
    per_rank: list,
    index: int,
    codes: list[int],
    sizes: list[int],
    budget: int,
    zero: list[int],
    tables: list,
    picked: list,
    best: list,
) -> None:
    loose = _combine(tables, budget, best[0])
    if loose >= best[0]:
        return  # exact at the last rank, a lower bound before it
    if index == len(per_rank):
        best[0], best[1], best[2], best[3] = loose, list(picked), tables, budget
        return
    shift, choices, suits = per_rank[index]
    unit = 1 << shift
    decided = zero.copy()
    for suit in suits:
        decided[suit] &= ~unit
    for choice in choices:
        taken, needed, _ = choice
        if needed > budget:
            continue
        left, left_sizes, left_tables = codes.copy(), sizes.copy(), tables.copy()
        for suit in suits:  # only the suits holding this rank change
            left[suit] -= taken[suit] << shift
            left_sizes[suit] -= taken[suit]
            left_tables[suit] = _table(
                hand, suit, left[suit], left_sizes[suit], budget - needed, wild_pure, decided[suit]
            )
        picked.append((shift, choice))
        _decide(hand, wild_pure, per_rank, index + 1, left, left_sizes, budget - needed,
                decided, left_tables, picked, best)  # fmt: skip
        picked.pop()
        if best[0] == 0:
            return  # nothing does better


def _combine(tables: list, budget: int, below: int) -> int:
    """Least loose points over the suit tables with two sequences, one pure, within budget.

    Partial sums that cannot end under ``below`` are dropped on the way (each table's first
    entry has its least loose points).
    """
    offset = 0
    busy = []
    for table in tables:
        if len(table) == 1 and table[0][1] == NOTHING:
            offset += table[0][2]  # nothing to choose in this suit (and it uses no jokers)
        else:
            busy.append(table)
    floor = offset + sum(table[0][2] for table in busy)
    if floor >= below:
        return floor
    states = {0: 0}  # used << 3 | state: loose points
    for table in busy:
        floor -= table[0][2]
        limit = below - floor
        merged: dict[int, int] = {}
        for slot, loose in states.items():
            used = slot >> 3
            row = MERGE[slot & 7]
            for extra, state, more, _ in table:
                total = used + extra
                value = loose + more
                if total <= budget and value < limit:
                    key = total << 3 | row[state]
                    if value < merged.get(key, UNREACHED):
                        merged[key] = value
        if not merged:
            return UNREACHED
        states = merged
    result = UNREACHED
    for slot, loose in states.items():
        if slot & 7 == GOAL and loose < result:
            result = loose
    return result + offset if result < UNREACHED else UNREACHED


def _combine_witness(tables: list, budget: int) -> list:
    """The entry of each suit table behind :func:`_combine`'s answer."""
    states: dict[int, tuple[int, tuple]] = {0: (0, ())}
    for table in tables:
        merged: dict[int, tuple[int, tuple]] = {}
        for slot, (loose, chosen) in states.items():
            for entry in table:
                total = (slot >> 3) + entry[0]
                if total <= budget:
                    key = total << 3 | MERGE[slot & 7][entry[1]]
                    if key not in merged or loose + entry[2] < merged[key][0]:
                        merged[key] = (loose + entry[2], (*chosen, entry))
        states = merged
    goal = [value for slot, value in states.items() if slot & 7 == GOAL]
    return list(min(goal, key=lambda value: value[0])[1])


# -- public API -------------------------------------------------------------------------------


def _prepare(
    cards: Sequence[Card | str], wild: Card | str, profile: RuleProfile | str | None
) -> tuple[list[Card], Card, RuleProfile, _Hand]:
    profile = get_profile(profile)
    wild = wild if type(wild) is Card else Card.parse(wild)
    cards = [card if type(card) is Card else Card.parse(card) for card in cards]
    hand = _Hand(cards, wild, profile)
    if hand.crowded or len(cards) != profile.hand_size:
        check_hand(cards, wild, profile)  # says what is wrong
    return cards, wild, profile, hand


def min_hand_score(
    cards: Sequence[Card | str], wild: Card | str, profile: RuleProfile | str | None = None
) -> int:
    """The least hand score (before the 80 cap) any grouping of ``cards`` can have.

    >>> from domain.cards import parse_cards
    >>> min_hand_score(parse_cards("AS 2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS"), "7D")
    0
    """
    _, _, profile, hand = _prepare(cards, wild, profile)
    wild_pure = profile.wild_natural_is_pure
    pure = _best_pure(hand, wild_pure)
    if pure[0] < 0:
        return hand.total
    score = hand.total - pure[0]
    two = _two_sequences(hand, wild_pure, score)
    return two[0] if two is not None else score


def best_grouping(
    cards: Sequence[Card | str], wild: Card | str, profile: RuleProfile | str | None = None
) -> HandEvaluation:
    """The arrangement of ``cards`` with the least hand score under the scoring cases.

    On a tie the arrangement with two sequences wins, and loose jokers are then put into its
    groups, so a hand that can declare comes back as a valid declaration.
    """
    cards, wild, profile, hand = _prepare(cards, wild, profile)
    wild_pure = profile.wild_natural_is_pure
    pure = _best_pure(hand, wild_pure)
    two = None
    if pure[0] < 0:
        score = hand.total
        groups, loose = [], list(cards)
    else:
        score = hand.total - pure[0]
        two = _two_sequences(hand, wild_pure, score + 1)
        if two is not None:
            score = two[0]
            groups, loose = _arrange_two_sequences(cards, hand, two)
        else:
            groups, loose = _arrange_pure(cards, pure)
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
    if _two_sequences(hand, profile.wild_natural_is_pure, 1) is None:
        return None
    result = best_grouping(cards, wild, profile)
    return result if result.valid_declaration else None


# -- building the arrangement ----------------------------------------------------------------


class _Pool:
    """The hand's cards not yet laid, by (rank, suit); loose ones come back in hand order."""

    def __init__(self, cards: list[Card]) -> None:
        self.cards = cards
        self.left: dict[tuple, int] = {}
        for card in cards:
            key = (card.rank, card.suit)
            self.left[key] = self.left.get(key, 0) + 1

    def take(self, card: Card) -> Card:
        self.left[(card.rank, card.suit)] -= 1
        return card

    def jokers(self, wild_rank_: int) -> list[Card]:
        """The jokers not yet laid, printed ones first (they can only stand in)."""
        found = [JOKER] * self.left.get((0, None), 0)
        for (rank, suit), count in self.left.items():
            if rank == wild_rank_:
                found += [_card(SUITS.index(suit), rank)] * count
        return found

    def rest(self) -> list[Card]:
        seen: dict[tuple, int] = {}
        rest = []
        for card in self.cards:
            key = (card.rank, card.suit)
            if seen.get(key, 0) < self.left[key]:
                seen[key] = seen.get(key, 0) + 1
                rest.append(card)
        return rest


def _card(suit: int, place: int) -> Card:
    return ALL_CARDS[suit * 13 + (0 if place == ACE_HIGH else place - 1)]


def _arrange_pure(cards: list[Card], pure: tuple) -> tuple[list, list]:
    _, suit, first, last = pure
    pool = _Pool(cards)
    run = [pool.take(_card(suit, place)) for place in range(first, last + 1)]
    return [run], pool.rest()


def _arrange_two_sequences(cards: list[Card], hand: _Hand, two: tuple) -> tuple[list, list]:
    """The groups behind the search's answer: sets, then the suits' sequences, jokers in."""
    _, sets, tables, budget = two
    pool = _Pool(cards)
    laid: list[list] = []  # [cards, kind] with kind "pure", "impure" or "set"
    for shift, (_, _, chosen_sets) in sets:
        for suits in chosen_sets:
            laid.append([[pool.take(_card(suit, shift // NIBBLE)) for suit in suits], "set"])
    sequences = []
    for suit, entry in enumerate(_combine_witness(tables, budget)):
        for places in _sequences(entry[3]):
            sequences.append((places, [pool.take(_card(suit, place)) for place in places]))
    jokers = pool.jokers(hand.wild_rank)
    for places, naturals in sequences:
        laid.append(_lay_sequence(places, naturals, jokers, pool, hand.wild_rank, hand.wild_pure))
    for group, kind in laid:
        if kind == "set" and len(group) == 2:
            group.append(pool.take(jokers.pop(0)))
    _absorb_jokers(laid, jokers, pool)
    order = {"pure": 0, "impure": 1, "set": 2}
    laid.sort(key=lambda item: order[item[1]])
    return [group for group, _ in laid], pool.rest()


def _lay_sequence(
    places: tuple[int, ...],
    naturals: list[Card],
    jokers: list[Card],
    pool: _Pool,
    wild_rank_: int,
    wild_pure: bool,
) -> list:
    """[cards in order with jokers in the gaps (and at an end if too short), kind]."""
    first, last = places[0], places[-1]
    if last - first < 2:
        last = first + 2
        if last > ACE_HIGH:
            first, last = ACE_HIGH - 2, ACE_HIGH
    by_place = dict(zip(places, naturals, strict=True))
    cards = []
    for place in range(first, last + 1):
        card = by_place.get(place)
        cards.append(card if card is not None else pool.take(jokers.pop(0)))
    wild_used = any(card.rank == wild_rank_ for card in naturals)
    pure = len(cards) == len(naturals) and (wild_pure or not wild_used)
    return [cards, "pure" if pure else "impure"]


def _absorb_jokers(laid: list[list], jokers: list[Card], pool: _Pool) -> None:
    """Put jokers left loose into groups where they change nothing, so the hand can declare.

    A set or an impure sequence takes any number of jokers (up to 13 cards); a pure one
    would turn impure, so only a second pure sequence may take one.
    """
    while jokers:
        target = next(
            (
                item
                for kind in ("set", "impure")
                for item in laid
                if item[1] == kind and len(item[0]) < MAX_SEQUENCE
            ),
            None,
        )
        if target is None:
            pure = [item for item in laid if item[1] == "pure" and len(item[0]) < MAX_SEQUENCE]
            if sum(1 for item in laid if item[1] == "pure") < 2 or not pure:
                return
            target = pure[-1]
            target[1] = "impure"
        target[0].append(pool.take(jokers.pop(0)))


def clear_caches() -> None:
    """Forget every cached suit table (the benchmark's cold start)."""
    _SPLITS.clear()
    _TABLES.clear()
    _best_run.cache_clear()
    _set_choices.cache_clear()
