"""Who may see what: sign-in, roles, the access policy of every page, the access log hook,
CSRF protection and the security headers.

Registered as the ``auth`` blueprint (``web.auth:bp`` in :data:`web.BLUEPRINTS`); on
registration it sets up Flask-Login and Flask-WTF's CSRF protection for the whole app.

- Every endpoint needs a signed-in user except :data:`PUBLIC_ENDPOINTS` (the login page,
  the health, readiness and metrics endpoints, static files); the ingest API (``api.*``) authenticates operators with
  its own bearer tokens instead and is exempt from CSRF (no cookies are involved).
- Each endpoint's allowed roles come from its view's ``role_required`` decorator or from
  :data:`POLICY` (pages written before accounts existed). An endpoint in neither is open
  to staff only: never to players by accident. ``tests/test_access_matrix.py`` holds every
  route against every role.
- A player sees only games they sat in (any other game is "not among your games", the same
  answer as for a game that does not exist) and only their own seat: a replay without
  ``seat`` is redirected to theirs, another seat is refused.
- Every privileged opening of a game by staff (full view, another seat, the audit) is
  appended to the access log (:mod:`replays.access.access_log`), committed before the page
  is shown; if the log cannot be written the page is withheld. The line is sent as soon as
  the page has found its game and checked its arguments (:func:`access_line_ready`, or
  when it starts being drawn), so its commit overlaps the rest of the page's work.
- The signed-in account is read on the primary, so that signing out or disabling an account
  takes effect at once. A page a read replica serves reads it on the replica instead and
  has the primary confirm it before the page is shown, in the statement that writes the
  page's access-log line (or alone, for a page without one): the busy primary gets one
  statement a page, and a session signed out there is refused even while the replica
  still has the old session key.

Cookies: the session cookie is HttpOnly, SameSite=Lax, and Secure unless
``RUMMY_LEDGER_SECURE_COOKIES=0`` (or the app's ``SESSION_COOKIE_SECURE`` config) says
otherwise; ``rummy-ledger serve``/``demo`` on a loopback address turn Secure off because
they speak plain HTTP. See ``docs/dispute-officer-guide.md`` (Running the site).
"""

from __future__ import annotations

import os
from datetime import timedelta
from functools import wraps
from urllib.parse import urlsplit

