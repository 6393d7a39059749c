"""Dispute cases on the site: the list of cases with their age, opening a case at a move,
and the case page (its timeline beside the table at the contested move, and the officer's
forms for notes, evidence and the decision).

Thin handlers: each form is checked for shape by Flask-WTF (with its CSRF token), then one
use case of :class:`replays.disputes.cases.Disputes` decides; a refused step comes back as the
domain's message beside the field it concerns, and nothing is recorded.
"""

from __future__ import annotations

from datetime import UTC, datetime

from flask import Blueprint, abort, current_app, flash, redirect, render_template, request, url_for
from flask_wtf import FlaskForm
from wtforms import IntegerField, SelectField, StringField, TextAreaField
from wtforms.validators import DataRequired, InputRequired, Length, NumberRange, Optional

from domain.dispute import DECISIONS, MAX_LABEL, MAX_LINK, MAX_TEXT, DisputeError
from replays.access.accounts import ADMIN, AUDITOR, DISPUTE_OFFICER, PLAYER, ROLES
from replays.disputes.cases import (
    CaseNotFound,
    Disputes,
    GameUnknown,
    NotAllowed,
    case_age,
    list_cases,
)
from web.auth import current_account, opened_in_full, role_required, viewer_seat
from web.case_views import case_view
from web.ledger import get_ledger, read_session

bp = Blueprint("disputes", __name__, url_prefix="/disputes")

STATUSES = ("open", "closed", "all")
OPENERS = (DISPUTE_OFFICER, PLAYER)


def _disputes() -> Disputes:
    return Disputes(get_ledger())


class OpenCaseForm(FlaskForm):
    game = StringField("Game", validators=[DataRequired("Name the game."), Length(max=64)])
    move = IntegerField(
        "Contested move",
        validators=[
            InputRequired("Give the move number (0 is the deal)."),
            NumberRange(min=0, max=100_000, message="The move is a number from 0."),
        ],
    )
    description = TextAreaField(
        "What is disputed",
        validators=[DataRequired("Say what is disputed."), Length(max=MAX_TEXT)],
    )


class NoteForm(FlaskForm):
    text = TextAreaField("Note", validators=[DataRequired("Write the note."), Length(max=MAX_TEXT)])


class EvidenceForm(FlaskForm):
    link = StringField(
        "Link", validators=[DataRequired("Give the link (https://...)."), Length(max=MAX_LINK)]
    )
    label = StringField("What it shows", validators=[Optional(), Length(max=MAX_LABEL)])


class CloseForm(FlaskForm):
    # No decision is chosen for the officer: an empty first choice, so that closing a case
    # "upheld" is a choice someone made, never a default that slipped through.
    decision = SelectField(
        "Decision",
        choices={"": "choose…", **{d: d for d in DECISIONS}},
        default="",
        validators=[DataRequired("Choose a decision.")],
    )
    reason = TextAreaField(
        "Reason", validators=[DataRequired("Give the reason."), Length(max=MAX_TEXT)]
    )
    amount = StringField("Amount", validators=[Optional(), Length(max=20)])
    credited = SelectField("Credited player", choices={"": "—"}, validate_choice=False)
    debited = SelectField("Debited player", choices={"": "—"}, validate_choice=False)


def _field_error(form: FlaskForm, error: DisputeError, default: str) -> None:
    field = getattr(form, error.field or "", None) or getattr(form, default)
    field.errors = [*field.errors, error.reason]


# -- the list ---------------------------------------------------------------------------


@bp.get("")
@role_required(*ROLES)
def index():
    status = request.args.get("status", "open")
    if status not in STATUSES:
        abort(400, f"Disputes: 'status' must be one of {', '.join(STATUSES)}, not {status!r}.")
    game_id = (request.args.get("game") or "").strip()[:64] or None
    with read_session() as session:
        cases = list_cases(
            session,
            status=None if status == "all" else status,
            game_id=game_id,
            actor=current_account(),
        )
    now = datetime.now(UTC)
    return render_template(
        "disputes/list.html",
        cases=cases,
        status=status,
        statuses=STATUSES,
        game_id=game_id,
        age=lambda case: case_age(case.opened_at, now),
        may_open=current_account().role in OPENERS,
    )


# -- opening a case ----------------------------------------------------------------------


