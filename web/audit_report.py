"""The audit page's figures: :func:`replays.records.audit.audit` laid out for people and spreadsheets.

The recomputation, the recorded ``Settled`` event and the operator's reported figures come
from the audit use case; this module only lines them up (one row per figure, three columns)
and marks the cells the audit found different. Nothing is recomputed here.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from sqlalchemy.orm import Session

from domain.rummy13.settlement import Settlement
from replays.readmodels.models import GameRow, LedgerEntryRow
from web import queries

RESULT_FORMULA = {
    "first_drop": "first drop",
    "middle_drop": "middle drop",
    "auto_drop": "auto-drop after three missed turns",
    "wrong_show": "wrong show",
    "deal_show": "deal show",
    "lost": "hand score",
}


@dataclass
class Cell:
    computed: Any
    recorded: Any = None
    reported: Any = None
    differs: bool = False  # the recorded or the reported figure differs
    recorded_differs: bool = False
    reported_differs: bool = False
    # The discrepancies' field names each mark answers to (the page's ``data-field``).
    recorded_fields: tuple[str, ...] = ()
    reported_fields: tuple[str, ...] = ()


@dataclass
class LoserLine:
    """points × point value = amount, for one loser, with its recorded and reported twins."""

    player: str
    result: str
    points: Cell
    point_value: Cell
    amount: Cell
    hand_score: int | None
    min_score: int | None
    case: str | None
    # deccan: the hand met the objective but was not declared, so a flat charge applies.
    met_objective: bool = False

    @property
    def overcharge(self) -> int | None:
        if self.hand_score is None or self.min_score is None:
            return None
        return self.hand_score - self.min_score


@dataclass
class AuditReport:
    game_id: str
    header: GameRow | None
    status: str  # "audited" or "not_settled"
    message: str = ""
    winner: Cell | None = None
    losers: list[LoserLine] = field(default_factory=list)
    gross: Cell | None = None
    fee: Cell | None = None
    net_to_winner: Cell | None = None
    fee_percent: Decimal | None = None
    discrepancies: list[dict] = field(default_factory=list)
    entries: list[LedgerEntryRow] = field(default_factory=list)
    audit_json: dict | None = None
    has_recorded: bool = False
    has_reported: bool = False

    @property
    def clean(self) -> bool:
        return not self.discrepancies

    @property
    def debits(self) -> Decimal:
        return sum((e.debit for e in self.entries), Decimal("0.00"))

    @property
    def credits(self) -> Decimal:
        return sum((e.credit for e in self.entries), Decimal("0.00"))

    @property
    def balanced(self) -> bool:
        return self.debits == self.credits

    # -- downloads -------------------------------------------------------------------------
    def to_json(self) -> str:
        """The audit CLI's ``--json`` shape (settle shape + discrepancies + min_scores ...)."""
        if self.audit_json is None:
            body = {"game_id": self.game_id, "status": self.status, "message": self.message}
        else:
            body = dict(self.audit_json, status=self.status)
        return json.dumps(body, indent=2, sort_keys=False, default=str) + "\n"

    def rows(self) -> list[tuple[str, Any, Any, Any, bool]]:
        """One row per figure: (item, computed, recorded, reported, differs)."""
        rows: list[tuple[str, Any, Any, Any, bool]] = []
        if self.winner is not None:
            rows.append(("winner", *_cells(self.winner)))
        for line in self.losers:
            rows.append((f"{line.player} result", line.result, None, None, False))
            rows.append((f"{line.player} points", *_cells(line.points)))
            rows.append((f"{line.player} point_value", *_cells(line.point_value)))
            rows.append((f"{line.player} amount", *_cells(line.amount)))
            if line.hand_score is not None:
                rows.append((f"{line.player} hand_score", line.hand_score, None, None, False))
            if line.min_score is not None:
                rows.append((f"{line.player} min_score", line.min_score, None, None, False))
        for name in ("gross", "fee", "net_to_winner"):
            cell = getattr(self, name)
            if cell is not None:
                rows.append((name, *_cells(cell)))
        return rows

    def to_csv(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["game_id", "item", "computed", "recorded", "reported", "differs"])
        for item, computed, recorded, reported, differs in self.rows():
            writer.writerow(
                [
                    self.game_id,
                    item,
                    _text(computed),
                    _text(recorded),
                    _text(reported),
                    "yes" if differs else "",
                ]
            )
        for d in self.discrepancies:
            if not _placed(d):
                writer.writerow(
                    [self.game_id, d["field"], _text(d["computed"]), "", "", f"yes ({d['source']})"]
                )
        return out.getvalue()


