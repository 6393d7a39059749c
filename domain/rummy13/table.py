"""The table a game is played at: configuration (stakes, seats, dealer) and the deal.

Both are plain, frozen data with one JSON form (``to_dict``/``from_dict``), because the
game's first two events carry exactly that form.

>>> config = TableConfig(game_id="G1", variant="raise", players=("p1", "p2", "p3"),
...                      point_value="1.00", raise_step="0.10", raise_max="2.00",
...                      toss={"p1": "9S", "p2": "AC", "p3": "KH"})
>>> config.first_mover, config.dealer_player     # AC wins the toss; p1 sits before p2
('p2', 'p1')
>>> TableConfig.from_dict(config.to_dict()) == config
True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from datetime import datetime
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from typing import Any

from domain.cards import DECKS_MAX, Card, CardError, check_packs
from domain.errors import BadConfig, BadDeal
from domain.rummy13.profiles import RuleProfile, UnknownProfile, get_profile
from domain.timestamps import format_time, parse_time

VARIANTS = ("points", "raise")
# The profile's scores a table may set apart (TableConfig.scoring).
SCORING_FIELDS = ("auto_drop", "first_drop", "max_points", "middle_drop", "wrong_show")


def _decimal(value: Any, what: str, game_id: str) -> Decimal:
    """Money and percentages come as decimal text (or Decimal/int), never as float."""
    if isinstance(value, Decimal):
        number = value
    elif isinstance(value, (bool, float)):
        raise BadConfig(
            f"{what} must be a decimal string such as '1.10', not {value!r}", game_id=game_id
        )
    elif isinstance(value, (int, str)):
        try:
            number = Decimal(str(value).strip())
        except InvalidOperation:
            raise BadConfig(f"{what} {value!r} is not a decimal number", game_id=game_id) from None
    else:
        raise BadConfig(f"{what} {value!r} is not a decimal number", game_id=game_id)
    if not number.is_finite():
        raise BadConfig(f"{what} {value!r} is not a finite number", game_id=game_id)
    return number


def _decimal_text(value: Decimal | None) -> str | None:
    return None if value is None else str(value)


@dataclass(frozen=True)
class TableConfig:
    """Everything fixed when a game starts. Fields may be given as text; they are normalised.

    ``players`` are in seat order (which is turn order); ``seats`` keeps the operator's seat
    numbers beside them. ``dealer`` and ``toss`` are kept as given: :attr:`dealer_player`
    is the dealer in force (from the toss when one is given, else the last seat).
    """

    game_id: str
    variant: str
    players: tuple[str, ...]
    point_value: Decimal
    rules: str = "rummycircle"
    table_id: str | None = None
    decks: int | None = None
    jokers_per_deck: int | None = None
    currency: str = "INR"
    raise_step: Decimal | None = None
    raise_max: Decimal | None = None
    raise_schedule: tuple[Decimal, ...] | None = None
    fee_percent: Decimal = Decimal("0")
    seats: tuple[int, ...] | None = None
    dealer: str | None = None
    toss: Mapping[str, Card] | None = None
    started_at: datetime | None = None
    # The record's verifiable-shuffle block (commitment, seeds), kept verbatim for audits.
    shuffle: Mapping[str, Any] | None = None
    # Deal scores that differ from the rule profile's, by RuleProfile field name: a deal of
    # a 61 or 201 pool is a 13-card game with its own drop and cap values (docs/rules.md
    # §3). Points and Raise tables never set it.
    scoring: Mapping[str, int] | None = None

    def __post_init__(self) -> None:
        gid = self.game_id
        if not isinstance(gid, str) or not gid.strip():
            raise BadConfig(f"game_id must be a non-empty string, got {gid!r}")
        put = object.__setattr__  # normalising a frozen dataclass in place
        if self.variant not in VARIANTS:
            raise BadConfig(
                f"variant must be 'points' or 'raise', got {self.variant!r}", game_id=gid
            )
        try:
            profile = get_profile(self.rules)
        except UnknownProfile as error:
            raise BadConfig(str(error), game_id=gid) from None
        put(self, "rules", profile.name)
        put(self, "decks", profile.decks if self.decks is None else self.decks)
        put(
            self,
            "jokers_per_deck",
            profile.jokers_per_deck if self.jokers_per_deck is None else self.jokers_per_deck,
        )
        try:
            check_packs(self.decks, self.jokers_per_deck, DECKS_MAX)
        except CardError as error:
            raise BadConfig(str(error), game_id=gid) from None
        self._normalise_seating(profile)
        self._normalise_stakes()
        self._normalise_dealer()
        try:
            put(self, "started_at", parse_time(self.started_at, what="started_at"))
        except ValueError as error:
            raise BadConfig(str(error), game_id=gid) from None
        if self.shuffle is not None and not isinstance(self.shuffle, Mapping):
            raise BadConfig("shuffle must be an object", game_id=gid)
        if self.shuffle is not None:
            put(self, "shuffle", dict(self.shuffle))
        if self.scoring is not None:
            self._normalise_scoring()

    # -- normalisation ------------------------------------------------------------------
    def _normalise_seating(self, profile: RuleProfile) -> None:
        gid = self.game_id
        players = self.players
        if isinstance(players, str) or not isinstance(players, Iterable):
            raise BadConfig("players must be a list of player ids", game_id=gid)
        players = tuple(players)
        for player in players:
            if not isinstance(player, str) or not player.strip():
                raise BadConfig(f"player id {player!r} is not a non-empty string", game_id=gid)
        if len(set(players)) != len(players):
            duplicates = sorted({p for p in players if players.count(p) > 1})
            raise BadConfig(f"player {duplicates[0]} is seated twice", game_id=gid)
        if not profile.min_players <= len(players) <= profile.max_players:
            raise BadConfig(
                f"a table seats {profile.min_players} to {profile.max_players} players, "
                f"got {len(players)}",
                game_id=gid,
            )
        seats = self.seats
        if seats is not None:
            seats = tuple(seats)
            if len(seats) != len(players):
                raise BadConfig(
                    f"{len(seats)} seat numbers for {len(players)} players", game_id=gid
                )
            if any(not isinstance(s, int) or isinstance(s, bool) for s in seats):
                raise BadConfig("seat numbers must be whole numbers", game_id=gid)
            if len(set(seats)) != len(seats):
                raise BadConfig("two players share a seat number", game_id=gid)
            # Seat order is turn order, whatever order the operator listed players in.
            ordered = sorted(zip(seats, players, strict=True))
            seats = tuple(s for s, _ in ordered)
            players = tuple(p for _, p in ordered)
        object.__setattr__(self, "players", players)
        object.__setattr__(self, "seats", seats)

    def _normalise_scoring(self) -> None:
        if not isinstance(self.scoring, Mapping):
            raise BadConfig("scoring must map profile fields to points", game_id=self.game_id)
        for name, value in self.scoring.items():
            if name not in SCORING_FIELDS:
                known = ", ".join(SCORING_FIELDS)
                raise BadConfig(f"scoring cannot set {name!r} (only {known})", game_id=self.game_id)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise BadConfig(
                    f"scoring {name} must be a whole number of points, got {value!r}",
                    game_id=self.game_id,
                )
        object.__setattr__(self, "scoring", dict(sorted(self.scoring.items())))

    def _normalise_stakes(self) -> None:
        gid = self.game_id
        put = object.__setattr__
        put(self, "point_value", _decimal(self.point_value, "point_value", gid))
        if self.point_value <= 0:
            raise BadConfig(f"point_value must be positive, got {self.point_value}", game_id=gid)
        put(self, "fee_percent", _decimal(self.fee_percent, "fee_percent", gid))
        if not Decimal(0) <= self.fee_percent <= Decimal(100):
            raise BadConfig(
                f"fee_percent must be between 0 and 100, got {self.fee_percent}", game_id=gid
            )
        if not isinstance(self.currency, str) or not self.currency.strip():
            raise BadConfig("currency must be a code such as 'INR'", game_id=gid)
        if self.raise_step is not None:
            put(self, "raise_step", _decimal(self.raise_step, "raise step", gid))
        if self.raise_max is not None:
            put(self, "raise_max", _decimal(self.raise_max, "raise max", gid))
        if self.raise_schedule is not None:
            if isinstance(self.raise_schedule, str) or not isinstance(
                self.raise_schedule, Iterable
            ):
                raise BadConfig("raise schedule must be a list of decimal strings", game_id=gid)
            schedule = tuple(
                _decimal(value, f"raise schedule[{i}]", gid)
                for i, value in enumerate(self.raise_schedule)
            )
            if not schedule:
                raise BadConfig("raise schedule is empty", game_id=gid)
            if any(value <= 0 for value in schedule):
                raise BadConfig("raise schedule values must be positive", game_id=gid)
            put(self, "raise_schedule", schedule)
        has_raise = (self.raise_step, self.raise_max, self.raise_schedule) != (None, None, None)
        if self.variant == "points":
            if has_raise:
                raise BadConfig(
                    "a points game has one fixed point value: drop the raise settings", game_id=gid
                )
            return
        if self.raise_schedule is not None:
            if self.raise_step is not None or self.raise_max is not None:
                raise BadConfig(
                    "give a raise schedule or a raise step and max, not both", game_id=gid
                )
            return
        if self.raise_step is None:
            raise BadConfig("a raise game needs a raise step (and max) or a schedule", game_id=gid)
        if self.raise_step < 0:
            raise BadConfig(f"raise step must not be negative, got {self.raise_step}", game_id=gid)
        if self.raise_max is not None and self.raise_max < self.point_value:
            raise BadConfig(
                f"raise max {self.raise_max} is below the starting point value {self.point_value}",
                game_id=gid,
            )

    def _normalise_dealer(self) -> None:
        gid = self.game_id
        if self.dealer is not None and self.dealer not in self.players:
            raise BadConfig(f"dealer {self.dealer} is not seated at the table", game_id=gid)
        if self.toss is None:
            return
        if not isinstance(self.toss, Mapping):
            raise BadConfig("toss must map each player to a card", game_id=gid)
        toss: dict[str, Card] = {}
        for player, text in self.toss.items():
            if player not in self.players:
                raise BadConfig(f"toss names {player}, who is not seated", game_id=gid)
            try:
                card = Card.parse(text)
            except CardError as error:
                raise BadConfig(f"toss card of {player}: {error}", game_id=gid) from None
            if card.is_printed_joker:
                raise BadConfig(
                    f"toss card of {player}: a printed joker cannot be a toss card", game_id=gid
                )
            toss[player] = card
        missing = [p for p in self.players if p not in toss]
        if missing:
            raise BadConfig(f"toss has no card for {', '.join(missing)}", game_id=gid)
        ranked = sorted(self.players, key=lambda p: toss[p].toss_strength, reverse=True)
        if toss[ranked[0]] == toss[ranked[1]]:
            raise BadConfig(
                f"toss is tied between {ranked[0]} and {ranked[1]} (both {toss[ranked[0]]})",
                game_id=gid,
            )
        object.__setattr__(self, "toss", toss)
        derived = self._seat_before(ranked[0])
        if self.dealer is not None and self.dealer != derived:
            raise BadConfig(
                f"dealer {self.dealer} disagrees with the toss ({ranked[0]} wins it, so "
                f"{derived} deals)",
                game_id=gid,
            )

    def _seat_before(self, player: str) -> str:
        return self.players[self.players.index(player) - 1]

    # -- derived -------------------------------------------------------------------------
    @property
    def profile(self) -> RuleProfile:
        """The rule profile with this table's own deck count (a 3-deck table checks 3 decks)."""
        scoring = tuple(self.scoring.items()) if self.scoring else ()
        return _table_profile(self.rules, self.decks, self.jokers_per_deck, scoring)

    @property
    def toss_winner(self) -> str | None:
        if not self.toss:
            return None
        return max(self.players, key=lambda p: self.toss[p].toss_strength)

    @property
    def dealer_player(self) -> str:
        """The dealer in force: from the toss, else as given, else the last seat."""
        winner = self.toss_winner
        if winner is not None:
            return self._seat_before(winner)
        return self.dealer if self.dealer is not None else self.players[-1]

    @property
    def first_mover(self) -> str:
        """The seat after the dealer moves first."""
        index = self.players.index(self.dealer_player)
        return self.players[(index + 1) % len(self.players)]

    # -- JSON ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        data = {
            "game_id": self.game_id,
            "variant": self.variant,
            "rules": self.rules,
            "table_id": self.table_id,
            "decks": self.decks,
            "jokers_per_deck": self.jokers_per_deck,
            "currency": self.currency,
            "point_value": _decimal_text(self.point_value),
            "raise_step": _decimal_text(self.raise_step),
            "raise_max": _decimal_text(self.raise_max),
            "raise_schedule": None
            if self.raise_schedule is None
            else [str(value) for value in self.raise_schedule],
            "fee_percent": _decimal_text(self.fee_percent),
            "players": list(self.players),
            "seats": None if self.seats is None else list(self.seats),
            "dealer": self.dealer,
            "toss": None if self.toss is None else {p: str(c) for p, c in self.toss.items()},
            "started_at": format_time(self.started_at),
            "shuffle": None if self.shuffle is None else dict(self.shuffle),
        }
        if self.scoring is not None:  # only deals of a match carry it: 13-card events unchanged
            data["scoring"] = dict(self.scoring)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TableConfig:
        known = _FIELD_NAMES.get(cls)
        if known is None:
            known = _FIELD_NAMES[cls] = frozenset(f.name for f in fields(cls))
        unknown = sorted(set(data) - known)
        if unknown:
            raise BadConfig(f"unknown table setting {unknown[0]!r}", game_id=data.get("game_id"))
        return cls(**dict(data))


