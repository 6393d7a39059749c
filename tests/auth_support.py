"""Signing in for real in tests: an account of the wanted role, then the login form with its
CSRF token, through Flask's test client or over HTTP.

>>> client = signed_in(app)  # doctest: +SKIP  (an auditor: sees every game in full)
>>> client = signed_in(app, "player", player="p2")  # doctest: +SKIP
"""

from __future__ import annotations

import http.cookiejar
import re
import urllib.parse
import urllib.request

PASSWORD = "test-password-123"
CSRF = re.compile(r'name="csrf_token" type="hidden" value="([^"]+)"')


def ensure_account(url: str, role: str = "auditor", *, player: str | None = None) -> str:
    """The username of a test account with ``role`` (created on first use)."""
    from replays.access import accounts

    username = f"test-{role.replace('_', '-')}" + (f"-{player.lower()}" if player else "")
    if accounts.find_user(username, url=url) is None:
        try:
            accounts.add_user(username, role, PASSWORD, player=player, url=url)
        except accounts.AccountError as error:
            if "already exists" not in str(error):
                raise
    return username


def csrf_token(html: str) -> str:
    found = CSRF.search(html)
    assert found, "no CSRF token in the form"
    return found.group(1)


def log_in(client, username: str, password: str = PASSWORD):
    """Post the login form as a browser would; returns the response."""
    form = client.get("/login").get_data(as_text=True)
    return client.post(
        "/login",
        data={"csrf_token": csrf_token(form), "username": username, "password": password},
    )


def signed_in(app, role: str = "auditor", *, player: str | None = None):
    """A test client of ``app`` signed in with an account of ``role``."""
    username = ensure_account(app.config["DATABASE_URL"], role, player=player)
    client = app.test_client()
    response = log_in(client, username)
    assert response.status_code == 302, response.get_data(as_text=True)[:500]
    return client


def http_opener(base_url: str, database_url: str, role: str = "auditor", *, player=None):
    """A urllib opener signed in to a live server at ``base_url`` (cookies kept)."""
    username = ensure_account(database_url, role, player=player)
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with opener.open(base_url + "/login", timeout=10) as response:
        token = csrf_token(response.read().decode())
    body = urllib.parse.urlencode(
        {"csrf_token": token, "username": username, "password": PASSWORD}
    ).encode()
    with opener.open(base_url + "/login", data=body, timeout=10) as response:
        assert "/login" not in response.geturl(), "signing in failed"
    return opener
