"""13-card rummy as a variant: Points Rummy and Raise Rummy, two instances of one class.

Both play the same :class:`~domain.rummy13.game.Game` aggregate; they differ only in the money
profile the record's ``variant`` selects (docs/rules.md §1).

The record reader is :mod:`domain.records`; the methods that need it import it when called,
so the command line starts without pydantic. The simulator's bot lives in
``replays/simulation`` and is reached only through :attr:`Rummy13.bot`.

>>> POINTS.name, RAISE.name, POINTS.record_format
('points', 'raise', 'rummy-ledger/game@1')
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from domain.errors import RuleViolation
from domain.rummy13 import audit as audit13
from domain.rummy13 import fold as fold13
from domain.rummy13 import game as game13
from domain.rummy13 import moves as moves13
from domain.rummy13 import rows as rows13
from domain.variant_base import (
    GameRows,
    PublishedSchema,
    ReportedAlready,
    SimulatedPlay,
    Variant,
)

FORMAT = "rummy-ledger/game@1"
SETTLED = "settled"
_CLOSING = (game13.Game.Settled, game13.Game.Reported)  # the events after which the audit runs


class NotOver(RuleViolation):
    """A record that stops before the game has a winner: nothing to settle yet."""


class Rummy13(Variant):
    """13-card Indian rummy; ``name`` picks the money profile (points or raise)."""

    record_format = FORMAT
    aggregate = game13.Game
    snapshot_interval = 20
    has_money = True
    web_pages = None  # the 13-card pages are the views' own (web/views/)
    analyses_hands = True
    closing_events = (game13.Game.Settled, game13.Game.Reported)  # _CLOSING, below

    def __init__(self, name: str) -> None:
        self.name = name

    def owns(self, game: Any) -> bool:
        return isinstance(game, game13.Game)

    # -- records -----------------------------------------------------------------------
    def parse_record(self, obj: Mapping[str, Any]) -> Any:
        from domain.rummy13.records import parse_game_record

        return parse_game_record(obj)

    def record_of(self, game: game13.Game) -> Any:
        from domain.rummy13.records import game_record_of

        return game_record_of(game)

    def explain(self, error: Exception, record: Any = None) -> str:
        from domain.rummy13.records import explain_game

        return explain_game(error, record)

    def export(self, game: game13.Game) -> dict[str, Any]:
        out = self.record_of(game).to_dict()
        if game.recorded_settlement is not None:
            out["settlement"] = game.recorded_settlement
        return out

    def deal_behaviours(self, record: Mapping[str, Any]) -> list[Mapping[str, int]]:
        from domain.rummy13.simulate import behaviours

        return [behaviours(record)]

    def schemas(self) -> list[PublishedSchema]:
        from pydantic import TypeAdapter

        from domain.rummy13.api_schema import MOVE_BODY, GameHeader, SettleRequest
        from domain.rummy13.record_schema import GameRecord

        return [
            PublishedSchema(
                "game",
                TypeAdapter(GameRecord),
                FORMAT,
                "One 13-card game record (Points or Raise Rummy), docs/record-format.md.",
            ),
            PublishedSchema(
                "api-game",
                TypeAdapter(GameHeader),
                "POST /api/v1/games",
                "A game record's header and deal, without moves or figures (docs/operator-api.md).",
                "GameHeader",
            ),
            PublishedSchema(
                "api-move",
                MOVE_BODY,
                "POST /api/v1/games/{game_id}/moves",
                "One move of a game record and its 0-based index, seq (docs/operator-api.md).",
                "Move",
            ),
            PublishedSchema(
                "api-settle",
                TypeAdapter(SettleRequest),
                "POST /api/v1/games/{game_id}/settle",
                "Optionally, the operator's reported figures (docs/operator-api.md).",
                "SettleRequest",
            ),
        ]

    # -- the aggregate -----------------------------------------------------------------
    def build(self, record: Any) -> game13.Game:
        """Played and settled in memory; a ``reported`` block needs a settled game."""
        from domain.records import RecordError

        reported = record.reported.to_dict() if record.reported is not None else None
        game = moves13.play_game(record.config, record.deal, record.moves, settle=True)
        if reported is not None:
            if game.phase != SETTLED:
                raise RecordError(
                    "a running game cannot carry settled figures yet", field="reported"
                )
            game.report(reported)
        return game

    def start(self, header: Mapping[str, Any]) -> game13.Game:
        """The header is a whole record without moves: parsed, its deal checked against a
        revealed seed, then dealt."""
        record = self.parse_record({**header, "moves": []})
        self.check_deals(record)
        return moves13.play_game(record.config, record.deal, [])

    def parse_move(self, game: game13.Game, body: Mapping[str, Any], seq: int) -> dict:
        """One live move checked for shape (a ``RecordError`` names the field)."""
        from domain.rummy13.records import Move

        return Move.from_dict(body, index=seq, players=game.config.players).to_dict()

    def describe_move(self, move: Mapping[str, Any], seq: int) -> str:
        from domain.rummy13.records import Move

        return Move.from_dict(move, index=seq).describe()

    def play(self, game: game13.Game, move: Mapping[str, Any]) -> None:
        moves13.apply_move(game, move)

    def is_over(self, game: game13.Game) -> bool:
        return game.phase == SETTLED

    def moves_played(self, game: game13.Game) -> int:
        return game.move_count

    def move_at(self, game: game13.Game, seq: int) -> dict[str, Any]:
        return self.parse_move(game, game.moves[seq], seq)

    def view(self, game: game13.Game) -> dict[str, Any]:
        return game.table_state().for_seat(None).to_dict()

    def settlement_view(self, game: game13.Game) -> dict[str, Any] | None:
        return None if game.settlement is None else game.settlement.summary()

    def parse_reported(self, game: game13.Game, value: Any) -> dict:
        from domain.rummy13.records import Reported

        return Reported.from_dict(value, game.config.players).to_dict()

    def settle_live(self, game: game13.Game, reported: Mapping[str, Any] | None) -> bool:
        """Settle a game whose winner is known and keep the operator's figures once; a
        different second report is refused."""
        wrote = False
        if game.phase != SETTLED:
            game.settle()
            wrote = True
        if reported is not None:
            if game.reported is None:
                game.report(reported)
                wrote = True
            elif game.reported != reported:
                raise ReportedAlready("other reported figures are already recorded for this game")
        return wrote

    # -- settlement ----------------------------------------------------------------------
    def settle(self, record: Any) -> dict[str, Any]:
        game = moves13.play_game(record.config, record.deal, record.moves, settle=True)
        if game.settlement is None:
            waiting = f", {game.current_player} to move" if game.current_player else ""
            raise NotOver(
                f"the record ends before the game is over ({game.phase}{waiting}): "
                "nothing to settle"
            )
        return game.settlement.summary()

    def describe_settlement(self, outcome: Mapping[str, Any]) -> str:
        lines = [
            f"{outcome['game_id']}: {outcome['winner']} wins {outcome['net_to_winner']} "
            f"(gross {outcome['gross']}, fee {outcome['fee']})"
        ]
        for player, line in outcome["players"].items():
            lines.append(
                f"  {player:<12} {line['result']:<12} {line['points']:>3} pts "
                f"x {line['point_value']:>6} = {line['amount']:>9}"
            )
        return "\n".join(lines)

    # -- deals ---------------------------------------------------------------------------
    def check_deals(self, record: Any) -> None:
        """The deal against a revealed seed (docs/integrity.md); only a commitment passes."""
        shuffle = record.shuffle
        if not shuffle or not shuffle.get("seed"):
            return  # only a commitment: the seed is revealed when the game ends
        from domain.errors import BadDeal
        from domain.records import RecordError
        from domain.shuffle import ShuffleError, verify_deal

        config = record.config
        try:
            mismatch = verify_deal(
                record.deal,
                shuffle,
                config.players,
                dealer=config.dealer_player,
                decks=config.decks,
                jokers_per_deck=config.jokers_per_deck,
                moves=record.moves,
            )
        except ShuffleError as error:
            raise RecordError(str(error), field="shuffle") from None
        if mismatch is not None:
            raise BadDeal(
                f"the deal does not come from its shuffle seed: {mismatch}", move_type="deal"
            )

    # -- audit ---------------------------------------------------------------------------
    def audit(self, game: game13.Game, events: Iterable[Any]) -> audit13.AuditReport:
        return audit13.audit_game(game)

    # -- read models ---------------------------------------------------------------------
    # Every row method below takes the game aggregate or its light fold (fold13.GameFold):
    # the rows read the same fields of either.
    def light_fold(self) -> Any:
        return fold13.apply

    def started_row(self, game: game13.Game) -> dict[str, Any]:
        return rows13.started_row_of(game)

    def progress_row(self, game: game13.Game) -> dict[str, Any]:
        return rows13.progress_row(game)

    def move_row(self, before: Any, domain_event: Any) -> dict[str, Any] | None:
        move_type = _move_type(before, domain_event)
        return None if move_type is None else rows13.move_row(before, domain_event, move_type)

    def move_fields(self, before: Any, domain_event: Any, read_time) -> tuple | None:
        # _move_type by the event's class, without its call (verify asks it of every event).
        kind = type(domain_event)
        move_type = _MOVE_TYPES.get(kind, _UNSEEN)
        if move_type is _UNSEEN:
            move_type = _MOVE_TYPES[kind] = _move_type(_ANY_GAME, domain_event)
        if move_type is None or before is None:
            return None
        return rows13.move_fields(before, domain_event, move_type, read_time)

    def closing_rows(self, game: game13.Game, domain_event: Any) -> GameRows | None:
        if not isinstance(domain_event, game13.Game.Settled):
            return None
        body = domain_event.settlement
        digest = rows13.recorded_hash(game) if game.settled_body is body else None
        columns, results, entries = rows13.settlement_rows(
            game.config, body, domain_event.timestamp, game.round, digest
        )
        return GameRows(game=columns, results=results, entries=entries)

    def audits_after(self, game: game13.Game, domain_event: Any) -> bool:
        return isinstance(domain_event, _CLOSING) and game.phase == SETTLED

    def audit_columns(self, game: game13.Game, events: Iterable[Any], *, verify: bool = True):
        return rows13.audit_row(_whole(game, events) if verify else game, verify=verify)

    def written_audit_columns(self, game: game13.Game, events: Iterable[Any]) -> dict[str, Any]:
        # The Settled body is what Game.settle computed at write time: no solver here
        # (nor the aggregate, unless the body must be recomputed).
        return rows13.written_audit_row(game, lambda: _whole(game, events))

    # -- replay --------------------------------------------------------------------------
    def timeline(self, game: game13.Game) -> list[dict[str, Any]]:
        return game.moves

    def version_after(self, game: game13.Game, step: int) -> int:
        # Versions: 1 Started, 2 Dealt, then one event per move, then Settled/Reported.
        return game.version if step >= game.move_count else step + 2

    # -- simulator -----------------------------------------------------------------------
    @property
    def bot(self) -> Any:
        from functools import partial

        from domain.rummy13 import reported, simulate

        return SimulatedPlay(
            partial(simulate.setup_table, variant=self.name),
            simulate.play,
            reported.reported_block,
        )


# _move_type of an event class, for a game already started (_ANY_GAME stands in for one):
# it depends on the class alone.
_MOVE_TYPES: dict[type, str | None] = {}
_UNSEEN, _ANY_GAME = object(), object()


def _move_type(before: Any, domain_event: Any) -> str | None:
    """The ``moves`` row's ``move_type`` of an event applied to ``before``; None for an
    event that is not a move (the deal, the settlement, the operator's report)."""
    move_type = game13.MOVE_OF_EVENT.get(type(domain_event).__name__)
    if before is None or move_type in (None, "deal", "settle", "report"):
        return None
    return move_type


def _whole(game: Any, events: Iterable[Any]) -> game13.Game:
    """The aggregate of ``game`` (itself, or rebuilt from ``events`` for a light fold)."""
    if not isinstance(game, fold13.GameFold):
        return game
    whole = None
    for domain_event in events:
        whole = domain_event.mutate(whole)
    if whole is None or whole.version != game.version:
        raise fold13.FoldError(f"the events of game {game.game_id} do not rebuild its version")
    return whole


POINTS = Rummy13("points")
RAISE = Rummy13("raise")