from flask import (
    Blueprint,
    abort,
    before_render_template,
    current_app,
    flash,
    g,
    jsonify,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask_login import LoginManager, UserMixin, current_user, login_user, logout_user
from flask_wtf import FlaskForm
from flask_wtf.csrf import CSRFProtect
from sqlalchemy.exc import SQLAlchemyError
from werkzeug.middleware.proxy_fix import ProxyFix
from wtforms import HiddenField, PasswordField, StringField
from wtforms.validators import DataRequired, Length

from replays.access import accounts
from replays.access.accounts import ADMIN, AUDITOR, DISPUTE_OFFICER, PLAYER, ROLES

bp = Blueprint("auth", __name__)
login_manager = LoginManager()
csrf = CSRFProtect()

ALL = frozenset(ROLES)
STAFF = frozenset({AUDITOR, DISPUTE_OFFICER, ADMIN})
# /metrics checks its own readers (staff or RUMMY_LEDGER_METRICS_ALLOW, web/ops.py).
PUBLIC_ENDPOINTS = frozenset({"auth.login", "healthz", "readyz", "metrics", "static"})
API_PREFIX = "/api/"

# Pages from before accounts existed. Game pages are open to every role; for a player they
# are narrowed to their own games and seat (see _player_scope).
POLICY: dict[str, frozenset[str]] = {
    "games.index": ALL,
    "games.game": ALL,
    "replays.replay": ALL,
    "replays.table_fragment": ALL,
    "replays.table_image": ALL,
    "players.player": ALL,
    "audit.audit": STAFF,
    "audit.audit_json": STAFF,
    "audit.audit_csv": STAFF,
}
# Endpoints that show one seat's cards (``seat`` argument) and so are limited to the
# player's own seat.
SEAT_ENDPOINTS = frozenset({"replays.replay", "replays.table_fragment", "replays.table_image"})
# Parts of a page fetched by script or embedded as an image: a missing session is a 401,
# not a redirect to the login page.
PART_ENDPOINTS = frozenset(
    {"replays.table_fragment", "replays.table_image", "reports.integrity_part"}
)
# Privileged openings of a game written to the access log, and the view each one is.
LOGGED_VIEWS = {
    "games.game": "full",
    "replays.replay": "full",
    "replays.table_fragment": "full",
    "replays.table_image": "full",
    "audit.audit": "audit",
    "audit.audit_json": "audit.json",
    "audit.audit_csv": "audit.csv",
}

# The audit pages' print buttons (onclick="window.print()") are the only inline script;
# CSP allows exactly that text by its hash.
PRINT_HANDLER_HASH = "'sha256-MguIPR6qNR8D3B+eAlK+bIRTZe8t3wkOY4B/56Me9FU='"
CONTENT_SECURITY_POLICY = "; ".join(
    (
        "default-src 'self'",
        f"script-src 'self' 'unsafe-hashes' {PRINT_HANDLER_HASH}",
        "style-src 'self'",
        "img-src 'self' data:",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=()",
}


def secure_cookies_from_env() -> bool:
    """``RUMMY_LEDGER_SECURE_COOKIES`` (default on): whether session cookies are Secure."""
    value = os.environ.get("RUMMY_LEDGER_SECURE_COOKIES", "1").strip().lower()
    return value not in ("0", "false", "no", "off")


def cookie_settings() -> dict:
    """The session cookie flags ``create_app`` starts from (config can override them)."""
    return {
        "SESSION_COOKIE_SECURE": secure_cookies_from_env(),
        "SESSION_COOKIE_HTTPONLY": True,
        "SESSION_COOKIE_SAMESITE": "Lax",
        "REMEMBER_COOKIE_SECURE": secure_cookies_from_env(),
        "REMEMBER_COOKIE_HTTPONLY": True,
        "REMEMBER_COOKIE_SAMESITE": "Lax",
        "PERMANENT_SESSION_LIFETIME": timedelta(hours=8),
    }


class SignedIn(UserMixin):
    """Flask-Login's view of an :class:`~replays.access.accounts.Account`."""

    def __init__(self, account: accounts.Account):
        self.account = account

    def get_id(self) -> str:
        # The session key rotates when the account is disabled or its password changes,
        # which ends every session signed in before.
        return f"{self.account.id}:{self.account.session_key}"

    @property
    def is_active(self) -> bool:
        return self.account.active


def current_account() -> accounts.Account | None:
    """The signed-in account of this request, or None."""
    user = current_user
    if user is None or not getattr(user, "is_authenticated", False):
        return None
    return user.account


def viewer_seat() -> str | None:
    """The only seat the signed-in user may see (a player's own), or None for staff."""
    account = current_account()
    return account.player_id if account is not None and account.role == PLAYER else None


def may_open_player(player_id: str | None) -> bool:
    """Whether the signed-in user may open ``/players/<player_id>``: the one rule every page
    asks before linking a player id (a player opens only their own history, as
    :func:`_player_scope` enforces; staff open every player's)."""
    account = current_account()
    if account is None or not player_id:
        return False
    roles = allowed_roles("players.player")
    if roles is not None and account.role not in roles:
        return False
    return account.role != PLAYER or account.player_id == player_id


def role_required(*roles: str):
    """Limit a view to these roles (a signed-in user of another role gets a 403).

    >>> @bp.get("/example")  # doctest: +SKIP
    ... @role_required("admin")
    ... def example(): ...
    """
    for role in roles:
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r}")

    def decorate(view):
        @wraps(view)
        def wrapped(*args, **kwargs):
            account = current_account()
            if account is None:
                return _sign_in_first()
            if account.role not in roles:
                _deny(account, roles)
            return view(*args, **kwargs)

        wrapped.allowed_roles = frozenset(roles)
        return wrapped

    return decorate


def allowed_roles(endpoint: str) -> frozenset[str] | None:
    """The roles an endpoint is open to (None: public)."""
    if endpoint in PUBLIC_ENDPOINTS:
        return None
    view = current_app.view_functions.get(endpoint)
    declared = getattr(view, "allowed_roles", None)
    if declared is not None:
        return declared
    return POLICY.get(endpoint, STAFF)


def _deny(account: accounts.Account, roles) -> None:
    words = ", ".join(accounts.ROLE_WORDS[r] for r in ROLES if r in roles)
    abort(403, f"This page is for: {words}. You are signed in as {account.role_words}.")


def _sign_in_first():
    if request.endpoint in PART_ENDPOINTS or _wants_json() or request.method != "GET":
        response = jsonify({"error": "sign in first", "status": 401})
        response.status_code = 401
        return response
    return redirect(url_for("auth.login", next=request.full_path.rstrip("?")))


def _wants_json() -> bool:
    best = request.accept_mimetypes.best_match(["text/html", "application/json"])
    return best == "application/json"


# -- setup --------------------------------------------------------------------------------


@bp.record_once
def _setup(state) -> None:
    app = state.app
    app.config.setdefault("LOGIN_RATE_LIMIT", True)
    app.config["ACCESS_LOG_COMMIT"] = access_log_commit(app.config.get("ACCESS_LOG_COMMIT"))
    proxies = trusted_proxies(app.config.get("TRUSTED_PROXIES"))
    if proxies:
        # Only then is X-Forwarded-For believed (the last ``proxies`` hops of it): otherwise
        # anyone could name a fresh address per try and walk past the sign-in throttle.
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=proxies, x_proto=proxies)
    login_manager.init_app(app)
    login_manager.session_protection = "basic"
    csrf.init_app(app)
    from web.api import bp as api_bp

    csrf.exempt(api_bp)
    before_render_template.connect(_start_access_line, app)
    app.jinja_env.globals.update(
        current_account=current_account, viewer_seat=viewer_seat, may_open_player=may_open_player
    )


