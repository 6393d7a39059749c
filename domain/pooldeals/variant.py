"""Pool Rummy and Deals Rummy as variants: two instances of one class, like Points and Raise.

Both play the same :class:`~domain.pooldeals.match.Match` aggregate; the record's ``variant``
(and its ``format``, ``rummy-ledger/pool@1`` or ``rummy-ledger/deals@1``) picks the rules of
the match around the deals (docs/rules.md §3, §4). Over the live API a step is posted like a
move: the next deal is ``{"type": "deal", "deal": {...}}``, a rejoin ``{"type": "rejoin",
"player": ...}``, a split ``{"type": "split", "accepted_by": [...]}``, and the rest are the
13-card moves (docs/pool-deals-format.md).

>>> POOL.name, POOL.record_format, DEALS.record_format
('pool', 'rummy-ledger/pool@1', 'rummy-ledger/deals@1')
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from domain.errors import BadDeal, GameNotOver, RuleViolation
from domain.pooldeals import rows as match_rows
from domain.pooldeals import shuffle as match_shuffle
from domain.pooldeals.audit import MatchAudit, audit_match
from domain.pooldeals.match import FINISHED, Match
from domain.pooldeals.outcome import describe_outcome, match_outcome
from domain.pooldeals.settlement import ENTRY_KINDS, REJOIN_FEE_KIND
from domain.timestamps import format_time
from domain.variant_base import GameRows, PublishedSchema, SimulatedPlay, Variant

STEP_TYPES = ("deal", "rejoin", "split")


class PoolDeals(Variant):
    """A match of 13-card deals; ``name`` is ``pool`` or ``deals``."""

    aggregate = Match
    snapshot_interval = 20
    has_money = True
    steps_are_moves = False  # deals, rejoins and splits are steps of their own
    web_pages = "web.pooldeals_replay"  # the match view and each deal move by move
    closing_events = (Match.Settled,)
    entry_kinds = ENTRY_KINDS  # rejoin fees and split shares apart from the settlement
    analyses_hands = True  # every deal is a 13-card game: its hands group as Points' do
    # A match's figures are its header's (Started keeps them): its settle takes none.
    reported_in_header = True

    def __init__(self, name: str, record_format: str) -> None:
        self.name = name
        self.record_format = record_format

    def owns(self, game: Any) -> bool:
        return isinstance(game, Match)

    def stake_words(self, point_value: Any, paid: Mapping[str, Any]) -> str:
        """A match has no point value: its stake is the entry fee, and each rejoin's fee
        (the player's ``settlement`` and ``rejoin_fee`` debits, docs/rules.md §3)."""
        from decimal import Decimal

        from domain.money import SETTLEMENT_KIND, money_text

        entry = Decimal(paid.get(SETTLEMENT_KIND) or 0)
        rejoins = Decimal(paid.get(REJOIN_FEE_KIND) or 0)
        if not entry and not rejoins:
            return "—"
        words = f"entry {money_text(entry)}"
        if rejoins:
            words += f" + rejoins {money_text(rejoins)}"
        return words

    # -- records -----------------------------------------------------------------------
    def parse_record(self, obj: Mapping[str, Any]) -> Any:
        from domain.pooldeals.records import parse_match_record

        return parse_match_record(obj)

    def record_of(self, game: Match) -> Any:
        from domain.pooldeals.records import match_record_of

        return match_record_of(game)

    def explain(self, error: Exception, record: Any = None) -> str:
        from domain.pooldeals.records import explain

        return explain(error)

    def export(self, game: Match) -> dict[str, Any]:
        """The record with the outcome the match recorded (``settlement``)."""
        return self.record_of(game).to_dict() | {"settlement": match_outcome(game)}

    def record_moves(self, record: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        return [move for played in record.get("deals") or () for move in played.get("moves", ())]

    carries_points = True

    def thirteen_card_deals(self, record: Mapping[str, Any]) -> list[tuple[int, Mapping]] | None:
        # The match's steps (Match.steps): each deal's rejoins, the deal, then its moves.
        found, step = [], 0
        for played in record.get("deals") or ():
            if not isinstance(played, Mapping) or "deal" not in played or "moves" not in played:
                return None
            step += len(played.get("rejoins") or ()) + 1
            found.append((step, played))
            step += len(played["moves"])
        return found or None

    def deal_profiles(self, game: Match) -> list[Any]:
        """Each deal's 13-card table's profile: the match's decks and jokers and, in a pool,
        its scoring, as the deal's ``Game`` scored the hands."""
        config = game.config
        return [
            config.deal_table(dealt["number"], dealt["players"], dealt["dealer"]).profile
            for dealt in game.deals
        ]

    def deal_behaviours(self, record: Mapping[str, Any]) -> list[Mapping[str, int]]:
        """Each deal's behaviours, counted by the 13-card count (a deal is a 13-card game).
        A raw record names no deal's winner: the declaration whose groups are valid (by
        the 13-card melds) is the winner's, any other a wrong show."""
        from domain.rummy13.simulate import behaviours

        counted = []
        for played in record.get("deals") or ():
            deal = played.get("deal") or {}
            moves = list(played.get("moves", ()))
            winner = next(
                (
                    move.get("player")
                    for move in moves
                    if move.get("type") == "declare"
                    and _valid_declaration(move, deal.get("wild"), record.get("rules"))
                ),
                "",
            )
            counted.append(
                behaviours(
                    {
                        "rules": record.get("rules"),
                        "players": list(deal.get("hands") or ()),
                        "moves": moves,
                        "reported": {"winner": winner},
                    }
                )
            )
        return counted

    def schemas(self) -> list[PublishedSchema]:
        from pydantic import TypeAdapter

        from domain.pooldeals import record_schema as schema

        record, header = (
            (schema.PoolRecord, schema.PoolGameHeader)
            if self.name == "pool"
            else (schema.DealsRecord, schema.DealsGameHeader)
        )
        title = "Pool Rummy" if self.name == "pool" else "Deals Rummy"
        published = [
            PublishedSchema(
                self.name,
                TypeAdapter(record),
                self.record_format,
                f"One {title} match record, docs/pool-deals-format.md.",
            ),
            PublishedSchema(
                f"api-{self.name}-game",
                TypeAdapter(header),
                f"POST /api/v1/games ({title})",
                f"A {title} match record's header, without deals (docs/pool-deals-format.md).",
                header.__name__,
            ),
        ]
        if self.name == "pool":  # one step body serves both formats
            published.append(
                PublishedSchema(
                    "api-match-step",
                    schema.STEP_BODY,
                    "POST /api/v1/games/{game_id}/moves (Pool and Deals Rummy)",
                    "One step of a Pool or Deals match: the next deal, a 13-card move, a "
                    "rejoin or a split, and its seq (docs/pool-deals-format.md).",
                    "MatchStep",
                )
            )
        return published

    # -- the aggregate -------------------------------------------------------------------
    def build(self, record: Any) -> Match:
        return record.build()

    def start(self, header: Mapping[str, Any]) -> Match:
        """A match from its record header without deals: deals are posted as steps."""
        from domain.pooldeals import record_schema as schema
        from domain.pooldeals.records import config_of
        from domain.records import RecordError, parse_with_game_id, record_object, validated

        if header.get("deals") not in (None, []):
            raise RecordError("post each deal as a step, not in the header", field="deals")
        model = schema.PoolGameHeader if self.name == "pool" else schema.DealsGameHeader

        def parse(obj: Mapping, game_id: str) -> Any:
            body = {key: value for key, value in obj.items() if key != "deals"}
            return validated(model, body, "a match header")

        parsed = parse_with_game_id(record_object(header), parse)
        config = config_of(parsed)
        reported = None if parsed.reported is None else parsed.reported.figures()
        return Match.start(config, reported=reported)

    def parse_move(self, game: Match, body: Mapping[str, Any], seq: int) -> dict:
        """A step validated by its declared model and put in canonical form, so a retried
        step compares equal to the one recorded."""
        from pydantic import ValidationError

        from domain.pooldeals.record_schema import STEP_BODY
        from domain.records import refusal
        from domain.rummy13.records import Move

        try:
            step = STEP_BODY.validate_python({**body, "seq": seq})
        except ValidationError as error:
            raise refusal(error, body, "a step") from None
        out: dict[str, Any]
        if step.type == "deal":
            from domain.pooldeals.records import _deal_dict

            out = {"type": "deal", "deal": _deal_dict(step.deal)}
            if out["deal"]["stock"] is None:  # as move_at gives it back: no stock key
                del out["deal"]["stock"]
        elif step.type == "rejoin":
            out = {"type": "rejoin", "player": step.player}
        elif step.type == "split":
            out = {"type": "split", "accepted_by": list(step.accepted_by)}
        else:
            return Move.of(step).to_dict()
        if step.at is not None:
            out["at"] = format_time(step.at)
        return out

    def play(self, game: Match, move: Mapping[str, Any]) -> None:
        kind = move.get("type")
        if kind == "deal":
            game.deal(move["deal"], at=move.get("at"))
        elif kind == "rejoin":
            game.rejoin(move["player"], at=move.get("at"))
        elif kind == "split":
            game.agree_split(move["accepted_by"], at=move.get("at"))
        else:
            game.play(move)

    def live_error(self, error: RuleViolation) -> str:
        return self.explain(error)

    def moves_played(self, game: Match) -> int:
        return len(game.steps)

    def move_at(self, game: Match, seq: int) -> dict[str, Any]:
        step = dict(game.steps[seq])
        if step.get("type") == "deal":
            number = step.pop("deal")
            step["deal"] = dict(game.deals[number - 1]["deal"])
            if step["deal"].get("stock") is None:
                step["deal"].pop("stock", None)
            return step
        if step.get("type") not in STEP_TYPES:
            step.pop("deal", None)
        return step

    def describe_move(self, move: Mapping[str, Any], seq: int) -> str:
        return f"step {seq} ({self.describe(move)})"

    def describe(self, step: Mapping[str, Any]) -> str:
        kind = step.get("type")
        if kind == "deal":
            number = step.get("deal")
            return f"deal {number}" if isinstance(number, int) else "a deal"
        if kind == "rejoin":
            return f"{step.get('player')} rejoins"
        if kind == "split":
            return f"split accepted by {', '.join(step.get('accepted_by') or ())}"
        card = step.get("card") or step.get("finish")
        parts = (step.get("player") or "table", kind, step.get("from"), card)
        return " ".join(str(part) for part in parts if part)

    def view(self, game: Match) -> dict[str, Any]:
        return game.table_state().for_seat(None).to_dict()

    def settlement_view(self, game: Match) -> dict[str, Any]:
        return match_outcome(game)

    def settle_live(self, game: Match, reported: Mapping[str, Any] | None) -> bool:
        """A match settles itself when it ends; settling scores a deal whose losers will not
        show, and refuses a match still being played. Reported figures come with the header."""
        if reported is not None:
            raise GameNotOver(
                "a match's reported figures come with its header", game_id=game.game_id
            )
        before = game.version
        game.close()
        if game.phase != FINISHED:
            raise GameNotOver(
                f"the match is not over: {len(game.deals)} deal(s) played",
                game_id=game.game_id,
            )
        return game.version != before

    # -- settlement ----------------------------------------------------------------------
    def settle(self, record: Any) -> dict[str, Any]:
        return match_outcome(self.build(record))

    def describe_settlement(self, outcome: Mapping[str, Any]) -> str:
        return describe_outcome(outcome)

    # -- deals ---------------------------------------------------------------------------
    def build_checked(self, record: Any) -> Match:
        """Played once: checking the deals needs the match played (who each deal went to,
        who dealt it), and that match is the one stored. The same errors, in the same
        order, as :meth:`check_deals` and then :meth:`build`."""
        match = self.build(record)
        self._check_played_deals(match)
        return match

    def check_deals(self, record: Any) -> None:
        """Every deal against the revealed seed, before anything is stored (the match is
        played in memory to know who each deal went to and who dealt it)."""
        if self.revealed_seed(record):  # a record has the match's config
            self._check_played_deals(record.build())

    def _check_played_deals(self, match: Match) -> None:
        from domain.records import RecordError

        if not self.revealed_seed(match):
            return
        found = self._mismatch(match, error=RecordError)
        if found is None:
            return
        if found.what == "commitment":
            raise RecordError(
                "the revealed seed does not match the shuffle commitment", field="shuffle"
            )
        error = BadDeal(f"the deal does not come from its shuffle seed: {found}", move_type="deal")
        error.deal = found.deal
        raise error

    def _mismatch(self, game: Match, *, error: type[Exception]) -> Any:
        config = game.config
        try:
            return match_shuffle.check_match_deals(
                game.deals,
                config.shuffle,
                decks=config.decks,
                jokers_per_deck=config.jokers_per_deck,
            )
        except match_shuffle.ShuffleError as problem:
            raise error(str(problem)) from None

    def revealed_seed(self, game: Match) -> bool | None:
        shuffle = game.config.shuffle
        return None if not shuffle else bool(shuffle.get("seed"))

    def is_over(self, game: Match) -> bool:
        return game.phase == FINISHED

    def check_stored_deals(self, game: Match) -> str | None:
        if not self.revealed_seed(game):
            return None
        try:
            found = self._mismatch(game, error=ValueError)
        except ValueError as problem:
            return f"the shuffle block cannot be checked: {problem}"
        return None if found is None else str(found)

    # -- audit ---------------------------------------------------------------------------
    def audit(self, game: Match, events: Iterable[Any]) -> MatchAudit:
        return audit_match(game)

    # -- read models ---------------------------------------------------------------------
    def started_row(self, game: Match) -> dict[str, Any]:
        return match_rows.started_row(game)

    def progress_row(self, game: Match) -> dict[str, Any]:
        return match_rows.progress_row(game)

    def move_row(self, before: Any, domain_event: Any) -> dict[str, Any] | None:
        if before is None or not isinstance(domain_event, Match.Moved):
            return None
        return match_rows.move_row(before, domain_event)

    def saved_move_rows(self, game: Match, events: Sequence[Any]) -> list[dict] | None:
        # A saved match's moves were played when it was built: counted, not played again.
        return match_rows.saved_move_rows(game, events)

    def closing_rows(self, game: Match, domain_event: Any) -> GameRows | None:
        if not isinstance(domain_event, Match.Settled):
            return None
        columns, results, entries = match_rows.closing_rows(game, domain_event.timestamp)
        return GameRows(game=columns, results=results, entries=entries)

    def audits_after(self, game: Match, domain_event: Any) -> bool:
        return isinstance(domain_event, Match.Settled)

    def audit_columns(self, game: Match, events: Iterable[Any], *, verify: bool = True) -> dict:
        return match_rows.audit_row(game, verify=verify)

    def written_audit_columns(self, game: Match, events: Iterable[Any]) -> dict:
        # The outcome hash the Settled event carries: no second play of the match here.
        return match_rows.written_audit_row(game)

    # -- replay --------------------------------------------------------------------------
    def timeline(self, game: Match) -> list[dict[str, Any]]:
        return [dict(step) for step in game.steps]

    # -- simulator -----------------------------------------------------------------------
    @property
    def bot(self) -> SimulatedPlay:
        from functools import partial

        from domain.pooldeals import bot

        return SimulatedPlay(
            partial(bot.setup_table, variant=self.name), bot.play, bot.reported_block
        )


def _valid_declaration(move: Mapping[str, Any], wild: Any, rules: Any) -> bool:
    from domain.cards import Card
    from domain.rummy13.melds import evaluate
    from domain.rummy13.profiles import get_profile

    groups = [[Card.parse(card) for card in group] for group in move.get("groups") or ()]
    return evaluate(groups, [], Card.parse(wild), get_profile(rules)).valid_declaration


POOL = PoolDeals("pool", "rummy-ledger/pool@1")
DEALS = PoolDeals("deals", "rummy-ledger/deals@1")

__all__ = ["DEALS", "POOL", "PoolDeals"]
