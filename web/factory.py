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

from flask import Flask, g, jsonify, render_template, request
from werkzeug.exceptions import HTTPException, InternalServerError

from replays.store.settings import database_url
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

    # The staff banner when a read model has a failure or is stuck.
    read_side.register(app)
    # /healthz (503 on the same), /readyz, /metrics, and the request metrics.
    ops.register(app)

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
        return render_error(error)

    @app.errorhandler(Exception)
    def unexpected_error(error: Exception):
        # Never a traceback in the browser; the log keeps it for the operator.
        app.logger.exception("unhandled error on %s", request.path)
        return render_error(InternalServerError())


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


def _register_template_helpers(app: Flask) -> None:
    from web import discrepancy_note, svg
    from web.audit_marks import figure_text
    from web.integrity import integrity_badge

    app.jinja_env.globals.update(svg=svg, integrity_badge=integrity_badge)
    app.jinja_env.globals["discrepancy_note"] = discrepancy_note.for_viewer
    # Decimals as people write them: 10 rather than 1E+1, 2.5 rather than 2.500.
    app.jinja_env.filters["plain"] = lambda value: format(Decimal(value).normalize(), "f")
    # A score as the site writes it: −30 with U+2212, never a hyphen.
    app.jinja_env.filters["figure"] = figure_text
    app.jinja_env.trim_blocks = True
    app.jinja_env.lstrip_blocks = True
