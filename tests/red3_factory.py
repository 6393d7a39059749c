"""Build Red 3 deals and matches for tests from the few cards that matter.

A test names each hand, the pile and the top of the stock; the rest of the stock is the
remainder of the packs in :func:`domain.cards.deck_order`, so every deal conserves the
players' packs (one pack with two jokers each) exactly.
"""

from __future__ import annotations

from collections import Counter

from domain.cards import deck_order, parse_cards
from domain.red3.game import Red3Config, Red3Match
from domain.red3.table import Red3Deal


def make_deal(first, hands, second_hands, pile, stock_top="", players=None):
    """A :class:`Red3Deal` from card texts; the stock is ``stock_top`` then the rest."""
    players = players or list(hands)
    hands = {p: parse_cards(text) for p, text in hands.items()}
    second = {p: parse_cards(text) for p, text in second_hands.items()}
    pile = parse_cards(pile)
    top = parse_cards(stock_top)
    rest = Counter(deck_order(len(players), 2))
    for cards in (*hands.values(), *second.values(), pile, top):
        rest.subtract(cards)
    assert all(count >= 0 for count in rest.values()), "more copies than the packs hold"
    stock = list(top)
    for card in deck_order(len(players), 2):
        if rest[card] > 0:
            stock.append(card)
            rest[card] -= 1
    return Red3Deal(first=first, hands=hands, second_hands=second, pile=pile, stock=stock)


def new_match(players=("p1", "p2"), rounds=2, game_id="R3-T", **config):
    return Red3Match.start(Red3Config(game_id=game_id, players=players, rounds=rounds, **config))


# The hand-worked example match (docs/red3-rules.md, "A worked match"): two players, two rounds.
EXAMPLE_ROUND_1 = {
    "deal": dict(
        first="p1",
        hands={"p1": "5C 6C 7C 8C QS QH QD", "p2": "KS KH 3D JK 4D 5D 6D"},
        second_hands={"p1": "AS AH 2D 9S 9H 3H 4S", "p2": "TS TH TD 7S 8S 9D JC"},
        pile="4C JD",
        stock_top="9C 9D",
    ),
    "moves": [
        {"player": "p1", "type": "pick", "from": "stock", "card": "9C"},
        {
            "player": "p1",
            "type": "lay_down",
            "books": [["5C", "6C", "7C", "8C", "9C"], ["QS", "QH", "QD"]],
        },
        {"player": "p1", "type": "discard", "card": "4S"},
        {"player": "p2", "type": "pick", "from": "pile", "cards": ["4C", "JD", "4S"]},
        {"player": "p2", "type": "lay_down", "books": [["4D", "5D", "6D"], ["KS", "KH", "JK"]]},
        {"player": "p2", "type": "discard", "card": "JD"},
        {"player": "p1", "type": "pick", "from": "stock", "card": "9D"},
        {"player": "p1", "type": "lay_down", "books": [["AS", "AH", "2D"], ["9S", "9H", "9D"]]},
        {"player": "p1", "type": "discard", "card": "3H"},
    ],
}
EXAMPLE_ROUND_2 = {
    "deal": dict(
        first="p2",
        hands={"p1": "6H 6D 6C JS 3D 4H AC", "p2": "8H 9H TH JH 3C 3S 2C"},
        second_hands={"p1": "QC QD 8D 8C 7D 5H TC", "p2": "KC KD KS 5S 6S 7S JK"},
        pile="3H 9S",
        stock_top="7H QH",
    ),
    "moves": [
        {"player": "p2", "type": "pick", "from": "stock", "card": "7H"},
        {
            "player": "p2",
            "type": "lay_down",
            "books": [["7H", "8H", "9H", "TH", "JH"], ["3C", "3S", "2C"]],
        },
        {"player": "p2", "type": "lay_down", "books": [["KC", "KD", "KS"]]},
        {"player": "p2", "type": "discard", "card": "5S"},
        {"player": "p1", "type": "pick", "from": "pile", "cards": ["3H", "9S", "5S"]},
        {"player": "p1", "type": "discard", "card": "JS"},
        {"player": "p2", "type": "pick", "from": "stock", "card": "QH"},
        {"player": "p2", "type": "lay_down", "add": [{"book": 0, "cards": ["QH"]}]},
        {"player": "p2", "type": "lay_down", "books": [["JK", "6S", "7S"]]},
    ],
}
EXAMPLE_ROUNDS = (EXAMPLE_ROUND_1, EXAMPLE_ROUND_2)


