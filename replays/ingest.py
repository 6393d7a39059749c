"""The live ingest use cases behind ``/api/v1``: start a game, record one move, settle, look.

Each use case takes plain JSON (already decoded) and returns ``(status, payload)``; the web
layer only parses, authenticates and serialises. Failures are :class:`IngestError` with the
HTTP status they mean: 400 malformed (names the field), 404 unknown game, 409 conflict,
422 illegal move (the domain error's message).

Every variant goes through the same use cases: the header's ``format`` picks the variant
(:mod:`domain.variants`; a 13-card ``rummy-ledger/game@1`` game when absent), which starts
the game, checks and plays each move (``Variant.start``, ``parse_move``, ``play``) and
says what the table shows. Idempotency lives in the event stream itself: a move's ``seq``
is its 0-based index among the game's steps (moves; for Red 3, deals and moves). Posting
a ``seq`` that is already recorded with the same move returns the original result and
records nothing; with a different move it is a conflict.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from domain import variants
from domain.errors import RuleViolation
from domain.records import RecordError, record_object
from domain.rummy13.records import FORMAT_TAG
from domain.variants import ReportedAlready, Variant
from replays.access.ownership import UnreadableOwner, owner_of, save_owned_game
from replays.store.application import ConcurrentWrite, GameExists, GameNotFound, Ledger
from replays.store.decoding import in_one_line, unreadable_findings
from replays.store.replicas import is_connection_error

log = logging.getLogger(__name__)

HEADER_FIELDS_REFUSED = ("moves", "reported", "settlement")
# What a start did with its game, for whoever counts them (``/metrics``): a new game stored,
# or a retried start of a game already recorded with the same header.
STORED = "stored"
ALREADY_RECORDED = "already_recorded"
# What a header leaves out when a retried start is compared with the stored game's.
_NOT_HEADER = ("moves", "rounds", "reported", "settlement")


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
    alone (:mod:`replays.access.ownership`): a new game is recorded as theirs, and any other game,
    another operator's or an imported one, is answered as if it did not exist.

    ``on_start`` is told what each accepted start did: :data:`STORED` or
    :data:`ALREADY_RECORDED` (a refused one raises :class:`IngestError`)."""

    def __init__(
        self,
        ledger: Ledger,
        after_write: Callable[[], Any] | None = None,
        *,
        operator: str | None = None,
        on_start: Callable[[str], Any] | None = None,
    ):
        self.ledger = ledger
        self.after_write = after_write
        self.operator = operator
        self.on_start = on_start

    # -- POST /games -----------------------------------------------------------------------
    def start_game(self, body: Any) -> tuple[int, dict]:
        """The record's header (and, for a 13-card game, its deal); the game waits for its
        first move (a Red 3 match, for its first deal)."""
        if not isinstance(body, Mapping):
            raise IngestError(400, "the body must be a JSON object (a record header and deal)")
        header = {"format": FORMAT_TAG, **body}
        variant = variants.for_record(header)
        if variant is None:
            known = ", ".join(dict.fromkeys(v.record_format for v in variants.all_variants()))
            raise IngestError(
                400, f"{header['format']!r} is not a record format ({known})", "format"
            )
        for name in HEADER_FIELDS_REFUSED:
            # The published header schemas allow an empty ``moves`` and a null
            # ``reported`` / ``settlement``: those say nothing and are taken.
            if body.get(name) in (None, []):
                continue
            if name == "reported" and variant.reported_in_header:
                continue  # a Pool or Deals match: its figures come with its header
            raise IngestError(
                400,
                "not part of a new game: post moves one by one, figures at /settle",
                name,
            )
        try:
            game = variant.start(record_object(header))
        except RecordError as error:
            raise _bad(error) from None
        except RuleViolation as error:
            raise IngestError(422, variant.live_error(error)) from None
        try:
            if self.operator is None:
                self.ledger._save(game, creating=True)
            else:
                save_owned_game(self.ledger, game, self.operator)
        except GameExists:
            if not self._owns(game.game_id) or not self._same_header(variant, game):
                # Someone else's game (or an imported one): the id is taken, and that is
                # all this operator learns; never its header, state or owner.
                raise IngestError(
                    409,
                    f"a different game {game.game_id} is already recorded; it was left untouched",
                    "game_id",
                ) from None
            stored, variant = self._game(game.game_id)
            self._told(ALREADY_RECORDED)
            return 201, self._started(variant, stored)
        self._told(STORED)
        self._followed()
        return 201, self._started(variant, game)

    def _told(self, outcome: str) -> None:
        if self.on_start is not None:
            self.on_start(outcome)

    def _same_header(self, variant: Variant, game: Any) -> bool:
        stored, stored_variant = self._game(game.game_id)
        if stored_variant is not variant:
            return False
        return _header(variant.record_of(stored).to_dict()) == _header(
            variant.record_of(game).to_dict()
        )

    def _started(self, variant: Variant, game: Any) -> dict:
        return {
            "game_id": game.game_id,
            "seq": None,
            "next_seq": 0,
            "state": self._view(variant, game, 0),
        }

    # -- POST /games/<id>/moves ------------------------------------------------------------
    def post_move(self, game_id: str, body: Any) -> tuple[int, dict]:
        if not isinstance(body, Mapping):
            raise IngestError(400, "the body must be a JSON object (one move and its seq)")
        seq = body.get("seq")
        if seq is None:
            raise IngestError(400, "missing: the move's 0-based index in the game", "seq")
        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
            raise IngestError(400, f"{seq!r} is not a move index (0, 1, 2, ...)", "seq")
        game, variant = self._game(game_id)
        try:
            move = variant.parse_move(game, {k: v for k, v in body.items() if k != "seq"}, seq)
        except RecordError as error:
            raise _bad(error) from None
        for _attempt in range(3):
            recorded = variant.moves_played(game)
            if seq < recorded:
                return self._replayed(variant, game, seq, move)
            if seq > recorded:
                raise IngestError(
                    409, f"seq {seq} is ahead of the game: the next move is seq {recorded}", "seq"
                )
            try:
                game = self.ledger.change(
                    game_id,
                    lambda current, variant=variant: variant.play(current, move),
                    expected_version=game.version,
                )
            except RuleViolation as error:
                raise IngestError(422, variant.live_error(error)) from None
            except ConcurrentWrite:
                game, variant = self._game(game_id)  # another writer got there first: again
                continue
            self._followed()
            return 201, self._moved(variant, game, seq)
        raise IngestError(409, f"game {game_id} is busy: retry seq {seq}", "seq")

    def _replayed(self, variant: Variant, game: Any, seq: int, move: dict) -> tuple[int, dict]:
        stored = variant.move_at(game, seq)
        if stored != move:
            raise IngestError(
                409,
                f"seq {seq} is already recorded as {variant.describe_move(stored, seq)}; "
                "this body differs",
                "seq",
            )
        return 201, self._moved(variant, game, seq)

    def _moved(self, variant: Variant, game: Any, seq: int) -> dict:
        return {
            "game_id": game.game_id,
            "seq": seq,
            "next_seq": seq + 1,  # as it was when the move was recorded: a retry gets the same
            "state": self._view(variant, game, seq + 1),
        }

    # -- POST /games/<id>/settle -----------------------------------------------------------
    def settle(self, game_id: str, body: Any) -> tuple[int, dict]:
        """Close a finished game (13-card: losers who have not shown are scored on their
        best grouping) and keep the operator's ``reported`` figures when given."""
        body = {} if body is None else body
        if not isinstance(body, Mapping):
            raise IngestError(400, "the body must be a JSON object (optional 'reported')")
        for name in body:
            if name != "reported":
                raise IngestError(400, "not a field of a settle request", name)
        game, variant = self._game(game_id)
        reported = None
        try:
            # A null says nothing (the settle schema allows it): no figures, as if absent.
            if body.get("reported") is not None:
                reported = variant.parse_reported(game, body["reported"])
        except RecordError as error:
            raise _bad(error) from None
        except RuleViolation as error:
            raise IngestError(422, variant.live_error(error)) from None
        wrote = []
        try:
            self.ledger.change(
                game_id,
                lambda current: wrote.append(variant.settle_live(current, reported)),
                expected_version=game.version,
            )
        except ReportedAlready as error:
            raise IngestError(409, str(error), "reported") from None
        except RuleViolation as error:
            raise IngestError(422, variant.live_error(error)) from None
        except ConcurrentWrite as error:
            raise IngestError(409, str(error)) from None
        if any(wrote):
            self._followed()
        return 200, self.view(game_id)

    # -- GET /games/<id> ---------------------------------------------------------------------
    def view(self, game_id: str) -> dict:
        game, variant = self._game(game_id)
        return {
            "game_id": game_id,
            "seq": None,
            "next_seq": variant.moves_played(game),
            "state": variant.view(game),
            "settlement": variant.settlement_view(game),
        }

    # -- helpers ---------------------------------------------------------------------------
    def _owns(self, game_id: str) -> bool:
        if self.operator is None:
            return True
        try:
            return owner_of(game_id, url=self.ledger.url) == self.operator
        except UnreadableOwner as error:
            # Fail closed: no operator reaches it. The stored value (perhaps another
            # operator's name) goes to the server's log, not to the caller.
            log.warning("API: %s", error)
            finding = error.findings[0]
            raise IngestError(
                409,
                f"game {game_id}: its owner cannot be read from the store "
                f"({finding.table}.{finding.column}: {finding.why}), so no operator reaches "
                "it until the site's admin repairs the row (`rummy-ledger verify` names it)",
            ) from None

    def _game(self, game_id: str) -> tuple[Any, Variant]:
        if not self._owns(game_id):
            # The same answer as for a game that does not exist: 403 would say it does.
            raise IngestError(404, str(GameNotFound(game_id)))
        try:
            game = self.ledger.get_game(game_id)
        except GameNotFound as error:
            raise IngestError(404, str(error)) from None
        except Exception as error:  # its stored events cannot be read or replayed: say which
            if is_connection_error(error):
                raise  # no database answers: the 503 the API gives for that
            found = unreadable_findings(
                url=self.ledger.url, originator=self.ledger.aggregate_id(game_id)
            )
            if not found:
                raise  # not the stored values: a server fault, a 500
            log.warning("API: game %s cannot be rebuilt: %s", game_id, in_one_line(found))
            raise IngestError(
                409,
                f"game {game_id} cannot be rebuilt from its stored events: {in_one_line(found)}",
            ) from None
        return game, variants.for_game(game)

    def _view(self, variant: Variant, game: Any, moves: int) -> dict:
        """The table after ``moves`` steps (the game in hand when that is its latest)."""
        version = variant.version_after(game, moves)
        if version != game.version:
            game = self.ledger.get_game(game.game_id, version=version)
        return variant.view(game)

    def _followed(self) -> None:
        if self.after_write is not None:
            self.after_write()


def _header(record: dict) -> dict:
    return {k: v for k, v in record.items() if k not in _NOT_HEADER}
