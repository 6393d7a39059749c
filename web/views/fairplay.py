"""The fair-play review page, ``/fairplay``: flagged players and pairs of a period with their
signal, strength, games and evidence moves (each a link into the staff replay at that move),
for dispute officers, auditors and admins; never players.

The page reads the kept statistics (``replays/fairplay/tables.py``; ``rummy-ledger fairplay``
brings them up to date) and writes one access-log line per flag shown. It shows a calendar
month by default; each month's review is worked out by the catch-up and kept
(``fairplay_reviews``), so the page reads it rather than works it out while the officer
waits; another period is worked out on its first look and kept too. A kept review is used
only while it still counts every game of its period, and the page says when it was worked
out. From a flag, a dispute
officer opens a case that records the flag and its evidence in the case's events; the flag
is looked up again on the server, so what is recorded is the review's, not the form's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime

import sqlalchemy as sa
from flask import (
    Blueprint,
    abort,
    current_app,
    flash,
    g,
    redirect,
    render_template,
    request,
    url_for,
)
from flask_wtf import FlaskForm
from markupsafe import Markup, escape
from sqlalchemy.orm import Session
from wtforms import HiddenField
from wtforms.validators import DataRequired, Length

from domain.timestamps import days_before
from replays.access.accounts import ADMIN, AUDITOR, DISPUTE_OFFICER
from replays.disputes.cases import Disputes, NotAllowed
from replays.fairplay.projection import (
    aside,
    keep_review,
    kept_review,
    month_period,
    period_games,
    work_out,
)
from replays.fairplay.tables import FairplayGame, FairplayTableDay
from replays.readmodels.models import GameRow
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
        # The calendar month of the last day counted (its review is kept): the month in
        # progress, refreshed as its days are counted.
        with Session(engine_for(current_app.config["DATABASE_URL"])) as session:
            last = session.scalar(sa.select(sa.func.max(FairplayTableDay.day)))
        last_day = date.fromisoformat(last) if last else date.today()
        if end is None and start is None:
            start, end = month_period(last_day.isoformat()[:7])
        elif start is None:
            start = days_before(date.fromisoformat(end), PERIOD_DAYS - 1).isoformat()
        else:
            end = month_period(start[:7])[1]
    if end < start:
        abort(400, f"to ({end}) is before from ({start}).")
    return start, end, table


@dataclass
class Shown:
    """A review as the page shows it: when it was worked out, and whether it was kept."""

    result: object
    made_at: datetime
    kept: bool


# Reviews already read or worked out in this process, by database, period and the period's
# games counted: a second look costs neither the statistics nor reading the kept review.
_REVIEWS: dict[tuple, Shown] = {}
KEPT_REVIEWS = 16


def _review(start: str, end: str, table: str | None) -> Shown:
    masked = g.get("masked_connection")
    if masked is not None:
        # Drawn around unreadable rows (web/unreadable.py): worked out through the one
        # connection that hides them, and neither kept nor remembered, since it is not the
        # period's review.
        with Session(bind=masked) as session:
            return Shown(work_out(session, start, end, table), datetime.now(UTC), False)
    url = current_app.config["DATABASE_URL"]
    with Session(engine_for(url)) as session:
        games = period_games(session, start, end, table)
        key = (url, start, end, table, games)
        shown = _REVIEWS.get(key)
        if shown is None:
            kept = kept_review(session, start, end, table)
            if kept is not None:
                shown = Shown(kept[0], kept[1], True)
            else:
                # Not kept (another period, or games counted since): worked out now from
                # the period's sums in the database, and kept for the next look.
                result = work_out(session, start, end, table)
                made_at = datetime.now(UTC)
                try:
                    keep_review(session, result, made_at)
                    session.commit()
                except sa.exc.IntegrityError:
                    # Another look at the same period kept its review first. PostgreSQL
                    # says so at the INSERT (it waited there for the other's commit),
                    # SQLite at the commit: either way this look shows what it worked out.
                    session.rollback()
                shown = Shown(result, made_at, False)
            if len(_REVIEWS) >= KEPT_REVIEWS:
                _REVIEWS.pop(next(iter(_REVIEWS)))
            _REVIEWS[key] = shown
    return shown


def _replay_link():
    """``url_for``'s link to the staff replay at a move, ``url_for`` asked once: a review's
    hundreds of evidence links, each made by it, were a tenth of a first look's time."""
    mark = "game"
    head, _, tail = url_for("replays.replay", game_id=mark, move=0).rpartition(mark)
    tail = tail.removesuffix("0")
    # The route's ``<game_id>``, written as ``url_for`` writes it (the default converter).
    url_map = current_app.url_map
    segment = url_map.converters["default"](url_map).to_url
    return lambda game_id, move: f"{head}{segment(game_id)}{tail}{move}"


def _waiting(url: str) -> int:
    """Ended games not counted yet: two counts, not an anti-join over every game."""
    with Session(engine_for(url)) as session:
        run = session.connection().execute
        ended = run(
            sa.select(sa.func.count()).select_from(GameRow).where(GameRow.ended_on.is_not(None))
        ).scalar_one()
        counted = run(sa.select(sa.func.count()).select_from(FairplayGame)).scalar_one()
    return max(0, ended - counted)


def _evidence_items(link):
    """A flag's evidence moves as the page lists them, each line
    ``<li><a class="evidence-link" href="(the replay at the move)">(game), move (n)</a> (note)</li>``
    after a newline, escaped as the template escapes: a review's thousand-odd moves written
    by the template's loop, a call and four lookups through Jinja each, were most of its
    rendering."""

    def items(evidence) -> Markup:
        return Markup(
            "".join(
                f'\n    <li><a class="evidence-link" href="{escape(link(e.game_id, e.step))}">'
                f"{escape(e.game_id)}, move {escape(e.step)}</a> {escape(e.note)}</li>"
                for e in evidence
            )
        )

    return items


@bp.get("")
@role_required(*STAFF)
def index():
    # Counted while the review is read or worked out (waiting on the database, mostly).
    # Not so the writes after it: they would wait for the interpreter's lock behind the page
    # being drawn, as the access log's writer thread did (``send_access``).
    waiting = aside(_waiting, current_app.config["DATABASE_URL"])
    start, end, table = _period(request.args)
    shown = _review(start, end, table)
    result = shown.result
    account = current_account()
    _log_flags(account, result.flags)
    return render_template(
        "fairplay/index.html",
        result=result,
        shown=shown,
        flags=result.flags,
        waiting=waiting.result(),
        evidence_items=_evidence_items(_replay_link()),
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
    result = _review(start, end, table).result
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
    from replays.access.access_log import record_views

    if not flags:
        return
    # One short transaction for all the lines (as record_access writes one): a month can
    # show dozens of flags, and a round trip each would be most of the page's time.
    views = []
    for flag in flags:
        first = flag.evidence[0] if flag.evidence else None
        views.append(
            (first.game_id if first else "", first.step if first else None, f"fairplay:{flag.key}")
        )
    record_views(
        current_app.config["DATABASE_URL"],
        views,
        username=account.username,
        role=account.role,
        page="fairplay.index",
        remote_addr=request.remote_addr,
        at=datetime.now(UTC),
    )
