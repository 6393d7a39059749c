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
into sequences by :mod:`domain.suit_tables` (an exhaustive, cached search per suit), and the
four suit tables are combined under the joker budget. Undecided set cards counting zero
gives a lower bound that cuts the search.

Jokers are the printed jokers and the wild-rank cards. A wild-rank card either stands in
for anything (then it is one of the hand's interchangeable jokers) or stands as itself in a
sequence of its own suit; the suit tables treat the latter as a zero-point card of that
suit that uses up one joker, so joker-only groups such as ``7C JK JK`` come out naturally.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from itertools import combinations

from domain import suit_tables
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
from domain.suit_tables import (
    ACE_HIGH,
    GOAL,
    MERGE,
    NIBBLE,
    NOTHING,
    PLACE_POINTS,
    UNREACHED,
    suit_table,
    witness_sequences,
)

__all__ = ["HandError", "best_grouping", "declaration", "min_hand_score"]

_SUIT_INDEX = {suit: index for index, suit in enumerate(SUITS)}
# The set search keeps a lower bound only over at least this many choices of sets: the
# bound needs suit tables of its own, which cost more than a few choices tried outright.
BOUND_LEAVES = 16


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


def _table(
    hand: _Hand, suit: int, code: int, size: int, budget: int, wild_pure: bool, zero: int = 0
) -> tuple:
    wilds = hand.wilds[suit]
    # More jokers than this never help: a sequence with more than two stand-ins per own
    # card does worse than that many one-card sequences with two stand-ins each.
    budget = min(budget, 2 * size + 3 * wilds)
    if wilds:
        return suit_table(code, wilds, hand.wild_rank, wild_pure, budget, zero)
    return suit_table(code, 0, 0, True, budget, zero)


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

    A depth-first search decides the sets rank by rank. Where enough choices lie below a
    step, the cards of the ranks not yet decided count zero points in their suits (they
    may still go into sets), which makes the combined suit tables a lower bound for every
    choice below; a branch that cannot get under the best found so far is cut. Returns
    (loose points, ((shift, choice), ...), suit tables, joker budget) or None.
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
            per_rank.append([shift, choices, suits])
            for suit in suits:
                zero[suit] |= 1 << shift
    leaves = 1
    for step in reversed(per_rank):  # how many choices of sets lie under each step
        leaves *= len(step[1])
        step.append(leaves)
    tables = None
    if leaves >= BOUND_LEAVES:
        tables = [
            _table(hand, suit, codes[suit], hand.sizes[suit], jokers, wild_pure, zero[suit])
            for suit in range(4)
        ]
    # Suits holding none of those ranks keep one table whatever the sets (it serves any
    # smaller budget too).
    untouched = [
        _table(hand, suit, codes[suit], hand.sizes[suit], jokers, wild_pure)
        if per_rank and not zero[suit]
        else None
        for suit in range(4)
    ]
    best: list = [below, None, None, 0, untouched]
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
    tables: list | None,
    picked: list,
    best: list,
) -> None:
    """Decide the sets of ``per_rank[index:]``.

    ``tables`` are the suit tables with the undecided cards at zero, kept only where enough
    choices lie below to repay them (a bound needs tables of its own); None otherwise.
    ``best`` is [least loose so far, its sets, its tables, its budget, the fixed tables of
    suits holding no set rank].
    """
    if index == len(per_rank):
        if tables is None:
            tables = [
                _table(hand, suit, codes[suit], sizes[suit], budget, wild_pure)
                if best[4][suit] is None
                else best[4][suit]
                for suit in range(4)
            ]
        loose = _combine(tables, budget, best[0])
        if loose < best[0]:
            best[0], best[1], best[2], best[3] = loose, list(picked), tables, budget
        return
    if tables is not None and _combine(tables, budget, best[0]) >= best[0]:
        return  # even with the undecided cards free, no better than the best so far
    shift, choices, suits, _ = per_rank[index]
    unit = 1 << shift
    decided = zero.copy()
    for suit in suits:
        decided[suit] &= ~unit
    bound = index + 1 < len(per_rank) and per_rank[index + 1][3] >= BOUND_LEAVES
    for choice in choices:
        taken, needed, _ = choice
        if needed > budget:
            continue
        left, left_sizes = codes.copy(), sizes.copy()
        # Below a bounded step the tables carry on; only the suits holding this rank change.
        left_tables = (
            tables.copy() if tables is not None and (bound or index + 1 == len(per_rank)) else None
        )
        for suit in suits:
            left[suit] -= taken[suit] << shift
            left_sizes[suit] -= taken[suit]
            if left_tables is not None:
                left_tables[suit] = _table(
                    hand, suit, left[suit], left_sizes[suit], budget - needed, wild_pure,
                    decided[suit],
                )  # fmt: skip
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
        for places in witness_sequences(entry[3]):
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
    suit_tables.clear_caches()
    _best_run.cache_clear()
    _set_choices.cache_clear()
