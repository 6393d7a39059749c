"""The Flask application factory, :func:`create_app` (imported as ``from web import
create_app``: see the package docstring for its configuration).
"""

from __future__ import annotations

import importlib
import logging
import os
import secrets
import time
from decimal import Decimal

from flask import Flask, current_app, g, jsonify, render_template, request
from werkzeug.exceptions import HTTPException, InternalServerError

from replays.store.settings import database_url, read_database_url
from web import ops, read_side, unreadable
from web.auth import cookie_settings

# One entry per blueprint, as "module:attribute"; each area appends its own line.
BLUEPRINTS = [
    "web.views.games:bp",
    "web.views.replays:bp",
    "web.views.audit:bp",
    "web.views.players:bp",
    "web.api:bp",
    "web.auth:bp",
    "web.views.disputes:bp",
    "web.views.admin:bp",
    "web.views.reports:bp",
    "web.views.fairplay:bp",
]

log = logging.getLogger("web")


def create_app(config: dict | None = None) -> Flask:
    # Named for the package: templates, static files and the logger are the package's.
    app = Flask("web")
    app.config.update(
        DATABASE_URL=database_url(),
        # Read replicas for the read-only pages (web/ledger.py); None: the primary serves all.
        READ_DATABASE_URL=read_database_url(),
        SECRET_KEY=os.environ.get("SECRET_KEY"),
        GAMES_PER_PAGE=25,
        # Replays keep the games and table states they built (a game's past never changes);
        # RUMMY_LEDGER_REPLAY_CACHE=0 turns that off, e.g. to measure a cold page.
        REPLAY_CACHE=os.environ.get("RUMMY_LEDGER_REPLAY_CACHE", "1") != "0",
        # Session cookies: HttpOnly, SameSite=Lax, and Secure unless
        # RUMMY_LEDGER_SECURE_COOKIES=0 (plain-HTTP loopback: the demo, tests); web/auth.py.
        **cookie_settings(),
    )
    if config:
        app.config.update(config)
    app.config["DATABASE_URL"] = database_url(app.config["DATABASE_URL"])
    app.config["READ_DATABASE_URL"] = read_database_url(app.config.get("READ_DATABASE_URL"))
    if app.config["READ_DATABASE_URL"] == read_database_url(app.config["DATABASE_URL"]):
        app.config["READ_DATABASE_URL"] = None  # the primary itself: no replica to route to
    if not app.config["SECRET_KEY"]:
        # A per-process key keeps sessions working in development; production sets SECRET_KEY.
        app.config["SECRET_KEY"] = secrets.token_hex(32)
        log.info("SECRET_KEY not set: using a random key for this process")

    # First, so that the time it reports includes every other hook (sign-in, access log).
    _register_server_timing(app)
    for entry in BLUEPRINTS:
        module_name, _, attribute = entry.partition(":")
        app.register_blueprint(getattr(importlib.import_module(module_name), attribute or "bp"))

    # Every GET page drawn around unreadable stored values (issue 29): web/unreadable.py.
    unreadable.register(app)
    _register_error_pages(app)
    _register_template_helpers(app)
    _register_read_header(app)

    # The staff banner when a read model has a failure or is stuck.
    read_side.register(app)
    # /healthz (503 on the same), /readyz, /metrics, and the request metrics.
    ops.register(app)
    # /readyz also bounds the read replica's lag (RUMMY_LEDGER_READY_MAX_REPLICA_LAG).
    from web.ledger import replica_readiness

    ops.add_readiness_check(replica_readiness)

    return app


ERROR_TITLES = {
    400: "Bad request",
    403: "Not allowed",
    404: "Not found",
    405: "Method not allowed",
    500: "Something went wrong",
}


def _wants_json() -> bool:
    if request.path.startswith("/api/"):
        return True
    best = request.accept_mimetypes.best_match(["text/html", "application/json"])
    return (
        best == "application/json"
        and request.accept_mimetypes[best] > request.accept_mimetypes["text/html"]
    )


def _register_error_pages(app: Flask) -> None:
    def render_error(error: HTTPException):
        status = error.code or 500
        title = ERROR_TITLES.get(status, error.name)
        message = (
            error.description
            if status != 500
            else (
                "The ledger could not build this page. The error has been logged; "
                "nothing was changed."
            )
        )
        # A 405 says which methods the URL takes (RFC 9110 §15.5.6).
        allow = {k: v for k, v in error.get_headers() if k.lower() == "allow"}
        if _wants_json():
            return jsonify({"error": message, "status": status}), status, allow
        return (
            render_template("errors/error.html", status=status, title=title, message=message),
            status,
            allow,
        )

    @app.errorhandler(HTTPException)
    def http_error(error: HTTPException):
        if error.code == 404:
            not_reached = _not_on_replica_yet()
            if not_reached is not None:
                return not_reached
        return render_error(error)

    @app.errorhandler(Exception)
    def unexpected_error(error: Exception):
        from replays.store.replicas import is_connection_error

        if is_connection_error(error):
            return _database_unavailable(app, error, render_error)
        # Never a traceback in the browser; the log keeps it for the operator.
        app.logger.exception("unhandled error on %s", request.path)
        return render_error(InternalServerError())


