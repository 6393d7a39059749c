"""The audit page of one game: the settlement arithmetic line by line, the recorded settlement
and the operator's reported figures beside the recomputation, every difference highlighted;
the same as JSON and CSV downloads, and a print stylesheet for a paper report."""

from __future__ import annotations

from flask import Blueprint, Response, abort, current_app, render_template

from web.ledger import read_session
from web.variant_pages import pages_for

bp = Blueprint("audit", __name__)


def _report(game_id: str):
    from web import audit_report

    with read_session() as session:
        report = audit_report.build(session, game_id)
    if report is None:
        abort(404, f"No game {game_id!r} in the ledger.")
    return report


@bp.get("/games/<game_id>/audit")
def audit(game_id: str):
    if (pages := pages_for(game_id)) is not None:
        return pages.audit_page(game_id)
    report = _report(game_id)
    return render_template("audit/audit.html", report=report, game=report.header)


@bp.get("/games/<game_id>/audit.json")
def audit_json(game_id: str):
    if (pages := pages_for(game_id)) is not None:
        return pages.audit_json(game_id)
    report = _report(game_id)
    response = current_app.response_class(report.to_json(), mimetype="application/json")
    response.headers["Content-Disposition"] = f'attachment; filename="audit-{game_id}.json"'
    return response


@bp.get("/games/<game_id>/audit.csv")
def audit_csv(game_id: str):
    if (pages := pages_for(game_id)) is not None:
        return pages.audit_csv(game_id)
    report = _report(game_id)
    response = Response(report.to_csv(), mimetype="text/csv")
    response.headers["Content-Disposition"] = f'attachment; filename="audit-{game_id}.csv"'
    return response
