"""One suit's sequences: every worthwhile way to split a suit's cards, as a small table.

A suit table lists the ways to split one suit's natural cards into sequences and loose cards
as entries (jokers used, progress, loose points, witness), none beaten by another on all of
jokers (no more), progress (covers) and loose points (no more). Progress is (pure
sequences, sequences) capped at (1, 2), numbered 0..5 (:data:`STATES`). The witness says
which sequences: a linked list, each node the rest and then the places of one sequence's
own cards, (rest, place, place, ...), or (MERGED, first, second) where two tables were
combined (one object a node: the caches hold many).

Places run from 1 (Ace low) to 14 (Ace high); a suit's cards are one int holding 4 bits of
count per place (place p at bit 4p). A place mask (``pure_at``) uses the lowest bit of each
place's 4.

Wild-rank cards are not in the tables: every one of them is one of the hand's jokers, and
in a sequence of its own suit, standing as itself costs one joker exactly as a joker
standing in at that place would. The one difference is purity (docs/rules.md: a wild card in its
own place keeps a sequence pure), so ``pure_at`` marks the places where the suit holds a
wild card: a sequence whose only missing place is one of them is pure. (The solver deals
with groups whose only card standing as itself is a wild card, ``7C JK JK``.)

The tables depend only on their arguments and are cached (bounded); :mod:`domain.rummy13.solver`
combines them. Used there only; no I/O. With 5 6 7 and Q of a suit and no jokers, the one
entry worth keeping is the pure sequence 5 6 7 with Q loose (10 points):

>>> code = (1 << 4 * 5) | (1 << 4 * 6) | (1 << 4 * 7) | (1 << 4 * 12)   # 5 6 7 Q
>>> [(used, STATES[state], loose) for used, state, loose, _ in suit_table(code, 0, 0)]
[(0, (1, 1), 10)]
"""

from __future__ import annotations

import binascii
import importlib
import marshal
import os
import zlib
from bisect import bisect_right
from operator import itemgetter
from typing import Any, Final

from domain import rummy13

# The geometry's numbers are Final: the compiled search reads them as constants, not as
# module attributes looked up at every use.
ACE_HIGH: Final = 14
# Places in a suit run from 1 (Ace low) to 14 (Ace high); card points by place.
PLACE_POINTS: Final = (0, 10, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 10, 10, 10)
# A suit's cards are one int, 4 bits of count per place: place p at bit 4p.
NIBBLE: Final = 4
ACE_LOW_UNIT: Final = 1 << NIBBLE
ACE_HIGH_UNIT: Final = 1 << (NIBBLE * ACE_HIGH)
PLACE_BITS: Final = sum(1 << (NIBBLE * place) for place in range(ACE_HIGH + 1))
# Progress towards a declaration, (pure sequences, sequences) capped at (1, 2), as 0..5, in
# an order that puts a progress before every progress it covers (see _pareto).
STATES = ((1, 2), (1, 1), (0, 2), (0, 1), (1, 0), (0, 0))
GOAL: Final = 0  # the places of STATES' progresses
PURE_ONE: Final = 1
IMPURE_TWO: Final = 2
IMPURE_ONE: Final = 3
NOTHING: Final = 5
MERGE: Final = tuple(
    tuple(STATES.index((min(1, a[0] + b[0]), min(2, a[1] + b[1]))) for b in STATES) for a in STATES
)
COVERS = tuple(tuple(a[0] >= b[0] and a[1] >= b[1] for b in STATES) for a in STATES)
UNREACHED: Final = 1 << 30
_COVERED = tuple(tuple(b for b in range(6) if COVERS[a][b]) for a in range(6))
# Splitting a sequence at a run of 4 or more stand-ins never costs more jokers (each part
# needs at most 2 to reach 3 cards) and gives one more sequence; nor does splitting one with
# at least two stand-ins per card of its own into one-card sequences. So no sequence the
# search keeps has a gap of more than 3 places, or 2 or more stand-ins per card of its own.
WIDEST_GAP = 3
STAND_INS_PER_CARD = 2
# A sequence spans at most 13 places (Ace low to King, or 2 to Ace high).
LONGEST: Final = 13
# In a suit holding one copy of each card, no sequence needs to leave out a card between its
# ends: a card left out and loose does better in place of its joker, and two sequences that
# cross do no worse as a lower and a higher one. Checked for every such suit against the
# search that leaves cards out (tests/test_solver_tables.py), it makes the search of such a
# suit one way per card instead of one per choice of cards.
ONE_COPY = True
# A sequence whose one stand-in fills a place where the suit holds a card (left out to
# another sequence, or loose) never needs to: with that card in the stand-in's place the
# sequence is pure, and the stand-in takes the card's place in the other sequence (still
# a sequence of the same places, one joker as before; no fewer pure sequences, since this
# one turns pure whatever the other turns) or is saved (the card was loose: fewer points).
# The sequence with the lowest card is always the one laid first, so the search of each
# suit only lays such sequences whole, and a suit searched within one joker leaves no card
# out at all. Checked against the search that leaves cards out (ONE_STAND_IN False) on
# suits with repeated cards, wild cards beside them and up to 6 jokers
# (tests/test_solver_tables.py).
ONE_STAND_IN = True
# A sequence of SPLIT_AT places or more whose three lowest or three highest places hold
# its own cards is beaten by those three as a pure sequence and the rest as another (no
# more jokers, one more sequence, the rest keeping every stand-in and so its purity): the
# search does not lay it (SPLIT_LONG; checked against the search that does).
SPLIT_AT = 6
SPLIT_LONG = True
_SECOND_COPY: Final = PLACE_BITS * 14  # the bits of a place's count beyond the first copy
_ACE_PLACES: Final = 15 << NIBBLE | 15 << (NIBBLE * ACE_HIGH)  # an Ace's counts, low and high