# Seconds a client is asked to wait while no database answers (a failover takes a few).
RETRY_AFTER_SECONDS = 5


def _database_unavailable(app: Flask, error: Exception, render_error):
    """A lost or refused database connection. A page a replica was serving is built again
    on the primary (the replica is set aside for a few seconds, with a log line); otherwise
    503 with ``Retry-After``: the API's writes are idempotent per game and per ``seq``, so
    the client sends the same request again, and nothing half-written was stored (each save
    is one transaction)."""
    from replays.store.replicas import is_connection_error, mark_down
    from web.ledger import served_by_replica

    if served_by_replica() and request.method in ("GET", "HEAD") and request.endpoint:
        mark_down(app.config["READ_DATABASE_URL"], error)
        g.reading_url = app.config["DATABASE_URL"]
        try:
            view = app.view_functions[request.endpoint]
            return app.make_response(app.ensure_sync(view)(**(request.view_args or {})))
        except HTTPException as again:
            return render_error(again)
        except Exception as again:
            if not is_connection_error(again):
                app.logger.exception("unhandled error on %s", request.path)
                return render_error(InternalServerError())
            error = again
    app.logger.warning(
        "database unavailable on %s: %s", request.path, str(error).splitlines()[0][:300]
    )
    message = (
        "The ledger's database is not answering (a failover may be under way). "
        "Nothing was changed; try again in a few seconds."
    )
    headers = {"Retry-After": str(RETRY_AFTER_SECONDS)}
    if _wants_json():
        return jsonify({"error": message, "status": 503}), 503, headers
    # Its own page, rendered without the context processors: they, like the layout, would
    # ask the database for the signed-in account.
    from flask import url_for

    page = app.jinja_env.get_template("errors/unavailable.html").render(
        message=message, request=request, url_for=url_for
    )
    return page, 503, headers


def _not_on_replica_yet():
    """The page for a game a replica has not reached yet (the primary has its events): says
    so, with how far behind the replica is, instead of "no such game"."""
    from web.ledger import served_by_replica

    game_id = (request.view_args or {}).get("game_id")
    if not game_id or not served_by_replica():
        return None
    from replays.store.replicas import game_behind

    try:
        behind = game_behind(
            current_app.config["READ_DATABASE_URL"], current_app.config["DATABASE_URL"], game_id
        )
    except Exception as error:  # the 404 stands; this was only a better explanation
        current_app.logger.warning("cannot compare %s with the primary: %s", game_id, error)
        return None
    if behind is None:
        return None
    message = (
        f"Game {game_id} is recorded, but the read replica serving this page has not "
        f"reached it yet ({behind.replica_events} of its {behind.primary_events} events; "
        f"the replica is {behind.lag_seconds:.1f} s behind the primary). Reload in a moment."
    )
    if _wants_json():
        body = {"error": message, "status": 503, "replica_behind": True}
        return jsonify(body), 503, {"Retry-After": "1"}
    page = render_template(
        "errors/error.html", status=503, title="Not on this replica yet", message=message
    )
    return page, 503, {"Retry-After": "1"}


def _register_server_timing(app: Flask) -> None:
    """A ``Server-Timing: app;dur=<ms>`` header on every response: the time spent building it,
    which the browser's developer tools show and the page benchmark (bench/) collects."""

    @app.before_request
    def start_clock():
        g.request_started = time.perf_counter()

    @app.after_request
    def stop_clock(response):
        started = g.get("request_started")
        if started is not None:
            elapsed = (time.perf_counter() - started) * 1000
            response.headers["Server-Timing"] = f"app;dur={elapsed:.2f}"
        return response


def _register_read_header(app: Flask) -> None:
    """``X-Rummy-Ledger-Read: replica`` or ``primary`` on a response that read the ledger:
    which server a page came from, for operators (and the cluster tests)."""

    @app.after_request
    def read_from(response):
        reading = g.get("reading_url")
        if reading is not None:
            replica = reading != app.config["DATABASE_URL"]
            response.headers["X-Rummy-Ledger-Read"] = "replica" if replica else "primary"
        return response


def _register_template_helpers(app: Flask) -> None:
    from web import discrepancy_note, svg
    from web.audit_marks import figure_text
    from web.integrity import integrity_badge
    from web.ledger import replica_notice

    app.jinja_env.globals.update(svg=svg, integrity_badge=integrity_badge)
    app.jinja_env.globals["discrepancy_note"] = discrepancy_note.for_viewer
    app.jinja_env.globals["replica_notice"] = replica_notice
    # Decimals as people write them: 10 rather than 1E+1, 2.5 rather than 2.500.
    app.jinja_env.filters["plain"] = lambda value: format(Decimal(value).normalize(), "f")
    # A score as the site writes it: −30 with U+2212, never a hyphen.
    app.jinja_env.filters["figure"] = figure_text
    app.jinja_env.trim_blocks = True
    app.jinja_env.lstrip_blocks = True
