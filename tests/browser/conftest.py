"""Browser-test harness: the real app on a loopback port, driven by Debian's chromium.

``live_server(app)`` serves a Flask app from a werkzeug server thread on a free port of
127.0.0.1 and returns its base URL; ``page`` is a fresh Playwright page (1280×900) in the
session's chromium. Without ``/usr/bin/chromium`` the browser tests skip locally and FAIL
when ``CI=true``: CI must prove the pages in a real browser. ``screenshot(page, name)``
(a fixture) keeps a PNG under ``tests/artifacts/`` for people to look at.

Every page but the login needs a signed-in user: ``sign_in(context, base_url)`` signs a
browser context in for real (the login form and its CSRF token) as an auditor, and the
``page``/``phone_page`` fixtures do it for the site fixtures a test uses (``SITES``).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

CHROMIUM = Path(os.environ.get("RUMMY_LEDGER_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


@pytest.fixture(scope="session")
def browser():
    if not CHROMIUM.exists():
        message = f"chromium not found at {CHROMIUM} (apt-get install chromium)"
        if IN_CI:
            pytest.fail(f"browser tests must run in CI: {message}")
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield browser
        finally:
            browser.close()


# Site fixtures whose server the page fixtures sign in to, and each server's database.
SITES = ("site_url", "red3_site", "match_site")
_DATABASES: dict[str, str] = {}


class LiveServer:
    """A werkzeug server thread serving ``app`` on 127.0.0.1 at a free port."""

    def __init__(self, app):
        from werkzeug.serving import make_server

        # Plain HTTP on loopback: the session cookie cannot be Secure here.
        app.config.update(SESSION_COOKIE_SECURE=False, REMEMBER_COOKIE_SECURE=False)
        self.server = make_server("127.0.0.1", 0, app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        _DATABASES[self.url] = app.config["DATABASE_URL"]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.thread.join(timeout=10)
        self.server.server_close()


@pytest.fixture
def live_server():
    """Call with an app; returns its base URL. Every server is stopped after the test."""
    servers: list[LiveServer] = []

    def start(app) -> str:
        server = LiveServer(app)
        servers.append(server)
        return server.url

    yield start
    for server in servers:
        server.stop()


@pytest.fixture(scope="session")
def site_url(tmp_path_factory):
    """The site, filled with the sample records (tests/web_support.py), on a loopback port."""
    from web_support import load_games

    from web import create_app

    url = f"sqlite:///{tmp_path_factory.mktemp('browser-site') / 'ledger.sqlite3'}"
    load_games(url)
    server = LiveServer(create_app({"DATABASE_URL": url}))
    try:
        yield server.url
    finally:
        server.stop()


def sign_in(context, base_url: str, role: str = "auditor", *, player: str | None = None):
    """Sign a browser context in to the live server at ``base_url`` (cookies shared)."""
    from auth_support import PASSWORD, csrf_token, ensure_account

    username = ensure_account(_DATABASES[base_url], role, player=player)
    form = context.request.get(base_url + "/login").text()
    response = context.request.post(
        base_url + "/login",
        form={"csrf_token": csrf_token(form), "username": username, "password": PASSWORD},
        max_redirects=0,
    )
    assert response.status == 302, response.text()[:300]


def _sign_in_to_sites(request, context) -> None:
    for name in SITES:
        if name in request.fixturenames:
            sign_in(context, request.getfixturevalue(name))


@pytest.fixture
def page(browser, request):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    _sign_in_to_sites(request, context)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.js_errors = errors
    try:
        yield page
    finally:
        context.close()


@pytest.fixture
def phone_page(browser, request):
    context = browser.new_context(
        viewport={"width": 375, "height": 740},
        device_scale_factor=2,
        is_mobile=True,
        has_touch=True,
    )
    _sign_in_to_sites(request, context)
    page = context.new_page()
    try:
        yield page
    finally:
        context.close()


@pytest.fixture
def screenshot():
    """``screenshot(page, name)`` saves ``tests/artifacts/<name>.png`` and returns its path."""

    def take(page, name: str, *, full_page: bool = True) -> Path:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=full_page)
        return path

    return take