# A table's entry: (jokers used, progress, loose points, witness). The witness is the
# tuples described above, None for no sequence (the solver's table of joker-only groups
# holds their count there instead).
Entry = tuple[int, int, int, Any]
Table = tuple[Entry, ...]
_SPLITS: dict[int, tuple[int, Table]] = {}  # by key: (the most jokers, the table within)
_TABLES: dict[int, tuple[int, Table]] = {}
# Bounds on the caches; a full cache is simply emptied.
SPLITS_LIMIT = 50_000
TABLES_LIMIT = 25_000
EMPTY: Final[Table] = ((0, NOTHING, 0, None),)  # the table of no cards


def _split(code: int, pure_at: int, budget: int) -> Table:
    """The suit table of the cards in ``code`` (Aces already placed low or high).

    The lowest card is either loose or the lowest card standing as itself in a sequence;
    that sequence runs to some higher card within 13 places, leaving out any cards in
    between that a joker replaces (each costs one joker), all within ``budget``.

    A table worked out for a larger budget serves a smaller one (its entries within the
    smaller budget are exactly the smaller table), so callers skip entries over budget.
    ``pure_at`` marks the places where a wild card of the suit may stand.
    """
    if pure_at:  # only a place beside a card matters: equal tables share a key
        held = (code | code >> 1 | code >> 2 | code >> 3) & PLACE_BITS
        pure_at &= held << NIBBLE | held >> NIBBLE
        key = code | pure_at << 64
    else:
        key = code
    cached = _SPLITS.get(key) or _SMALL_SPLITS.get(key)
    if cached is not None and cached[0] >= budget:
        return cached[1]
    if (
        key == code
        and budget <= SMALL_BUDGET
        and not code & _ACE_PLACES
        and PACKED_SIZES[0] <= _cards(code) <= PACKED_SIZES[1]
    ):
        # No Ace: the table kept for good is this search's, for this budget, from empty
        # caches (what is left of a larger suit once its lowest cards are laid, mostly).
        tables = _PACKED.get(code)
        if tables is not None:
            return _remember(key, budget, tables[budget])
    held = (code | code >> 1 | code >> 2 | code >> 3) & PLACE_BITS
    low_bit = held & -held
    low = (low_bit.bit_length() - 1) >> 2
    rest = code - low_bit
    points = PLACE_POINTS[low]
    if not rest:  # one card: loose, or standing as itself beside two jokers
        found: Table
        if budget >= 2:
            found = ((2, IMPURE_ONE, 0, (None, low)), (0, NOTHING, points, None))
            return _remember(key, budget, found)
        return _remember(key, budget, ((0, NOTHING, points, None),))
    higher = []  # the places above the lowest card that hold cards, in order
    bits = held ^ low_bit
    while bits:
        bit = bits & -bits
        bits ^= bit
        higher.append((bit.bit_length() - 1) >> 2)
    # Cards beyond more empty places than there are jokers (or than any kept sequence
    # spans) never share a sequence with the lowest card: split them off and combine the two
    # tables, which are small and recur often.
    widest = WIDEST_GAP
    reach = budget if budget < widest else widest
    previous = low
    for place in higher:
        if place - previous - 1 > reach:
            cut = (1 << (NIBBLE * place)) - 1
            found = _merge(
                _split(code & cut, pure_at, budget),
                _split(code & ~cut, pure_at, budget),
                budget,
            )
            return _remember(key, budget, found)
        previous = place
    best: dict[int, tuple[int, object]] = {}
    for used, state, loose, witness in _split(rest, pure_at, budget):
        if used <= budget:
            best[used << 3 | state] = (loose + points, witness)
    if budget >= 2:  # the lowest card alone, two jokers beside it
        _lay(best, _split(rest, pure_at, budget - 2), 2, IMPURE_ONE, (low,), budget)
    # Longer sequences: the lowest card and some higher cards, one copy per place. Each
    # stack item is (next candidate, last place taken, stand-ins so far, their places, units
    # of the cards taken, places taken, whether a card held was left out).
    per_card = STAND_INS_PER_CARD
    count = len(higher)
    # One copy of each card, or a budget under two (so a sequence leaving a card out has
    # one stand-in): sequences leave out no card between their ends (ONE_COPY, ONE_STAND_IN).
    start_only = (ONE_COPY and not code & _SECOND_COPY) or (ONE_STAND_IN and budget < 2)
    ends = count
    stack: list[tuple[int, int, int, int, int, tuple[int, ...], bool]] = [
        (0, low, 0, 0, 0, (low,), False)
    ]
    while stack:
        start, last, fillers, gaps, units, places, left_out = stack.pop()
        if start_only:
            ends = start + 1 if start < count else start
        for index in range(start, ends if start_only else count):
            place = higher[index]
            gap = place - last - 1
            if gap > widest or place - low >= LONGEST:
                break
            more = fillers + gap
            if more > budget:
                break
            taken = units + (1 << (NIBBLE * place))
            sequence = (*places, place)
            if gap:
                missing = gaps | (PLACE_BITS & ((1 << (NIBBLE * place)) - (1 << (NIBBLE * last + NIBBLE))))  # fmt: skip
            else:
                missing = gaps
            leaves_out = left_out or index > start  # a card held between its ends
            own_top = False  # too long, its three highest places its own cards (SPLIT_LONG)
            if SPLIT_LONG and place - low >= SPLIT_AT - 1 and len(sequence) > 2:
                if sequence[2] == low + 2:
                    break  # its three lowest places are its own cards, and so on longer ones
                own_top = sequence[-3] == place - 2
            if index + 1 < count:
                stack.append((index + 1, place, more, missing, taken, sequence, leaves_out))
            if own_top:
                continue  # a longer one may still be laid
            if place - low == 1:  # two cards side by side: one more place at either end
                cost = 1
                pure = (pure_at & (low_bit >> NIBBLE | low_bit << (2 * NIBBLE))) != 0
            else:
                cost = more
                pure = cost == 0 or (cost == 1 and (pure_at & missing) != 0)
            if cost > budget or cost >= per_card * len(sequence):
                continue  # over budget, or beaten by splitting it (see WIDEST_GAP)
            if leaves_out and cost == 1 and ONE_STAND_IN:
                continue  # beaten by taking the card left out (see ONE_STAND_IN)
            left = rest - taken
            row = MERGE[PURE_ONE] if pure else MERGE[IMPURE_ONE]
            for used, state, loose, witness in (
                _split(left, pure_at, budget - cost) if left else EMPTY
            ):
                used += cost
                if used <= budget:
                    slot = used << 3 | row[state]
                    current = best.get(slot)
                    if current is None or loose < current[0]:
                        best[slot] = (loose, (witness, *sequence))
    return _remember(key, budget, _pareto(best))


