"""One suit's sequences: every worthwhile way to split a suit's cards, as a small table.

A suit table lists the ways to split one suit's cards into sequences and loose cards as
entries (jokers used, progress, loose points, witness), none beaten by another on all of
jokers (no more), progress (covers) and loose points (no more). Progress is (pure
sequences, sequences) capped at (1, 2), numbered 0..5 (:data:`STATES`). The witness says
which sequences: a linked list (sequence, rest), or (MERGED, first, rest) where two tables
were combined; each sequence is a tuple of the places of its own cards.

Places run from 1 (Ace low) to 14 (Ace high); a suit's cards are one int holding 4 bits of
count per place (place p at bit 4p). Wild-rank cards of the suit sit at their own place as
zero-point cards: using one in a sequence uses up one of the hand's jokers, the same as a
joker standing in at that place, but keeps a pure sequence pure (profile option) and lets a
joker-only group (``7C JK JK``) stand.

The tables depend only on their arguments and are cached (bounded); :mod:`domain.solver`
combines them. Used there only; no I/O. With 5 6 7 and Q of a suit and no jokers, the one
entry worth keeping is the pure sequence 5 6 7 with Q loose (10 points):

>>> code = (1 << 4 * 5) | (1 << 4 * 6) | (1 << 4 * 7) | (1 << 4 * 12)   # 5 6 7 Q
>>> [(used, STATES[state], loose) for used, state, loose, _ in suit_table(code, 0, 0, True, 0, 0)]
[(0, (1, 1), 10)]
"""

from __future__ import annotations

from itertools import combinations, pairwise

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
# search keeps has a gap of more than 3 places, or 2 or more stand-ins per card of its own.
WIDEST_GAP = 3
STAND_INS_PER_CARD = 2

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
    held = 0
    if wild or zero:  # keep only the places still held, so equal tables share a key
        held = (code | code >> 1 | code >> 2 | code >> 3) & PLACE_BITS
        wild &= held * 15
        zero &= held
    if not wild:
        wild_pure = True
    key = (code, wild, wild_pure, zero)
    cached = _SPLITS.get(key)
    if cached is not None and cached[0] >= budget:
        return cached[1]
    low = ((code & -code).bit_length() - 1) >> 2
    low_unit = 1 << (NIBBLE * low)
    rest = code - low_unit
    low_wild = (wild >> (NIBBLE * low)) & 1
    points = 0 if low_wild or (zero >> (NIBBLE * low)) & 1 else PLACE_POINTS[low]
    if not rest:  # one card: loose, or standing as itself beside two jokers
        found = [(0, NOTHING, points, None)]
        if 2 + low_wild <= budget:
            found.append((2 + low_wild, IMPURE_ONE, 0, ((low,), None)))
        return _remember(key, budget, tuple(sorted(found, key=_loose)))
    if not held:
        held = (code | code >> 1 | code >> 2 | code >> 3) & PLACE_BITS
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
    best: dict[int, tuple[int, object]] = {}
    for used, state, loose, witness in _split(rest, wild, wild_pure, budget, zero):
        if used <= budget:
            best[used << 3 | state] = (loose + points, witness)
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
                if cost > budget or (
                    top != low
                    and (
                        fillers >= STAND_INS_PER_CARD * len(sequence)
                        or (skip and _too_wide(sequence))
                    )
                ):
                    continue  # over budget, or beaten by splitting it (see WIDEST_GAP)
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


def _too_wide(sequence: tuple[int, ...]) -> bool:
    """Whether cards left out of ``sequence`` make a run of more than WIDEST_GAP stand-ins.

    Runs of empty places are kept short by the caller already.
    """
    return any(b - a - 1 > WIDEST_GAP for a, b in pairwise(sequence))


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


def witness_sequences(witness) -> list[tuple[int, ...]]:
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


def suit_table(
    code: int, wilds: int, wild_rank_: int, wild_pure: bool, budget: int, zero: int
) -> tuple:
    """The suit table of one suit's cards (Aces at place 1) and ``wilds`` wild-rank cards.

    Entries may use more jokers than ``budget`` (see :func:`_split`): callers skip them.
    ``zero`` marks places whose cards score nothing (a lower bound, see the solver).
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


def clear_caches() -> None:
    """Forget every cached table."""
    _SPLITS.clear()
    _TABLES.clear()