def _cells(cell: Cell) -> tuple[Any, Any, Any, bool]:
    return cell.computed, cell.recorded, cell.reported, cell.differs


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _placed(discrepancy: dict) -> bool:
    """Whether a discrepancy is shown in one of the figure rows (else it is listed apart)."""
    return _key(discrepancy) is not None


def _key(discrepancy: dict) -> tuple[str | None, str] | None:
    """(player, figure) of a discrepancy's field, for the figures the table shows."""
    parts = str(discrepancy["field"]).split(".")
    figures = ("points", "point_value", "amount", "result")
    if discrepancy["source"] == "reported":
        if parts[0] == "points" and len(parts) == 2:
            return parts[1], "points"
        if len(parts) == 1 and parts[0] in ("winner", "gross", "fee", "net_to_winner"):
            return None, parts[0]
        return None
    if len(parts) == 3 and parts[0] == "players" and parts[2] in figures:
        return parts[1], parts[2]
    if len(parts) == 1 and parts[0] in ("winner", "gross", "fee", "net_to_winner"):
        return None, parts[0]
    return None


def build(session: Session, game_id: str) -> AuditReport | None:
    """The audit of ``game_id``, or None when the ledger has no such game."""
    from replays.records.audit import NothingToAudit, audit
    from replays.store.application import GameNotFound
    from web.ledger import get_ledger

    header = queries.game_header(session, game_id)
    ledger = get_ledger()
    if header is None and not ledger.game_exists(game_id):
        return None
    try:
        found = audit(ledger, game_id)
    except GameNotFound:
        return None
    except NothingToAudit as error:
        return AuditReport(game_id, header, "not_settled", str(error))
    if not isinstance(getattr(found, "computed", None), Settlement):
        return AuditReport(
            game_id,
            header,
            "not_supported",
            "This page audits 13-card games; use `rummy-ledger audit` for this match.",
        )
    computed = found.computed
    recorded = Settlement.from_dict(found.recorded) if found.recorded else None
    reported = found.reported or {}
    discrepancies = [d.to_dict() for d in found.discrepancies]
    differing: dict[tuple, list[str]] = {}
    for d in discrepancies:
        if _key(d) is not None:
            differing.setdefault((_key(d), d["source"]), []).append(str(d["field"]))

    def cell(player: str | None, figure: str, computed, recorded, reported) -> Cell:
        # Each mark goes on the figure that differs: the ledger's own, or the operator's.
        in_recorded = tuple(differing.get(((player, figure), "recorded"), ()))
        in_reported = tuple(differing.get(((player, figure), "reported"), ()))
        return Cell(
            computed,
            recorded,
            reported,
            bool(in_recorded or in_reported),
            bool(in_recorded),
            bool(in_reported),
            in_recorded,
            in_reported,
        )

    losers = []
    for player, line in computed.players.items():
        twin = recorded.players.get(player) if recorded else None
        reported_points = (reported.get("points") or {}).get(player)
        losers.append(
            LoserLine(
                player=player,
                result=line.result,
                points=cell(
                    player, "points", line.points, twin.points if twin else None, reported_points
                ),
                point_value=cell(
                    player,
                    "point_value",
                    line.point_value,
                    twin.point_value if twin else None,
                    None,
                ),
                amount=cell(player, "amount", line.amount, twin.amount if twin else None, None),
                hand_score=line.hand_score,
                min_score=line.min_score,
                case=line.case,
                met_objective=getattr(line, "met_objective", False),
            )
        )

    def total(name: str) -> Cell:
        mine = getattr(computed, name)
        theirs = getattr(recorded, name) if recorded else None
        said = reported.get(name)
        return cell(None, name, mine, theirs, Decimal(said) if said is not None else None)

    return AuditReport(
        game_id=game_id,
        header=header,
        status="audited",
        winner=cell(
            None,
            "winner",
            computed.winner,
            recorded.winner if recorded else None,
            reported.get("winner"),
        ),
        losers=losers,
        gross=total("gross"),
        fee=total("fee"),
        net_to_winner=total("net_to_winner"),
        fee_percent=computed.fee_percent,
        discrepancies=discrepancies,
        entries=queries.ledger_entries(session, game_id),
        audit_json=found.to_dict(),
        has_recorded=recorded is not None,
        has_reported=bool(reported),
    )
