"""``/reports``: the period report (:mod:`replays.readmodels.reports`, the CLI's `rummy-ledger report`)
as a page for auditors and admins, with its form, chart, integrity answer, and the same
figures as JSON and CSV downloads."""

from __future__ import annotations

import json
from datetime import date, timedelta

from flask import Blueprint, Response, abort, current_app, render_template, request

from replays.access.accounts import ADMIN, AUDITOR
from replays.readmodels.period_views import by_variant, csv_text, period_game_ids
from replays.readmodels.reports import PeriodFilter, ReportError, period_report
from web.auth import role_required
from web.ledger import read_session
from web.period_chart import gross_and_fees_chart
from web.period_integrity import period_integrity

bp = Blueprint("reports", __name__)

FIELDS = {"from": "from", "to": "to", "table": "table", "player": "player"}


def _day(name: str, default: date) -> date:
    text = request.args.get(name, "").strip()
    if not text:
        return default
    try:
        return date.fromisoformat(text)
    except ValueError:
        abort(400, f"Report period: {name!r} must be a day written YYYY-MM-DD, not {text!r}.")


def _period() -> PeriodFilter:
    today = date.today()
    date_to = _day("to", today)
    date_from = _day("from", date_to - timedelta(days=30))
    table = request.args.get("table", "").strip() or None
    player = request.args.get("player", "").strip() or None
    try:
        return PeriodFilter(date_from, date_to, table, player)
    except ReportError:
        abort(
            400,
            f"Report period: 'to' ({date_to.isoformat()}) is before 'from' "
            f"({date_from.isoformat()}).",
        )


def _build(period: PeriodFilter):
    with read_session() as session:
        report = period_report(session, period)
        variants = by_variant(session, period)
        game_ids = period_game_ids(session, period)
    return report, variants, game_ids


def _filename(period: PeriodFilter, ext: str) -> str:
    name = f"report-{period.date_from.isoformat()}-{period.date_to.isoformat()}"
    if period.table:
        name += f"-{period.table}"
    if period.player:
        name += f"-{period.player}"
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in name) + f".{ext}"


@bp.get("/reports")
@role_required(AUDITOR, ADMIN)
def index():
    period = _period()
    report, variants, game_ids = _build(period)
    chart = (
        gross_and_fees_chart([(d.day, d.totals.gross, d.totals.fees) for d in report.by_day])
        if report.by_day
        else None
    )
    query = {
        "from": period.date_from.isoformat(),
        "to": period.date_to.isoformat(),
        **({"table": period.table} if period.table else {}),
        **({"player": period.player} if period.player else {}),
    }
    return render_template(
        "reports/period.html",
        period=period,
        report=report,
        variants=variants,
        chart=chart,
        integrity=period_integrity(game_ids),
        query=query,
    )


@bp.get("/reports.json")
@role_required(AUDITOR, ADMIN)
def report_json():
    period = _period()
    report, variants, game_ids = _build(period)
    data = report.to_dict()
    data["by_variant"] = [
        {
            "variant": variant,
            "games": totals.games,
            "gross": str(totals.gross),
            "fees": str(totals.fees),
            "net_paid": str(totals.net_paid),
        }
        for variant, totals in variants
    ]
    verdict = period_integrity(game_ids)
    data["integrity"] = {"status": verdict.status, "games": verdict.games, "counts": verdict.counts}
    response = current_app.response_class(json.dumps(data, indent=2), mimetype="application/json")
    response.headers["Content-Disposition"] = f'attachment; filename="{_filename(period, "json")}"'
    return response


@bp.get("/reports.csv")
@role_required(AUDITOR, ADMIN)
def report_csv():
    period = _period()
    report, variants, _ = _build(period)
    response = Response(csv_text(report, variants), mimetype="text/csv")
    response.headers["Content-Disposition"] = f'attachment; filename="{_filename(period, "csv")}"'
    return response
