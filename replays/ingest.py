"""The live ingest use cases behind ``/api/v1``: start a game, record one move, settle, look.

Each use case takes plain JSON (already decoded) and returns ``(status, payload)``; the web
layer only parses, authenticates and serialises. Failures are :class:`IngestError` with the
HTTP status they mean: 400 malformed (names the field), 404 unknown game, 409 conflict,
422 illegal move (the domain error's message).

Idempotency lives in the event stream itself: a move's ``seq`` is its 0-based index among
the game's moves. Posting a ``seq`` that is already recorded with the same move returns the
original result and records nothing; with a different move it is a conflict.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from domain.errors import RuleViolation
from domain.game import Game
from domain.moves import play_game
from domain.record_schema.api import MOVE_BODY, GameHeader, SettleRequest
from replays.application import ConcurrentWrite, GameExists, GameNotFound, Ledger
from replays.importer import check_shuffle
from replays.ownership import owner_of, save_owned_game
from replays.records import (
    FORMAT_TAG,
    Move,
    RecordError,
    Reported,
    build_record,
    record_of,
    refusal,
    validated,
)

HEADER_FIELDS_REFUSED = ("moves", "reported", "settlement")


@dataclass
class IngestError(Exception):
    status: int
    message: str
    field: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"error": self.message, "status": self.status}
        if self.field is not None:
            out["field"] = self.field
        return out


def _bad(error: RecordError) -> IngestError:
    return IngestError(400, error.detail, error.field)


class Ingest:
    """The use cases over one :class:`Ledger`; ``after_write`` runs after each stored write
    (read-model projections and integrity seals).

    With an ``operator`` (the API always gives the token's), games are that operator's
    alone (:mod:`replays.ownership`): a new game is recorded as theirs, and any other game,
    another operator's or an imported one, is answered as if it did not exist."""

    def __init__(
        self,
        ledger: Ledger,
        after_write: Callable[[], Any] | None = None,
        *,
        operator: str | None = None,
    ):
        self.ledger = ledger
        self.after_write = after_write
        self.operator = operator

    # -- POST /games -----------------------------------------------------------------------
    def start_game(self, body: Any) -> tuple[int, dict]:
        """The record's header and deal; the game is dealt and waits for its first move."""
        if not isinstance(body, Mapping):
            raise IngestError(400, "the body must be a JSON object (a record header and deal)")
        for name in HEADER_FIELDS_REFUSED:
            if name in body and not (name == "moves" and body[name] == []):
                raise IngestError(
                    400,
                    "not part of a new game: post moves one by one, figures at /settle",
                    name,
                )
        if body.get("format", FORMAT_TAG) != FORMAT_TAG:
            raise IngestError(
                400, f"the ingest API takes 13-card games ({FORMAT_TAG}) only", "format"
            )
        try:
            record = build_record(validated(GameHeader, body, "a game header"))
            check_shuffle(record)
            game = play_game(record.config, record.deal, [])
        except RecordError as error:
            raise _bad(error) from None
        except RuleViolation as error:
            raise IngestError(422, str(error)) from None
        try:
            if self.operator is None:
                self.ledger._save(game, creating=True)
            else:
                save_owned_game(self.ledger, game, self.operator)
        except GameExists:
            if not self._owns(record.game_id):
                # Someone else's game (or an imported one): the id is taken, and that is
                # all this operator learns; never its header, state or owner.
                raise IngestError(
                    409,
                    f"a different game {record.game_id} is already recorded; it was left untouched",
                    "game_id",
                ) from None
            stored = self._game(record.game_id)
            if _header(record_of(stored).to_dict()) != _header(record.to_dict()):
                raise IngestError(
                    409,
                    f"a different game {record.game_id} is already recorded; it was left untouched",
                    "game_id",
                ) from None
            return 201, self._started(record.game_id)
        self._followed()
        return 201, self._started(record.game_id)

    def _started(self, game_id: str) -> dict:
        return {"game_id": game_id, "seq": None, "next_seq": 0, "state": self._view(game_id, 0)}

    # -- POST /games/<id>/moves ------------------------------------------------------------
    def post_move(self, game_id: str, body: Any) -> tuple[int, dict]:
        if not isinstance(body, Mapping):
            raise IngestError(400, "the body must be a JSON object (one move and its seq)")
        try:
            posted = MOVE_BODY.validate_python(body)
        except ValidationError as error:
            seq = body.get("seq")
            index = seq if type(seq) is int and seq >= 0 else None  # "move 4, field 'card'"
            raise _bad(refusal(error, body, "a move", move=index)) from None
        game = self._game(game_id)
        unseated = posted.unseated(game.config.players)
        if unseated is not None:
            raise _bad(RecordError(unseated[1], move=posted.seq, field=unseated[0]))
        seq, move = posted.seq, Move.of(posted)
        for _attempt in range(3):
            recorded = game.move_count
            if seq < recorded:
                return self._replayed(game, seq, move)
            if seq > recorded:
                raise IngestError(
                    409, f"seq {seq} is ahead of the game: the next move is seq {recorded}", "seq"
                )
            try:
                self.ledger.play(game_id, move.to_dict(), expected_version=game.version)
            except RuleViolation as error:
                raise IngestError(422, str(error)) from None
            except ConcurrentWrite:
                game = self._game(game_id)  # another writer got there first: judge again
                continue
            self._followed()
            return 201, self._moved(game_id, seq)
        raise IngestError(409, f"game {game_id} is busy: retry seq {seq}", "seq")

    def _replayed(self, game: Game, seq: int, move: Move) -> tuple[int, dict]:
        stored = Move.from_dict(game.moves[seq], index=seq)
        if stored.to_dict() != move.to_dict():
            raise IngestError(
                409,
                f"seq {seq} is already recorded as {stored.describe()}; this body differs",
                "seq",
            )
        return 201, self._moved(game.game_id, seq)

    def _moved(self, game_id: str, seq: int) -> dict:
        return {
            "game_id": game_id,
            "seq": seq,
            "next_seq": seq + 1,  # as it was when the move was recorded: a retry gets the same
            "state": self._view(game_id, seq + 1),
        }

    # -- POST /games/<id>/settle -----------------------------------------------------------
    def settle(self, game_id: str, body: Any) -> tuple[int, dict]:
        """Close a finished game (losers who have not shown are scored on their best
        grouping) and keep the operator's ``reported`` figures when given."""
        body = {} if body is None else body
        if not isinstance(body, Mapping):
            raise IngestError(400, "the body must be a JSON object (optional 'reported')")
        try:
            request = SettleRequest.model_validate(body)
        except ValidationError as error:
            raise _bad(refusal(error, body, "a settle request")) from None
        game = self._game(game_id)
        reported = None
        if request.reported is not None:
            unseated = request.reported.unseated(game.config.players)
            if unseated is not None:
                raise _bad(RecordError(unseated[1], field=f"reported.{unseated[0]}"))
            reported = Reported.of(request.reported).to_dict()
        wrote = False
        try:
            if game.phase != "settled":
                self.ledger.settle(game_id, expected_version=game.version)
                wrote = True
            if reported is not None:
                stored = self._game(game_id).reported
                if stored is None:
                    self.ledger.report(game_id, reported)
                    wrote = True
                elif stored != reported:
                    raise IngestError(
                        409, "other reported figures are already recorded for this game", "reported"
                    )
        except RuleViolation as error:
            raise IngestError(422, str(error)) from None
        except ConcurrentWrite as error:
            raise IngestError(409, str(error)) from None
        if wrote:
            self._followed()
        return 200, self.view(game_id)

    # -- GET /games/<id> ---------------------------------------------------------------------
    def view(self, game_id: str) -> dict:
        game = self._game(game_id)
        state = game.table_state().for_seat(None).to_dict()
        return {
            "game_id": game_id,
            "seq": None,
            "next_seq": game.move_count,
            "state": state,
            "settlement": None if game.settlement is None else game.settlement.summary(),
        }

    # -- helpers ---------------------------------------------------------------------------
    def _owns(self, game_id: str) -> bool:
        return self.operator is None or owner_of(game_id, url=self.ledger.url) == self.operator

    def _game(self, game_id: str) -> Game:
        if not self._owns(game_id):
            # The same answer as for a game that does not exist: 403 would say it does.
            raise IngestError(404, str(GameNotFound(game_id)))
        try:
            game = self.ledger.get_game(game_id)
        except GameNotFound as error:
            raise IngestError(404, str(error)) from None
        if not isinstance(game, Game):
            raise IngestError(
                422, f"{game_id} is not a 13-card game: the ingest API takes those only"
            )
        return game

    def _view(self, game_id: str, moves: int) -> dict:
        return self.ledger.state_at(game_id, moves).for_seat(None).to_dict()

    def _followed(self) -> None:
        if self.after_write is not None:
            self.after_write()


def _header(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in ("moves", "reported")}
