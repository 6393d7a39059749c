"""The Red 3 match record, ``rummy-ledger/red3@1`` (docs/red3-format.md), declared once.

Built from the same constrained values as the 13-card record (:mod:`domain.record_schema`);
what differs is Red 3's own: up to 8 players, a pack per player (card lists up to 432),
rounds of two hands, three move types. The match's header and one move are models of their
own (:class:`Red3Header`, :data:`Red3Move`) so that a live API can take them one by one.
Rules of play are the match aggregate's (``domain/red3/``), not this module's.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    Field,
    TypeAdapter,
    WithJsonSchema,
    create_model,
    model_validator,
)

from domain.errors import UnknownProfile
from domain.record_schema.common import (
    Block,
    CardText,
    Id,
    Seat,
    Seated,
    Shuffle,
    Timestamp,
    count,
    refuse,
)
from domain.red3.profile import RED3_RULES, get_red3_rules
from domain.timestamps import format_time

RED3_FORMAT = "rummy-ledger/red3@1"
RED3_VARIANT = "red3"
# Fields the ledger adds on export; an exported record imports again unchanged.
EXPORT_ONLY_FIELDS = ("settlement",)
# A pack per player, so 8 players already deal 432 cards; 60 simulated matches never passed
# 314 moves in a round (2,000 leaves over 6x headroom) nor 4 rounds.
RED3_PLAYERS_MIN = get_red3_rules().min_players
RED3_PLAYERS_MAX = 8
RED3_ROUNDS_MAX = 20
RED3_ROUND_MOVES_MAX = 2_000
RED3_CARDS_MAX = RED3_PLAYERS_MAX * 54
# Scores are per round (a hand of 500+ points is possible with many red threes).
Red3Score = count(-100_000, 100_000)
Red3Cards = Annotated[list[CardText], Field(max_length=RED3_CARDS_MAX)]
Books = Annotated[list[Red3Cards], Field(max_length=RED3_CARDS_MAX)]


def _known_rules(name: str) -> str:
    try:
        return get_red3_rules(name).name
    except UnknownProfile as error:
        raise refuse(str(error)) from None


# -- moves -------------------------------------------------------------------------------


class Red3MoveBase(Block):
    player: Id

    def canonical(self) -> dict[str, Any]:
        """The move as the match stores it: cards and time in canonical text, no empty
        optional fields, keys in the format's order."""
        out: dict[str, Any] = {"player": self.player, "type": self.type}
        out.update(self._fields())
        if self.at is not None:
            out["at"] = format_time(self.at)
        return out

    def _fields(self) -> dict[str, Any]:
        return {}


class Red3Pick(Red3MoveBase):
    """Take the stock's top card, or the whole discard pile."""

    type: Literal["pick"]
    source: Literal["stock", "pile"] = Field(alias="from")
    card: CardText | None = None  # from the stock: required when its order is unknown
    cards: Red3Cards | None = None  # from the pile: bottom first, checked when given
    at: Timestamp | None = None

    def _fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {"from": self.source}
        if self.card is not None:
            out["card"] = str(self.card)
        if self.cards is not None:
            out["cards"] = [str(card) for card in self.cards]
        return out


class BookAddition(Block):
    book: count(0, RED3_CARDS_MAX)  # that player's books of the round, from 0
    cards: Red3Cards


