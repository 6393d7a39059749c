"""Red 3 Rummy as a variant: what the rest of the ledger asks of a Red 3 match.

Red 3 has no stakes (points only, ``has_money = False``), several deals per match (one a
round, each from its own key of the match's shuffle seed: :mod:`domain.red3.shuffle`), and
steps that are deals or moves. Over the live API a step is posted like a move: a deal is
``{"type": "deal", "deal": {...}}``, the rest are the record's moves (docs/red3-format.md).

The record reader is :mod:`domain.red3.records`; the methods that need it import it when
called, so the command line starts without pydantic. The simulator's bot lives in
``replays/simulation`` and is reached only through :attr:`Red3.bot`.

>>> RED3.name, RED3.record_format, RED3.has_money
('red3', 'rummy-ledger/red3@1', False)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from domain.errors import BadDeal, GameNotOver, RuleViolation
from domain.red3 import audit as red3_audit
from domain.red3 import game as red3_game
from domain.red3 import moves as red3_moves
from domain.red3 import rows as red3_rows
from domain.red3 import shuffle as red3_shuffle
from domain.timestamps import format_time
from domain.variant_base import GameRows, PublishedSchema, SimulatedPlay, Variant

FORMAT = "rummy-ledger/red3@1"
DEAL = "deal"


class Red3(Variant):
    name = "red3"
    record_format = FORMAT
    aggregate = red3_game.Red3Match
    snapshot_interval = 20
    has_money = False
    steps_are_moves = False  # each round's deal is a step of its own
    web_pages = "web.red3_replay"
    closing_events = (red3_game.Red3Match.MatchEnded,)
    # A Red 3 hand is not grouped to be scored: books laid down count for, cards held against
    # (docs/red3-rules.md), so a 13-card "best grouping" would be false here.
    analyses_hands = False
    no_analysis_words = (
        "No hand analysis: a Red 3 round scores the books laid down and the cards still "
        "held, not a grouping of the hand."
    )

    # -- records -----------------------------------------------------------------------
    def parse_record(self, obj: Mapping[str, Any]) -> Any:
        from domain.red3.records import parse_red3_record

        return parse_red3_record(obj)

    def record_of(self, game: red3_game.Red3Match) -> Any:
        from domain.red3.records import red3_record_of

        return red3_record_of(game)

    def explain(self, error: Exception, record: Any = None) -> str:
        if isinstance(error, RuleViolation):
            place = red3_moves.where(error)
            return f"{place}: {error}" if place else str(error)
        return super().explain(error, record)

    def export(self, game: red3_game.Red3Match) -> dict[str, Any]:
        """The record with the scores the match recorded (``settlement``)."""
        return self.record_of(game).to_dict() | {"settlement": game.settlement().to_dict()}

    def record_moves(self, record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        return [move for played in record.get("rounds") or () for move in played.get("moves", ())]

    def schemas(self) -> list[PublishedSchema]:
        from pydantic import TypeAdapter

        from domain.red3.record_schema import RED3_STEP_BODY, Red3GameHeader, Red3Record

        return [
            PublishedSchema(
                "red3",
                TypeAdapter(Red3Record),
                self.record_format,
                "One Red 3 Rummy match record, docs/red3-format.md.",
            ),
            PublishedSchema(
                "api-red3-game",
                TypeAdapter(Red3GameHeader),
                "POST /api/v1/games (Red 3)",
                "A Red 3 match record's header, without rounds (docs/operator-api.md).",
                "Red3GameHeader",
            ),
            PublishedSchema(
                "api-red3-step",
                RED3_STEP_BODY,
                "POST /api/v1/games/{game_id}/moves (Red 3)",
                "One step of a Red 3 match, a round's deal or a move, and its seq "
                "(docs/operator-api.md).",
                "Red3Step",
            ),
        ]

    # -- the live API --------------------------------------------------------------------
    def start(self, header: Mapping[str, Any]) -> red3_game.Red3Match:
        """A match from its record header without rounds: deals are posted as steps."""
        from domain.records import RecordError

        if header.get("rounds") not in (None, []):
            raise RecordError("post each round's deal as a step, not in the header", field="rounds")
        record = self.parse_record({**header, "rounds": []})
        self.check_deals(record)
        return red3_game.Red3Match.start(record.config, reported=record.reported)

    def parse_move(self, game: red3_game.Red3Match, body: Mapping[str, Any], seq: int) -> dict:
        """A step validated by its declared model (``domain/red3/record_schema.py``) and put
        in canonical form, so a retried step compares equal to the one recorded. The rules
        (whose turn, which cards are held) are the match's to judge in :meth:`play`."""
        from pydantic import ValidationError  # not at import: the CLI starts without it

        from domain.records import refusal
        from domain.red3.record_schema import RED3_STEP_BODY
        from domain.red3.records import deal_of

        try:
            step = RED3_STEP_BODY.validate_python({**body, "seq": seq})
        except ValidationError as error:
            raise refusal(error, body, "a step") from None
        if step.type != DEAL:
            return step.canonical()
        parsed = deal_of(step.deal, game.config, game.round + 1, field="deal")
        out: dict[str, Any] = {"type": DEAL, "deal": parsed.to_dict()}
        if step.at is not None:
            out["at"] = format_time(step.at)
        return out

    def play(self, game: red3_game.Red3Match, move: Mapping[str, Any]) -> None:
        """Deal the next round or apply one move; a broken rule names its round and move."""
        dealing = move.get("type") == DEAL
        number = game.round + 1 if dealing else game.round
        index = None if dealing or not game.round_moves else len(game.round_moves[-1])
        try:
            if dealing:
                game.deal(move["deal"], at=move.get("at"))
            else:
                red3_moves.apply_move(game, move)
        except RuleViolation as error:
            error.game_id = game.game_id
            if number:  # before the first deal there is no round to name
                error.round_number = number
            if index is not None:
                error.at_move(index, dict(move))
            raise

    def live_error(self, error: RuleViolation) -> str:
        return self.explain(error)

    def moves_played(self, game: red3_game.Red3Match) -> int:
        return len(game.steps)

    def last_move_number(self, game: red3_game.Red3Match) -> int:
        # Move n is the table after step n: the first deal is step 0 and move 0 (a match not
        # dealt yet has only its seats, at 0 too).
        return max(len(game.steps) - 1, 0)

    def move_at(self, game: red3_game.Red3Match, seq: int) -> dict[str, Any]:
        step = dict(game.steps[seq])
        number = step.pop("round")
        if step.get("type") == DEAL:
            step["deal"] = game.deals[number - 1].to_dict()
        return step

    def describe_move(self, move: Mapping[str, Any], seq: int) -> str:
        return f"step {seq} ({self.describe(move)})"

    def describe(self, step: Mapping[str, Any]) -> str:
        kind, player = step.get("type"), step.get("player")
        if kind == DEAL:
            return "a deal"
        card = step.get("card")
        return " ".join(str(part) for part in (player, kind, card) if part)

    def view(self, game: red3_game.Red3Match) -> dict[str, Any]:
        """The public view: no hand shown, the pile as its size and top."""
        return game.table_state().for_seat(None).to_dict()

    def settlement_view(self, game: red3_game.Red3Match) -> dict[str, Any]:
        return game.settlement().to_dict()

    def settle_live(self, game: red3_game.Red3Match, reported: Mapping[str, Any] | None) -> bool:
        """A match closes itself when its last round is scored: settling records nothing,
        and refuses a match still being played (naming its round)."""
        if game.phase != "finished":
            raise GameNotOver(
                f"the match is not over: round {game.round} of {game.config.rounds}",
                game_id=game.game_id,
            )
        if reported is not None:
            raise GameNotOver(
                "a Red 3 match's reported figures come with its header", game_id=game.game_id
            )
        return False

    # -- settlement ----------------------------------------------------------------------
    def settle(self, record: Any) -> dict[str, Any]:
        """Per-round scores and totals, also for a running match."""
        return self.build(record).settlement().to_dict()

    def describe_settlement(self, outcome: Mapping[str, Any]) -> str:
        from domain.red3.records import describe_settlement  # moves with the record schema

        return describe_settlement(outcome)

    # -- deals ---------------------------------------------------------------------------
    def check_deals(self, record: Any) -> None:
        """Every round's deal against the revealed seed, before anything is built or stored.

        Only a commitment passes (the seed is revealed when the match ends); a seed that
        breaks its commitment is refused, as for 13-card records."""
        from domain.records import RecordError

        shuffle = record.config.shuffle
        if not shuffle or not shuffle.get("seed"):
            return
        rounds = [(played.deal, played.moves) for played in record.rounds]
        try:
            mismatch = red3_shuffle.check_red3_match(
                rounds, shuffle, record.config.players, rules=record.config.rules
            )
        except red3_shuffle.ShuffleError as error:
            raise RecordError(str(error), field="shuffle") from None
        if mismatch is None:
            return
        if mismatch.what == "commitment":
            raise RecordError(str(mismatch).split(": ", 1)[1], field="shuffle")
        raise BadDeal(f"the deal does not come from its shuffle seed: {mismatch}", move_type=DEAL)

    def revealed_seed(self, game: red3_game.Red3Match) -> bool | None:
        shuffle = game.config.shuffle
        return None if not shuffle else bool(shuffle.get("seed"))

    def is_over(self, game: red3_game.Red3Match) -> bool:
        return game.phase == "finished"

    def check_stored_deals(self, game: red3_game.Red3Match) -> str | None:
        shuffle = game.config.shuffle
        if not shuffle or not shuffle.get("seed"):
            return None
        rounds = list(zip(game.deals, game.round_moves, strict=True))
        try:
            mismatch = red3_shuffle.check_red3_match(
                rounds, shuffle, game.config.players, rules=game.config.rules
            )
        except red3_shuffle.ShuffleError as error:
            return f"the shuffle block cannot be checked: {error}"
        return None if mismatch is None else str(mismatch)

    # -- audit ---------------------------------------------------------------------------
    def audit(self, game: red3_game.Red3Match, events: Iterable[Any]) -> red3_audit.Red3Audit:
        return red3_audit.audit_events(events)

    # -- read models ---------------------------------------------------------------------
    def started_row(self, game: red3_game.Red3Match) -> dict[str, Any]:
        return red3_rows.started_row(game)

    def progress_row(self, game: red3_game.Red3Match) -> dict[str, Any]:
        return red3_rows.progress_row(game)

    def move_row(self, before: Any, domain_event: Any) -> dict[str, Any] | None:
        if before is None or type(domain_event).__name__ not in red3_rows.MOVE_EVENTS:
            return None
        return red3_rows.move_row(before, domain_event)

    def saved_move_rows(self, game: red3_game.Red3Match, events: Sequence[Any]) -> list | None:
        # A saved match's moves were checked when it was built: counted, not applied again.
        return red3_rows.saved_move_rows(game, events)

    def closing_rows(self, game: red3_game.Red3Match, domain_event: Any) -> GameRows | None:
        if not isinstance(domain_event, red3_game.Red3Match.MatchEnded):
            return None
        return GameRows(game=red3_rows.ended_row(game), results=red3_rows.results(game))

    def audits_after(self, game: red3_game.Red3Match, domain_event: Any) -> bool:
        return isinstance(domain_event, red3_game.Red3Match.MatchEnded)

    def audit_columns(self, game, events: Iterable[Any], *, verify: bool = True) -> dict:
        # A replay of the match's events, recomputing every round's scores.
        return red3_rows.audit_row(events)

    def written_audit_columns(self, game: red3_game.Red3Match, events: Iterable[Any]) -> dict:
        # The scores hash MatchEnded carries: no replay of the match here.
        return red3_rows.written_audit_row(game, events)

    def audit_watch(self) -> red3_audit.MatchAuditor:
        # The match's audit columns from a replay already under way (no second replay).
        return red3_audit.MatchAuditor(red3_rows.audit_columns)

    # -- simulator -----------------------------------------------------------------------
    @property
    def bot(self) -> SimulatedPlay:
        from domain.red3 import bot

        return SimulatedPlay(bot.setup_table, bot.play, bot.reported_block)


RED3 = Red3()
