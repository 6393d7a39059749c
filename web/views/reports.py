"""``/reports``: the period report (:mod:`replays.readmodels.reports`, the CLI's `rummy-ledger report`)
as a page for auditors and admins, with its form, chart, integrity answer, and the same
figures as JSON and CSV downloads.

The figures are a few grouped queries over the read models; the integrity answer checks
every game of the period against its seals and the signed checkpoint, which takes seconds
for a month. So the page is served with its figures at once and asks for the answer
separately (``/reports/integrity``, fetched by ``js/report.js``; without script, a link
renders the page with the answer in it). The JSON and CSV downloads carry the answer as
the report's ``verification``, where ``rummy-ledger report`` puts it."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import date

from flask import Blueprint, Response, abort, current_app, render_template, request

from domain.timestamps import days_before
from replays.access.accounts import ADMIN, AUDITOR
from replays.readmodels.period_verify import period_verified_ids
from replays.readmodels.period_views import by_variant, csv_text
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
    date_from = _day("from", days_before(date_to, 30))
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
    return report, variants


def _verdict(period: PeriodFilter):
    """The period's integrity answer: every game the report's figures come from, and those
    of variants without money that ended in it (the games ``rummy-ledger report`` checks)."""
    with read_session() as session:
        game_ids = period_verified_ids(session.connection(), period)
    return period_integrity(game_ids)


def _query(period: PeriodFilter) -> dict[str, str]:
    return {
        "from": period.date_from.isoformat(),
        "to": period.date_to.isoformat(),
        **({"table": period.table} if period.table else {}),
        **({"player": period.player} if period.player else {}),
    }


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
    report, variants = _build(period)
    chart = (
        gross_and_fees_chart([(d.day, d.totals.gross, d.totals.fees) for d in report.by_day])
        if report.by_day
        else None
    )
    # ?integrity=1: the answer in the page itself (the link a browser without script follows).
    inline = request.args.get("integrity", "") in ("1", "yes", "true")
    return render_template(
        "reports/period.html",
        period=period,
        report=report,
        variants=variants,
        chart=chart,
        integrity=_verdict(period) if inline else None,
        query=_query(period),
    )


@bp.get("/reports/integrity")
@role_required(AUDITOR, ADMIN)
def integrity_part():
    """The period's integrity answer alone, as the part of the page that holds it."""
    period = _period()
    return render_template("reports/_integrity.html", integrity=_verdict(period))


@bp.get("/reports.json")
@role_required(AUDITOR, ADMIN)
def report_json():
    period = _period()
    report, variants = _build(period)
    report = replace(report, verification=_verdict(period).as_verification())
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
    response = current_app.response_class(json.dumps(data, indent=2), mimetype="application/json")
    response.headers["Content-Disposition"] = f'attachment; filename="{_filename(period, "json")}"'
    return response


@bp.get("/reports.csv")
@role_required(AUDITOR, ADMIN)
def report_csv():
    period = _period()
    report, variants = _build(period)
    report = replace(report, verification=_verdict(period).as_verification())
    response = Response(csv_text(report, variants), mimetype="text/csv")
    response.headers["Content-Disposition"] = f'attachment; filename="{_filename(period, "csv")}"'
    return response
