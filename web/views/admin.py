"""Admin pages: the access log (browse with filters, export as CSV) and the user accounts
(list, add, disable, enable). Admins only.

The access log is read here and never changed: there is no edit or delete anywhere
(:mod:`replays.access.access_log`).
"""

from __future__ import annotations

from flask import (
    Blueprint,
    Response,
    abort,
    current_app,
    flash,
    g,
    redirect,
    render_template,
    request,
    stream_with_context,
    url_for,
)
from flask_wtf import FlaskForm
from wtforms import PasswordField, SelectField, StringField
from wtforms.validators import DataRequired, Length, Optional

from replays.access import access_log, accounts
from replays.access.accounts import ADMIN, ROLES
from web.auth import current_account, role_required
from web.ledger import read_session
from web.unreadable import note

bp = Blueprint("admin", __name__, url_prefix="/admin")
PER_PAGE = 50
ROWS_PER_SESSION = 10  # log rows read per page: about PER_PAGE sessions of stepping


@bp.get("")
@role_required(ADMIN)
def index():
    return redirect(url_for("admin.access_log_page"))


# -- the access log -----------------------------------------------------------------------


def _filters() -> access_log.AccessFilter:
    try:
        return access_log.AccessFilter.from_args(request.args)
    except access_log.AccessLogError as error:
        abort(400, f"Access log: {error}.")


@bp.get("/access-log")
@role_required(ADMIN)
def access_log_page():
    filters = _filters()
    page_text = request.args.get("page", "1")
    if not page_text.isdecimal() or not 1 <= int(page_text) <= 10**7:
        abort(400, f"Access log: 'page' must be a whole number from 1, not {page_text!r}.")
    with read_session() as session:
        page = access_log.browse(session, filters, int(page_text), PER_PAGE * ROWS_PER_SESSION)
    # Stepping through a replay writes a row per step; the page reads as viewing sessions.
    return render_template(
        "admin/access_log.html",
        filters=filters,
        page=page,
        sessions=access_log.sessions(page.rows),
    )


@bp.get("/access-log.csv")
@role_required(ADMIN)
def access_log_csv():
    filters = _filters()
    lines = access_log.csv_lines(current_app.config["DATABASE_URL"], filters)
    response = Response(stream_with_context(lines), mimetype="text/csv")
    response.headers["Content-Disposition"] = 'attachment; filename="access-log.csv"'
    return response


# -- users --------------------------------------------------------------------------------


class AddUserForm(FlaskForm):
    username = StringField(
        "Username", validators=[DataRequired("Give a username."), Length(max=64)]
    )
    role = SelectField("Role", choices={r: accounts.ROLE_WORDS[r] for r in ROLES})
    player = StringField("Player id (players only)", validators=[Optional(), Length(max=64)])
    password = PasswordField(
        "Password",
        validators=[
            DataRequired("Give a password."),
            Length(
                min=accounts.MIN_PASSWORD,
                max=accounts.MAX_PASSWORD,
                message=f"The password must be {accounts.MIN_PASSWORD} to "
                f"{accounts.MAX_PASSWORD} characters long.",
            ),
        ],
    )


class AccountActionForm(FlaskForm):
    """Disable or enable: only the CSRF token travels."""


def _users_page(form: AddUserForm, status: int = 200):
    listing = accounts.list_users(url=current_app.config["DATABASE_URL"])
    if listing.unreadable:
        # Named above the table (layout's notice), as any page drawn without a row is.
        g.unreadable = listing.unreadable
        note(listing.unreadable)
    return render_template(
        "admin/users.html",
        users=listing,
        form=form,
        action_form=AccountActionForm(formdata=None),
    ), status


@bp.get("/users")
@role_required(ADMIN)
def users():
    return _users_page(AddUserForm(formdata=None))


@bp.post("/users")
@role_required(ADMIN)
def add_user():
    form = AddUserForm()
    if form.validate_on_submit():
        try:
            account = accounts.add_user(
                form.username.data,
                form.role.data,
                form.password.data,
                player=form.player.data or None,
                url=current_app.config["DATABASE_URL"],
            )
        except accounts.AccountError as error:
            field = getattr(form, error.field or "", None) or form.username
            field.errors = [*field.errors, error.reason]
        else:
            flash(f"Account {account.username} ({account.role_words}) added.")
            return redirect(url_for("admin.users"))
    return _users_page(form, 400)


def _account_action(username: str, action, done: str):
    if not AccountActionForm().validate_on_submit():
        abort(400, "The form was not sent from this site (missing or stale CSRF token).")
    if username == current_account().username and action is accounts.disable_user:
        abort(400, "You cannot disable your own account.")
    try:
        account = action(username, url=current_app.config["DATABASE_URL"])
    except accounts.AccountError as error:
        abort(404, str(error))
    flash(f"Account {account.username} {done}.")
    return redirect(url_for("admin.users"))


@bp.post("/users/<username>/disable")
@role_required(ADMIN)
def disable_user(username: str):
    return _account_action(username, accounts.disable_user, "disabled")


@bp.post("/users/<username>/enable")
@role_required(ADMIN)
def enable_user(username: str):
    return _account_action(username, accounts.enable_user, "enabled")
