"""Game records (docs/record-format.md, ``rummy-ledger/game@1``) as typed values: read, built, written.

Pure: the *shape* (known fields, card text, decimal strings and every bound, who is at the
table) is declared once in :mod:`domain.rummy13.record_schema`; this module validates with
it and builds the domain's values from the result. :class:`RecordError` (shared by every
record format) names the game, the move index (0-based, the same number as the ingest
API's ``seq``) and the field:

>>> parse_game_record({"format": "rummy-ledger/game@1", "game_id": "G1"})
Traceback (most recent call last):
...
domain.records.RecordError: G1: field 'variant': missing

Which format a record is in, and reading JSON Lines, is :mod:`replays.records.codec`'s
(through the variant registry); the rules are the aggregates'.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from pydantic import TypeAdapter, ValidationError

from domain.cards import Card
from domain.errors import RuleViolation
from domain.records import (
    RecordError,
    dump_record,
    parse_with_game_id,
    refusal,
    validated,
)
from domain.rummy13 import record_schema as game13
from domain.rummy13.game import Game
from domain.rummy13.profiles import get_profile
from domain.rummy13.record_schema import FORMAT_TAG
from domain.rummy13.table import Deal, TableConfig
from domain.timestamps import format_time

_REPORTED_MONEY = ("gross", "fee", "net_to_winner")
_MOVE = TypeAdapter(game13.Move)


# -- values ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Move:
    """One move in docs/record-format.md's vocabulary.

    >>> move = Move.from_dict({"player": "p3", "type": "discard", "card": "9c"})
    >>> move.describe(), move.to_dict()
    ('p3 discard 9C', {'player': 'p3', 'type': 'discard', 'card': '9C'})
    """

    type: str
    player: str | None = None
    source: str | None = None  # pick: "open" or "closed" (docs/record-format.md's `from`)
    card: Card | None = None
    finish: Card | None = None
    groups: tuple[tuple[Card, ...], ...] | None = None
    stock: tuple[Card, ...] | None = None
    at: datetime | None = None

    @classmethod
    def from_dict(
        cls, obj: Any, *, index: int | None = None, players: Iterable[str] | None = None
    ) -> Move:
        """Read one move; :class:`RecordError` names ``index`` and the field at fault."""
        try:
            move = _MOVE.validate_python(obj)
        except ValidationError as error:
            raise refusal(error, obj, "a move", move=index) from None
        if players is not None:
            problem = move.unseated(tuple(players))
            if problem is not None:
                raise RecordError(problem[1], move=index, field=problem[0])
        return cls.of(move)

    @classmethod
    def of(cls, move: game13.MoveBase) -> Move:
        """The move of a validated record move (a reshuffle's player is dropped)."""
        given = move.__dict__  # only the fields of its type (and fast: no __getattr__)
        kind, groups, stock = given["type"], given.get("groups"), given.get("stock")
        # Every move of every imported record is built here. The values are already checked,
        # so the frozen dataclass's __init__ (one object.__setattr__ a field, most of this
        # method's cost) is skipped: the fields are filled in at once, in declaration order.
        built = object.__new__(cls)
        built.__dict__.update(
            type=kind,
            player=None if kind == "reshuffle" else given["player"],
            source=given.get("source"),
            card=given.get("card"),
            finish=given.get("finish"),
            groups=None if groups is None else tuple(tuple(group) for group in groups),
            stock=None if stock is None else tuple(stock),
            at=given["at"],
        )
        return built

    def to_dict(self) -> dict:
        out: dict[str, Any] = {}
        if self.player is not None:
            out["player"] = self.player
        out["type"] = self.type
        if self.source is not None:
            out["from"] = self.source
        if self.card is not None:
            out["card"] = str(self.card)
        if self.finish is not None:
            out["finish"] = str(self.finish)
        if self.groups is not None:
            out["groups"] = [_texts(group) for group in self.groups]
        if self.stock is not None:
            out["stock"] = _texts(self.stock)
        if self.at is not None:
            out["at"] = format_time(self.at)
        return out

    def describe(self) -> str:
        """``player type card`` as error messages show it: ``p3 discard 9C``, ``p2 drop``."""
        words = [self.player or "table", self.type]
        shown = self.card or self.finish
        if shown is not None:
            words.append(str(shown))
        return " ".join(words)


@dataclass(frozen=True)
class Reported:
    """What the operator says it settled; any subset of the fields."""

    winner: str | None = None
    points: Mapping[str, int] | None = None
    gross: Decimal | None = None
    fee: Decimal | None = None
    net_to_winner: Decimal | None = None

    def to_dict(self) -> dict:
        out: dict[str, Any] = {}
        if self.winner is not None:
            out["winner"] = self.winner
        if self.points is not None:
            out["points"] = dict(self.points)
        for name in _REPORTED_MONEY:
            value = getattr(self, name)
            if value is not None:
                out[name] = str(value)
        return out

    @classmethod
    def from_dict(cls, obj: Any, players: Iterable[str] = ()) -> Reported:
        """Read the ``reported`` block of a game seating ``players``."""
        try:
            block = game13.Reported.model_validate(obj)
        except ValidationError as error:
            raise refusal(error, obj, "the reported block", prefix="reported") from None
        problem = block.unseated(tuple(players))
        if problem is not None:
            raise RecordError(problem[1], field=f"reported.{problem[0]}")
        return cls.of(block)

    @classmethod
    def of(cls, block: game13.Reported) -> Reported:
        return cls(
            winner=block.winner,
            points=None if block.points is None else dict(block.points),
            gross=block.gross,
            fee=block.fee,
            net_to_winner=block.net_to_winner,
        )


@dataclass(frozen=True)
class GameRecord:
    """One whole game as docs/record-format.md describes it."""

    config: TableConfig
    deal: Deal
    moves: tuple[Move, ...] = ()
    reported: Reported | None = None

    @property
    def game_id(self) -> str:
        return self.config.game_id

    @property
    def shuffle(self) -> Mapping[str, Any] | None:
        """The verifiable-shuffle block, kept on the table configuration."""
        return self.config.shuffle

    def move_dicts(self) -> list[dict]:
        return [move.to_dict() for move in self.moves]

    def to_dict(self) -> dict:
        """The canonical docs/record-format.md object (key order fixed, cards and times normalised)."""
        config = self.config
        table: dict[str, Any] = {}
        if config.table_id is not None:
            table["id"] = config.table_id
        table["decks"] = config.decks
        table["jokers_per_deck"] = config.jokers_per_deck
        stakes: dict[str, Any] = {
            "currency": config.currency,
            "point_value": str(config.point_value),
        }
        if config.raise_schedule is not None:
            stakes["raise"] = {"schedule": [str(value) for value in config.raise_schedule]}
        elif config.raise_step is not None or config.raise_max is not None:
            stakes["raise"] = {"step": str(config.raise_step), "max": str(config.raise_max)}
        stakes["fee_percent"] = str(config.fee_percent)
        out: dict[str, Any] = {
            "format": FORMAT_TAG,
            "game_id": config.game_id,
            "variant": config.variant,
            "rules": config.rules,
        }
        if config.started_at is not None:
            out["started_at"] = format_time(config.started_at)
        out["table"] = table
        out["stakes"] = stakes
        seats = config.seats or range(1, len(config.players) + 1)
        out["players"] = [
            {"id": player, "seat": seat} for player, seat in zip(config.players, seats, strict=True)
        ]
        if config.toss:
            out["toss"] = {player: str(card) for player, card in config.toss.items()}
        else:
            out["dealer"] = config.dealer
        deal = self.deal.to_dict()
        if deal["stock"] is None:
            del deal["stock"]
        out["deal"] = deal
        out["moves"] = self.move_dicts()
        if self.reported is not None:
            out["reported"] = self.reported.to_dict()
        if config.shuffle is not None:
            out["shuffle"] = dict(config.shuffle)
        return out

    def canonical(self) -> str:
        return dump_record(self)


# -- reading -----------------------------------------------------------------------------


def parse_game_record(obj: Mapping) -> GameRecord:
    """A 13-card ``rummy-ledger/game@1`` record (docs/record-format.md)."""
    return parse_with_game_id(obj, _parse)


def _parse(obj: Mapping, game_id: str) -> GameRecord:
    return build_record(validated(game13.GameRecord, obj, "a game record", moves_apart=True))


def build_record(record: game13.GameRecord) -> GameRecord:
    """The domain's values from a validated record (or an API game header): the table, the
    deal, the moves; a table no rule allows (a tied toss) is a :class:`RecordError`."""
    game_id = record.game_id
    profile = get_profile(record.rules)
    players, seats = record.seating()
    stakes, table = record.stakes, record.table
    raised = stakes.raise_
    try:
        config = TableConfig(
            game_id=game_id,
            variant=record.variant,
            rules=profile.name,
            table_id=table.id,
            decks=profile.decks if table.decks is None else table.decks,
            jokers_per_deck=(
                profile.jokers_per_deck if table.jokers_per_deck is None else table.jokers_per_deck
            ),
            currency=stakes.currency,
            point_value=stakes.point_value,
            raise_step=None if raised is None else raised.step,
            raise_max=None if raised is None else raised.max,
            raise_schedule=None
            if raised is None or raised.schedule is None
            else tuple(raised.schedule),
            fee_percent=stakes.fee_percent,
            players=players,
            dealer=record.dealer,
            toss=None if record.toss is None else {p: record.toss[p] for p in players},
            started_at=record.started_at,
            seats=seats,
            shuffle=None if record.shuffle is None else record.shuffle.verbatim(),
        )
    except RuleViolation as error:  # a table that cannot exist (seat count, tied toss)
        raise RecordError(error.reason) from None
    deal = record.deal
    return GameRecord(
        config=config,
        deal=Deal.of_cards(
            hands={player: tuple(deal.hands[player]) for player in players},
            wild=deal.wild,
            open_card=deal.open,
            stock=None if deal.stock is None else tuple(deal.stock),
        ),
        moves=tuple(Move.of(move) for move in record.moves),
        reported=None if record.reported is None else Reported.of(record.reported),
    )


def _texts(cards: Iterable[Card]) -> list[str]:
    return [str(card) for card in cards]


# -- from a stored game ------------------------------------------------------------------


def game_record_of(game: Game) -> GameRecord:
    """The record of a stored 13-card game."""
    if game.dealt is None:
        raise RecordError(
            "the game has not been dealt yet: there is no record to write", game_id=game.game_id
        )
    moves = tuple(
        Move.from_dict(move, index=index) for index, move in enumerate(game.recorded_moves)
    )
    reported = Reported.from_dict(game.reported, game.config.players) if game.reported else None
    return GameRecord(config=game.config, deal=game.dealt, moves=moves, reported=reported)


def explain_game(error: Exception, record: GameRecord | None = None) -> str:
    """Why a 13-card record was refused (see :func:`explain`)."""
    if isinstance(error, RecordError):
        return error.detail
    if isinstance(error, RuleViolation):
        index = error.move_index
        if index is None:
            return str(error) if error.move_type != "deal" else f"deal: {error}"
        if record is not None and 0 <= index < len(record.moves):
            described = record.moves[index].describe()
        else:
            described = error.where().partition("(")[2].rstrip(")")
        return f"move {index} ({described}): {error}"
    return str(error)
