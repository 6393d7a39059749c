"""Red 3 Rummy books: what may be laid down, how cards are added, and what each card is worth.

Twos and printed jokers are wild. A book is a **kind** (3+ cards of one rank, identical cards
allowed) or a **run** (3+ consecutive cards of one suit, Ace high or low, never wrapping), with
at most one wild card and never a red three (docs/rules.md §2).

>>> book = make_book(parse_cards("7S 7S 7H JK"))
>>> book.kind.value, str(book), book.value()
('kind', '7S 7S 7H JK', 30)
>>> run = make_book(parse_cards("5C 6C JK"))      # a wild not filling a gap goes on top
>>> str(run), run.describe(), run.value()
('5C 6C JK', 'run 5C-7C (JK as 7C)', 45)
>>> str(run.add(parse_cards("4C")))
'4C 5C 6C JK'
>>> make_book(parse_cards("3H 3S 3C"))
Traceback (most recent call last):
...
domain.red3.rules.BookError: 3H is a red three: red threes are never in a book

A run is kept low to high with each wild at the rank it stands for. A wild that does not fill
a gap stands at the high end unless it is written first (then the low end); when that end is
past the Ace or on a red three, it takes the other end.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from domain.cards import RANKS, SUIT_NAMES, Card, parse_cards
from domain.red3.profile import Red3Rules, get_red3_rules

ACE_LOW, ACE_HIGH = 1, 14  # run positions: an Ace sits below the 2 or above the King
RED_SUITS = ("H", "D")
# docs/rules.md fixes one wild per book; run arrangement below relies on it.
WILDS_PER_BOOK = 1


class BookError(ValueError):
    """Cards that do not make a book, or cannot be added to one; the text says why."""


class BookKind(StrEnum):
    KIND = "kind"
    RUN = "run"


def is_wild(card: Card) -> bool:
    """Twos and printed jokers are wild in Red 3 Rummy."""
    return card.rank in (0, 2)


def is_red_three(card: Card) -> bool:
    return card.rank == 3 and card.suit in RED_SUITS


def kind_value(card: Card, rules: Red3Rules | None = None) -> int:
    """What a card scores in a kind; also what it costs when still held at the end of a round.

    >>> [kind_value(c) for c in parse_cards("3S 9D TH KC AS 2D JK")]
    [5, 5, 10, 10, 15, 15, 15]
    """
    rules = rules or get_red3_rules()
    if is_wild(card):
        return rules.wild_value
    if card.rank == 1:
        return rules.ace_value
    if card.rank >= 10:
        return rules.high_value
    return rules.low_value


def held_penalty(card: Card, rules: Red3Rules | None = None) -> int:
    """Points lost for a card still held when the round ends: a red three 30, else its kind value.

    >>> [held_penalty(c) for c in parse_cards("3H 3C AS")]
    [30, 5, 15]
    """
    rules = rules or get_red3_rules()
    return rules.red_three_held if is_red_three(card) else kind_value(card, rules)


def _position_text(position: int, suit: str) -> str:
    return RANKS[(position - 1) % 13] + suit


@dataclass(frozen=True)
class Book:
    """A book on the table. ``cards`` are as laid for a kind, low to high for a run.

    For a run, ``low`` is the position of its first card (1 = Ace low, 14 = Ace high) and
    ``wild_at`` the position its wild stands for (None without a wild).
    """

    kind: BookKind
    cards: tuple[Card, ...]
    rank: int | None = None  # kinds
    suit: str | None = None  # runs
    low: int | None = None
    wild_at: int | None = None

    def __str__(self) -> str:
        return " ".join(str(card) for card in self.cards)

    def __len__(self) -> int:
        return len(self.cards)

    @property
    def high(self) -> int | None:
        return None if self.low is None else self.low + len(self.cards) - 1

    @property
    def wilds(self) -> int:
        return sum(1 for card in self.cards if is_wild(card))

    def value(self, rules: Red3Rules | None = None) -> int:
        """Points this book scores for the player who laid it."""
        rules = rules or get_red3_rules()
        if self.kind is BookKind.RUN:
            return rules.run_card_value * len(self.cards)
        return sum(kind_value(card, rules) for card in self.cards)

    def describe(self, *, symbols: bool = False) -> str:
        """``run 4D-7D (2H as 7D)``; with ``symbols`` as the pages write cards,
        ``run 4♦–7♦ (2♥ as 7♦)``."""

        def write(text: str) -> str:
            return Card.parse(text).symbol if symbols else text

        if self.kind is BookKind.KIND:
            rank = RANKS[self.rank - 1]
            return f"kind of {'10' if symbols and rank == 'T' else rank}s"
        dash = "–" if symbols else "-"
        low, high = _position_text(self.low, self.suit), _position_text(self.high, self.suit)
        text = f"run {write(low)}{dash}{write(high)}"
        if self.wild_at is not None:
            wild = self.cards[self.wild_at - self.low]
            stands = _position_text(self.wild_at, self.suit)
            text += f" ({write(str(wild))} as {write(stands)})"
        return text

    def add(self, cards: Sequence[Card], rules: Red3Rules | None = None) -> Book:
        """This book with ``cards`` added; :class:`BookError` says why they do not fit."""
        rules = rules or get_red3_rules()
        cards = tuple(cards)
        if not cards:
            raise BookError("no cards to add")
        _check_cards(cards, self.wilds)
        if self.kind is BookKind.KIND:
            for card in cards:
                if not is_wild(card) and card.rank != self.rank:
                    raise BookError(f"{card} cannot join a {self.describe()}")
            return Book(BookKind.KIND, self.cards + cards, rank=self.rank)
        placed = {self.low + i: card for i, card in enumerate(self.cards)}
        return _arrange_run(self.suit, placed, self.wild_at, cards, rules)

    def to_json(self) -> dict:
        data = {"kind": self.kind.value, "cards": [str(card) for card in self.cards]}
        if self.kind is BookKind.RUN and self.wild_at is not None:
            data["wild_as"] = _position_text(self.wild_at, self.suit)
        return data


def _check_cards(cards: Sequence[Card], wilds_already: int) -> None:
    for card in cards:
        if is_red_three(card):
            raise BookError(f"{card} is a red three: red threes are never in a book")
    wilds = wilds_already + sum(1 for card in cards if is_wild(card))
    if wilds > WILDS_PER_BOOK:
        raise BookError(f"{wilds} wild cards (2s and jokers) in one book; at most {WILDS_PER_BOOK}")


def make_book(cards: Iterable[Card | str], rules: Red3Rules | None = None) -> Book:
    """The book these cards make when laid down together; :class:`BookError` says why not."""
    rules = rules or get_red3_rules()
    cards = tuple(parse_cards(list(cards)))
    if len(cards) < rules.min_book:
        raise BookError(f"a book needs at least {rules.min_book} cards, got {len(cards)}")
    _check_cards(cards, 0)
    naturals = [card for card in cards if not is_wild(card)]
    if len({card.rank for card in naturals}) == 1:
        return Book(BookKind.KIND, cards, rank=naturals[0].rank)
    suits = sorted({card.suit for card in naturals})
    if len(suits) > 1:
        raise BookError(
            f"{' '.join(map(str, cards))} is neither a kind (one rank) nor a run (one suit)"
        )
    return _arrange_run(suits[0], {}, None, cards, rules)


def _arrange_run(
    suit: str,
    placed: dict[int, Card],
    wild_at: int | None,
    new: tuple[Card, ...],
    rules: Red3Rules,
) -> Book:
    """Place ``new`` cards around a run's ``placed`` positions (empty for a new run)."""
    naturals = [card for card in new if not is_wild(card)]
    wild = next((card for card in new if is_wild(card)), None)
    for card in naturals:
        if card.suit != suit:
            raise BookError(f"{card} is not a {_suit_word(suit)} card: a run is one suit")
    # An Ace may sit low or high: try the end nearer the other cards first (its error is the
    # one worth reporting), and high first when both are as near.
    aces = [card for card in naturals if card.rank == 1]
    if len(aces) > 1:
        raise BookError(f"{aces[0]} twice: a run holds each rank once, Ace high or low")
    options = [None]
    if aces:
        others = [card.rank for card in naturals if card.rank != 1] + list(placed)
        options = sorted(
            [ACE_HIGH, ACE_LOW],
            key=lambda ace: (max([ace, *others]) - min([ace, *others]), -ace),
        )
    first_error: BookError | None = None
    for ace_position in options:
        try:
            return _place(suit, placed, wild_at, naturals, wild, new, ace_position, rules)
        except BookError as error:
            first_error = first_error or error
    raise first_error