def take_turn(match, rng, *, pile_share=0.3, lay_down=True):
    """Play the current player's whole turn with a simple greedy-but-random policy."""
    from domain.red3.hints import fitting_cards, suggest_books
    from domain.red3.rules import lay_down_value

    player = match.current_player
    source = "pile" if match.pile and rng.random() < pile_share else "stock"
    named = None if match.stock is not None or source == "pile" else next(iter(match.unseen))
    match.pick(player, source, named)
    while lay_down and match.phase == "play":
        books = suggest_books(match.hands[player])
        if match.opening[player] is None and lay_down_value(books) < match.rules.opening_minimum:
            break
        if books:
            match.lay_down(player, [book.cards for book in books])
            continue
        fits = fitting_cards(match.books[player], match.hands[player])
        if not fits:
            break
        index, card = fits[0]
        match.lay_down(player, additions=[(index, [card])])
    if match.phase == "play":
        hand = match.hands[player]
        worst = min(_keep(card, hand) for card in hand)
        match.discard(player, rng.choice([card for card in hand if _keep(card, hand) == worst]))


def _keep(card, hand):
    """How much a card is worth keeping: wilds most, red threes least, else its neighbours."""
    from domain.red3.rules import is_red_three, is_wild

    if is_wild(card):
        return 10
    if is_red_three(card):
        return -1
    return sum(
        1
        for other in hand
        if other is not card
        and not is_wild(other)
        and (
            other.rank == card.rank
            or (other.suit == card.suit and abs(other.rank - card.rank) <= 2)
        )
    )


def conserved(match):
    """Every card of the packs is in exactly one place: hands, second hands, books, pile, stock."""
    from domain.red3.table import red3_deck

    seen = Counter(match.pile)
    seen.update(match.stock if match.stock is not None else match.unseen.elements())
    for player in match.players:
        seen.update(match.hands[player])
        seen.update(match.second_hands[player] or ())
        for book in match.books[player]:
            seen.update(book.cards)
    return seen == red3_deck(len(match.players))


def example_record():
    """The worked example as a complete ``rummy-ledger/red3@1`` record, with move times."""
    from domain.red3.moves import play_match
    from domain.red3.records import red3_record_of

    rounds, minute = [], 0
    for played in EXAMPLE_ROUNDS:
        moves = []
        for move in played["moves"]:
            minute += 1
            moves.append(dict(move, at=f"2025-03-01T18:{minute:02d}:00Z"))
        minute += 1
        rounds.append(
            {
                "deal": make_deal(**played["deal"]),
                "moves": moves,
                "at": f"2025-03-01T18:{minute - len(moves) - 1:02d}:30Z",
            }
        )
    config = Red3Config(
        game_id="R3-EXAMPLE",
        players=("p1", "p2"),
        rounds=2,
        table_id="R9",
        started_at="2025-03-01T18:00:00Z",
    )
    reported = {
        "rounds": [{"p1": 165, "p2": -15}, {"p1": -155, "p2": 190}],
        "totals": {"p1": 10, "p2": 175},
        "winner": "p2",
    }
    match = play_match(config, rounds, reported=reported)
    return red3_record_of(match).to_dict()


def random_record(seed, *, players=2, rounds=2, stock_known=True, passive_rounds=()):
    """A complete match played by :func:`take_turn`, deterministic for ``seed``."""
    import random

    from domain.cards import deck_order as order_of
    from domain.red3.records import red3_record_of
    from domain.red3.table import deal_from_order

    rng = random.Random(seed)
    seats = tuple(f"p{seed}-{i}" for i in range(1, players + 1))
    match = new_match(
        players=seats,
        rounds=rounds,
        game_id=f"R3-SIM-{seed:03d}",
        table_id=f"R{players}",
        started_at=f"2025-03-{1 + seed % 28:02d}T20:00:00Z",
    )
    for number in range(1, rounds + 1):
        order = order_of(players, 2)
        rng.shuffle(order)
        deal = deal_from_order(order, seats, first=match.config.first_player_of(number))
        if not stock_known:
            deal = Red3Deal(deal.first, deal.hands, deal.second_hands, deal.pile)
        match.deal(deal)
        while match.phase in ("pick", "play"):
            # In a passive round nobody lays down, so the stock runs out and ends it.
            take_turn(match, rng, lay_down=number not in passive_rounds)
    return red3_record_of(match).to_dict()


def write_data_files():
    """Rewrite ``tests/data/red3_example.jsonl`` and ``tests/data/red3_matches.jsonl``."""
    import json
    from pathlib import Path

    data = Path(__file__).parent / "data"
    lines = [json.dumps(example_record())]
    (data / "red3_example.jsonl").write_text("\n".join(lines) + "\n")
    matches = [
        random_record(1),
        random_record(2, players=3, rounds=3),
        random_record(3, players=4, rounds=1),
        random_record(4, stock_known=False),
        random_record(6, players=3, rounds=2, passive_rounds=(2,)),
        random_record(5, players=5, rounds=2),
    ]
    (data / "red3_matches.jsonl").write_text("\n".join(json.dumps(m) for m in matches) + "\n")


if __name__ == "__main__":
    write_data_files()