# A table class's setting names, worked out once (``from_dict`` runs for every stored game
# ``verify`` checks the deal of).
_FIELD_NAMES: dict[type, frozenset[str]] = {}


def config_of_started(data: Mapping[str, Any]) -> TableConfig:
    """``TableConfig.from_dict(data)`` of a Started event's ``config``: when ``data`` is the
    very dict a new game wrote from its TableConfig in this process, that TableConfig (the
    same values, already built and checked), so a record's table is built once, not again
    by the game's Started body and again by the projection's fold of the same event. Any
    other dict (a stored event, read back) is read as always."""
    known = _WRITTEN.get(id(data))
    if known is not None and known[0] is data:
        return known[1]
    return TableConfig.from_dict(data)


def remember_written(data: dict, config: TableConfig) -> None:
    """``data`` is ``config.to_dict()``, written into a new game's Started event (which
    nothing changes afterwards: an event's values are read, never written)."""
    if len(_WRITTEN) >= _WRITTEN_MAX:
        _WRITTEN.clear()
    _WRITTEN[id(data)] = (data, config)


# By the dict's id, with the dict kept beside its config (so that its id is not another's).
# Enough for an import's save of 50 games and its projection; a cleared memo only costs time.
_WRITTEN: dict[int, tuple[dict, TableConfig]] = {}
_WRITTEN_MAX = 1024