def _lay(
    best: dict, table: Table, cost: int, kind: int, sequence: tuple[int, ...], budget: int
) -> None:
    """Put ``sequence`` (``cost`` jokers, progress ``kind``) beside each entry of ``table``."""
    row = MERGE[kind]
    for used, state, loose, witness in table:
        used += cost
        if used <= budget:
            slot = used << 3 | row[state]
            current = best.get(slot)
            if current is None or loose < current[0]:
                best[slot] = (loose, (witness, *sequence))


def _remember(key: int, budget: int, found: Table) -> Table:
    if len(_SPLITS) >= SPLITS_LIMIT:
        _SPLITS.clear()
    _SPLITS[key] = (budget, found)
    return found


MERGED = "merged"  # a witness made of two witnesses: (MERGED, first, second)


def _merge(first: Table, second: Table, budget: int) -> Table:
    """The table of two groups of cards that never share a sequence."""
    if len(second) == 1 and second[0][0] == 0 and second[0][1] == NOTHING:
        extra, witness = second[0][2], second[0][3]  # the second part can only stay loose
        if witness is None:  # and holds no sequence
            return tuple(
                (used, state, loose + extra, first_witness)
                for used, state, loose, first_witness in first
            )
        return tuple(
            (used, state, loose + extra, (MERGED, first_witness, witness))
            for used, state, loose, first_witness in first
        )
    best: dict[int, tuple[int, object, object]] = {}
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
                    best[slot] = (value, witness, other_witness)
    # The witnesses are joined only for the entries kept.
    return tuple(
        (used, state, loose, _joined(witness, other_witness))
        for used, state, loose, (witness, other_witness) in _pareto(best, _pair)
    )


def _pair(found: tuple) -> tuple:
    return found[1:]


def _joined(first, second):
    """The witness of two witnesses (None: no sequence)."""
    if first is None:
        return second
    return first if second is None else (MERGED, first, second)


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
            found.append(node[1:])
            stack.append(node[0])
    return found


def _pareto(best: dict, witness_of=None) -> Table:
    """The entries of ``best`` (slot: (loose, witness)) that no other entry beats.

    An entry is beaten by one using no more jokers, covering its progress, with no more loose
    points. Going through the slots in order (by jokers used, and at equal jokers a progress
    before those it covers), each entry only has to be compared with the least loose points
    seen so far for its progress. The entries come out by loose points, least first.
    ``witness_of`` takes the witness from a value of ``best`` (its second item if None).
    """
    if len(best) == 1:
        ((slot, found),) = best.items()
        return ((slot >> 3, slot & 7, found[0], witness_of(found) if witness_of else found[1]),)
    least = [UNREACHED] * 6
    kept = []
    covered_by = _COVERED
    for slot in sorted(best):
        found = best[slot]
        loose = found[0]
        state = slot & 7
        if loose < least[state]:
            kept.append((slot >> 3, state, loose, witness_of(found) if witness_of else found[1]))
            for covered in covered_by[state]:
                if loose < least[covered]:
                    least[covered] = loose
    kept.sort(key=_loose)
    return tuple(kept)


_loose = itemgetter(2)


def suit_table(code: int, pure_at: int, budget: int) -> Table:
    """The suit table of one suit's natural cards (Aces at place 1).

    ``pure_at`` marks the places where the suit holds a wild card (a sequence missing only
    that place is pure). Entries may use more jokers than ``budget`` (see :func:`_split`):
    callers skip them.
    """
    if pure_at:
        # A wild card's place matters only where it makes a sequence of three with two
        # cards held (two above it, two below, or one either side; an Ace held counts at
        # both ends): a wild card elsewhere, as often once sets have taken cards, leaves
        # the table without one.
        held = (code | code >> 1 | code >> 2 | code >> 3) & PLACE_BITS
        held |= (held & ACE_LOW_UNIT) << (NIBBLE * (ACE_HIGH - 1))
        above, below = held >> NIBBLE, held << NIBBLE
        pure_at &= above & (held >> 2 * NIBBLE) | below & (held << 2 * NIBBLE) | above & below
    if not pure_at:
        small = _SMALL.get(code)
        if small is not None:
            table = small[budget] if budget < len(small) else small[-1]
            if table is not None:
                return table
    key = code | pure_at << 64
    if pure_at:
        packed = _SMALL_WILD.get(key)
        if packed is not None:  # kept for good, packed: unpacked the first time asked for
            unpacked = _WILD_UNPACKED.get(packed)
            if unpacked is None:
                unpacked = _WILD_UNPACKED[packed] = marshal.loads(packed)
            most, table = unpacked
            if budget <= most:
                return table
    cached = _TABLES.get(key)
    if cached is None or cached[0] < budget:
        kept = None
        if not pure_at and PACKED_SIZES[0] <= _cards(code) <= PACKED_SIZES[1]:
            kept = _PACKED.get(code)
        if kept is not None and budget < len(kept):
            cached = (budget, kept[budget])
        elif pure_at:
            cached = (budget, _wild_table(code, pure_at, key, budget))
        else:
            cached = (budget, _suit_entries(code, 0, budget))
        if len(_TABLES) >= TABLES_LIMIT:
            _TABLES.clear()
        _TABLES[key] = cached
    return cached[1]


