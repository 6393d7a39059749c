"""A Red 3 match's table: the configuration fixed at the start, each round's deal, and dealing.

Both are frozen data with one JSON form, because the match's events carry exactly that form.

>>> config = Red3Config(game_id="R3-1", players=("p1", "p2", "p3"), rounds=4)
>>> [config.first_player_of(n) for n in (1, 2, 3, 4)]     # the first player rotates
['p1', 'p2', 'p3', 'p1']
>>> Red3Config.from_dict(config.to_dict()) == config
True
>>> deal = deal_from_order(deck_order(2, 2), ("p1", "p2"), first="p2")
>>> len(deal.hands["p1"]), len(deal.second_hands["p2"]), [str(c) for c in deal.pile], len(deal.stock)
(7, 7, ['3D', '4D'], 78)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from domain.cards import Card, CardError, deck_order, full_deck
from domain.errors import BadConfig, BadDeal, UnknownProfile
from domain.red3.profile import Red3Rules, get_red3_rules
from domain.timestamps import format_time, parse_time

__all__ = ["Red3Config", "Red3Deal", "deal_from_order", "deck_order", "red3_deck"]


def red3_deck(players: int, rules: Red3Rules | None = None) -> Counter[Card]:
    """One pack with its two printed jokers per player (docs/rules.md §2)."""
    rules = rules or get_red3_rules()
    return full_deck(players, rules.jokers_per_pack)


@dataclass(frozen=True)
class Red3Config:
    """Everything fixed when a match starts. ``players`` are in seat order (= turn order).

    ``first_player`` leads round 1 (default: the first seat); each later round is led by the
    next seat, so the first player rotates.
    """

    game_id: str
    players: tuple[str, ...]
    rounds: int
    rules: str = "standard"
    seats: tuple[int, ...] | None = None
    first_player: str | None = None
    table_id: str | None = None
    started_at: datetime | None = None
    shuffle: Mapping[str, Any] | None = None  # a verifiable-shuffle block, kept verbatim

    def __post_init__(self) -> None:
        gid = self.game_id
        put = object.__setattr__  # normalising a frozen dataclass in place
        if not isinstance(gid, str) or not gid.strip():
            raise BadConfig(f"game_id must be a non-empty string, got {gid!r}")
        try:
            rules = get_red3_rules(self.rules)
        except UnknownProfile as error:
            raise BadConfig(str(error), game_id=gid) from None
        put(self, "rules", rules.name)
        players = self.players
        if isinstance(players, str) or not isinstance(players, Iterable):
            raise BadConfig("players must be a list of player ids", game_id=gid)
        players = tuple(players)
        for player in players:
            if not isinstance(player, str) or not player.strip():
                raise BadConfig(f"player id {player!r} is not a non-empty string", game_id=gid)
        if len(set(players)) != len(players):
            twice = sorted(p for p in set(players) if players.count(p) > 1)
            raise BadConfig(f"player {twice[0]} is seated twice", game_id=gid)
        if len(players) < rules.min_players:
            raise BadConfig(
                f"Red 3 Rummy needs at least {rules.min_players} players, got {len(players)}",
                game_id=gid,
            )
        if self.seats is not None:
            seats = tuple(self.seats)
            if len(seats) != len(players) or len(set(seats)) != len(seats):
                raise BadConfig("seat numbers must be one distinct number per player", game_id=gid)
            if any(not isinstance(s, int) or isinstance(s, bool) for s in seats):
                raise BadConfig("seat numbers must be whole numbers", game_id=gid)
            ordered = sorted(zip(seats, players, strict=True))
            put(self, "seats", tuple(s for s, _ in ordered))
            players = tuple(p for _, p in ordered)
        put(self, "players", players)
        if isinstance(self.rounds, bool) or not isinstance(self.rounds, int) or self.rounds < 1:
            raise BadConfig(
                f"rounds must be a whole number of at least 1, got {self.rounds!r}", game_id=gid
            )
        if self.first_player is not None and self.first_player not in players:
            raise BadConfig(f"first player {self.first_player} is not seated", game_id=gid)
        try:
            put(self, "started_at", parse_time(self.started_at, what="started_at"))
        except ValueError as error:
            raise BadConfig(str(error), game_id=gid) from None
        if self.shuffle is not None:
            if not isinstance(self.shuffle, Mapping):
                raise BadConfig("shuffle must be an object", game_id=gid)
            put(self, "shuffle", dict(self.shuffle))

    @property
    def profile(self) -> Red3Rules:
        return get_red3_rules(self.rules)

    def first_player_of(self, round_number: int) -> str:
        """Who leads round ``round_number`` (1-based)."""
        start = self.players.index(self.first_player) if self.first_player else 0
        return self.players[(start + round_number - 1) % len(self.players)]

    def seat_of(self, player: str) -> int:
        index = self.players.index(player)
        return self.seats[index] if self.seats else index + 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "game_id": self.game_id,
            "players": list(self.players),
            "rounds": self.rounds,
            "rules": self.rules,
            "seats": None if self.seats is None else list(self.seats),
            "first_player": self.first_player,
            "table_id": self.table_id,
            "started_at": format_time(self.started_at),
            "shuffle": None if self.shuffle is None else dict(self.shuffle),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Red3Config:
        unknown = sorted(set(data) - {f.name for f in fields(cls)})
        if unknown:
            raise BadConfig(f"unknown match setting {unknown[0]!r}", game_id=data.get("game_id"))
        return cls(**dict(data))


@dataclass(frozen=True)
class Red3Deal:
    """One round's deal: two hands of 7 per player, the two-card pile (bottom first) and, when
    known, the stock (top first). ``first`` is the player who leads the round."""

    first: str
    hands: Mapping[str, tuple[Card, ...]]
    second_hands: Mapping[str, tuple[Card, ...]]
    pile: tuple[Card, ...]
    stock: tuple[Card, ...] | None = None

    def __post_init__(self) -> None:
        put = object.__setattr__
        for name in ("hands", "second_hands"):
            value = getattr(self, name)
            if not isinstance(value, Mapping):
                raise BadDeal(f"{name} must map each player to a list of cards", move_type="deal")
            put(self, name, {p: _cards(cards, f"{name} of {p}") for p, cards in value.items()})
        put(self, "pile", _cards(self.pile, "pile"))
        if self.stock is not None:
            put(self, "stock", _cards(self.stock, "stock"))

    def cards(self) -> Counter[Card]:
        """Every card the deal places (with the stock when it is known)."""
        dealt: Counter[Card] = Counter(self.pile)
        for hand in (*self.hands.values(), *self.second_hands.values()):
            dealt.update(hand)
        dealt.update(self.stock or ())
        return dealt

    def check(self, config: Red3Config, round_number: int) -> None:
        """Raise :class:`BadDeal` unless this is a deal of ``round_number`` at this table."""
        rules = config.profile

        def bad(reason: str) -> BadDeal:
            return BadDeal(reason, move_type="deal", game_id=config.game_id)

        expected = config.first_player_of(round_number)
        if self.first != expected:
            raise bad(f"the first player rotates, so {expected} leads, not {self.first}")
        for name, hands in (("first hand", self.hands), ("second hand", self.second_hands)):
            strangers = sorted(set(hands) - set(config.players))
            if strangers:
                raise bad(f"{strangers[0]} is dealt a {name} but is not seated")
            for player in config.players:
                size = len(hands.get(player, ()))
                if size != rules.hand_size:
                    raise bad(f"{player}'s {name} has {size} cards; {rules.hand_size} are dealt")
        if len(self.pile) != rules.pile_start:
            raise bad(f"the pile starts with {rules.pile_start} cards, not {len(self.pile)}")
        deck = red3_deck(len(config.players), rules)
        dealt = self.cards()
        for card, count in sorted(dealt.items(), key=lambda item: item[0].index):
            if count > deck[card]:
                raise bad(f"{card} is dealt {count} times; the packs hold {deck[card]}")
        if self.stock is not None:
            missing = deck - dealt
            if missing:
                shown = " ".join(str(c) for c in sorted(missing.elements(), key=lambda c: c.index))
                raise bad(f"the deal and stock leave out {shown}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "first": self.first,
            "hands": {p: [str(c) for c in cards] for p, cards in self.hands.items()},
            "second_hands": {p: [str(c) for c in cards] for p, cards in self.second_hands.items()},
            "pile": [str(c) for c in self.pile],
            "stock": None if self.stock is None else [str(c) for c in self.stock],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Red3Deal:
        if isinstance(data, Red3Deal):
            return data
        if not isinstance(data, Mapping):
            raise BadDeal("deal must be an object", move_type="deal")
        for key in ("first", "hands", "second_hands", "pile"):
            if key not in data:
                raise BadDeal(f"deal has no {key!r}", move_type="deal")
        unknown = sorted(set(data) - {"first", "hands", "second_hands", "pile", "stock"})
        if unknown:
            raise BadDeal(f"deal has an unknown field {unknown[0]!r}", move_type="deal")
        return cls(**dict(data))


def _cards(values: Any, what: str) -> tuple[Card, ...]:
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise BadDeal(f"{what} must be a list of cards", move_type="deal")
    cards = []
    for i, value in enumerate(values):
        try:
            cards.append(Card.parse(value))
        except CardError as error:
            raise BadDeal(f"{what}, card {i}: {error}", move_type="deal") from None
    return tuple(cards)


def deal_from_order(
    order: Sequence[Card], players: Sequence[str], first: str, rules: Red3Rules | None = None
) -> Red3Deal:
    """Deal a round from a deck order (top first), the documented way.

    One card at a time to each player in seat order starting with ``first``: 7 rounds make
    the first hands, 7 more the second hands; the next two cards are turned up as the pile
    (the first of them at the bottom); the rest is the stock, top first.
    """
    rules = rules or get_red3_rules()
    start = list(players).index(first)
    seating = [*players[start:], *players[:start]]
    cards = iter(order)
    hands: dict[str, list[Card]] = {p: [] for p in players}
    second: dict[str, list[Card]] = {p: [] for p in players}
    for dealt in (hands, second):
        for _ in range(rules.hand_size):
            for player in seating:
                dealt[player].append(next(cards))
    pile = [next(cards) for _ in range(rules.pile_start)]
    return Red3Deal(first=first, hands=hands, second_hands=second, pile=pile, stock=list(cards))
