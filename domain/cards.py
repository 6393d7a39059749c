"""Playing cards as small immutable values with one text form.

>>> card = Card.parse("th")
>>> str(card), card.rank, card.suit, card.points()
('TH', 10, 'H', 10)
>>> Card.parse("10h") is card
True
>>> Card.parse("7C").is_joker(wild=Card.parse("7D"))
True
>>> Card.parse("AS").is_joker(wild=JOKER)   # a printed joker as indicator makes Aces wild
True

Cards are interned: there are exactly 53 distinct values (52 + the printed joker), so
``Card.parse`` returns shared instances and identity comparison is safe.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

RANKS = "A23456789TJQK"  # rank value = index + 1: A=1 ... K=13
SUITS = "SHDC"  # the toss order: Spades > Hearts > Diamonds > Clubs
SUIT_SYMBOLS = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}
SUIT_NAMES = {"S": "spades", "H": "hearts", "D": "diamonds", "C": "clubs"}
RANK_NAMES = {1: "ace", 11: "jack", 12: "queen", 13: "king"}
JOKER_TEXT = "JK"
ACE = 1


class CardError(ValueError):
    """Text that is not a card, or cards that cannot come from the table's decks."""


@dataclass(frozen=True, slots=True)
class Card:
    """One card. ``rank`` is 1 (Ace) to 13 (King), or 0 for the printed joker."""

    rank: int
    suit: str | None

    # -- text ------------------------------------------------------------------------
    @staticmethod
    def parse(text: str | Card) -> Card:
        """Parse ``AS``, ``TH``/``10h``, ``JK``; raise :class:`CardError` otherwise."""
        if type(text) is str:
            # Stored and recorded cards are in canonical text (the keys, which stripping
            # and upper-casing leave unchanged): one lookup, before the general path.
            card = _BY_TEXT.get(text)
            if card is not None:
                return card
        if isinstance(text, Card):
            return text
        if not isinstance(text, str):
            raise CardError(f"{text!r} is not a card (expected text such as 'AS' or 'JK')")
        card = _BY_TEXT.get(text.strip().upper())
        if card is None:
            raise CardError(f"'{text}' is not a card (rank A,2-9,T,J,Q,K then suit S,H,D,C, or JK)")
        return card

    def __str__(self) -> str:
        return JOKER_TEXT if self.rank == 0 else RANKS[self.rank - 1] + self.suit

    def __repr__(self) -> str:
        return f"Card({str(self)!r})"

    @property
    def text(self) -> str:
        return str(self)

    @property
    def symbol(self) -> str:
        """Human form with a suit symbol: ``A♠``, ``10♥``, ``🃏``-free ``JK``."""
        if self.rank == 0:
            return JOKER_TEXT
        rank = "10" if self.rank == 10 else RANKS[self.rank - 1]
        return rank + SUIT_SYMBOLS[self.suit]

    @property
    def spoken(self) -> str:
        """Words for screen readers: ``ace of spades``, ``printed joker``."""
        if self.rank == 0:
            return "printed joker"
        rank = RANK_NAMES.get(self.rank, str(self.rank))
        return f"{rank} of {SUIT_NAMES[self.suit]}"

    # -- value -----------------------------------------------------------------------
    @property
    def is_printed_joker(self) -> bool:
        return self.rank == 0

    @property
    def index(self) -> int:
        """0..51 for the standard cards (suit-major), 52 for the printed joker."""
        return 52 if self.rank == 0 else SUITS.index(self.suit) * 13 + self.rank - 1

    @property
    def face_points(self) -> int:
        """Points of the card ignoring jokers: A, T, J, Q, K 10; 2-9 face value."""
        if self.rank == 0:
            return 0
        return 10 if self.rank in (1, 10, 11, 12, 13) else self.rank

    def is_joker(self, wild: Card | None) -> bool:
        """Whether this card is a joker in a game whose wild indicator is ``wild``."""
        if self.rank == 0:
            return True
        return wild is not None and self.rank == wild_rank(wild)

    def points(self, wild: Card | None = None) -> int:
        """Penalty points held in a losing hand: jokers 0, else :attr:`face_points`."""
        return 0 if self.is_joker(wild) else self.face_points

    @property
    def toss_strength(self) -> tuple[int, int]:
        """Order for the toss: rank with Ace high, then Spades > Hearts > Diamonds > Clubs."""
        if self.rank == 0:
            raise CardError("a printed joker cannot be a toss card")
        rank = 14 if self.rank == ACE else self.rank
        return (rank, 3 - SUITS.index(self.suit))


def wild_rank(indicator: Card) -> int:
    """The rank that is wild: the indicator's, or Ace (1) when the indicator is a printed joker."""
    return ACE if indicator.rank == 0 else indicator.rank


def parse_cards(cards: str | Iterable[str | Card]) -> list[Card]:
    """Parse ``"AS 2S 10H"`` (spaces or commas) or a list of texts/cards."""
    if isinstance(cards, str):
        cards = cards.replace(",", " ").split()
    return [Card.parse(card) for card in cards]


def card_of(text) -> Card:
    """``Card.parse(text)``, the same card or the same error: canonical text by a subscript
    of the cards' own table, with no Python call of its own (a walk reads hundreds a game)."""
    try:
        return _BY_TEXT[text]
    except (KeyError, TypeError):  # not canonical text, or not text: as Card.parse reads it
        return Card.parse(text)