def _wild_table(code: int, pure_at: int, key: int, budget: int) -> Table:
    """:func:`_wild_pure_entries` of ``code`` beside a wild card (``key``), from the tables
    kept for good (:func:`_packed_wild_tables`) when they are what it would work out here.

    A kept table is the one worked out for ``budget`` from empty caches. Worked out here,
    the wild card's sequences leave four cards or fewer, whose tables are kept for good and
    the same whatever the caches hold; but the suit's own table (no wild card) comes from
    the caches, which may hold the one worked out for a larger budget: the same entries
    within ``budget``, their witnesses maybe naming the sequences in another order, and
    with them the grouping shown. So the kept table serves only when the caches hold the
    suit's own table for this very budget, once asked for as the work would ask (the
    caches then hold what they would); else the table is worked out as before.
    """
    if budget <= SMALL_BUDGET:
        kept = _PACKED_WILD if _PACKED_WILD is not None else _read_packed_wild()
        tables = kept.get(key)
        if tables is not None:
            suit_table(code, 0, budget)
            plain = _TABLES.get(code)
            if plain is not None and plain[0] == budget:
                return tables[budget]
    return _wild_pure_entries(code, pure_at, budget)


def _cards(code: int) -> int:
    """How many cards ``code`` holds (up to three copies of each)."""
    return (code & PLACE_BITS).bit_count() + 2 * (code & PLACE_BITS << 1).bit_count()


def _wild_pure_entries(code: int, pure_at: int, budget: int) -> Table:
    """The table of ``code`` with a wild card of the suit at the places of ``pure_at``,
    from tables without one (those kept for good, mostly).

    A wild card in its place matters only to the sequence it makes pure, and only when no
    other sequence is pure (progress counts one pure sequence). So the table is the one
    without a wild card, beside, for every sequence the wild card makes pure (its own
    cards: one per place of a stretch of 3 to 13 places holding the wild place, every other
    place held), that sequence for one joker (the wild card) and pure, with the table of
    the cards it leaves. Equal to the search with ``pure_at`` (:func:`_split`, which
    tests/test_solver_tables.py checks it against), without that search's cost: the
    tables of the cards left are mostly small ones, kept for good.
    """
    plain = suit_table(code, 0, budget)
    if budget < 1:
        return plain
    best: dict[int, tuple[int, object, tuple[int, ...] | None]] = {}
    held = (code | code >> 1 | code >> 2 | code >> 3) & PLACE_BITS
    held |= (held & ACE_LOW_UNIT) << (NIBBLE * (ACE_HIGH - 1))  # an Ace is held high too
    row = MERGE[PURE_ONE]
    # A pure sequence of SPLIT_AT places or more is beaten by its part of 3 to 5 places with
    # the wild card and the rest of it, a sequence of the suit's own cards (SPLIT_LONG).
    longest = SPLIT_AT - 1 if SPLIT_LONG else LONGEST
    wilds = pure_at
    within = budget - 1  # the wild card standing as itself takes one joker
    while wilds:
        wild_bit = wilds & -wilds
        wilds ^= wild_bit
        wild = (wild_bit.bit_length() - 1) >> 2
        first = wild  # the lowest of the held places side by side below the wild place
        while first > 1 and wild - first < longest - 1 and held >> (NIBBLE * (first - 1)) & 1:
            first -= 1
        for low in range(first, wild + 1):
            # Every place from low to high but the wild place is held; the sequence's own
            # cards (places, and their units in the code) grow with high.
            places = list(range(low, wild))
            units = 0
            for place in places:
                units += 1 << (NIBBLE * place)
            high = wild
            while True:
                if high - low >= 2:  # 3 places or more: a sequence, pure
                    rest = suit_table(code - units, 0, budget) if code != units else EMPTY
                    laid = None
                    for used, state, loose, witness in rest:
                        if used <= within:
                            slot = (used + 1) << 3 | row[state]
                            current = best.get(slot)
                            if current is None or loose < current[0]:
                                if laid is None:
                                    laid = tuple(places)
                                best[slot] = (loose, witness, laid)
                high += 1
                if high > ACE_HIGH or high - low >= longest or not held >> (NIBBLE * high) & 1:
                    break
                places.append(high)
                units += 1 << (NIBBLE * (high % ACE_HIGH or 1))  # an Ace high is held low
    if not best:
        return plain
    for used, state, loose, witness in plain:
        if used <= budget:
            slot = used << 3 | state
            current = best.get(slot)
            if current is None or loose < current[0]:
                best[slot] = (loose, witness, None)
    # The witnesses of the wild card's sequences are built only for the entries kept.
    return _pareto(best, _laid)


def _laid(found: tuple):
    """The witness of ``best``'s value (loose, the rest's witness, the places laid or None)."""
    laid = found[2]
    return found[1] if laid is None else (found[1], *laid)