def trusted_proxies(configured: object = None) -> int:
    """How many reverse proxies in front of the site to believe: the app's
    ``TRUSTED_PROXIES`` config, else ``RUMMY_LEDGER_TRUSTED_PROXIES``, else 0 (none: the
    address that counts is the one that connected)."""
    value = configured
    if value is None:
        value = os.environ.get("RUMMY_LEDGER_TRUSTED_PROXIES", "0").strip() or "0"
    try:
        count = int(value)
    except (TypeError, ValueError):
        count = -1
    if count < 0 or count > 10:
        raise ValueError(
            f"RUMMY_LEDGER_TRUSTED_PROXIES={value!r}: give how many reverse proxies to trust "
            "(0-10; 0 trusts no X-Forwarded-For)"
        )
    return count


def access_log_commit(configured: object = None) -> str:
    """What an access-log line's commit waits for (:data:`COMMIT_LEVELS`): the app's
    ``ACCESS_LOG_COMMIT`` config, else ``RUMMY_LEDGER_ACCESS_LOG_COMMIT``, else ``on``."""
    from replays.access.access_log import COMMIT_LEVELS

    value = configured
    if value is None:
        value = os.environ.get("RUMMY_LEDGER_ACCESS_LOG_COMMIT", "on").strip() or "on"
    if value not in COMMIT_LEVELS:
        raise ValueError(
            f"RUMMY_LEDGER_ACCESS_LOG_COMMIT={value!r}: give on (the default: the synchronous "
            "standby has flushed each line) or remote_write (it has received it)"
        )
    return value


NO_ACCOUNTS = "Accounts cannot be read from the database. Is it migrated (rummy-ledger db upgrade)?"


