"""The 13-card game record, ``rummy-ledger/game@1`` (docs/record-format.md), declared once.

Each block of the record is a model: its fields, their bounds (:mod:`.common`) and the
checks that tie one field to another (the dealer is seated, every player has a hand, a raise
only in a ``raise`` game). The rules a record's moves must follow are not here: the game
aggregate checks those when the record is played (``domain/rummy13/game.py``).

Moves are a union told apart by ``type``; whether a move's player is seated is
:meth:`~domain.record_schema.common.Seated.unseated`'s question, asked once a record by the
record (of its own ``players``) or by the ingest API's reader (of the stored game's).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, WithJsonSchema, model_validator

from domain.record_schema.common import (
    DEALER_OR_TOSS,
    GROUPS_MAX,
    MOVES_MAX,
    PLAYERS_MAX,
    PLAYERS_MIN,
    RAISE_SCHEDULE_MAX,
    Block,
    Cards,
    CardText,
    Currency,
    Decks,
    FeePercent,
    Id,
    JokersPerDeck,
    Money,
    PointValue,
    RaiseStep,
    ReportedPoints,
    Seat,
    Seated,
    Shuffle,
    Timestamp,
    refuse,
)
from domain.rummy13.profiles import DEFAULT_PROFILE, PROFILES, UnknownProfile, get_profile

FORMAT_TAG = "rummy-ledger/game@1"
VARIANTS = ("points", "raise")
MOVE_TYPES = ("pick", "discard", "drop", "miss", "declare", "show", "reshuffle")
PICK_SOURCES = ("open", "closed")
# Fields the ledger adds on export; an exported record imports again unchanged.
EXPORT_ONLY_FIELDS = ("settlement",)


def _known_profile(name: str) -> str:
    try:
        return get_profile(name).name
    except UnknownProfile as error:
        raise refuse(str(error)) from None


Rules = Annotated[str, AfterValidator(_known_profile), WithJsonSchema({"enum": sorted(PROFILES)})]
Groups = Annotated[list[Cards], Field(max_length=GROUPS_MAX)]


# -- moves -------------------------------------------------------------------------------


class MoveBase(Seated):
    at: Timestamp | None = None

    def unseated(self, players: tuple[str, ...]) -> tuple[str, str] | None:
        player = getattr(self, "player", None)
        if player is None or player in players:
            return None
        return "player", f"{player!r} is not a player at this table"


class PlayerMove(MoveBase):
    player: Id


class Pick(PlayerMove):
    """Take the top card of the open pile or the closed stock."""

    type: Literal["pick"]
    source: Literal["open", "closed"] = Field(alias="from")
    card: CardText


class Discard(PlayerMove):
    """Put one card on the open pile; ends the turn."""

    type: Literal["discard"]
    card: CardText


class Drop(PlayerMove):
    """Leave the game before picking (a first or middle drop)."""

    type: Literal["drop"]


class Miss(PlayerMove):
    """The turn timed out (three misses are a drop)."""

    type: Literal["miss"]


class Declare(PlayerMove):
    """Finish with ``finish`` on the closed pile and the 13 cards left in ``groups``."""

    type: Literal["declare"]
    finish: CardText
    groups: Groups


class Show(PlayerMove):
    """A loser's grouping after a valid declaration; cards not listed are loose."""

    type: Literal["show"]
    groups: Groups


class Reshuffle(MoveBase):
    """The stock ran out: the open pile under its top card becomes the new stock (top
    first). The table reshuffles, not a player: a ``player`` given with it is dropped."""

    type: Literal["reshuffle"]
    player: Id | None = None
    stock: Cards | None = None

    def unseated(self, players: tuple[str, ...]) -> tuple[str, str] | None:
        return None  # the table's move: no player to seat


MOVE_MODELS = (Pick, Discard, Drop, Miss, Declare, Show, Reshuffle)
Move = Annotated[
    Pick | Discard | Drop | Miss | Declare | Show | Reshuffle, Field(discriminator="type")
]

# -- the header's blocks -------------------------------------------------------------------


class Table(Block):
    id: Id | None = None
    decks: Decks | None = None  # default: the rule profile's
    jokers_per_deck: JokersPerDeck | None = None


def absent() -> Any:
    """The default of a field that may be left out but not given as null (so the schema
    shows no ``null`` default either)."""
    return Field(None, json_schema_extra=lambda schema: schema.pop("default", None))


class Raise(Block):
    """A ``raise`` game's point value: ``{step, max}`` or ``{schedule}`` (one value a round,
    the last holding after)."""

    model_config = Block.model_config | {
        "json_schema_extra": {
            "oneOf": [
                {"required": ["step", "max"], "not": {"required": ["schedule"]}},
                {
                    "required": ["schedule"],
                    "not": {"anyOf": [{"required": ["step"]}, {"required": ["max"]}]},
                },
            ]
        }
    }

    # Absent or given, never null: the JSON Schema's either-or counts a null as given.
    step: RaiseStep = absent()
    max: PointValue = absent()
    schedule: Annotated[list[PointValue], Field(min_length=1, max_length=RAISE_SCHEDULE_MAX)] = (
        absent()
    )

    @model_validator(mode="after")
    def _one_form(self) -> Raise:
        if self.schedule is not None:
            if self.step is not None or self.max is not None:
                raise refuse("give either a schedule or step and max, not both")
        else:
            for name in ("step", "max"):
                if getattr(self, name) is None:
                    raise refuse("missing (or give a schedule instead)", field=name)
        return self