def _suit_entries(code: int, pure_at: int, budget: int) -> Table:
    aces = (code >> NIBBLE) & 15
    if not aces:
        return _split(code, pure_at, budget) if code else EMPTY
    # Each Ace sits low or high: try every split of the copies.
    best: dict[int, tuple[int, object]] = {}
    for high in range(aces + 1):
        placed = code - high * ACE_LOW_UNIT + high * ACE_HIGH_UNIT
        for used, state, loose, witness in _split(placed, pure_at, budget):
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


def _small_tables(most: int, copies: int, budget: int) -> dict[int, tuple]:
    """The tables of every suit of up to ``most`` cards, ``copies`` at most of each, and no
    wild card beside them: {code: (the table within 0 jokers, 1, ..., then one for more)}.

    They come up in nearly every hand, so they are kept for good (taken up at import, see
    :func:`_small_suits`), and :func:`clear_caches` keeps them. More jokers than twice the cards never help a suit (a
    sequence with two stand-ins or more per card of its own does no better than that many
    one-card sequences with two each), so the table for that many serves any more; a suit
    kept only up to ``budget`` jokers has None for more (the search works it out).
    """
    found = {}
    for code in [code for size in range(most + 1) for code in _suit_codes(size, copies)]:
        size = bin(code & PLACE_BITS).count("1") + 2 * bin(code & PLACE_BITS << 1).count("1")
        most_useful = min(2 * size, budget)
        table = _suit_entries(code, 0, most_useful)
        tables = tuple(
            tuple([entry for entry in table if entry[0] <= within])
            for within in range(most_useful + 1)
        )
        found[code] = tables if most_useful == 2 * size else (*tables, None)
    return found


def _small_suits() -> None:
    """Take up the tables kept for good: every suit of up to three cards, the suits of four
    cards holding a card twice at most and those of five cards holding one copy of each
    (ONE_COPY makes those cheap), these within four jokers, with the splits behind them,
    which serve the search of larger suits, and the same suits' tables with a wild card
    beside them (packed).

    They are read from :mod:`domain.rummy13.kept_tables`, written by this module (run it:
    ``python -m domain.rummy13.suit_tables``) from exactly what :func:`_build_kept` works
    out, which takes several times as long; that module names the source of this one it was
    written from, and if this file has changed since, the tables are worked out here.
    """
    kept = _stored_kept()
    if kept is None:
        kept = _build_kept()
    _SMALL.update(kept[0])
    _SMALL_SPLITS.update(kept[1])
    _SMALL_WILD.update(kept[2])


def _build_kept() -> tuple[dict[int, tuple], dict[int, tuple[int, tuple]], dict[int, bytes]]:
    """The tables kept for good, the splits behind them and the same suits' tables with a
    wild card beside (packed, :func:`_small_wild_tables`), worked out afresh (every cache
    emptied first, those kept for good too, and put back after)."""
    global _PACKED
    saved = dict(_SMALL_SPLITS), dict(_SMALL), dict(_SMALL_WILD), _PACKED
    _PACKED = {}
    _SMALL_SPLITS.clear()
    _SMALL.clear()
    _SMALL_WILD.clear()
    clear_caches()
    try:
        # Later tables replace earlier ones of the same suit: each within the most jokers.
        small = _small_tables(TWICE_SUIT, 2, SMALL_BUDGET) if KEEP_FOUR_TWICE else {}
        small.update(_small_tables(ONE_COPY_SUIT, 1, SMALL_BUDGET))
        small.update(_small_tables(SMALL_SUIT, 2, 2 * SMALL_SUIT))
        splits = dict(_SPLITS)
        clear_caches()
        _SMALL.update(small)  # the wild card's tables are built from these, as at run time
        wild = _small_wild_tables(small) if KEEP_WILD else {}
    finally:
        clear_caches()
        _SMALL_SPLITS.clear()
        _SMALL.clear()
        _SMALL_SPLITS.update(saved[0])
        _SMALL.update(saved[1])
        _SMALL_WILD.update(saved[2])
        _PACKED = saved[3]
    return small, splits, wild


def _small_wild_tables(small: dict[int, tuple]) -> dict[int, bytes]:
    """The tables of the suits kept for good (``small``) with a wild card beside them:
    {code | places << 64: (most jokers, the table within them), marshalled}. A table serves
    any budget up to its own (callers skip the entries over theirs, as with every table
    worked out for a larger budget); a larger one is worked out as before.

    One for each rank a suit does not hold whose place makes a sequence of three with two
    of its cards (the places :func:`suit_table` keeps; Aces wild: either end or both).
    Every hand with a wild card beside a small suit of its suit asked for one, worked out
    from the tables kept for good at 5 to 10 µs each; unpacking one takes about 0.5 µs.
    They stay packed, so that importing the solver does not build every table's tuples
    (about 30 ms for the 6,000 or so): unpacked they would be most of the import. Each is
    unpacked the first time a hand asks for it, and kept (``_WILD_UNPACKED``).
    """
    found = {}
    for code, tables in small.items():
        for wild_at in _wild_places(code):
            most = len(tables) - (2 if tables[-1] is None else 1)  # jokers, as the suit's
            found[code | wild_at << 64] = marshal.dumps(
                (most, _wild_pure_entries(code, wild_at, most)), 4
            )
    return found


def _read_packed_wild() -> _PackedTables | dict:
    """Read :mod:`domain.rummy13.kept_wild_tables` (the first time a hand asks for one of
    its tables: importing the solver does not), or {} if it is stale or missing."""
    global _PACKED_WILD
    _PACKED_WILD = _stored_packed("PACKED_WILD", "kept_wild_tables") or {}
    return _PACKED_WILD