def _place(suit, placed, wild_at, naturals, wild, new, ace_position, rules) -> Book:
    occupied = dict(placed)
    for card in naturals:
        position = ace_position if card.rank == 1 else card.rank
        if position in occupied:
            held = occupied[position]
            if is_wild(held):
                raise BookError(f"{held} already stands for {card} in this run")
            raise BookError(f"{card} twice: a run holds each rank once")
        occupied[position] = card
    low, high = min(occupied), max(occupied)
    missing = [p for p in range(low, high + 1) if p not in occupied]
    if wild is not None:
        if len(missing) > 1:
            gaps = " ".join(_position_text(p, suit) for p in missing)
            raise BookError(f"one wild cannot fill {len(missing)} gaps ({gaps})")
        if missing:
            wild_at = missing[0]
        else:
            ends = [low - 1, high + 1]
            if new[0] is not wild:
                ends.reverse()
            wild_at = next((p for p in ends if _fits(p, low, high, suit)), None)
            if wild_at is None:
                raise BookError(f"no place left for {wild} at either end of the run")
        occupied[wild_at] = wild
        low, high = min(occupied), max(occupied)
    elif missing:
        gaps = " ".join(_position_text(p, suit) for p in missing)
        raise BookError(f"not consecutive: missing {gaps}")
    if low == ACE_LOW and high == ACE_HIGH:
        raise BookError("an Ace is high or low in a run, never both (no wrapping)")
    if suit in RED_SUITS and low <= 3 <= high:
        raise BookError(
            f"a {_suit_word(suit)} run cannot pass 3{suit}: red threes are never in a book"
        )
    cards = tuple(occupied[p] for p in range(low, high + 1))
    if len(cards) < rules.min_book:
        raise BookError(f"a book needs at least {rules.min_book} cards, got {len(cards)}")
    return Book(BookKind.RUN, cards, suit=suit, low=low, wild_at=wild_at)


def _fits(position: int, low: int, high: int, suit: str) -> bool:
    if not ACE_LOW <= position <= ACE_HIGH:
        return False
    if min(low, position) == ACE_LOW and max(high, position) == ACE_HIGH:
        return False
    return not (suit in RED_SUITS and position == 3)


def _suit_word(suit: str) -> str:
    return SUIT_NAMES[suit]


def lay_down_value(books: Iterable[Book], rules: Red3Rules | None = None) -> int:
    """Book value of a lay-down: what the 70-point opening is measured by.

    >>> lay_down_value([make_book(parse_cards("QS QS QH")), make_book(parse_cards("5C 6C 7C"))])
    75
    """
    return sum(book.value(rules) for book in books)