class Stakes(Block):
    currency: Currency
    point_value: PointValue
    raise_: Raise | None = Field(None, alias="raise")
    fee_percent: FeePercent = Decimal(0)


class Player(Block):
    id: Id
    seat: Seat | None = None  # default: the place in the list


class Deal(Block):
    hands: Annotated[dict[Id, Cards], Field(max_length=PLAYERS_MAX)]
    wild: CardText
    open: CardText
    stock: Cards | None = None  # the closed stock's order, top first, when known


class Reported(Seated):
    """What the operator says it settled (any subset); the audit compares each figure."""

    winner: Id | None = None
    points: Annotated[dict[Id, ReportedPoints], Field(max_length=PLAYERS_MAX)] | None = None
    gross: Money | None = None
    fee: Money | None = None
    net_to_winner: Money | None = None

    def unseated(self, players: tuple[str, ...]) -> tuple[str, str] | None:
        """``(field, reason)`` for a figure naming someone not at the table."""
        if self.winner is not None and self.winner not in players:
            return "winner", f"{self.winner!r} is not a player"
        for player in self.points or {}:
            if player not in players:
                return f"points.{player}", "not a player"
        return None


# -- the record ----------------------------------------------------------------------------


class GameRecord(Block):
    """One whole 13-card game as docs/record-format.md describes it."""

    model_config = ConfigDict(json_schema_extra=DEALER_OR_TOSS)

    format: Literal["rummy-ledger/game@1"]
    game_id: Id
    variant: Literal["points", "raise"]
    rules: Rules = DEFAULT_PROFILE
    started_at: Timestamp | None = None
    table: Table = Field(default_factory=lambda: Table())
    stakes: Stakes
    players: Annotated[list[Player], Field(min_length=PLAYERS_MIN, max_length=PLAYERS_MAX)]
    dealer: Id | None = None
    toss: Annotated[dict[Id, CardText], Field(max_length=PLAYERS_MAX)] | None = None
    deal: Deal
    moves: Annotated[list[Move], Field(max_length=MOVES_MAX)] = Field(default_factory=list)
    reported: Reported | None = None
    shuffle: Shuffle | None = None
    settlement: dict[str, Any] | None = None  # added on export, ignored on import

    def seating(self) -> tuple[tuple[str, ...], tuple[int, ...]]:
        """Players in seat order (= turn order, whatever order the list was written in) and
        their seats (default: the place in the list)."""
        seats = {p.id: p.seat if p.seat is not None else i + 1 for i, p in enumerate(self.players)}
        ordered = tuple(sorted(seats, key=seats.__getitem__))
        return ordered, tuple(seats[player] for player in ordered)

    @model_validator(mode="after")
    def _consistent(self) -> GameRecord:
        problem = (
            self._seats_problem()
            or self._raise_problem()
            or self._dealer_problem()
            or self._deal_problem()
            or self._moves_problem()
            or self._reported_problem()
        )
        if problem is not None:
            raise refuse(problem[1], field=problem[0])
        return self

    def _seats_problem(self) -> tuple[str, str] | None:
        ids: set[str] = set()
        seats: set[int] = set()
        for i, player in enumerate(self.players):
            seat = player.seat if player.seat is not None else i + 1
            if player.id in ids:
                return f"players[{i}].id", f"{player.id} sits twice"
            if seat in seats:
                return f"players[{i}].seat", f"seat {seat} is taken twice"
            ids.add(player.id)
            seats.add(seat)
        return None

    def _raise_problem(self) -> tuple[str, str] | None:
        given = self.stakes.raise_
        if given is not None and self.variant != "raise":
            return "stakes.raise", "only a 'raise' game has a raise"
        if given is None and self.variant == "raise":
            return "stakes.raise", "missing: a raise game needs {step, max} or {schedule}"
        if given is not None and given.max is not None and given.max < self.stakes.point_value:
            return (
                "stakes.raise.max",
                f"{given.max} is below the starting point value {self.stakes.point_value}",
            )
        return None

    def _dealer_problem(self) -> tuple[str, str] | None:
        players = {player.id for player in self.players}
        if self.toss is not None:
            if self.dealer is not None:
                return "toss", "give either a dealer or a toss, not both"
            for player in self.toss:
                if player not in players:
                    return f"toss.{player}", "not a player at this table"
            missing = sorted(players - set(self.toss))
            if missing:
                return "toss", f"no toss card for {', '.join(missing)}"
            return None
        if self.dealer is None:
            return "dealer", "missing: give the dealer (or a toss)"
        if self.dealer not in players:
            return "dealer", f"{self.dealer!r} is not a player at this table"
        return None

    def _deal_problem(self) -> tuple[str, str] | None:
        players, _ = self.seating()
        for player in self.deal.hands:
            if player not in players:
                return f"deal.hands.{player}", "not a player at this table"
        missing = [player for player in players if player not in self.deal.hands]
        if missing:
            return "deal.hands", f"no hand for {', '.join(missing)}"
        return None

    def _moves_problem(self) -> tuple[str, str] | None:
        players = tuple(player.id for player in self.players)
        for index, move in enumerate(self.moves):
            problem = move.unseated(players)
            if problem is not None:
                return f"moves[{index}].{problem[0]}", problem[1]
        return None

    def _reported_problem(self) -> tuple[str, str] | None:
        if self.reported is None:
            return None
        problem = self.reported.unseated(tuple(player.id for player in self.players))
        return None if problem is None else (f"reported.{problem[0]}", problem[1])