def _wild_places(code: int) -> list[int]:
    """The ``pure_at`` :func:`suit_table` keys a wild card's table of ``code`` by, one for
    each rank the suit does not hold whose place makes a sequence of three with two of its
    cards (Aces wild: either end or both)."""
    found = []
    for rank in range(1, ACE_HIGH):
        if (code >> (NIBBLE * rank)) & 15:
            continue  # a suit never holds a natural card of the wild rank
        wild_at = 1 << (NIBBLE * rank)
        if rank == 1:
            wild_at |= ACE_HIGH_UNIT
        held = (code | code >> 1 | code >> 2 | code >> 3) & PLACE_BITS
        held |= (held & ACE_LOW_UNIT) << (NIBBLE * (ACE_HIGH - 1))
        above, below = held >> NIBBLE, held << NIBBLE
        wild_at &= above & (held >> 2 * NIBBLE) | below & (held << 2 * NIBBLE) | above & below
        if wild_at:
            found.append(wild_at)
    return found


def _packed_wild_tables() -> dict[int, bytes]:
    """The same suits' tables as :func:`_packed_tables` beside a wild card of the suit, for
    every place :func:`_wild_places` names: {code | pure_at << 64: (the table within 0
    jokers, 1, ..., :data:`SMALL_BUDGET`), marshalled}.

    Worked out, one was about four times a packed table's cost to unpack, and the joker-rich
    hands ask for one in two; seven-card suits and larger are still worked out. Each is
    worked out for its own budget from empty caches, and served only where the caches hold
    what that work would find (:func:`_wild_table`), so the groupings shown are those
    worked out. Entries equal across budgets are marshalled once.
    """
    found = {}
    clear_caches()
    try:
        for size in range(ONE_COPY_SUIT, PACKED_SUIT + 1):
            for code in _suit_codes(size, 2):
                if code in _SMALL:
                    continue  # its wild card's tables are kept with it (_SMALL_WILD)
                for wild_at in _wild_places(code):
                    tables = []
                    shared: dict[tuple, tuple] = {}
                    for budget in range(SMALL_BUDGET + 1):
                        clear_caches()
                        table = _wild_pure_entries(code, wild_at, budget)
                        tables.append(tuple([shared.setdefault(entry, entry) for entry in table]))
                    found[code | wild_at << 64] = marshal.dumps(tuple(tables), 4)
    finally:
        clear_caches()
    return found


def _packed_tables() -> dict[int, bytes]:
    """The tables of the larger suits kept for good: every suit of five cards holding a card
    twice and of six cards (two copies at most), no wild card beside: {code: (the table
    within 0 jokers, 1, ..., :data:`SMALL_BUDGET`), marshalled}.

    Suits this size are where most of a cold hand's tables were worked out (about 100
    thousand instructions each, next to a few thousand to unpack one). Each is worked out
    for its own budget from empty caches, as a hand asking for it first would: a table
    worked out for more jokers holds the same entries within fewer, but its witnesses may
    name the same sequences in another order (splitting the suit where the fewer jokers
    cannot bridge a gap), and with it the grouping shown. Entries equal across budgets are
    marshalled once. A larger budget is worked out as before.
    """
    global _PACKED
    found = {}
    stored, _PACKED = _PACKED, {}  # worked out by the search alone, none read back
    clear_caches()
    try:
        for size in range(ONE_COPY_SUIT, PACKED_SUIT + 1):
            for code in _suit_codes(size, 2):
                if code in _SMALL:
                    continue  # kept already (one copy of each of five cards)
                tables = []
                shared: dict[tuple, tuple] = {}
                for budget in range(SMALL_BUDGET + 1):
                    table = _suit_entries(code, 0, budget)
                    clear_caches()
                    tables.append(tuple([shared.setdefault(entry, entry) for entry in table]))
                found[code] = marshal.dumps(tuple(tables), 4)
    finally:
        clear_caches()
        _PACKED = stored
    return found


def _suit_codes(size: int, copies: int) -> list[int]:
    """Every suit of exactly ``size`` cards, at most ``copies`` of each, Aces at place 1."""
    frontier = [0]
    for _ in range(size):  # each suit once: cards added from the lowest place up
        frontier = [
            code + (1 << (NIBBLE * place))
            for code in frontier
            for place in range(1, ACE_HIGH)
            if not code >> (NIBBLE * (place + 1)) and (code >> (NIBBLE * place)) & 15 < copies
        ]
    return frontier


class _PackedTables:
    """:func:`_packed_tables` as stored: each suit's tables marshalled, deflated on their
    own against a preset dictionary (:func:`_preset`) and in base64, one after another in
    one string, unpacked when a hand asks for them (so that importing the solver unpacks
    none of the 16,000 or so). ``get`` answers as a dict of (table within 0 jokers, 1, ...)
    would.

    One suit a stream: deflated eight together, unpacking the one table asked for took about
    23 µs (most of what these tables cost a cold hand); alone, about 3 µs, and the preset
    dictionary keeps the file smaller than the chunks did. A suit's tables once unpacked
    are kept for the rest of the process, like those taken up at import
    (:func:`clear_caches` keeps them, as it kept the chunks once inflated), so a suit
    asked for again costs a dictionary lookup.
    """

    __slots__ = ("codes", "ends", "inflated", "preset", "text")

    def __init__(self, codes: tuple[int, ...], ends: tuple[int, ...], text: str, preset: bytes):
        self.codes = codes  # in order
        self.ends = ends  # where each code's tables end in ``text``
        self.text = text
        self.preset = preset
        self.inflated: dict[int, tuple[Table, ...]] = {}  # by code, as asked for

    def get(self, code: int) -> tuple[Table, ...] | None:
        tables = self.inflated.get(code)
        if tables is None:
            codes = self.codes
            index = bisect_right(codes, code) - 1
            if index < 0 or codes[index] != code:
                return None
            start = self.ends[index - 1] if index else 0
            packed = self._inflate(self.text[start : self.ends[index]])
            tables = self.inflated[code] = marshal.loads(packed)
        return tables

    def _inflate(self, text: str) -> bytes:
        return zlib.decompressobj(RAW, zdict=self.preset).decompress(binascii.a2b_base64(text))

    def each(self) -> dict[int, bytes]:
        """Every code's tables, marshalled (as :func:`_packed_tables` works them out)."""
        starts = (0, *self.ends[:-1])
        return {
            code: self._inflate(self.text[start:end])
            for code, start, end in zip(self.codes, starts, self.ends, strict=True)
        }


