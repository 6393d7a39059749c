"""What a Pool or Deals Rummy table shows: the match around the current deal's 13-card table.

The score table after every deal, who was eliminated and when, drops left (pool) or chips
(deals), rejoins with their scores and the split with its arithmetic sit beside the deal's
own :class:`~domain.rummy13.state.TableState`; :meth:`MatchTableState.for_seat` cuts the
deal down to what one player could see.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from domain.money import money_text
from domain.rummy13.state import TableState


@dataclass(frozen=True)
class MatchTableState:
    game_id: str
    variant: str
    version: int
    phase: str
    pool: int | None
    deals_planned: int | None
    deal_number: int
    dealer: str | None
    scores: dict[str, int]  # pool: running scores; deals: chips
    eliminated: dict[str, int]
    drops_left: dict[str, int] | None
    rejoins: list[dict]
    prize_pool: str
    currency: str
    tiebreak: list[str] | None
    score_table: list[dict]  # each deal's result: points and the scores/chips after it
    split: dict | None
    winner: str | None
    settlement: dict | None
    deal: TableState | None

    def for_seat(self, player: str | None) -> MatchTableState:
        if self.deal is None:
            return self
        seated = {seat.player for seat in self.deal.seats}
        seen = player if player in seated else None
        return replace(self, deal=self.deal.for_seat(seen))

    def to_dict(self) -> dict[str, Any]:
        out = {
            "game_id": self.game_id,
            "variant": self.variant,
            "version": self.version,
            "phase": self.phase,
            "deal_number": self.deal_number,
            "dealer": self.dealer,
            "chips" if self.variant == "deals" else "scores": dict(self.scores),
            "eliminated": dict(self.eliminated),
            "drops_left": self.drops_left,
            "rejoins": list(self.rejoins),
            "prize_pool": self.prize_pool,
            "currency": self.currency,
            "tiebreak": self.tiebreak,
            "score_table": list(self.score_table),
            "split": self.split,
            "winner": self.winner,
            "settlement": self.settlement,
            "deal": None if self.deal is None else self.deal.to_dict(),
        }
        if self.variant == "deals":
            out["deals_planned"] = self.deals_planned
        else:
            out["pool"] = self.pool
        return out


def match_state(match) -> MatchTableState:
    config = match.config
    return MatchTableState(
        game_id=config.game_id,
        variant=config.variant,
        version=match.version,
        phase=match.phase,
        pool=config.pool,
        deals_planned=config.deals,
        deal_number=len(match.deals),
        dealer=match.dealer,
        scores=dict(match.scores),
        eliminated=dict(match.eliminated),
        drops_left=match.drops_left(),
        rejoins=[dict(entry) for entry in match.rejoin_log],
        prize_pool=money_text(match.prize_pool),
        currency=config.currency,
        tiebreak=None if match.tiebreak is None else list(match.tiebreak),
        score_table=[dict(result) for result in match.results],
        split=None if match.split is None else dict(match.split),
        winner=match.winner,
        settlement=match.settlement,
        deal=None if match.game is None else match.game.table_state(),
    )
