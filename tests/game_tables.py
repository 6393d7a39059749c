"""Tables and deals for the game tests: real 13-card hands, whole conserved decks.

``complete_deal`` fills the stock with every card the hands, open card and wild indicator
leave over (2 decks + 2 printed jokers = 106 cards), putting chosen cards on top, so each
test states only the cards that matter to it.
"""

from __future__ import annotations

import random
from collections import Counter

from domain.cards import Card, full_deck, parse_cards
from domain.rummy13.game import Game
from domain.rummy13.moves import apply_move, play_game
from domain.rummy13.table import TableConfig


def complete_deal(
    hands: dict[str, str],
    wild: str,
    open_card: str,
    stock_top: str = "",
    *,
    decks: int = 2,
    jokers_per_deck: int = 1,
    known_stock: bool = True,
) -> dict:
    """A docs/record-format.md deal block: ``stock_top`` first, then the rest of the deck in deck order."""
    parsed = {player: parse_cards(cards) for player, cards in hands.items()}
    used = Counter(card for cards in parsed.values() for card in cards)
    used[Card.parse(wild)] += 1
    used[Card.parse(open_card)] += 1
    top = parse_cards(stock_top)
    used.update(top)
    deck = full_deck(decks, jokers_per_deck)
    over = used - deck
    if over:
        raise AssertionError(f"test deal uses too many of {sorted(map(str, over))}")
    rest = sorted((deck - used).elements(), key=lambda card: card.index)
    return {
        "hands": {player: [str(card) for card in cards] for player, cards in parsed.items()},
        "wild": str(Card.parse(wild)),
        "open": str(Card.parse(open_card)),
        "stock": [str(card) for card in top + rest] if known_stock else None,
    }


def config_for(players: str = "p1 p2 p3", **settings) -> TableConfig:
    if "players" in settings:
        players = settings.pop("players")
    values = {
        "game_id": "test-game",
        "variant": "points",
        "players": tuple(players.split()),
        "point_value": "1.00",
        "dealer": players.split()[-1],
    }
    values.update(settings)
    return TableConfig(**values)


def pass_turn(player: str, card: str) -> list[dict]:
    """A turn that picks ``card`` from the closed stock and discards it again."""
    return [
        {"player": player, "type": "pick", "from": "closed", "card": card},
        {"player": player, "type": "discard", "card": card},
    ]


# Three hands used by many rule tests (wild 7D, so 7s are jokers):
#   p1 can declare after picking 4H: AS 2S 3S | 4H 5H JK | 9D 9H 9S | KS KD KC KH, finish TC.
THREE_HANDS = {
    "p1": "AS 2S 3S 5H JK 9D 9H 9S KS KD KC KH TC",
    "p2": "AD 3D 5D 8D TD JC QC 2H 4C 6C 8C TS QS",
    "p3": "5C 6C 7C QD 2H 8S 7H 7S 7S JK 2D 2C 3D",
}


def three_player_deal(stock_top: str = "4H 9C QH 3H", **options) -> dict:
    return complete_deal(THREE_HANDS, "7D", "KC", stock_top, **options)


def dealt_game(config: TableConfig | None = None, deal: dict | None = None) -> Game:
    return play_game(config or config_for(), deal or three_player_deal(), [])


def random_legal_game(
    seed: int, *, players: int = 4, turns: int = 80, known_stock: bool = True
) -> tuple[TableConfig, dict, list[dict]]:
    """A game played by random but legal moves: picks from either pile, discards, drops,
    misses and reshuffles, stopping after ``turns`` turns or when one player is left.

    Returns the table, the deal and the moves (valid for :func:`domain.rummy13.moves.play_game`).
    """
    rng = random.Random(seed)
    ids = [f"p{i}" for i in range(1, players + 1)]
    deck = sorted(full_deck(2, 1).elements(), key=lambda card: card.index)
    rng.shuffle(deck)
    hands = {p: deck[i * 13 : (i + 1) * 13] for i, p in enumerate(ids)}
    rest = deck[players * 13 :]
    wild, open_card, stock = rest[0], rest[1], rest[2:]
    variant = rng.choice(["points", "raise"])
    settings = {"raise_step": "0.05", "raise_max": "1.50"} if variant == "raise" else {}
    config = TableConfig(
        game_id=f"random-{seed}",
        variant=variant,
        players=tuple(ids),
        point_value="1.00",
        dealer=rng.choice(ids),
        fee_percent="10",
        **settings,
    )
    deal = {
        "hands": {p: [str(c) for c in cards] for p, cards in hands.items()},
        "wild": str(wild),
        "open": str(open_card),
        "stock": [str(c) for c in stock] if known_stock else None,
    }
    game = play_game(config, deal, [])
    moves: list[dict] = []

    def do(move: dict) -> None:
        apply_move(game, move)
        moves.append(move)

    for _ in range(turns):
        if game.phase != "playing":
            break
        player = game.current_player
        roll = rng.random()
        if roll < 0.03:
            do({"player": player, "type": "drop"})
            continue
        if roll < 0.10:
            do({"player": player, "type": "miss"})
            continue
        state = game.table_state()
        top = state.open_top
        open_ok = top is not None and not top.is_joker(game.wild) and rng.random() < 0.3
        if open_ok:
            do({"player": player, "type": "pick", "from": "open", "card": str(top)})
        else:
            if game.stock_count == 0:
                if len(state.open_pile) < 2:
                    break
                under = list(state.open_pile[:-1])
                rng.shuffle(under)
                if known_stock or rng.random() < 0.5:
                    do({"type": "reshuffle", "stock": [str(c) for c in under]})
                else:
                    do({"type": "reshuffle"})
            card = game._stock[0] if game._stock is not None else rng.choice(game._unseen)
            do({"player": player, "type": "pick", "from": "closed", "card": str(card)})
        hand = game.hand(player)
        do({"player": player, "type": "discard", "card": str(rng.choice(hand))})
    return config, deal, moves