@login_manager.user_loader
def _load_user(session_id: str):
    try:
        account = _replica_account(session_id) or accounts.load_session_user(
            session_id, url=current_app.config["DATABASE_URL"]
        )
    except SQLAlchemyError as error:
        from replays.store.replicas import is_connection_error

        if is_connection_error(error):
            raise  # no database answers: the 503 page, not a sign-in form that cannot work
        # Treated as signed out; the login page then says what is wrong.
        current_app.logger.exception("cannot load the signed-in account")
        return None
    except (ValueError, TypeError, KeyError):
        # Treated as signed out; the login page then says what is wrong. A stored value of
        # the wrong kind in the account's row (issue 29) is no reason to fail every page.
        current_app.logger.exception("cannot load the signed-in account")
        return None
    return None if account is None else SignedIn(account)


def _replica_account(session_id: str) -> accounts.Account | None:
    """On a page a read replica serves: the account as the replica has it, to be confirmed
    on the primary before the page is shown (:func:`_confirm_replica_account`), so the page
    sends the busy primary one statement, not two. None (ask the primary now) on any other
    request, or when the replica does not know this session: an account created, or a
    session signed in, since the replica last caught up."""
    from web.ledger import served_by_replica

    if not served_by_replica():
        return None
    from replays.store.replicas import is_connection_error, mark_down

    try:
        account = accounts.load_session_user(
            session_id, url=current_app.config["READ_DATABASE_URL"]
        )
    except SQLAlchemyError as error:
        if is_connection_error(error):
            # The whole page goes to the primary, as a page whose read failed would.
            mark_down(current_app.config["READ_DATABASE_URL"], error)
            g.reading_url = current_app.config["DATABASE_URL"]
        return None
    if account is not None:
        g.account_to_confirm = account
    return account


def _confirm_replica_account(response):
    """The response, once the primary has confirmed the account a replica read (the access
    log's INSERT may have done it already); else the answer a signed-out request gets, and
    the page is never shown. A primary that cannot be asked withholds the page."""
    account = g.pop("account_to_confirm", None)
    if account is None:
        return response
    try:
        confirmed = accounts.confirm_signed_in(account, url=current_app.config["DATABASE_URL"])
    except Exception:
        current_app.logger.exception("cannot confirm the signed-in account on %s", request.path)
        return _withheld(
            "The signed-in account could not be checked, so this page is withheld. "
            "Try again shortly."
        )
    return response if confirmed else _signed_out(account)


def _signed_out(account: accounts.Account):
    current_app.logger.info(
        "%s is no longer signed in on the primary: %s withheld", account.username, request.path
    )
    g.pop("_login_user", None)  # Flask-Login's cached user: the request is signed out
    return current_app.make_response(_sign_in_first())


def _withheld(message: str):
    from werkzeug.exceptions import ServiceUnavailable

    return current_app.make_response(current_app.handle_http_exception(ServiceUnavailable(message)))


@bp.before_app_request
def _guard():
    endpoint = request.endpoint
    if endpoint in PUBLIC_ENDPOINTS or request.blueprint == "api":
        return None
    if request.path.startswith(API_PREFIX):
        # No API route matched (an unknown path, a method the contract does not list): the
        # JSON 404 or 405 is the answer, not the site's sign-in page.
        return None
    account = current_account()
    if account is None:
        return _sign_in_first()
    if endpoint is None:
        return None  # unknown URL: the 404 page, for signed-in users only
    roles = allowed_roles(endpoint)
    if roles is not None and account.role not in roles:
        _deny(account, roles)
    if account.role == PLAYER:
        return _player_scope(account, endpoint)
    return None


def _player_scope(account: accounts.Account, endpoint: str):
    own = account.player_id
    view_args = request.view_args or {}
    if endpoint == "games.index" and request.args.get("player") != own:
        # A player's games list is the list of their games.
        args = request.args.to_dict()
        args["player"] = own
        return redirect(url_for(endpoint, **args))
    if endpoint == "players.player" and view_args.get("player_id") != own:
        abort(403, f"Players see only their own history ({own}).")
    game_id = view_args.get("game_id")
    if game_id is None:
        return None
    try:
        players = _players_of(game_id)
    except Exception as error:
        # Whose game it is cannot be read: refused (web/unreadable.py), never let through.
        from web.unreadable import refuse

        refuse(error, game_id)
    if own not in (players or ()):
        abort(404, f"No game {game_id!r} among your games.")
    if endpoint in SEAT_ENDPOINTS:
        seat = request.args.get("seat", "").strip()
        if not seat:
            args = request.args.to_dict()
            args["seat"] = own
            return redirect(url_for(endpoint, **view_args, **args))
        if seat != own:
            abort(403, f"Game {game_id}: you may see only your own seat ({own}), not {seat}'s.")
    return None


