"""Audit one 13-card game: recompute its settlement from the stored events and compare.

The recomputation (:func:`domain.rummy13.settlement.compute_settlement`, from how each player's
game ended and the cards each held) does not read the recorded ``Settled`` event; the
report then compares it with that event and with the operator's ``reported`` figures,
field by field. Every loser's charged hand score is shown beside the least the same 13
cards could have scored, with the scoring case that applied.

>>> from domain.variant_base import Discrepancy
>>> Discrepancy("gross", "49.00", "49.70", "reported").to_dict()
{'field': 'gross', 'reported': '49.00', 'computed': '49.70', 'source': 'reported'}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from domain.rummy13.game import Game
from domain.rummy13.settlement import Settlement
from domain.variant_base import RECORDED, REPORTED, Discrepancy, discrepancy_lines

_MONEY = ("gross", "fee", "net_to_winner")


class NothingToAudit(Exception):
    """A game with no winner yet: there is no payout to check."""


@dataclass(frozen=True)
class LoserLine:
    """One loser's charge beside what the same cards could have cost at least."""

    player: str
    result: str
    points: int
    point_value: str
    amount: str
    hand_score: int | None  # charged hand score (before the 80 cap); None for drops
    min_score: int | None  # least possible hand score of the 13 cards held
    case: str | None  # scoring case of the charged grouping
    ended_at_round: int = 0  # the round whose point value applies (Raise Rummy)

    @property
    def overcharge(self) -> int | None:
        """Hand-score points a shown grouping cost beyond the minimum (0 when optimal)."""
        if self.hand_score is None or self.min_score is None:
            return None
        return self.hand_score - self.min_score


@dataclass(frozen=True)
class AuditReport:
    game_id: str
    computed: Settlement
    recorded: Mapping[str, Any] | None
    reported: Mapping[str, Any] | None
    discrepancies: tuple[Discrepancy, ...]
    losers: tuple[LoserLine, ...]

    @property
    def clean(self) -> bool:
        return not self.discrepancies

    @property
    def min_scores(self) -> dict[str, int]:
        return {line.player: line.min_score for line in self.losers if line.min_score is not None}

    def to_dict(self) -> dict[str, Any]:
        """The ``settle`` shape of the recomputation, plus ``discrepancies`` and
        ``min_scores``, and (for readers who want the detail) the charged scores, scoring
        cases, the recorded settlement's summary and the operator's report."""
        out = self.computed.summary()
        out["discrepancies"] = [d.to_dict() for d in self.discrepancies]
        out["min_scores"] = self.min_scores
        out["hand_scores"] = {
            line.player: line.hand_score for line in self.losers if line.hand_score is not None
        }
        out["cases"] = {line.player: line.case for line in self.losers if line.case is not None}
        out["recorded"] = None if self.recorded is None else _summary(self.recorded)
        out["reported"] = None if self.reported is None else dict(self.reported)
        return out

    def for_people(self) -> str:
        """The audit as ``rummy-ledger audit`` prints it."""
        report = self
        computed = report.computed.summary()
        lines = [
            f"Audit of {report.game_id}: winner {computed['winner']}",
            "",
            f"  {'player':<10} {'result':<12} {'charged':>7} {'minimum':>7}  {'scoring case':<34}"
            f" {'points':>6} x {'value':>6} {'(round)':>7} = {'amount':>9}",
        ]
        for line in report.losers:
            charged = "-" if line.hand_score is None else str(line.hand_score)
            minimum = "-" if line.min_score is None else str(line.min_score)
            lines.append(
                f"  {line.player:<10} {line.result:<12} {charged:>7} {minimum:>7}  "
                f"{line.case or '-':<34} {line.points:>6} x {line.point_value:>6} "
                f"{'(' + str(line.ended_at_round) + ')':>7} = {line.amount:>9}"
            )
        lines += [
            "",
            f"  gross {computed['gross']}  fee {computed['fee']} "
            f"({report.computed.fee_percent}%)  net to winner {computed['net_to_winner']}",
            f"  recorded settlement: {'present' if report.recorded is not None else 'none'}; "
            f"operator's report: {'present' if report.reported else 'none'}",
            "",
        ]
        agree = "No discrepancies: recomputation, recorded settlement and report agree."
        lines += discrepancy_lines(report.discrepancies, agree)
        return "\n".join(lines)


