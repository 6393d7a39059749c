"""A match's audit: every figure recomputed from the stored moves and compared with what the
match recorded and what the operator reported.

The recomputation plays the match's record (its deals, moves, rejoins and split) through a
fresh aggregate, so every deal's points, the scores or chips, eliminations, rejoin scores,
the split's shares, the payouts and the fee come from the rules again, never from the
recorded ``DealScored``/``Rejoined``/``SplitAgreed``/``Settled`` bodies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from domain.pooldeals.match import Match
from domain.pooldeals.outcome import describe_outcome, match_outcome
from domain.pooldeals.records import match_record_of
from domain.pooldeals.table import POOL
from domain.variant_base import RECORDED, REPORTED, Discrepancy, discrepancy_lines


@dataclass(frozen=True)
class MatchAudit:
    game_id: str
    computed: dict[str, Any]  # the outcome recomputed
    recorded: dict[str, Any]  # the outcome as the events recorded it
    reported: Mapping[str, Any] | None
    discrepancies: tuple[Discrepancy, ...]
    settlement: dict[str, Any] | None = None  # the recomputed Settled body

    @property
    def clean(self) -> bool:
        return not self.discrepancies

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.computed)
        out["discrepancies"] = [found.to_dict() for found in self.discrepancies]
        out["recorded"] = self.recorded
        out["reported"] = None if self.reported is None else dict(self.reported)
        return out

    def for_people(self) -> str:
        lines = [f"Audit of match {self.game_id}", describe_outcome(self.computed), ""]
        agree = "No discrepancies: recomputation, recorded figures and report agree."
        lines += discrepancy_lines(self.discrepancies, agree)
        return "\n".join(lines)


def audit_match(match: Match) -> MatchAudit:
    recomputed = match_record_of(match).build(close=False)
    if len(match.results) == len(match.deals):  # the stored match scored its last deal
        recomputed.close()
    computed = match_outcome(recomputed)
    recorded = match_outcome(match)
    found = _compare_recorded(recorded, computed) + compare_reported(match.reported, computed)
    return MatchAudit(
        match.game_id, computed, recorded, match.reported, tuple(found), recomputed.settlement
    )


def _compare_recorded(recorded: Mapping, computed: Mapping) -> list[Discrepancy]:
    found = []
    pool = computed["variant"] == POOL
    column = "scores" if pool else "chips"
    for mine, theirs in zip(computed["deals"], recorded["deals"], strict=False):
        n = mine["number"]
        for name in ("winner", "points", column, "eliminated", "given", "shortfalls"):
            if mine.get(name) != theirs.get(name):
                found.append(
                    Discrepancy(f"deal {n} {name}", theirs.get(name), mine.get(name), RECORDED)
                )
    if len(computed["deals"]) != len(recorded["deals"]):
        found.append(
            Discrepancy("deals scored", len(recorded["deals"]), len(computed["deals"]), RECORDED)
        )
    for index, mine in enumerate(computed.get("rejoins") or ()):
        theirs = (recorded.get("rejoins") or [None] * (index + 1))[index]
        if theirs != mine:
            found.append(
                Discrepancy(f"rejoin {index + 1} ({mine['player']})", theirs, mine, RECORDED)
            )
    mine_split, their_split = computed.get("split"), recorded.get("split")
    if (mine_split or {}).get("shares") != (their_split or {}).get("shares"):
        found.append(
            Discrepancy(
                "split shares",
                (their_split or {}).get("shares"),
                (mine_split or {}).get("shares"),
                RECORDED,
            )
        )
    for name in ("winner", "prize_pool", "fee", "payouts"):
        if computed.get(name) != recorded.get(name):
            found.append(Discrepancy(name, recorded.get(name), computed.get(name), RECORDED))
    return found


def _same(reported: Any, computed: Any) -> bool:
    """Money compares as numbers ("25.0" is 25.00); anything else as it is."""
    if isinstance(reported, str) and isinstance(computed, str):
        try:
            return Decimal(reported) == Decimal(computed)
        except InvalidOperation:
            return reported == computed
    return reported == computed


def compare_reported(reported: Mapping | None, computed: Mapping) -> list[Discrepancy]:
    if not reported:
        return []
    found = []
    for name in ("winner", "prize_pool", "fee"):
        if name in reported and not _same(reported[name], computed.get(name)):
            found.append(Discrepancy(name, reported[name], computed.get(name), REPORTED))
    for name in ("payouts",):
        for player, amount in (reported.get(name) or {}).items():
            mine = (computed.get(name) or {}).get(player, "0.00")
            if not _same(amount, mine):
                found.append(Discrepancy(f"{name}.{player}", amount, mine, REPORTED))
    column = "scores" if computed["variant"] == POOL else "chips"
    for player, value in (reported.get(column) or {}).items():
        mine = computed[column].get(player)
        if value != mine:
            found.append(Discrepancy(f"{column}.{player}", value, mine, REPORTED))
    split = (computed.get("split") or {}).get("shares") or {}
    for player, amount in (reported.get("split") or {}).items():
        if not _same(amount, split.get(player)):
            found.append(Discrepancy(f"split.{player}", amount, split.get(player), REPORTED))
    rejoined: dict[str, list[int]] = {}
    for entry in computed.get("rejoins") or ():
        rejoined.setdefault(entry["player"], []).append(entry["score"])
    for player, scores in (reported.get("rejoins") or {}).items():
        if list(scores) != rejoined.get(player, []):
            found.append(
                Discrepancy(f"rejoins.{player}", list(scores), rejoined.get(player, []), REPORTED)
            )
    return found
