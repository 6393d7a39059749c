"""What the reports page adds to :mod:`replays.readmodels.reports`: totals per variant, the period's
game ids (for its integrity check), and the report as CSV.

The period is the report's own (:func:`replays.readmodels.reports._period_conditions`), so a game is
in the page's variant lines and integrity check exactly when the report counts it.
"""

from __future__ import annotations

import csv
import io

import sqlalchemy as sa

from replays.readmodels.models import GameRow
from replays.readmodels.reports import PeriodFilter, PeriodReport, Totals, _period_conditions, _sum

CSV_COLUMNS = [
    "section",
    "key",
    "games",
    "gross",
    "fees",
    "net_paid",
    "wins",
    "points",
    "paid",
    "received",
    "net",
    "debits",
    "credits",
    "balanced",
    "kind",
    "detail",
]


def by_variant(session, f: PeriodFilter) -> list[tuple[str, Totals]]:
    """Games, gross, fees and net paid per variant (every registered variant)."""
    g = GameRow.__table__.c
    rows = session.execute(
        sa.select(
            g.variant,
            sa.func.count().label("games"),
            _sum(g.gross).label("gross"),
            _sum(g.fee).label("fees"),
            _sum(g.net_to_winner).label("net_paid"),
        )
        .where(*_period_conditions(f))
        .group_by(g.variant)
        .order_by(g.variant)
    )
    return [(row.variant, Totals(row.games, row.gross, row.fees, row.net_paid)) for row in rows]


def period_game_ids(session, f: PeriodFilter) -> list[str]:
    g = GameRow.__table__.c
    return list(
        session.scalars(sa.select(g.game_id).where(*_period_conditions(f)).order_by(g.game_id))
    )


def write_csv(report: PeriodReport, out, variants: list[tuple[str, Totals]] = ()) -> None:
    """One CSV with a ``section`` column, so a spreadsheet can filter each part."""
    data = report.to_dict()
    writer = csv.DictWriter(out, CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerow({"section": "total", "key": "all", **data["totals"]})
    for line in data["by_table"]:
        writer.writerow({"section": "table", "key": line["table"] or "", **line})
    for line in data["by_day"]:
        writer.writerow({"section": "day", "key": line["day"], **line})
    for variant, totals in variants:
        writer.writerow(
            {
                "section": "variant",
                "key": variant,
                "games": totals.games,
                "gross": str(totals.gross),
                "fees": str(totals.fees),
                "net_paid": str(totals.net_paid),
            }
        )
    for line in data.get("by_kind", ()):
        writer.writerow(
            {
                "section": "kind",
                "key": line["kind"],
                "games": line["games"],
                "debits": line["debits"],
                "credits": line["credits"],
                "kind": line["kind"],
            }
        )
    for line in data["by_player"]:
        writer.writerow({"section": "player", "key": line["player"], **line})
    for a in data["adjustments"]:
        writer.writerow(
            {
                "section": "adjustment",
                "key": a["dispute_id"],
                "debits": a["amount"],
                "credits": a["amount"],
                "kind": f"{a['debited']} -> {a['credited']}",
                "detail": f"game {a['game_id']}",
            }
        )
    writer.writerow({"section": "reconciliation", "key": "period", **data["reconciliation"]})
    for d in data["discrepancies"]:
        writer.writerow({"section": "discrepancy", "key": d["game_id"], **d})
    v = data.get("verification")
    if v is not None:
        writer.writerow(
            {
                "section": "verification",
                "key": "period",
                "games": v["games_checked"],
                "kind": v.get("status") or ("verified" if v["verified"] else "not verified"),
                "detail": verification_words(v),
            }
        )
        for f in v["failed"]:
            writer.writerow(
                {
                    "section": "verification",
                    "key": f["game_id"],
                    "kind": "failed",
                    "detail": f["finding"],
                }
            )


def csv_text(report: PeriodReport, variants: list[tuple[str, Totals]] = ()) -> str:
    out = io.StringIO()
    write_csv(report, out, variants)
    return out.getvalue()


def verification_words(v: dict) -> str:
    checkpoint = v["checkpoint"]
    against = (
        f"the checkpoint of {checkpoint['size']} events signed {checkpoint['time']}"
        if checkpoint
        else "the seals only (no checkpoint signed yet)"
    )
    words = (
        f"{v['games_checked']} game(s), events and read rows, against {against}; "
        f"{len(v['failed'])} fail"
    )
    if v["not_checkpointed"]:
        words += f"; {len(v['not_checkpointed'])} not yet in a checkpoint"
    return words