def audit_game(game: Game, *, with_recorded: bool = True) -> AuditReport:
    """Audit a game rebuilt from its stored events. ``with_recorded=False`` leaves the
    recorded settlement out (not copied, not compared: ``recorded`` is None), for a
    caller that compares it itself (:func:`domain.rummy13.rows.audit_row`); that caller
    only reads the report, so ``reported`` is then the game's own body, not a copy."""
    if game.winner is None:
        raise NothingToAudit(
            f"game {game.game_id} has no winner yet ({game.phase}): no payout to audit"
        )
    computed = game.compute_settlement()
    recorded = game.recorded_settlement if with_recorded else None
    # verify audits every game it replays: a deep copy of figures it only reads is waste.
    reported = game.reported if with_recorded else game.reported_body
    found: list[Discrepancy] = []
    if recorded is not None:
        found.extend(_compare_recorded(recorded, computed.to_dict()))
    if reported:
        found.extend(_compare_reported(reported, computed))
    losers = tuple(
        LoserLine(
            player=player,
            result=line.result,
            points=line.points,
            point_value=line.summary()["point_value"],
            amount=line.summary()["amount"],
            hand_score=line.hand_score,
            min_score=line.min_score,
            case=line.case,
            ended_at_round=line.ended_at_round,
        )
        for player, line in computed.players.items()
    )
    return AuditReport(
        game_id=game.game_id,
        computed=computed,
        recorded=recorded,
        reported=reported,
        discrepancies=tuple(found),
        losers=losers,
    )


# -- comparisons -------------------------------------------------------------------------


def _compare_recorded(
    recorded: Mapping[str, Any], computed: Mapping[str, Any]
) -> list[Discrepancy]:
    """Every leaf of the recorded Settled body against the same leaf recomputed."""
    if recorded == computed:
        # Equal bodies have equal leaves: no walk needed (the usual case in verify).
        return []
    mine = dict(_leaves(computed))
    theirs = dict(_leaves(recorded))
    found = []
    for field in list(theirs) + [f for f in mine if f not in theirs]:
        if not _same(theirs.get(field), mine.get(field)):
            found.append(Discrepancy(field, theirs.get(field), mine.get(field), RECORDED))
    return found


def _compare_reported(reported: Mapping[str, Any], computed: Settlement) -> list[Discrepancy]:
    found = []
    summary = computed.summary()
    if "winner" in reported and reported["winner"] != computed.winner:
        found.append(Discrepancy("winner", reported["winner"], computed.winner, REPORTED))
    for player, points in (reported.get("points") or {}).items():
        line = computed.players.get(player)
        mine = None if line is None else line.points
        if points != mine:
            found.append(Discrepancy(f"points.{player}", points, mine, REPORTED))
    for field in _MONEY:
        if field in reported and not _same(reported[field], summary[field]):
            found.append(Discrepancy(field, reported[field], summary[field], REPORTED))
    return found


def _leaves(value: Any, prefix: str = ""):
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _leaves(item, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, f"{prefix}[{index}]")
    else:
        yield prefix, value


def _same(a: Any, b: Any) -> bool:
    """Equal as values: money text compares as decimals (``"49.7" == "49.70"``)."""
    if a == b:
        return True
    if isinstance(a, str) and isinstance(b, str):
        try:
            return Decimal(a) == Decimal(b)
        except InvalidOperation:
            return False
    return False


def _summary(settlement: Mapping[str, Any]) -> dict[str, Any]:
    return Settlement.from_dict(settlement).summary()
