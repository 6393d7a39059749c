"""Dealing a simulated game, through the verifiable shuffle when the project has it.

With ``domain.shuffle`` present, a deal is derived from a server seed (committed with
SHA-256 in the record's ``shuffle`` block) and one client seed per seat, so every simulated
game verifies end to end (`rummy-ledger verify`). The seeds themselves come from the game's
own generator, so a simulation stays deterministic for its seed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from domain.cards import Card, deck_order

try:  # the verifiable shuffle (issue 8); without it deals are plain seeded shuffles
    from domain import shuffle as verifiable
except ImportError:  # pragma: no cover - only before domain/shuffle.py exists
    verifiable = None


@dataclass
class Deal:
    hands: dict[str, list[Card]]
    wild: Card
    open: Card
    stock: list[Card]  # top first
    shuffle: dict | None = field(default=None)

    def to_record(self) -> dict:
        """The record's ``deal`` block (docs/record-format.md)."""
        return {
            "hands": {player: [str(c) for c in hand] for player, hand in self.hands.items()},
            "wild": str(self.wild),
            "open": str(self.open),
            "stock": [str(c) for c in self.stock],
        }


def deal(
    rng: random.Random,
    players: list[str],
    dealer: str,
    decks: int,
    jokers_per_deck: int,
    hand_size: int = 13,
) -> Deal:
    """Shuffle and deal ``hand_size`` cards to each of ``players`` (seat order)."""
    if verifiable is not None:
        return _verifiable_deal(rng, players, dealer, decks, jokers_per_deck)
    order = deck_order(decks, jokers_per_deck)
    rng.shuffle(order)
    return _deal_in_turn_order(order, players, dealer, hand_size)


def _verifiable_deal(rng, players, dealer, decks, jokers_per_deck) -> Deal:
    server_seed = rng.randbytes(32)
    client_seeds = {player: rng.randbytes(16) for player in players}
    dealt = verifiable.deal_from_seeds(
        server_seed, client_seeds, players, dealer, decks, jokers_per_deck
    )
    seeds = verifiable.ShuffleSeeds(verifiable.commitment(server_seed), server_seed, client_seeds)
    return Deal(
        hands={p: list(dealt.hands[p]) for p in players},
        wild=dealt.wild,
        open=dealt.open_card,
        stock=list(dealt.stock),
        shuffle=seeds.to_dict(),
    )


def _deal_in_turn_order(order: list[Card], players, dealer, hand_size) -> Deal:
    # One card at a time starting with the first mover, as at a real table; then the
    # wild indicator, the open card, and the rest is the stock.
    first = (players.index(dealer) + 1) % len(players)
    turn_order = players[first:] + players[:first]
    hands: dict[str, list[Card]] = {p: [] for p in players}
    position = 0
    for _ in range(hand_size):
        for player in turn_order:
            hands[player].append(order[position])
            position += 1
    wild, open_card = order[position], order[position + 1]
    return Deal(hands=hands, wild=wild, open=open_card, stock=order[position + 2 :])
