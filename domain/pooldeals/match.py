"""A Pool or Deals Rummy match as an event-sourced aggregate: a match is nothing but its events.

``Match.start(config)`` records ``Started``; each deal is dealt (``deal``: ``DealStarted``)
and played with the 13-card moves (``play``: one ``Moved`` event each) on an in-memory
:class:`~domain.rummy13.game.Game`, so every rule check is the 13-card one. When the deal's
game is decided, ``DealScored`` adds each player's deal points to the scores (pool) or moves
chips (deals); ``Settled`` follows when the match is over. Between deals a pool may see
``Rejoined`` and ``SplitAgreed``. Every command checks first and raises a named
:class:`~domain.errors.RuleViolation` that records nothing (docs/rules.md §3, §4).

>>> from domain.pooldeals.table import MatchConfig
>>> match = Match.start(MatchConfig(game_id="P-doc", variant="pool", pool=101,
...                                 players=("p1", "p2", "p3"), entry_fee="25"))
>>> match.rejoin("p1")
Traceback (most recent call last):
...
domain.pooldeals.match.MatchRuleViolation: deal 1: p1 cannot rejoin: no deal has been played yet
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain.errors import GameOver, RuleViolation
from domain.game_ids import game_uuid
from domain.pooldeals import deals as deals_rules
from domain.pooldeals import pool as pool_rules
from domain.pooldeals.settlement import MatchMoney, settle_pool_money
from domain.pooldeals.snapshot import restore_state, snapshot_state
from domain.pooldeals.table import DEALING, DEALS, FINISHED, PLAYING, POOL, MatchConfig
from domain.rummy13.game import Game
from domain.rummy13.moves import apply_move, as_deal, play_game
from domain.rummy13.table import Deal
from domain.snapshots import restored
from domain.timestamps import format_time, parse_time


class MatchRuleViolation(RuleViolation):
    """A match step the rules do not allow (a rejoin, a split, a deal after the end ...)."""

    def __init__(
        self,
        reason: str,
        *,
        move_type: str,
        game_id: str,
        deal: int | None = None,
        player: str | None = None,
    ):
        self.deal = deal
        super().__init__(reason, move_type=move_type, game_id=game_id, player=player)

    @property
    def message(self) -> str:
        where = f"deal {self.deal}: " if getattr(self, "deal", None) else ""
        return where + super().message


class MatchOver(MatchRuleViolation, GameOver):
    """A deal, move, rejoin or split after the match has ended."""


class Match(Aggregate):
    """One Pool or Deals Rummy match, from its configuration to the settled prize pool."""

    TOPIC = "rummy_ledger.pooldeals:Match"
    # The Settled event's hash of the outcome the rules computed (None: stored before it).
    computed_hash: str | None = None

    class Event(Aggregate.Event):
        TOPIC = "rummy_ledger.pooldeals:Match.Event"

    class Created(Event, Aggregate.Created):
        TOPIC = "rummy_ledger.pooldeals:Match.Created"

    class Snapshot(Aggregate.Snapshot):
        """The match's state in plain JSON; the current deal's game is played again from its
        deal and moves when first asked for after a restore (``domain.pooldeals.snapshot``)."""

        TOPIC = "rummy_ledger.pooldeals:Match.Snapshot"

        @classmethod
        def take(cls, aggregate: Match) -> Match.Snapshot:
            snapshot = super().take(aggregate)
            object.__setattr__(snapshot, "state", snapshot_state(snapshot.state))
            return snapshot

        def mutate(self, _: None) -> Match:
            # No ``game`` yet: see ``Match.__getattr__``.
            return restored(Match, self, restore_state(self.state))

    @staticmethod
    def create_id(game_id: str) -> UUID:
        """The same uuid5 as every family's, so one game id names one game in the ledger."""
        return game_uuid(game_id)

    @classmethod
    def start(
        cls,
        config: MatchConfig,
        *,
        reported: Mapping[str, Any] | None = None,
        at: datetime | str | None = None,
    ) -> Match:
        moment = parse_time(at, what="at") or config.started_at
        return cls._create(
            cls.Started,
            id=cls.create_id(config.game_id),
            config=config.to_dict(),
            reported=None if reported is None else copy.deepcopy(dict(reported)),
            at=format_time(moment),
            timestamp=moment,
        )

    # == events ============================================================================
    # Each body is replayed on every rebuild. A command has already played a deal or move on
    # the deal's game to check it and leaves that game in ``_checked``; the body then takes
    # it as it is, and plays it itself only on a replay.

    @event("Started", topic="rummy_ledger.pooldeals:Match.Started")
    def __init__(self, config: dict, reported: dict | None = None, at: str | None = None) -> None:
        self.config = MatchConfig.from_dict(config)
        self.reported = reported
        self.started_at = at
        self.phase = DEALING
        players = self.config.players
        start = 0 if self.config.variant == POOL else self.config.starting_chips
        self.scores = dict.fromkeys(players, start)  # pool: scores; deals: chips
        self.eliminated: dict[str, int] = {}  # pool: player -> the deal that eliminated them
        self.rejoins = dict.fromkeys(players, 0)
        self.rejoin_log: list[dict] = []  # {"player", "before_deal", "score"}
        self.tiebreak: list[str] | None = None  # deals: the players tied after deal N
        self.dealer: str | None = None
        self.deals: list[dict] = []  # {"number","dealer","players","deal","moves","at","rejoins"}
        self.results: list[dict] = []  # the DealScored bodies
        self.split: dict | None = None
        self.winner: str | None = None
        self.settlement: dict | None = None
        self.steps: list[dict] = []
        self.step_versions: list[int] = []
        self.game: Game | None = None

    @event("DealStarted", topic="rummy_ledger.pooldeals:Match.DealStarted")
    def _deal_started(
        self, number: int, dealer: str, players: list, deal: dict, at: str | None = None
    ) -> None:
        checked = self.__dict__.pop("_checked", None)
        if checked is None:
            checked = self._new_game(number, players, dealer)
            dealt = Deal.from_dict(deal)
            checked.deal(dealt.hands, dealt.wild, dealt.open_card, dealt.stock)
        self.game = checked
        self.dealer = dealer
        self.phase = PLAYING
        since = [entry["player"] for entry in self.rejoin_log if entry["before_deal"] == number]
        self.deals.append(
            {
                "number": number,
                "dealer": dealer,
                "players": list(players),
                "deal": deal,
                "moves": [],
                "at": at,
                "rejoins": since,
            }
        )
        step = {"type": "deal", "deal": number}
        if at is not None:
            step["at"] = at
        self._step(step)

    @event("Moved", topic="rummy_ledger.pooldeals:Match.Moved")
    def _moved(self, move: dict) -> None:
        if not self.__dict__.pop("_checked", None):
            apply_move(self.game, move)
        self.deals[-1]["moves"].append(move)
        self._step({"deal": len(self.deals), **move})

    @event("DealScored", topic="rummy_ledger.pooldeals:Match.DealScored")
    def _deal_scored(
        self,
        number: int,
        winner: str,
        points: dict,
        after: dict,
        given: dict,
        shortfalls: dict,
        eliminated: list,
    ) -> None:
        if self.game.phase == "showing":
            self.game.settle()
        self.scores.update(after)
        for player in eliminated:
            self.eliminated[player] = number
        self.results.append(
            {
                "number": number,
                "winner": winner,
                "points": dict(points),
                "after": dict(after),
                "given": dict(given),
                "shortfalls": dict(shortfalls),
                "eliminated": list(eliminated),
            }
        )
        self.phase = DEALING
        self._follows()

    @event("TiebreakerNeeded", topic="rummy_ledger.pooldeals:Match.TiebreakerNeeded")
    def _tiebreaker(self, tied: list) -> None:
        self.tiebreak = list(tied)
        self._follows()

    @event("Rejoined", topic="rummy_ledger.pooldeals:Match.Rejoined")
    def _rejoined(self, player: str, score: int, at: str | None = None) -> None:
        self.eliminated.pop(player, None)
        self.rejoins[player] += 1
        self.scores[player] = score
        self.rejoin_log.append(
            {"player": player, "before_deal": len(self.deals) + 1, "score": score}
        )
        step = {"type": "rejoin", "player": player}
        if at is not None:
            step["at"] = at
        self._step(step)

    @event("SplitAgreed", topic="rummy_ledger.pooldeals:Match.SplitAgreed")
    def _split_agreed(self, accepted_by: list, split: dict, at: str | None = None) -> None:
        self.split = {"accepted_by": list(accepted_by), "after_deal": len(self.deals), **split}
        if at is not None:
            self.split["at"] = at
        if split.get("kind") == "equal" and not accepted_by:  # the auto split: no step
            self._follows()
            return
        step = {"type": "split", "accepted_by": list(accepted_by)}
        if at is not None:
            step["at"] = at
        self._step(step)

    @event("Settled", topic="rummy_ledger.pooldeals:Match.Settled")
    def _settled(
        self, winner: str | None, settlement: dict, computed_hash: str | None = None
    ) -> None:
        self.winner = winner
        self.settlement = settlement
        if computed_hash is not None:  # events stored before the field carry none
            self.computed_hash = computed_hash
        self.phase = FINISHED
        self._follows()

    def _step(self, step: dict) -> None:
        self.steps.append(step)
        self.step_versions.append(self.version + 1)

    def _follows(self) -> None:
        """An event that follows a step at once (scoring, settling) belongs to that step."""
        if self.step_versions:
            self.step_versions[-1] = self.version + 1

    # == commands ==========================================================================
    def deal(self, deal: Deal | Mapping[str, Any], *, at: datetime | str | None = None) -> None:
        """Deal the next deal to every player still in (pool: not eliminated; deals: with
        chips, among the tied in a tiebreaker). The dealer is the seat after the previous
        dealer among them (the first deal's: the toss's or the table's)."""
        number = len(self.deals) + 1
        self._close_deal()
        self._check_open("deal", number)
        if self.phase != DEALING:
            raise self._refuse("deal", f"deal {number - 1} is still being played", number)
        players = self.dealt_in()
        try:
            dealt = as_deal(deal)
        except RuleViolation as error:
            error.game_id = self.game_id
            raise
        for player in dealt.hands:
            if player not in players:
                raise self._refuse("deal", self._why_out(player), number)
        dealer = (
            self.config.first_dealer
            if not self.deals
            else self.config.next_dealer(self.deals[-1]["dealer"], players)
        )
        game = self._new_game(number, players, dealer)
        try:
            game.deal(dealt.hands, dealt.wild, dealt.open_card, dealt.stock)
        except RuleViolation as error:
            raise self._located(error, number) from None
        self._checked = game
        self._trigger(
            self.DealStarted,
            at,
            number=number,
            dealer=dealer,
            players=list(players),
            deal=dealt.to_dict(),
        )

    def play(self, move: Mapping[str, Any]) -> None:
        """One 13-card move of the deal in play (docs/record-format.md's move dicts)."""
        number = len(self.deals)
        if self.phase != PLAYING or self.game is None:
            self._check_open(str(move.get("type", "move")), number or None)
            raise self._refuse(
                str(move.get("type", "move")),
                "no deal is being played: deal the next one first",
                number + 1,
            )
        try:
            apply_move(self.game, move)
        except RuleViolation as error:
            raise self._located(error, number, len(self.deals[-1]["moves"]), move) from None
        self._checked = True
        self._trigger(self.Moved, None, move=dict(move), timestamp_of=move.get("at"))
        if self.game.phase == "settled":
            self._score_deal()

    def rejoin(self, player: str, *, at: datetime | str | None = None) -> None:
        """An eliminated player pays the entry fee again and comes back at the highest
        remaining score + 1 (pool only; before the next deal)."""
        number = len(self.deals)
        self._close_deal()
        self._check_open("rejoin", number + 1)
        if self.config.variant != POOL:
            raise self._refuse("rejoin", "a deals match has no rejoins", number + 1)
        if not self.deals:
            raise self._refuse("rejoin", "no deal has been played yet", 1, player=player)
        if self.phase == PLAYING:
            raise self._refuse(
                "rejoin", f"deal {number} is still being played", number, player=player
            )
        if player not in self.config.players:
            raise self._refuse("rejoin", f"{player!r} is not seated at this table", number + 1)
        remaining = self.remaining()
        why = pool_rules.rejoin_refusal(
            self.config.pool_type,
            player,
            self.scores,
            remaining,
            self.rejoins[player],
            self.config.max_rejoins,
        )
        if why is not None:
            raise self._refuse("rejoin", why, number + 1, player=player)
        score = pool_rules.rejoin_score(self.scores, remaining)
        self._trigger(self.Rejoined, at, player=player, score=score)

    def agree_split(self, accepted_by: Sequence[str], *, at: datetime | str | None = None) -> None:
        """The remaining players share the net pool by drops (docs/rules.md §3); every one
        of them must accept, and the table must qualify."""
        number = len(self.deals)
        self._close_deal()
        self._check_open("split", number + 1)
        if self.config.variant != POOL:
            raise self._refuse("split", "a deals match has no splits", number + 1)
        if not self.deals:
            raise self._refuse("split", "no deal has been played yet", 1)
        if self.phase == PLAYING:
            raise self._refuse("split", f"deal {number} is still being played", number)
        # A split is agreed at the end of a deal (docs/rules.md §3): once someone has rejoined
        # for the next deal, play goes on (and a record has no place for a rejoin without its
        # deal, so such a match could not be exported and read back).
        rejoined = [r["player"] for r in self.rejoin_log if r["before_deal"] == number + 1]
        if rejoined:
            raise self._refuse(
                "split",
                f"{', '.join(rejoined)} rejoined after deal {number}: a split is agreed at the "
                "end of a deal, before anyone rejoins",
                number + 1,
            )
        remaining = self.remaining()
        split = pool_rules.split_by_drops(
            self.config.pool_type,
            self.config.entry_fee,
            self.config.fee_percent,
            self.prize_pool,
            {p: self.scores[p] for p in remaining},
            self.config.players,
        )
        why = pool_rules.split_refusal(
            self.config.pool_type, len(self.config.players), remaining, accepted_by, split
        )
        if why is not None:
            raise self._refuse("split", why, number + 1)
        self._trigger(self.SplitAgreed, at, accepted_by=list(accepted_by), split=split.to_dict())
        self._settle(None, split.shares)

    def close(self) -> None:
        """Score a deal whose declaration is in and whose losers will not show (a record or
        a live match that ends there)."""
        self._close_deal()

    # -- what follows a deal -----------------------------------------------------------
    def _close_deal(self) -> None:
        if self.phase == PLAYING and self.game is not None and self.game.phase == "showing":
            self._score_deal()

    def _score_deal(self) -> None:
        game = self.game
        outcome = game.settlement if game.phase == "settled" else game.compute_settlement()
        number = len(self.deals)
        points = {player: line.points for player, line in outcome.players.items()}
        winner = outcome.winner
        if self.config.variant == POOL:
            in_deal = {p: self.scores[p] for p in self.deals[-1]["players"]}
            after, eliminated = pool_rules.add_deal_points(self.config.pool_type, in_deal, points)
            given, short = {}, {}
        else:
            in_deal = {p: self.scores[p] for p in self.deals[-1]["players"]}
            after, given, short = deals_rules.move_chips(in_deal, winner, points)
            eliminated = []
        self._trigger(
            self.DealScored,
            None,
            number=number,
            winner=winner,
            points=points,
            after=after,
            given=given,
            shortfalls=short,
            eliminated=eliminated,
        )
        self._after_deal()

    def _after_deal(self) -> None:
        if self.config.variant == POOL:
            remaining = self.remaining()
            if len(remaining) == 1:
                self._settle(remaining[0], None)
            elif self.config.auto_split and pool_rules.auto_split_applies(
                self.config.pool_type, remaining, self.scores
            ):
                split = pool_rules.equal_split(
                    self.config.fee_percent,
                    self.prize_pool,
                    {p: self.scores[p] for p in remaining},
                    self.config.players,
                )
                self._trigger(self.SplitAgreed, None, accepted_by=[], split=split.to_dict())
                self._settle(None, split.shares)
            return
        among = self.tiebreak or list(self.config.players)
        holding = deals_rules.with_chips(self.scores, self.config.players)
        if len(holding) == 1:
            self._settle(holding[0], None)
            return
        if len(self.deals) < self.config.deals:
            return
        leaders = deals_rules.leaders(self.scores, among)
        if len(leaders) == 1:
            self._settle(leaders[0], None)
        elif leaders != self.tiebreak:
            self._trigger(self.TiebreakerNeeded, None, tied=leaders)

    def _settle(self, winner: str | None, shares: Mapping[str, Decimal] | None) -> None:
        from domain.pooldeals.outcome import match_outcome, outcome_hash

        settlement = self.money_of(winner, shares).to_dict()
        # What the rules computed, every deal's figures to the payouts: the projection takes
        # a stored match whose outcome still hashes to it as its audit's recomputation.
        computed = outcome_hash(match_outcome(self, settling=(winner, settlement)))
        self._trigger(
            self.Settled, None, winner=winner, settlement=settlement, computed_hash=computed
        )

    def money_of(self, winner: str | None, shares: Mapping[str, Decimal] | None) -> MatchMoney:
        """The prize pool paid to ``winner`` (or shared as ``shares``), with its entries."""
        config = self.config
        return settle_pool_money(
            config.game_id,
            config.currency,
            config.fee_percent,
            config.entry_fee,
            self.entries_paid,
            {winner: None} if winner is not None else dict(shares),
        )

    # -- guards ------------------------------------------------------------------------
    def _check_open(self, move_type: str, number: int | None) -> None:
        if self.phase != FINISHED:
            return
        if self.split is not None:
            how = "the remaining players split the pool"
            if self.split.get("kind") == "equal" and not self.split.get("accepted_by"):
                how = "the pool was split automatically"
        elif self.config.variant == POOL:
            how = f"{self.winner} is the last player left and won the pool"
        else:
            how = f"{self.winner} won after {len(self.deals)} deals"
        raise MatchOver(
            f"the match is over: {how}", move_type=move_type, game_id=self.game_id, deal=number
        )

    def _why_out(self, player: str) -> str:
        if player not in self.config.players:
            return f"the deal has a hand for {player}, who is not seated"
        if player in self.eliminated:
            score = self.scores[player]
            return (
                f"the deal has a hand for {player}, eliminated in deal "
                f"{self.eliminated[player]} (score {score})"
            )
        if self.config.variant == DEALS and self.scores[player] == 0:
            return f"the deal has a hand for {player}, who has 0 chips and sits out"
        return f"the deal has a hand for {player}, who is not in the tiebreaker"

    def _refuse(
        self, move_type: str, reason: str, number: int | None, *, player: str | None = None
    ) -> MatchRuleViolation:
        return MatchRuleViolation(
            reason, move_type=move_type, game_id=self.game_id, deal=number, player=player
        )

    def _located(
        self,
        error: RuleViolation,
        number: int,
        index: int | None = None,
        move: Mapping[str, Any] | None = None,
    ) -> RuleViolation:
        """A 13-card rule broken in deal ``number`` (at its move ``index``): the match's id."""
        error.game_id = self.game_id
        error.deal = number
        if index is not None:
            error.at_move(index, dict(move) if isinstance(move, Mapping) else None)
        return error

    def _trigger(
        self, event_class: type, at: datetime | str | None, timestamp_of: Any = None, **fields
    ) -> None:
        try:
            moment = parse_time(at if at is not None else timestamp_of, what="at")
        except ValueError as error:
            raise self._refuse(event_class.__name__, str(error), len(self.deals) or None) from None
        if "at" in event_class.__annotations__:
            fields["at"] = format_time(moment) if at is not None else None
        self.trigger_event(event_class, timestamp=moment or self.modified_on, **fields)

    def _new_game(self, number: int, players: Sequence[str], dealer: str) -> Game:
        return Game(self.config.deal_table(number, players, dealer), at=self.started_at)

    def __getattr__(self, name: str) -> Any:
        # Reached only for an attribute the match does not hold: the current deal's game of
        # a match restored from a snapshot, played again the first time it is asked for.
        # Most restored matches are over and read for their record alone (the fair-play
        # catch-up, exports, pages), and replaying the last deal was half of reading one.
        if name != "game" or "deals" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        game = self.__dict__["game"] = self._replayed_game()
        return game

    def _replayed_game(self) -> Game | None:
        """The current deal's game played again from its deal and moves (a snapshot's)."""
        if not self.deals:
            return None
        return self.deal_game(len(self.deals))

    def deal_game(self, number: int) -> Game:
        """Deal ``number``'s 13-card game played again from its deal and moves, settled once
        the match scored it: its hands as that deal charged them (a dispute's "hands as
        scored"). The match keeps only the current deal's game."""
        dealt = self.deals[number - 1]
        table = self.config.deal_table(dealt["number"], dealt["players"], dealt["dealer"])
        game = play_game(table, dealt["deal"], dealt["moves"], at=self.started_at)
        if number <= len(self.results) and game.phase == "showing":
            game.settle()
        return game

    # == facts =============================================================================
    @property
    def game_id(self) -> str:
        return self.config.game_id

    @property
    def variant(self) -> str:
        return self.config.variant

    @property
    def players(self) -> tuple[str, ...]:
        return self.config.players

    def remaining(self) -> list[str]:
        """Pool: the players not eliminated, in seat order."""
        return [p for p in self.config.players if p not in self.eliminated]

    def dealt_in(self) -> list[str]:
        """Who the next deal is dealt to, in seat order."""
        if self.config.variant == POOL:
            return self.remaining()
        among = self.tiebreak or list(self.config.players)
        return deals_rules.with_chips(self.scores, among)

    @property
    def entries_paid(self) -> dict[str, int]:
        """Entry fees each player paid: one, plus one a rejoin."""
        return {p: 1 + self.rejoins[p] for p in self.config.players}

    @property
    def prize_pool(self) -> Decimal:
        return self.config.entry_fee * sum(self.entries_paid.values())

    @property
    def moves(self) -> list[dict]:
        """Every 13-card move of every deal, in play order."""
        return [move for dealt in self.deals for move in dealt["moves"]]

    @property
    def deal_number(self) -> int:
        return len(self.deals)

    def drops_left(self) -> dict[str, int] | None:
        """Pool: first drops each remaining player can still make (docs/rules.md §3)."""
        pool = self.config.pool_type
        if pool is None:
            return None
        return {p: pool.drops(self.scores[p]) for p in self.remaining()}

    def table_state(self):
        from domain.pooldeals.state import match_state  # the view needs the whole match

        return match_state(self)