def cards_of(texts, *, top_last: bool = False) -> list[Card]:
    """``list(map(Card.parse, texts))``, reversed first with ``top_last`` (a stock as
    recorded, top first, as a list whose pop() is the top): the same cards or the same
    error, Card.parse reading again from the start what a lookup does not find."""
    try:
        return [_BY_TEXT[text] for text in (reversed(texts) if top_last else texts)]
    except (KeyError, TypeError):
        return list(map(Card.parse, reversed(texts) if top_last else texts))


def format_cards(cards: Iterable[Card]) -> str:
    return " ".join(card_texts(cards))


def card_texts(cards: Iterable[Card]) -> list[str]:
    """``[str(card) for card in cards]``. The 53 cards are interned: their texts by id()
    skip a method call per card (the solver's every losing hand lists its loose cards, every
    deal event its hands and stock)."""
    texts = _TEXT_BY_ID
    return [texts.get(id(card)) or str(card) for card in cards]


def card_text(card: Card) -> str:
    """``str(card)``, by id() for the interned cards (see :func:`card_texts`)."""
    return _TEXT_BY_ID.get(id(card)) or str(card)


def card_indices(cards: Iterable[Card]) -> bytes:
    """``bytes(card.index for card in cards)``, by id() for the interned cards (a derived
    stock, kept as indices by ``verify``'s deal check)."""
    cards = tuple(cards)
    try:
        return bytes(map(_INDEX_BY_ID.__getitem__, map(id, cards)))
    except KeyError:  # a card that is not one of the 53 interned ones
        return bytes(card.index for card in cards)


# A 13-card table: 1 to 4 packs (a 6-player table uses 2-3), 0 to 2 printed jokers a pack
# (the record format's bounds, docs/record-format.md).
DECKS_MAX = 4
JOKERS_PER_DECK_MAX = 2
# The most packs any family deals from (Red 3: a pack for each of at most 8 players): no deck
# is built beyond it, so a stored configuration asking for 10**12 packs is refused rather
# than built.
PACKS_MAX = 8


def check_packs(decks: object, jokers_per_deck: object, most: int = PACKS_MAX) -> None:
    """Raise :class:`CardError` unless ``decks`` is a whole number from 1 to ``most`` and
    ``jokers_per_deck`` one from 0 to :data:`JOKERS_PER_DECK_MAX`.

    >>> check_packs(10**12, 1)
    Traceback (most recent call last):
    ...
    domain.cards.CardError: decks must be a whole number from 1 to 8, got 1000000000000
    """
    for name, value, low, high in (
        ("decks", decks, 1, most),
        ("jokers_per_deck", jokers_per_deck, 0, JOKERS_PER_DECK_MAX),
    ):
        if type(value) is not int or not low <= value <= high:
            shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "..."
            raise CardError(f"{name} must be a whole number from {low} to {high}, got {shown}")


def full_deck(decks: int = 2, jokers_per_deck: int = 1) -> Counter[Card]:
    """The multiset of cards on a table using ``decks`` packs with their printed jokers (a
    new Counter each time: copied from the one worked out for these packs, without hashing
    each card again in Python)."""
    check_packs(decks, jokers_per_deck)
    return Counter(_full_deck(decks, jokers_per_deck))


@lru_cache(maxsize=32)
def _full_deck(decks: int, jokers_per_deck: int) -> Counter[Card]:
    deck: Counter[Card] = Counter()
    for card in ALL_CARDS:
        deck[card] = decks * (jokers_per_deck if card.rank == 0 else 1)
    if jokers_per_deck == 0:
        del deck[JOKER]
    return deck


def deck_order(decks: int = 2, jokers_per_deck: int = 1) -> list[Card]:
    """A fixed, documented initial order: pack by pack, suits S H D C, A..K, then jokers."""
    check_packs(decks, jokers_per_deck)
    order: list[Card] = []
    for _ in range(decks):
        order.extend(card for card in ALL_CARDS if card.rank != 0)
        order.extend([JOKER] * jokers_per_deck)
    return order


def check_within_deck(cards: Iterable[Card], decks: int, jokers_per_deck: int) -> None:
    """Raise :class:`CardError` if ``cards`` hold more copies of a card than the decks have."""
    available = full_deck(decks, jokers_per_deck)
    for card, count in Counter(cards).items():
        if count > available[card]:
            raise CardError(
                f"{card} appears {count} times but {decks} deck(s) with "
                f"{jokers_per_deck} joker(s) each hold only {available[card]}"
            )


ALL_CARDS: tuple[Card, ...] = tuple(
    [Card(rank, suit) for suit in SUITS for rank in range(1, 14)] + [Card(0, None)]
)
JOKER: Card = ALL_CARDS[52]
_BY_TEXT: dict[str, Card] = {str(card): card for card in ALL_CARDS}
_TEXT_BY_ID: dict[int, str] = {id(card): str(card) for card in ALL_CARDS}
_INDEX_BY_ID: dict[int, int] = {id(card): card.index for card in ALL_CARDS}
_BY_TEXT.update({"10" + card.suit: card for card in ALL_CARDS if card.rank == 10})
