"""The Pool and Deals Rummy match records, ``rummy-ledger/pool@1`` and ``rummy-ledger/deals@1``
(docs/pool-deals-format.md), declared once.

The header is the 13-card record's (players, dealer or toss, table, rules, shuffle); the
``match`` block carries the format and its money; each entry of ``deals`` is a 13-card deal
block and its moves exactly as in ``rummy-ledger/game@1`` (the same models), with the
rejoins made before it (pool). Rules of play are the match aggregate's, not this module's.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, TypeAdapter, create_model, model_validator

from domain.record_schema.common import (
    DEALER_OR_TOSS,
    MOVES_MAX,
    PLAYERS_MAX,
    PLAYERS_MIN,
    Block,
    CardText,
    Currency,
    DecimalBound,
    FeePercent,
    Id,
    Money,
    ReportedPoints,
    Seated,
    Shuffle,
    Timestamp,
    count,
    refuse,
)
from domain.rummy13.record_schema import (
    MOVE_MODELS,
    Deal,
    GameRecord,
    Move,
    Player,
    Rules,
    Table,
)

POOL_FORMAT = "rummy-ledger/pool@1"
DEALS_FORMAT = "rummy-ledger/deals@1"
EXPORT_ONLY_FIELDS = ("settlement",)
# A 101 pool of 6 with rejoins rarely passes 30 deals; 200 leaves room and keeps a record
# within the 1 MiB line.
DEALS_MAX = 200
REJOINS_MAX = 50
EntryFee = DecimalBound(places=2, digits=7).type()


class PoolTerms(Block):
    """A pool's format and money."""

    pool: Literal[61, 101, 201]
    entry_fee: EntryFee
    currency: Currency = "INR"
    fee_percent: FeePercent = Decimal(0)
    max_rejoins: count(0, REJOINS_MAX) | None = None
    auto_split: bool = False


class DealsTerms(Block):
    """A deals match's format and money."""

    deals: Literal[2, 3, 6]
    entry_fee: EntryFee
    currency: Currency = "INR"
    fee_percent: FeePercent = Decimal(0)


Moves = Annotated[list[Move], Field(max_length=MOVES_MAX)]


class DealsDeal(Block):
    """One deal of a match: the 13-card deal block and its moves."""

    number: count(1, DEALS_MAX) | None = None  # when given, its place in the list
    at: Timestamp | None = None
    deal: Deal
    moves: Moves = Field(default_factory=list)


class PoolDeal(DealsDeal):
    """One deal of a pool, with the players who rejoined just before it."""

    rejoins: Annotated[list[Id], Field(max_length=PLAYERS_MAX * REJOINS_MAX)] = Field(
        default_factory=list
    )


class Split(Block):
    """The remaining players' agreement to share the pool by drops, after the last deal."""

    accepted_by: Annotated[list[Id], Field(min_length=1, max_length=PLAYERS_MAX)]
    at: Timestamp | None = None


Payouts = Annotated[dict[Id, Money], Field(max_length=PLAYERS_MAX)]
Counts = Annotated[dict[Id, ReportedPoints], Field(max_length=PLAYERS_MAX)]


class MatchReported(Seated):
    """What the operator says the match settled (any subset); the audit compares each."""

    winner: Id | None = None
    prize_pool: Money | None = None
    fee: Money | None = None
    payouts: Payouts | None = None

    def unseated(self, players: tuple[str, ...]) -> tuple[str, str] | None:
        if self.winner is not None and self.winner not in players:
            return "winner", f"{self.winner!r} is not a player"
        for name in ("payouts", "scores", "chips", "split"):
            for player in getattr(self, name, None) or {}:
                if player not in players:
                    return f"{name}.{player}", "not a player"
        for player in getattr(self, "rejoins", None) or {}:
            if player not in players:
                return f"rejoins.{player}", "not a player"
        return None

    def figures(self) -> dict[str, Any]:
        """The figures as given, money as its decimal text, to keep in the match."""
        return _plain(self.model_dump(exclude_none=True))


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


class PoolReported(MatchReported):
    scores: Counts | None = None  # final scores
    split: Payouts | None = None  # each sharer's share
    rejoins: (
        Annotated[
            dict[Id, Annotated[list[ReportedPoints], Field(max_length=REJOINS_MAX)]],
            Field(max_length=PLAYERS_MAX),
        ]
        | None
    ) = None  # each player's rejoin scores, in order


class DealsReported(MatchReported):
    chips: Counts | None = None  # final chips


