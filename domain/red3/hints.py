"""Which books a hand could lay down, and which held cards fit books already down.

A greedy helper for players who need suggestions (the simulator's bots, tests that play
random matches); it is not a rule and never decides legality, which stays with
:func:`~domain.red3.rules.make_book` and :meth:`~domain.red3.rules.Book.add`. It looks for
kinds and runs among the natural cards (trying both kinds-first and runs-first), then gives
each wild to the pair it turns into the most valuable book.

>>> from domain.cards import parse_cards
>>> [str(book) for book in suggest_books(parse_cards("7S 7H 7D 4C 5C 6C 9S 9D JK 3H"))]
['7S 7H 7D', '4C 5C 6C', '9S 9D JK']
>>> [(index, str(card)) for index, card in fitting_cards(suggest_books(parse_cards("7S 7H 7D")),
...                                                   parse_cards("7C 8S 2D"))]
[(0, '7C'), (0, '2D')]
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

from domain.cards import Card
from domain.red3.profile import Red3Rules, get_red3_rules
from domain.red3.rules import Book, BookError, is_red_three, is_wild, make_book


def suggest_books(cards: Sequence[Card], rules: Red3Rules | None = None) -> list[Book]:
    """Disjoint books these cards can make, greedily the most valuable set found."""
    rules = rules or get_red3_rules()
    naturals = [card for card in cards if not is_wild(card) and not is_red_three(card)]
    wilds = [card for card in cards if is_wild(card)]
    best: list[Book] = []
    for order in ((_kinds, _runs), (_runs, _kinds)):
        left = list(naturals)
        books: list[Book] = []
        for finder in order:
            found = finder(left, rules)
            books += found
            for book in found:
                for card in book.cards:
                    left.remove(card)
        books += _with_wilds(left, list(wilds), rules)
        if sum(b.value(rules) for b in books) > sum(b.value(rules) for b in best):
            best = books
    return best


def _kinds(cards: list[Card], rules: Red3Rules) -> list[Book]:
    by_rank: dict[int, list[Card]] = {}
    for card in cards:
        by_rank.setdefault(card.rank, []).append(card)
    return [
        make_book(same, rules)
        for rank, same in sorted(by_rank.items())
        if len(same) >= rules.min_book
    ]


def _runs(cards: list[Card], rules: Red3Rules) -> list[Book]:
    books = []
    left = list(cards)
    for suit in "SHDC":
        while sum(1 for card in left if card.suit == suit) >= rules.min_book:
            found = _longest_run([card for card in left if card.suit == suit], rules)
            if found is None:
                break
            books.append(found)
            for card in found.cards:
                left.remove(card)
    return books


def _longest_run(cards: list[Card], rules: Red3Rules) -> Book | None:
    """The longest run of distinct natural cards of one suit, Ace low or high."""
    by_position: dict[int, Card] = {}
    for card in cards:
        by_position.setdefault(card.rank, card)
        if card.rank == 1:
            by_position.setdefault(14, card)
    best: list[Card] = []
    run: list[Card] = []
    for position in range(1, 15):
        card = by_position.get(position)
        if card is None:
            run = []
        elif card in run:  # the same Ace cannot sit low and high
            run = [card]
        else:
            run.append(card)
        if len(run) > len(best):
            best = list(run)
    if len(best) < rules.min_book:
        return None
    try:
        return make_book(best, rules)
    except BookError:
        return None


def _with_wilds(cards: list[Card], wilds: list[Card], rules: Red3Rules) -> list[Book]:
    """Give each wild to the pair of left-over cards it makes the most valuable book with."""
    books = []
    left = list(cards)
    for wild in wilds:
        options = []
        for pair in combinations(left, 2):
            if not related(*pair):
                continue
            try:
                options.append((make_book([*pair, wild], rules), pair))
            except BookError:
                continue
        if not options:
            break
        book, pair = max(options, key=lambda option: option[0].value(rules))
        books.append(book)
        for card in pair:
            left.remove(card)
    return books


def related(one: Card, other: Card) -> bool:
    """Whether one wild could make a book of these two: same rank, or a run's neighbours."""
    if one.rank == other.rank:
        return True
    if one.suit != other.suit:
        return False
    gap = abs(one.rank - other.rank)
    return gap <= 2 or gap >= 11  # 11, 12: an Ace high beside a Queen or King


def fitting_cards(
    books: Sequence[Book], cards: Sequence[Card], rules: Red3Rules | None = None
) -> list[tuple[int, Card]]:
    """``(book index, card)`` for each held card that can be added to one of ``books`` alone."""
    rules = rules or get_red3_rules()
    fits = []
    for card in cards:
        for index, book in enumerate(books):
            if not is_wild(card) and card.rank != book.rank and card.suit != book.suit:
                continue  # neither like the kind's cards nor of the run's suit
            try:
                book.add([card], rules)
            except BookError:
                continue
            fits.append((index, card))
            break
    return fits