def _players_of(game_id: str) -> list[str] | None:
    from replays.disputes.cases import game_players
    from web.ledger import read_session

    with read_session() as session:
        return game_players(session, game_id)


@bp.after_app_request
def _after(response):
    response = _log_privileged_view(response)
    response = _confirm_replica_account(response)
    for name, value in SECURITY_HEADERS.items():
        response.headers.setdefault(name, value)
    if request.is_secure:
        response.headers.setdefault("Strict-Transport-Security", "max-age=31536000")
    if request.endpoint != "static":
        # Pages differ per signed-in user: never kept by a shared cache.
        response.headers.setdefault("Cache-Control", "private, no-cache")
        response.vary.add("Cookie")
    return response


@bp.teardown_app_request
def _close_access_line(_error=None) -> None:
    """A request ended by an exception its answer never came from (no ``after_request``):
    its line's connection goes back to the pool once the line is done."""
    started = g.pop("access_line", None)
    if started is not None:
        started[1].close()


def opened_in_full(game_id: str, move: int | None) -> None:
    """Mark this request as a full-view opening of ``game_id`` at ``move``, for pages that
    show a game's hidden cards without a ``game_id`` in their URL (a dispute case's page)."""
    g.opened_game = (game_id, move)


def _access_line() -> dict | None:
    """The access-log line this request's page is (:func:`record_access`'s arguments but the
    condition), or None: not a privileged opening of a game."""
    view = LOGGED_VIEWS.get(request.endpoint or "")
    opened = g.get("opened_game")
    if view is None and opened is None:
        return None
    account = current_account()
    if account is None or not account.full_view:
        return None
    if opened is not None:
        (game_id, move), view = opened, "full"
    else:
        game_id = (request.view_args or {}).get("game_id")
        if game_id is None:
            return None
        seat = request.args.get("seat", "").strip()
        if view == "full" and seat:
            view = f"seat:{seat}"
        move_text = request.args.get("move", "").strip()
        move = int(move_text) if move_text.isdecimal() and len(move_text) < 9 else None
        if move is None and request.endpoint in SEAT_ENDPOINTS:
            move = 0  # the replay opens at the deal
    return {
        "url": current_app.config["DATABASE_URL"],
        "username": account.username,
        "role": account.role,
        "game_id": game_id,
        "move": move,
        "view": view,
        "page": request.endpoint,
        "remote_addr": request.remote_addr,
        "commit": current_app.config["ACCESS_LOG_COMMIT"],
    }


def _only_if():
    # An account a replica read is confirmed by the same statement (no line if it is not).
    unconfirmed = g.get("account_to_confirm")
    return None if unconfirmed is None else accounts.still_signed_in(unconfirmed)


def access_line_ready() -> None:
    """Called by a logged page once its game is found and its arguments are right, before
    the rest of its work: the page's access-log line is sent to the primary now
    (:func:`~replays.access.access_log.send_access`: on the request's own thread, without
    waiting for the answer), so that its commit (the synchronous standby's round trip,
    behind whatever the primary's writers sent) overlaps reading and replaying the game and
    drawing the page instead of following them. The page still goes only once the line is
    committed (:func:`_log_privileged_view` waits for it), and a page that then fails (a
    500, or a replica that has not reached the game) has a line it did not show: the log
    may say more than was shown, never less. Once per request; nothing for a request that
    is not a privileged opening of a game."""
    if g.get("access_line") is not None:
        return
    line = _access_line()
    if line is None:
        return
    from replays.access import access_log

    try:
        sent = access_log.send_access(**line, only_if=_only_if())
    except Exception as error:  # the page is withheld at the end, as for a failed commit
        sent = access_log.SentLine(error=error)
    g.access_line = (line, sent)