@dataclass(frozen=True)
class Deal:
    """Hands, wild indicator, first open card and (when known) the stock, top first.

    >>> deal = Deal.from_dict({"hands": {"p1": ["AS"], "p2": ["KD"]}, "wild": "7D",
    ...                        "open": "10c", "stock": None})
    >>> deal.open_card, deal.to_dict()["open"]
    (Card('TC'), 'TC')
    """

    hands: Mapping[str, tuple[Card, ...]]
    wild: Card
    open_card: Card
    stock: tuple[Card, ...] | None = None

    def __post_init__(self) -> None:
        put = object.__setattr__
        if not isinstance(self.hands, Mapping):
            raise BadDeal("hands must map each player to a list of cards", move_type="deal")
        put(
            self, "hands", {p: tuple(self._cards(c, f"hand of {p}")) for p, c in self.hands.items()}
        )
        put(self, "wild", self._card(self.wild, "wild indicator"))
        put(self, "open_card", self._card(self.open_card, "open card"))
        if self.stock is not None:
            put(self, "stock", tuple(self._cards(self.stock, "stock")))

    @classmethod
    def of_cards(
        cls,
        hands: dict[str, tuple[Card, ...]],
        wild: Card,
        open_card: Card,
        stock: tuple[Card, ...] | None = None,
    ) -> Deal:
        """The deal of cards already read (a validated record's, every one a
        :class:`Card`): the value the constructor gives, without reading each card again."""
        if not all(type(card) is Card for card in (wild, open_card, *(stock or ()))) or not all(
            type(card) is Card for cards in hands.values() for card in cards
        ):
            return cls(hands=hands, wild=wild, open_card=open_card, stock=stock)
        deal = object.__new__(cls)
        deal.__dict__.update(hands=hands, wild=wild, open_card=open_card, stock=stock)
        return deal

    @staticmethod
    def _card(value: Any, what: str) -> Card:
        try:
            return Card.parse(value)
        except CardError as error:
            raise BadDeal(f"{what}: {error}", move_type="deal") from None

    @staticmethod
    def _cards(values: Any, what: str) -> list[Card]:
        if isinstance(values, str) or not isinstance(values, Iterable):
            raise BadDeal(f"{what} must be a list of cards", move_type="deal")
        cards = []
        for i, value in enumerate(values):
            try:
                cards.append(Card.parse(value))
            except CardError as error:
                raise BadDeal(f"{what}, card {i}: {error}", move_type="deal") from None
        return cards

    def to_dict(self) -> dict[str, Any]:
        return {
            "hands": {p: [str(c) for c in cards] for p, cards in self.hands.items()},
            "wild": str(self.wild),
            "open": str(self.open_card),
            "stock": None if self.stock is None else [str(c) for c in self.stock],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Deal:
        """the record format's ``deal`` block: ``hands``, ``wild``, ``open``, optional ``stock``."""
        if isinstance(data, Deal):
            return data
        if not isinstance(data, Mapping):
            raise BadDeal("deal must be an object with hands, wild, open", move_type="deal")
        for key in ("hands", "wild", "open"):
            if key not in data:
                raise BadDeal(f"deal has no {key!r}", move_type="deal")
        unknown = sorted(set(data) - {"hands", "wild", "open", "stock"})
        if unknown:
            raise BadDeal(f"deal has an unknown field {unknown[0]!r}", move_type="deal")
        return cls(
            hands=data["hands"], wild=data["wild"], open_card=data["open"], stock=data.get("stock")
        )


@lru_cache(maxsize=64)
def _table_profile(
    rules: str, decks: int, jokers_per_deck: int, scoring: tuple[tuple[str, int], ...] = ()
) -> RuleProfile:
    profile = get_profile(rules)
    if (profile.decks, profile.jokers_per_deck) == (decks, jokers_per_deck) and not scoring:
        return profile
    return replace(profile, decks=decks, jokers_per_deck=jokers_per_deck, **dict(scoring))