class MatchHeader(Block):
    """What a match record shares with the 13-card record's header."""

    model_config = ConfigDict(json_schema_extra=DEALER_OR_TOSS)

    game_id: Id
    rules: Rules = "rummycircle"
    started_at: Timestamp | None = None
    table: Table = Field(default_factory=lambda: Table())
    players: Annotated[list[Player], Field(min_length=PLAYERS_MIN, max_length=PLAYERS_MAX)]
    dealer: Id | None = None
    toss: Annotated[dict[Id, CardText], Field(max_length=PLAYERS_MAX)] | None = None
    shuffle: Shuffle | None = None

    def seating(self) -> tuple[tuple[str, ...], tuple[int, ...]]:
        return GameRecord.seating(self)

    @model_validator(mode="after")
    def _header(self) -> MatchHeader:
        problem = GameRecord._seats_problem(self) or GameRecord._dealer_problem(self)
        if problem is None:
            problem = self._body_problem()
        if problem is not None:
            raise refuse(problem[1], field=problem[0])
        return self

    def _body_problem(self) -> tuple[str, str] | None:
        ids = tuple(player.id for player in self.players)
        for index, played in enumerate(getattr(self, "deals", None) or ()):
            if played.number is not None and played.number != index + 1:
                return f"deals[{index}].number", f"deal {played.number} listed as deal {index + 1}"
            for player in played.deal.hands:
                if player not in ids:
                    return f"deals[{index}].deal.hands.{player}", "not a player at this table"
            for n, move in enumerate(played.moves):
                problem = move.unseated(ids)
                if problem is not None:
                    return f"deals[{index}].moves[{n}].{problem[0]}", problem[1]
        reported = getattr(self, "reported", None)
        if reported is not None:
            problem = reported.unseated(ids)
            if problem is not None:
                return f"reported.{problem[0]}", problem[1]
        return None


class PoolHeader(MatchHeader):
    format: Literal["rummy-ledger/pool@1"]
    variant: Literal["pool"] = "pool"
    match: PoolTerms


class DealsHeader(MatchHeader):
    format: Literal["rummy-ledger/deals@1"]
    variant: Literal["deals"] = "deals"
    match: DealsTerms


class PoolRecord(PoolHeader):
    """One Pool Rummy match as docs/pool-deals-format.md describes it."""

    deals: Annotated[list[PoolDeal], Field(max_length=DEALS_MAX)]
    split: Split | None = None
    reported: PoolReported | None = None
    settlement: dict[str, Any] | None = None  # added on export, ignored on import


class DealsRecord(DealsHeader):
    """One Deals Rummy match as docs/pool-deals-format.md describes it."""

    deals: Annotated[list[DealsDeal], Field(max_length=DEALS_MAX)]
    reported: DealsReported | None = None
    settlement: dict[str, Any] | None = None


# -- the live API's bodies (docs/operator-api.md) ------------------------------------------
# A new match is its header (with ``reported`` if the operator has it); each step is the
# next deal, one of its 13-card moves, a rejoin or a split, with ``seq``, its 0-based index.


class PoolGameHeader(PoolHeader):
    """``POST /api/v1/games`` for a pool: the record's header; deals come as steps."""

    reported: PoolReported | None = None


class DealsGameHeader(DealsHeader):
    """``POST /api/v1/games`` for a deals match: the record's header; deals come as steps."""

    reported: DealsReported | None = None


class NextDeal(Block):
    """The next deal's cards (hands, wild, open card, stock) as in a 13-card record."""

    type: Literal["deal"]
    deal: Deal
    at: Timestamp | None = None


class Rejoin(Block):
    """An eliminated player pays the entry fee again before the next deal (pool)."""

    type: Literal["rejoin"]
    player: Id
    at: Timestamp | None = None


class SplitStep(Split):
    """Every remaining player accepts a split by drops (pool); it ends the match."""

    type: Literal["split"]


Seq = Annotated[
    count(0, DEALS_MAX * (MOVES_MAX + 3)),
    Field(description="The step's 0-based index in the match (a retry sends the same seq)."),
]


def _with_seq(name: str, model: type[Block]) -> type[Block]:
    return create_model(name, __base__=model, __doc__=model.__doc__, seq=(Seq, ...))


STEP_MODELS = tuple(
    _with_seq(f"Match{model.__name__}Step", model)
    for model in (NextDeal, Rejoin, SplitStep, *MOVE_MODELS)
)
StepBody = Annotated[
    STEP_MODELS[0]
    | STEP_MODELS[1]
    | STEP_MODELS[2]
    | STEP_MODELS[3]
    | STEP_MODELS[4]
    | STEP_MODELS[5]
    | STEP_MODELS[6]
    | STEP_MODELS[7]
    | STEP_MODELS[8]
    | STEP_MODELS[9],
    Field(discriminator="type"),
]
STEP_BODY = TypeAdapter(StepBody)