def _start_access_line(_app, template, **_context) -> None:
    """A logged page that did not call :func:`access_line_ready` sends its line when it
    starts being drawn (Flask's ``before_render_template``): by then its game was found and
    its arguments were right. Error pages start nothing."""
    if not (template.name or "").startswith("errors/"):
        access_line_ready()


def _log_privileged_view(response):
    started = g.pop("access_line", None)
    if not 200 <= response.status_code < 300:
        if started is not None:
            started[1].close()  # written or not, before the answer goes
        return response
    line = _access_line()
    if line is None:
        return response
    from replays.access.access_log import record_access

    unconfirmed = g.get("account_to_confirm")
    try:
        if started is not None and started[0] == line:
            written = started[1].result()
        else:
            if started is not None:
                started[1].close()
            written = record_access(**line, only_if=_only_if())
    except Exception:
        # No record, no page: what staff see must be on the log.
        current_app.logger.exception("access log write failed on %s", request.path)
        g.pop("account_to_confirm", None)  # the page is withheld either way
        return _withheld(
            "The access log could not be written, so this page is withheld. Try again shortly."
        )
    if unconfirmed is not None:
        g.pop("account_to_confirm")
        if not written:
            return _signed_out(unconfirmed)
    return response


# -- signing in and out --------------------------------------------------------------------


class LoginForm(FlaskForm):
    username = StringField(
        "Username", validators=[DataRequired("Enter your username."), Length(max=64)]
    )
    password = PasswordField(
        "Password", validators=[DataRequired("Enter your password."), Length(max=256)]
    )
    next = HiddenField()


def _safe_next(target: str | None) -> str:
    """Only a path on this site (never ``//elsewhere`` or ``https://elsewhere``)."""
    if not target:
        return url_for("games.index")
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//"):
        return url_for("games.index")
    if "\\" in target or any(ord(ch) < 32 for ch in target):
        return url_for("games.index")
    return target


@bp.route("/login", methods=["GET", "POST"])
def login():
    form = LoginForm()
    if request.method == "GET":
        form.next.data = request.args.get("next", "")
    if current_account() is not None and request.method == "GET":
        return redirect(_safe_next(form.next.data))
    status = 200
    error = None
    if form.validate_on_submit():
        try:
            account = accounts.authenticate(
                form.username.data,
                form.password.data,
                remote_addr=request.remote_addr,
                url=current_app.config["DATABASE_URL"],
            )
        except SQLAlchemyError:
            current_app.logger.exception("sign-in failed on the database")
            abort(503, NO_ACCOUNTS)
        except accounts.UnreadableAccount:
            # Logged by authenticate; fail closed: the account's row cannot be read.
            error = (
                "Not signed in: this account's stored row cannot be read (a value of the "
                "wrong kind in the accounts table); ask the site's admin."
            )
            return render_template("auth/login.html", form=form, error=error), 401
        except accounts.LoginThrottled as throttled:
            error = f"Not signed in: {throttled}."
            response = current_app.make_response(
                (render_template("auth/login.html", form=form, error=error), 429)
            )
            response.headers["Retry-After"] = str(throttled.retry_after)
            return response
        if account is not None:
            session.clear()
            login_user(SignedIn(account))
            session.permanent = True
            return redirect(_safe_next(form.next.data))
        error = "Wrong username or password (or the account is disabled)."
        status = 401
    elif request.method == "POST":
        status = 400
    return render_template("auth/login.html", form=form, error=error), status


@bp.post("/logout")
@role_required(*ROLES)
def logout():
    # The session cookie is signed, not stored: rotating the key is what makes it worthless.
    accounts.end_sessions(current_account().id, url=current_app.config["DATABASE_URL"])
    logout_user()
    session.clear()
    flash("Signed out.")
    return redirect(url_for("auth.login"))
