"""The fair-play review page, ``/fairplay``: flagged players and pairs of a period with their
signal, strength, games and evidence moves (each a link into the staff replay at that move),
for dispute officers, auditors and admins; never players.

The page reads the kept statistics (``replays/fairplay/tables.py``; ``rummy-ledger fairplay``
brings them up to date) and writes one access-log line per flag shown. From a flag, a dispute
officer opens a case that records the flag and its evidence in the case's events; the flag
is looked up again on the server, so what is recorded is the review's, not the form's.
"""

from __future__ import annotations

from datetime import date, timedelta

import sqlalchemy as sa
from flask import Blueprint, abort, current_app, flash, redirect, render_template, request, url_for
from flask_wtf import FlaskForm
from sqlalchemy.orm import Session
from wtforms import HiddenField
from wtforms.validators import DataRequired, Length

from replays.access.accounts import ADMIN, AUDITOR, DISPUTE_OFFICER
from replays.disputes.cases import Disputes, NotAllowed
from replays.fairplay.projection import fill_evidence, load_period, pending
from replays.fairplay.signals import review
from replays.fairplay.tables import FairplayGame, FairplayTableDay
from replays.store.db import engine_for
from web.auth import current_account, role_required
from web.ledger import get_ledger

bp = Blueprint("fairplay", __name__, url_prefix="/fairplay")

STAFF = (DISPUTE_OFFICER, AUDITOR, ADMIN)
PERIOD_DAYS = 30


class FlagCaseForm(FlaskForm):
    key = HiddenField(validators=[DataRequired(), Length(max=200)])
    date_from = HiddenField(validators=[DataRequired(), Length(max=10)])
    date_to = HiddenField(validators=[DataRequired(), Length(max=10)])
    table = HiddenField(validators=[Length(max=64)])


def _day(text: str | None, name: str) -> str | None:
    if not text:
        return None
    try:
        return date.fromisoformat(text.strip()).isoformat()
    except ValueError:
        abort(400, f"{name} must be a day like 2025-03-01, not {text[:20]!r}.")


def _period(args) -> tuple[str, str, str | None]:
    start, end = _day(args.get("from"), "from"), _day(args.get("to"), "to")
    table = (args.get("table") or "").strip()[:64] or None
    if start is None or end is None:
        with Session(engine_for(current_app.config["DATABASE_URL"])) as session:
            last = session.scalar(sa.select(sa.func.max(FairplayTableDay.day)))
        last_day = date.fromisoformat(last) if last else date.today()
        end = end or last_day.isoformat()
        start = start or (date.fromisoformat(end) - timedelta(days=PERIOD_DAYS - 1)).isoformat()
    if end < start:
        abort(400, f"to ({end}) is before from ({start}).")
    return start, end, table


# Reviews already worked out, by database, period and how many games were counted: a
# period's review changes only when games are counted, so a second look costs no statistics.
_REVIEWS: dict[tuple, object] = {}
KEPT_REVIEWS = 16


def _review(start: str, end: str, table: str | None):
    url = current_app.config["DATABASE_URL"]
    with Session(engine_for(url)) as session:
        counted = session.scalar(sa.select(sa.func.count()).select_from(FairplayGame))
        waiting = len(pending(session, 1000))
        key = (url, start, end, table, counted)
        result = _REVIEWS.get(key)
        if result is None:
            # The period's sums are done in the database: one row per player and per pair.
            result = review(load_period(session, start, end, table), start, end, table=table)
            fill_evidence(session, result, table)
            if len(_REVIEWS) >= KEPT_REVIEWS:
                _REVIEWS.pop(next(iter(_REVIEWS)))
            _REVIEWS[key] = result
    return result, waiting


@bp.get("")
@role_required(*STAFF)
def index():
    start, end, table = _period(request.args)
    result, waiting = _review(start, end, table)
    account = current_account()
    _log_flags(account, result.flags)
    return render_template(
        "fairplay/index.html",
        result=result,
        flags=[flag.to_dict() for flag in result.flags],
        waiting=waiting,
        officer=account.role == DISPUTE_OFFICER,
        form=FlagCaseForm(formdata=None),
        query={"from": start, "to": end, **({"table": table} if table else {})},
    )


@bp.post("/case")
@role_required(DISPUTE_OFFICER)
def open_case():
    form = FlagCaseForm()
    if not form.validate_on_submit():
        abort(400, "The flag to open a case from was not given.")
    start, end, table = _period(
        {"from": form.date_from.data, "to": form.date_to.data, "table": form.table.data}
    )
    result, _ = _review(start, end, table)
    flag = next((f for f in result.flags if f.key == form.key.data), None)
    if flag is None:
        abort(404, f"No flag {form.key.data[:80]!r} in the review of {start} to {end}.")
    try:
        case = Disputes(get_ledger()).open_from_flag(current_account(), flag.to_dict())
    except NotAllowed as error:
        abort(403, str(error))
    flash(f"Case {case.case_id} opened from the flag.")
    return redirect(url_for("disputes.case", case_id=case.case_id))


def _log_flags(account, flags) -> None:
    """Every flag shown is a line in the access log (what staff see is on the record)."""
    from datetime import UTC, datetime

    from replays.access.access_log import TABLE

    if not flags:
        return
    # One short transaction for all the lines (as record_access writes one): a month can
    # show dozens of flags, and a round trip each would be most of the page's time.
    at = datetime.now(UTC)
    rows = []
    for flag in flags:
        first = flag.evidence[0] if flag.evidence else None
        rows.append(
            {
                "at": at,
                "username": account.username[:64],
                "role": account.role[:16],
                "game_id": (first.game_id if first else "")[:64],
                "move": first.step if first else None,
                "view": f"fairplay:{flag.key}"[:80],
                "page": "fairplay.index",
                "remote_addr": (request.remote_addr or "")[:64] or None,
            }
        )
    with engine_for(current_app.config["DATABASE_URL"]).begin() as connection:
        connection.execute(TABLE.insert(), rows)