class Red3LayDown(Red3MoveBase):
    """Lay new books down and add cards to the player's own books."""

    model_config = Block.model_config | {
        "json_schema_extra": {
            "anyOf": [
                {"required": [name], "properties": {name: {"type": "array", "minItems": 1}}}
                for name in ("books", "add")
            ]
        }
    }

    type: Literal["lay_down"]
    books: Books | None = None
    add: Annotated[list[BookAddition], Field(max_length=RED3_CARDS_MAX)] | None = None
    at: Timestamp | None = None

    @model_validator(mode="after")
    def _something(self) -> Red3LayDown:
        if not self.books and not self.add:
            raise refuse("a lay-down needs books or cards to add")
        return self

    def _fields(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.books:
            out["books"] = [[str(card) for card in book] for book in self.books]
        if self.add:
            out["add"] = [
                {"book": added.book, "cards": [str(card) for card in added.cards]}
                for added in self.add
            ]
        return out


class Red3Discard(Red3MoveBase):
    """One card onto the pile; ends the turn."""

    type: Literal["discard"]
    card: CardText
    at: Timestamp | None = None

    def _fields(self) -> dict[str, Any]:
        return {"card": str(self.card)}


Red3Move = Annotated[Red3Pick | Red3LayDown | Red3Discard, Field(discriminator="type")]

# -- rounds ------------------------------------------------------------------------------


class Red3Deal(Block):
    first: Id | None = None  # default: the rotation's
    hands: Annotated[dict[Id, Red3Cards], Field(max_length=RED3_PLAYERS_MAX)]
    second_hands: Annotated[dict[Id, Red3Cards], Field(max_length=RED3_PLAYERS_MAX)]
    pile: Red3Cards
    stock: Red3Cards | None = None  # top first, when known


class Red3Round(Block):
    round: count(1, RED3_ROUNDS_MAX) | None = None  # when given, its place in the list
    at: Timestamp | None = None
    deal: Red3Deal
    moves: Annotated[list[Red3Move], Field(max_length=RED3_ROUND_MOVES_MAX)] = Field(
        default_factory=list
    )


# -- the header and the whole record -------------------------------------------------------


class Red3Table(Block):
    id: Id | None = None


class Red3Player(Block):
    id: Id
    seat: Seat | None = None  # default: the place in the list


class Red3Reported(Seated):
    """What the operator says the match scored (any subset); the audit compares each."""

    rounds: Annotated[list[dict[Id, Red3Score]], Field(max_length=RED3_ROUNDS_MAX)] | None = None
    totals: dict[Id, Red3Score] | None = None
    winner: Id | None = None
    winners: Annotated[list[Id], Field(max_length=RED3_PLAYERS_MAX)] | None = None

    def unseated(self, players: tuple[str, ...]) -> tuple[str, str] | None:
        """``(field, reason)`` for a figure naming someone not at the table."""
        scored = [(f"rounds[{i}]", scores) for i, scores in enumerate(self.rounds or ())]
        for name, scores in [*scored, ("totals", self.totals or {})]:
            for player in scores:
                if player not in players:
                    return name, f"{player!r} is not seated"
        if self.winner is not None and self.winner not in players:
            return "winner", f"{self.winner!r} is not seated"
        if any(player not in players for player in self.winners or ()):
            return "winners", "must be a list of seated players"
        return None

    def figures(self) -> dict[str, Any]:
        """The figures as given (a ``winner`` of null stays), to keep in the match."""
        return self.model_dump(exclude_unset=True)


class Red3Header(Block):
    """A match's header: everything fixed when it starts."""

    format: Literal["rummy-ledger/red3@1"]
    game_id: Id
    variant: Literal["red3"] = RED3_VARIANT
    rules: Annotated[
        str, AfterValidator(_known_rules), WithJsonSchema({"enum": sorted(RED3_RULES)})
    ] = "standard"
    started_at: Timestamp | None = None
    table: Red3Table | None = None
    players: Annotated[
        list[Red3Player], Field(min_length=RED3_PLAYERS_MIN, max_length=RED3_PLAYERS_MAX)
    ]
    first_player: Id | None = None
    round_count: count(1, RED3_ROUNDS_MAX)
    shuffle: Shuffle | None = None


class Red3Record(Red3Header):
    """One Red 3 match as docs/red3-format.md describes it."""

    rounds: Annotated[list[Red3Round], Field(max_length=RED3_ROUNDS_MAX)]
    reported: Red3Reported | None = None
    settlement: dict[str, Any] | None = None  # added on export, ignored on import

    @model_validator(mode="after")
    def _consistent(self) -> Red3Record:
        if len(self.rounds) > self.round_count:
            raise refuse(
                f"{len(self.rounds)} rounds played but the match has {self.round_count}",
                field="rounds",
            )
        for index, played in enumerate(self.rounds):
            if played.round is not None and played.round != index + 1:
                raise refuse(
                    f"round {played.round} listed as round {index + 1}", field=f"rounds[{index}]"
                )
        if self.reported is not None:
            problem = self.reported.unseated(tuple(player.id for player in self.players))
            if problem is not None:
                raise refuse(problem[1], field=f"reported.{problem[0]}")
        return self


# -- the live API's bodies (docs/operator-api.md) -------------------------------------------
# Built from the record's own models: a new match is its header, and each step is a round's
# deal or one of its moves, with ``seq``, the step's 0-based index in the match.


class Red3GameHeader(Red3Header):
    """``POST /api/v1/games`` for a Red 3 match: the record's header without rounds; each
    round's deal is then posted as a step, followed by its moves."""

    rounds: Annotated[list, Field(max_length=0)] = Field(default_factory=list)


class Red3NextDeal(Block):
    """The next round's deal (hands, second hands, the two-card pile and the stock)."""

    type: Literal["deal"]
    deal: Red3Deal
    at: Timestamp | None = None


Red3Seq = Annotated[
    count(0, RED3_ROUNDS_MAX * (RED3_ROUND_MOVES_MAX + 1) - 1),
    Field(description="The step's 0-based index in the match (a retry sends the same seq)."),
]


def _with_seq(name: str, model: type[Block]) -> type[Block]:
    return create_model(name, __base__=model, __doc__=model.__doc__, seq=(Red3Seq, ...))


RED3_STEP_MODELS = (
    _with_seq("Red3DealStep", Red3NextDeal),
    _with_seq("Red3PickStep", Red3Pick),
    _with_seq("Red3LayDownStep", Red3LayDown),
    _with_seq("Red3DiscardStep", Red3Discard),
)
Red3StepBody = Annotated[
    RED3_STEP_MODELS[0] | RED3_STEP_MODELS[1] | RED3_STEP_MODELS[2] | RED3_STEP_MODELS[3],
    Field(discriminator="type"),
]
RED3_STEP_BODY = TypeAdapter(Red3StepBody)