@bp.route("/new", methods=["GET", "POST"])
@role_required(*OPENERS)
def new():
    form = OpenCaseForm()
    if request.method == "GET":
        form.game.data = request.args.get("game", "")[:64]
        move = request.args.get("move", "")
        form.move.data = int(move) if move.isdecimal() and len(move) < 7 else None
        return render_template("disputes/new.html", form=form)
    if form.validate_on_submit():
        try:
            case = _disputes().open_case(
                current_account(), form.game.data.strip(), form.move.data, form.description.data
            )
        except GameUnknown as error:
            form.game.errors = [*form.game.errors, f"{error}."]
        except NotAllowed as error:
            abort(403, str(error))
        except DisputeError as error:
            _field_error(form, error, "description")
        else:
            flash(f"Case {case.case_id} opened.")
            return redirect(url_for("disputes.case", case_id=case.case_id))
    return render_template("disputes/new.html", form=form), 400


# -- one case ----------------------------------------------------------------------------


def _read(case_id: str):
    try:
        return _disputes().read_case(current_account(), case_id)
    except CaseNotFound:
        abort(404, f"No dispute case {case_id[:80]!r}.")


def _move_arg(case, last: int | None) -> int:
    """The move whose table the page shows: ``?move=`` when given, else the contested one
    (a case opened past the game's last move, before the move range was one rule, shows
    the last)."""
    text = request.args.get("move", "").strip()
    if not text:
        return case.move if last is None else min(case.move, last)
    if not text.isdecimal() or (last is not None and int(text) > last):
        bound = f" from 0 to {last}" if last is not None else ""
        abort(400, f"Case {case.case_id}: move must be a whole number{bound}, not {text!r}.")
    return int(text)


def _case_page(case, forms: dict | None = None, status: int = 200):
    seat = viewer_seat()
    # The game as its own pages show it (web/case_views.py): the move range, the moves
    # around the contested one and the hands as scored, the same sections for every type.
    view = case_view(case.game_id, case.move, seat)
    last = None if view is None else view.last
    move = _move_arg(case, last)
    account = current_account()
    if seat is None and view is not None and view.moves:
        # The moves around the contested one name cards drawn from the stock: a full view.
        opened_in_full(case.game_id, move)
    officer = account.role == DISPUTE_OFFICER and case.status == "open"
    forms = forms or {}
    close_form = forms.get("close") or CloseForm(formdata=None)
    players = {"": "—", **{p: p for p in case.players}}
    close_form.credited.choices = players
    close_form.debited.choices = players
    return render_template(
        "disputes/case.html",
        case=case,
        move=move,
        total=last,
        contested=case.move if last is None else min(case.move, last),
        seat=seat,
        view=view,
        age=case_age(_time(case.opened_at)),
        officer=officer,
        reader=account.role in (AUDITOR, DISPUTE_OFFICER, ADMIN),
        note_form=forms.get("note") or NoteForm(formdata=None),
        evidence_form=forms.get("evidence") or EvidenceForm(formdata=None),
        close_form=close_form,
    ), status


def _time(text: str | None) -> datetime | None:
    from domain.timestamps import parse_time

    return parse_time(text) if text else None


@bp.get("/<case_id>")
@role_required(*ROLES)
def case(case_id: str):
    return _case_page(_read(case_id))


def _officer_step(case_id: str, name: str, form: FlaskForm, field: str, step):
    case = _read(case_id)
    if form.validate_on_submit():
        try:
            step(case)
        except NotAllowed as error:
            abort(403, str(error))
        except DisputeError as error:
            _field_error(form, error, field)
        else:
            return redirect(url_for("disputes.case", case_id=case_id) + "#timeline")
    current_app.logger.info("case %s: %s refused: %s", case_id, name, form.errors)
    return _case_page(case, {name: form}, 400)


@bp.post("/<case_id>/notes")
@role_required(DISPUTE_OFFICER)
def add_note(case_id: str):
    form = NoteForm()
    return _officer_step(
        case_id,
        "note",
        form,
        "text",
        lambda case: _disputes().add_note(current_account(), case.case_id, form.text.data),
    )


@bp.post("/<case_id>/evidence")
@role_required(DISPUTE_OFFICER)
def add_evidence(case_id: str):
    form = EvidenceForm()
    return _officer_step(
        case_id,
        "evidence",
        form,
        "link",
        lambda case: _disputes().add_evidence(
            current_account(), case.case_id, form.link.data, label=form.label.data or ""
        ),
    )


@bp.post("/<case_id>/close")
@role_required(DISPUTE_OFFICER)
def close(case_id: str):
    form = CloseForm()
    return _officer_step(
        case_id,
        "close",
        form,
        "decision",
        lambda case: _disputes().close_case(
            current_account(),
            case.case_id,
            form.decision.data,
            reason=form.reason.data,
            amount=(form.amount.data or "").strip() or None,
            credited=form.credited.data or None,
            debited=form.debited.data or None,
        ),
    )
