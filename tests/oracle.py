"""A deliberately simple brute-force oracle for the best grouping of a 13-card hand.

It shares nothing with ``domain.rummy13.solver`` except :func:`domain.rummy13.melds.classify` (itself pinned
down by the unit tests) and the card points. It works straight from docs/rules.md:

1. Candidate groups: every sub-multiset of the hand with 3+ cards that ``classify`` calls
   valid. Only one filter is applied before asking ``classify``, and it follows from the
   definitions: a valid group's non-joker cards all share one suit (a sequence) or one rank
   (a set). So the candidates are (non-jokers of one suit, or of one rank) x (any jokers).
2. Scores per case (docs/rules.md §1): all cards; all cards less the best pure group; and, over
   every packing of disjoint candidate groups with two sequences, one pure, the points left
   outside the groups. Packings are enumerated as a memoised recursion on the set of cards
   still free: the lowest free card is either loose or in a candidate group of free cards.
3. A declaration exists iff some packing covers all 13 cards with two sequences, one pure.

Cost grows with the number of jokers (every joker subset is tried), so the property tests
keep joker-rich hands few; random hands finish in milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from itertools import combinations

from domain.cards import ALL_CARDS, JOKER, Card, deck_order, wild_rank
from domain.rummy13.melds import GroupKind, classify
from domain.rummy13.profiles import get_profile


@dataclass(frozen=True)
class OracleAnswer:
    min_score: int
    can_declare: bool
    no_pure: int  # case 1: every card counts
    pure_only: int | None  # case 2: all but the best pure sequence, None without one
    two_sequences: int | None  # case 3: least loose points, None if no such packing


def _subsets(items):
    for size in range(len(items) + 1):
        yield from combinations(items, size)


def candidate_groups(cards, wild, profile=None):
    """{frozenset of card positions: kind} for every valid group in the hand."""
    profile = get_profile(profile)
    jokers = [i for i, card in enumerate(cards) if card.is_joker(wild)]
    others = [i for i, card in enumerate(cards) if not card.is_joker(wild)]
    families = {()}
    for key in {cards[i].suit for i in others} | {cards[i].rank for i in others}:
        family = [i for i in others if key in (cards[i].suit, cards[i].rank)]
        families.update(_subsets(family))
    found = {}
    kinds = {}  # the same cards (two decks) classify the same, whichever copies they are
    for naturals in families:
        for extra in _subsets(jokers):
            group = frozenset(naturals + extra)
            if len(group) < 3 or group in found:
                continue
            same = tuple(sorted(cards[i].index for i in group))
            if same not in kinds:
                kinds[same] = classify([cards[i] for i in sorted(group)], wild, profile).kind
            if kinds[same] is not None:
                found[group] = kinds[same]
    return found


def oracle(cards, wild, profile=None) -> OracleAnswer:
    cards = [Card.parse(card) for card in cards]
    wild = Card.parse(wild)
    points = [card.points(wild) for card in cards]
    total = sum(points)
    groups = candidate_groups(cards, wild, profile)
    by_lowest: dict[int, list] = {}
    for group, kind in groups.items():
        value = sum(points[i] for i in group)
        pure = 1 if kind is GroupKind.PURE else 0
        sequence = 1 if kind in (GroupKind.PURE, GroupKind.IMPURE) else 0
        mask = sum(1 << i for i in group)
        by_lowest.setdefault(min(group), []).append((mask, pure, sequence, value))

    # Progress (pure, sequences) capped at (1, 2) is kept as the index 3 * pure + sequences.
    after = [
        [3 * min(1, a // 3 + p) + min(2, a % 3 + s) for p, s in ((0, 0), (0, 1), (1, 1))]
        for a in range(6)
    ]

    @cache
    def packings(free: int) -> tuple[list[int], list[bool]]:
        """For each progress index: the most points grouped (-1: unreachable), and whether
        some packing reaching it groups every card. ``free``: bit mask of unplaced cards."""
        if not free:
            return [0, -1, -1, -1, -1, -1], [True] + [False] * 5
        lowest = (free & -free).bit_length() - 1
        most, whole = list(packings(free & ~(1 << lowest))[0]), [False] * 6  # lowest loose
        for mask, pure, sequence, group_value in by_lowest.get(lowest, ()):
            if mask & free == mask:
                kind = 2 if pure else sequence
                rest_most, rest_whole = packings(free & ~mask)
                for progress in range(6):
                    if rest_most[progress] >= 0:
                        target = after[progress][kind]
                        most[target] = max(most[target], rest_most[progress] + group_value)
                        whole[target] = whole[target] or rest_whole[progress]
        return most, whole

    most, whole = packings((1 << len(cards)) - 1)
    pure_values = [sum(points[i] for i in g) for g, k in groups.items() if k is GroupKind.PURE]
    pure_only = total - max(pure_values) if pure_values else None
    two_sequences = total - most[5] if most[5] >= 0 else None
    scores = [total] + [s for s in (pure_only, two_sequences) if s is not None]
    return OracleAnswer(
        min_score=min(scores),
        can_declare=whole[5],
        no_pure=total,
        pure_only=pure_only,
        two_sequences=two_sequences,
    )


# -- hands to compare on (shared by the property tests and bench/solver.py) ------------------


def _draw(rng, deck: list[Card], card: Card | None = None) -> Card:
    if card is None:
        card = deck[rng.randrange(len(deck))]
    deck.remove(card)
    return card


def deal_random(rng, *, jk_indicator: float = 0.1, jokers: int = 0):
    """(hand, wild): 13 cards and the indicator drawn from 2 decks with printed jokers.

    The indicator is a printed joker with probability ``jk_indicator`` (Aces then wild), on
    top of its plain chance; ``jokers`` forces at least that many jokers into the hand.
    """
    deck = deck_order(2, 1)
    wild = _draw(rng, deck, JOKER if rng.random() < jk_indicator else None)
    hand = []
    joker_cards = [card for card in deck if card.is_joker(wild)]
    for _ in range(jokers):
        card = joker_cards.pop(rng.randrange(len(joker_cards)))
        hand.append(_draw(rng, deck, card))
    while len(hand) < 13:
        hand.append(_draw(rng, deck))
    rng.shuffle(hand)
    return hand, wild


def deal_near_complete(rng, *, jk_indicator: float = 0.1):
    """(hand, wild): 13 cards built from random melds, then a little spoiled.

    Pure and impure sequences (3-5 cards, Ace low or high), sets (3-4 suits, sometimes with a
    joker), a joker-only group now and then; the rest random cards; then up to two cards are
    swapped for random ones, so the hand is near a declaration rather than always at one.
    """
    deck = deck_order(2, 1)
    wild = _draw(rng, deck, JOKER if rng.random() < 0.1 else None)
    hand: list[Card] = []
    room = 13 - rng.choice((0, 0, 1, 2, 3))
    for _ in range(40):
        if len(hand) >= room - 2:
            break
        meld = _random_meld(rng, wild, min(5, room - len(hand)))
        if meld and all(meld.count(card) <= deck.count(card) for card in meld):
            for card in meld:
                hand.append(_draw(rng, deck, card))
    while len(hand) < 13:
        hand.append(_draw(rng, deck))
    for _ in range(rng.choice((0, 0, 1, 2))):
        hand.pop(rng.randrange(13))
        hand.append(_draw(rng, deck))
    rng.shuffle(hand)
    return hand, wild


def _random_meld(rng, wild: Card, most: int) -> list[Card]:
    kind = rng.choice(("pure", "pure", "impure", "set", "set", "jokers"))
    some_joker = JOKER if rng.random() < 0.4 else _wild_card(rng, wild)
    if kind == "jokers":
        return [_wild_card(rng, wild), some_joker, _wild_card(rng, wild)][: max(3, most)]
    if kind == "set":
        rank = rng.randrange(1, 14)
        size = min(most, rng.choice((3, 3, 4)))
        suits = rng.sample("SHDC", size)
        meld = [_card(rank, suit) for suit in suits]
        if rng.random() < 0.3:
            meld[rng.randrange(size)] = some_joker
        return meld
    size = min(most, rng.choice((3, 3, 4, 5)))
    suit = rng.choice("SHDC")
    start = rng.randrange(1, 16 - size)  # places 1..14, 14 being the Ace high
    meld = [_card(1 if place == 14 else place, suit) for place in range(start, start + size)]
    if kind == "impure":
        meld[rng.randrange(size)] = some_joker
    return meld


def _card(rank: int, suit: str) -> Card:
    return ALL_CARDS["SHDC".index(suit) * 13 + rank - 1]


def _wild_card(rng, wild: Card) -> Card:
    return _card(wild_rank(wild), rng.choice("SHDC"))


def deal_suited(rng):
    """(hand, wild): 7 or 8 cards from a stretch of 5 to 7 ranks of one suit (two decks, so
    repeats), 2 to 4 jokers, the rest random: sequences overlap, and one sequence leaves
    cards in its middle to another."""
    deck = deck_order(2, 1)
    wild = _draw(rng, deck, JOKER if rng.random() < 0.1 else None)
    suit = rng.choice("SHDC")
    width = rng.choice((5, 6, 7))
    start = rng.randrange(1, 16 - width)  # places; 14 is the Ace high
    ranks = {1 if place == 14 else place for place in range(start, start + width)}
    hand = []
    for _ in range(rng.choice((7, 8))):
        own = [c for c in deck if c.suit == suit and c.rank in ranks and not c.is_joker(wild)]
        if own:
            hand.append(_draw(rng, deck, rng.choice(own)))
    joker_cards = [card for card in deck if card.is_joker(wild)]
    for _ in range(rng.choice((2, 3, 3, 4))):
        hand.append(_draw(rng, deck, joker_cards.pop(rng.randrange(len(joker_cards)))))
    while len(hand) < 13:
        hand.append(_draw(rng, deck))
    rng.shuffle(hand)
    return hand, wild


# -- hands by class: how many jokers are held, and the printed joker as indicator -------------

JOKER_CLASSES = ("0 jokers", "1 joker", "2 jokers", "3+ jokers", "printed joker wild")


def joker_class(hand: list[Card], wild: Card) -> str:
    """The class of a hand: a printed joker as indicator (Aces wild) first, else the number
    of jokers (printed or of the wild rank) held."""
    if wild.rank == 0:
        return JOKER_CLASSES[4]
    return JOKER_CLASSES[min(3, sum(card.is_joker(wild) for card in hand))]


def deal_exact_jokers(rng, jokers: int, *, printed_wild: bool = False):
    """(hand, wild): 13 cards from 2 decks holding exactly ``jokers`` jokers, the rest
    random; the indicator is a printed joker (Aces wild) when ``printed_wild``, else any
    card but a printed joker."""
    deck = deck_order(2, 1)
    if printed_wild:
        wild = _draw(rng, deck, JOKER)
    else:
        wild = _draw(rng, deck, rng.choice([card for card in deck if card.rank != 0]))
    joker_cards = [card for card in deck if card.is_joker(wild)]
    hand = [
        _draw(rng, deck, joker_cards.pop(rng.randrange(len(joker_cards)))) for _ in range(jokers)
    ]
    plain = [card for card in deck if not card.is_joker(wild)]
    while len(hand) < 13:
        hand.append(_draw(rng, deck, plain.pop(rng.randrange(len(plain)))))
    rng.shuffle(hand)
    return hand, wild


def deal_in_class(rng, name: str):
    """(hand, wild) of class ``name`` (:data:`JOKER_CLASSES`): a random hand or, one time in
    two, a near-complete one (drawn until it falls in the class), so each class has hands at
    and near a declaration as well as plain deals."""
    printed = name == JOKER_CLASSES[4]
    if rng.random() < 0.5:
        while True:
            hand, wild = deal_near_complete(rng, jk_indicator=1.0 if printed else 0.0)
            if joker_class(hand, wild) == name:
                return hand, wild
    if printed:
        return deal_random(rng, jk_indicator=1.0)
    jokers = JOKER_CLASSES.index(name)
    return deal_exact_jokers(rng, rng.randint(3, 6) if jokers == 3 else jokers)


# -- joker-rich hands: a stand-in for a batch of hands held back from us (issue 16) ----------


def deal_joker_rich(rng):
    """(hand, wild): 2 to 4 jokers held, wild-rank cards beside natural runs of their suit.

    The indicator is a printed joker one time in four (every Ace wild), else any other card.
    At least one joker held is a wild-rank card; one or two natural runs of 2 to 4 cards
    end just below or start just above the wild rank in a wild card's suit (so a wild card
    may stand in its own place and keep the run pure, or be spent as a joker), sometimes
    with a gap a joker must fill; a set of two or three cards one time in two; the rest
    random. The hand is a near-declaration as often as a plain deal: these are the hands
    where wild cards in place, joker-only groups, sets with jokers and stand-ins compete.
    """
    deck = deck_order(2, 1)
    if rng.random() < 0.25:
        wild = _draw(rng, deck, JOKER)
    else:
        wild = _draw(rng, deck, rng.choice([card for card in deck if card.rank != 0]))
    rank = wild_rank(wild)
    wild_cards = [card for card in deck if card.rank == rank]
    printed = [card for card in deck if card.rank == 0]
    count = rng.choice((2, 2, 3, 3, 4))
    hand = [_draw(rng, deck, wild_cards.pop(rng.randrange(len(wild_cards))))]
    for _ in range(count - 1):
        source = printed if printed and rng.random() < 0.4 else wild_cards
        hand.append(_draw(rng, deck, source.pop(rng.randrange(len(source)))))
    wild_suits = [card.suit for card in hand if card.rank == rank]
    for _ in range(rng.choice((1, 1, 2))):
        suit = rng.choice(wild_suits)
        length = rng.choice((2, 2, 3, 4))
        # Places 1..14 (14 the Ace high); the wild rank's own place, and an Ace's other end.
        own = [rank] + ([14] if rank == 1 else [])
        side = rng.choice(own)
        if rng.random() < 0.5 and side - length >= 1:
            places = range(side - length, side)
        elif side + length <= 14:
            places = range(side + 1, side + length + 1)
        else:
            places = range(side - length, side)
        places = [place for place in places if 1 <= place <= 14]
        if len(places) > 2 and rng.random() < 0.3:
            places.pop(rng.randrange(1, len(places) - 1))  # a gap for a joker
        for place in places:
            card = _card(1 if place == 14 else place, suit)
            if card in deck and card.rank != rank and len(hand) < 13:
                hand.append(_draw(rng, deck, card))
    if rng.random() < 0.5 and len(hand) < 11:
        set_rank = rng.choice([r for r in range(1, 14) if r != rank])
        for suit in rng.sample("SHDC", rng.choice((2, 3))):
            card = _card(set_rank, suit)
            if card in deck and len(hand) < 13:
                hand.append(_draw(rng, deck, card))
    plain = [card for card in deck if not card.is_joker(wild)]
    while len(hand) < 13:
        hand.append(_draw(rng, deck, plain.pop(rng.randrange(len(plain)))))
    rng.shuffle(hand)
    return hand, wild