def _pack(value) -> str:
    packer = zlib.compressobj(9)
    packed = packer.compress(marshal.dumps(value, 4)) + packer.flush()
    return binascii.b2a_base64(packed, newline=False).decode("ascii")


def _packed_strings(packed: dict[int, bytes]) -> tuple[tuple[int, ...], tuple[str, ...], bytes]:
    """``packed`` as stored: (the codes in order, each one's tables deflated against the
    preset dictionary and in base64, the preset dictionary)."""
    codes = tuple(sorted(packed))
    preset = _preset([packed[code] for code in codes])
    texts = []
    for code in codes:
        packer = zlib.compressobj(9, zlib.DEFLATED, RAW, zdict=preset)
        deflated = packer.compress(packed[code]) + packer.flush()
        texts.append(binascii.b2a_base64(deflated, newline=False).decode("ascii"))
    return codes, tuple(texts), preset


def _preset(tables: list[bytes]) -> bytes:
    """A preset dictionary for deflating each suit's tables alone: PRESET_SIZE bytes of
    tables spread evenly over the codes (what recurs in one recurs in most)."""
    step = max(1, len(tables) // 160)
    return b"".join(tables[::step])[-PRESET_SIZE:]


def _ends(strings: tuple[str, ...]) -> tuple[int, ...]:
    """Where each of ``strings`` ends once they are joined."""
    ends, end = [], 0
    for text in strings:
        end += len(text)
        ends.append(end)
    return tuple(ends)


def _stored_packed(name: str = "PACKED", module: str = "kept_tables") -> _PackedTables | None:
    """The larger suits' tables :mod:`domain.rummy13.kept_tables` holds (or ``module``, as
    ``name``: PACKED_WILD in kept_wild_tables for their wild card's), if written from this
    very source (else None: they are then worked out as a hand asks, as before)."""
    try:
        kept = importlib.import_module(f"domain.rummy13.{module}")
    except ImportError:
        return None
    if _fingerprint() != getattr(kept, "SOURCE", None):
        return None
    index = getattr(kept, f"{name}_INDEX", None)
    text = getattr(kept, name, None)
    preset = getattr(kept, f"{name}_PRESET", None)
    if type(index) is not str or type(text) is not str or type(preset) is not str:
        return None
    try:
        codes, ends = _packed_index(index)
        preset_bytes = binascii.a2b_base64(preset)
    except (ValueError, TypeError, EOFError, zlib.error, binascii.Error):
        return None
    if not codes or len(codes) != len(ends) or len(text) != ends[-1]:
        return None
    return _PackedTables(codes, ends, text, preset_bytes)


def _packed_index(text: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """PACKED_INDEX read: (the codes in order, where each one's tables end in PACKED).

    Kept as marshalled text rather than two tuples written out: parsing 33,000 numbers was
    most of compiling kept_tables.py (where byte code is not kept, every import). Deflated
    too: the text parsed is a fifth as long (the wild cards' index, 39,000 larger numbers,
    1.2 MB of base64 as it was)."""
    codes, ends = marshal.loads(zlib.decompress(binascii.a2b_base64(text)))
    if type(codes) is not tuple or type(ends) is not tuple:
        raise TypeError("PACKED_INDEX holds no codes and ends")
    return codes, ends


def _fingerprint() -> str | None:
    """This file's CRC-32 and length: which source the stored tables were written from.

    Found in the package's folder: when this module runs compiled (domain.rummy13.native)
    its ``__file__`` names the built library, not always where that is."""
    try:
        with open(os.path.join(rummy13.__path__[0], "suit_tables.py"), "rb") as source:
            text = source.read()
    except OSError:
        return None
    return f"{zlib.crc32(text):08x}-{len(text)}"


def _stored_kept() -> tuple[dict, dict, dict] | None:
    """The tables :mod:`domain.rummy13.kept_tables` holds, if written from this very source
    (else None)."""
    try:
        from domain.rummy13 import kept_tables
    except ImportError:
        return None
    if _fingerprint() != kept_tables.SOURCE:
        return None
    try:
        small, splits, wild = marshal.loads(zlib.decompress(binascii.a2b_base64(kept_tables.DATA)))
    except (ValueError, TypeError, EOFError, zlib.error, binascii.Error):
        return None
    return small, splits, wild


def write_kept(path: str | None = None, wild_path: str | None = None) -> str:
    """Work out the tables kept for good and write them, as :mod:`domain.rummy13.kept_tables`
    (or to ``path``) and :mod:`domain.rummy13.kept_wild_tables` (or to ``wild_path``);
    returns the first path written."""
    here = os.path.dirname(os.path.abspath(__file__))
    target = path or os.path.join(here, "kept_tables.py")
    text = _pack(_build_kept())
    lines = [text[start : start + 88] for start in range(0, len(text), 88)]
    with open(target, "w", encoding="ascii") as out:
        out.write(
            '"""The suit tables kept for good (domain.rummy13.suit_tables), worked out beforehand.\n\n'
            "Generated by `python -m domain.rummy13.suit_tables`: do not edit. DATA is the tables\n"
            "and the splits behind them, marshalled, compressed and in base64; SOURCE names the\n"
            "suit_tables.py they were worked out by (its CRC-32 and length). Importing the solver\n"
            "reads them instead of working them out, and does work them out if that file has\n"
            "changed since (tests/test_kept_tables.py fails until this one is written again).\n"
            "PACKED holds the larger suits' tables, each suit's marshalled, deflated alone against\n"
            "the preset dictionary PACKED_PRESET and in base64 (a line each, one string);\n"
            "PACKED_INDEX (marshalled, base64) holds their suits' codes in order and where each\n"
            "ends in PACKED. A suit's are unpacked as hands ask for them, and not used at all if\n"
            'that file has changed.\n"""\n\n'
        )
        out.write(f'SOURCE = "{_fingerprint()}"\n')
        out.write("DATA = (\n")
        out.writelines(f'    "{line}"\n' for line in lines)
        out.write(")\n")
        _write_packed(out, "PACKED", _packed_tables())
    with open(wild_path or os.path.join(here, "kept_wild_tables.py"), "w", encoding="ascii") as out:
        out.write(
            '"""The larger suits\' tables beside a wild card (domain.rummy13.suit_tables), worked\n'
            "out beforehand.\n\n"
            "Generated by `python -m domain.rummy13.suit_tables`: do not edit. SOURCE as in\n"
            "kept_tables.py; PACKED_WILD, PACKED_WILD_INDEX and PACKED_WILD_PRESET as its PACKED,\n"
            "PACKED_INDEX and PACKED_PRESET, keyed by code | places << 64. Imported the first time\n"
            "a hand asks for such a table, not with the solver: they are most of the file's size.\n"
            '"""\n\n'
        )
        out.write(f'SOURCE = "{_fingerprint()}"\n')
        _write_packed(out, "PACKED_WILD", _packed_wild_tables())
    return target


def _write_packed(out, name: str, packed: dict[int, bytes]) -> None:
    """Write ``packed`` (:func:`_packed_tables`' form) as ``name``, ``name``_INDEX and
    ``name``_PRESET (:func:`_stored_packed` reads them)."""
    codes, tables, preset = _packed_strings(packed)
    index = marshal.dumps((codes, _ends(tables)), 4)
    index = binascii.b2a_base64(zlib.compress(index, 9), newline=False)
    index_text = index.decode("ascii")
    out.write(f"{name}_INDEX = (\n")
    out.writelines(
        f'    "{index_text[start : start + 88]}"\n' for start in range(0, len(index_text), 88)
    )
    out.write(")\n")
    preset_text = binascii.b2a_base64(preset, newline=False).decode("ascii")
    out.write(f"{name}_PRESET = (\n")
    out.writelines(
        f'    "{preset_text[start : start + 88]}"\n' for start in range(0, len(preset_text), 88)
    )
    out.write(")\n")
    out.write(f"{name} = (\n")
    out.writelines(f'    "{table}"\n' for table in tables)
    out.write(")\n")


SMALL_SUIT = 3  # cards in a suit with tables kept for good, two copies at most
# Cards in a suit with tables kept for good, one copy of each (within SMALL_BUDGET jokers).
# Five rather than four (1,287 more tables): 4 to 5 % fewer instructions a hand in the one-
# and two-joker classes, for 40 million more instructions of import (docs/benchmarks.md).
ONE_COPY_SUIT = 5
# Also keep the suits of TWICE_SUIT cards holding a card twice (936 more tables), within
# SMALL_BUDGET jokers: measured for issue 16 (docs/benchmarks.md), 2 to 4 % fewer
# instructions a hand in the one- and two-joker classes and the joker-rich batch. Worked
# out at import that cost a third more import time; read from kept_tables.py, far less.
TWICE_SUIT = 4
KEEP_FOUR_TWICE = True
SMALL_BUDGET = 4  # jokers the tables kept for good of one-copy suits go up to
# Also keep those suits' tables with a wild card beside (packed; :func:`_small_wild_tables`).
KEEP_WILD = True
# The suits of five cards holding a card twice and of six cards (two copies at most) have
# their tables kept for good too, within SMALL_BUDGET jokers (:func:`_packed_tables`).
PACKED_SUIT = 6
PACKED_SIZES = (ONE_COPY_SUIT, PACKED_SUIT)  # the cards of the suits kept packed
_SMALL: dict[int, tuple[Table | None, ...]] = {}
_SMALL_SPLITS: dict[int, tuple[int, Table]] = {}
_SMALL_WILD: dict[int, bytes] = {}
_PACKED: _PackedTables | dict = {}  # read below, once the tables kept for good are
# The same suits' tables beside a wild card, by code | pure_at << 64: None until a hand
# first asks for one (_read_packed_wild).
_PACKED_WILD: _PackedTables | dict | None = None
# _SMALL_WILD's tables once asked for, unpacked, by the packed bytes (so that a test
# replacing _SMALL_WILD is not served from here); kept for good like them.
_WILD_UNPACKED: dict[bytes, tuple[int, Table]] = {}
_small_suits()
# Bytes of the preset dictionary the larger suits' tables are deflated against: 16 KiB took
# them to about 0.8 MB in base64 at about 3 µs a suit to unpack (4 KiB: 1.0 MB, 4.8 µs;
# none: 2.3 MB, 6.5 µs).
PRESET_SIZE = 16_384
RAW = -zlib.MAX_WBITS  # deflated without zlib's header and checksum
_PACKED = _stored_packed() or {}


if __name__ == "__main__":
    print(write_kept())
