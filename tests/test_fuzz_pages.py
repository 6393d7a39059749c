"""Fuzzing the site's query strings and forms with random text: every page answers with a
page or a clear 4xx message (never a 500 or a traceback), and a refused form records
nothing."""

from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest
from auth_support import csrf_token, signed_in
from fuzz_support import FUZZ_SETTINGS, assert_untouched, store_fingerprint
from hypothesis import given
from hypothesis import strategies as st

from web import create_app

GAME = "T7-000123"
texts = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["", "0", "-1", "3", "99999999999999999999", "p1", "p2", "2025-03-01",
                     "2025-13-45", "raise", "won", "on", "open", "all", "adjusted", "1e3",
                     "12.345", "javascript:alert(1)", "https://x.example/a", "<script>", "%00"]),
)  # fmt: skip

PAGES = {
    "/games": ("from", "to", "table", "variant", "player", "result", "discrepancies", "page"),
    f"/games/{GAME}/replay": ("move", "seat"),
    f"/games/{GAME}/replay/table": ("move", "seat"),
    f"/games/{GAME}/replay/table.svg": ("move", "seat"),
    "/disputes": ("status", "game"),
    "/disputes/new": ("game", "move"),
    "/admin/access-log": ("user", "game", "view", "from", "to", "page"),
    "/admin/access-log.csv": ("user", "game", "view", "from", "to"),
}
FORMS = {
    "/disputes/new": ("game", "move", "description"),
    "/admin/users": ("username", "role", "player", "password"),
    "/login": ("username", "password", "next"),
}


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    from web_support import load_games

    url = f"sqlite:///{tmp_path_factory.mktemp('fuzz-pages') / 'ledger.sqlite3'}"
    load_games(url)
    app = create_app({"DATABASE_URL": url, "TESTING": True})
    return url, {
        "admin": signed_in(app, "admin"),
        "officer": signed_in(app, "dispute_officer"),
        "player": signed_in(app, "player", player="p1"),
    }


def assert_clear(response) -> None:
    assert response.status_code < 500, response.get_data(as_text=True)[:500]
    body = response.get_data(as_text=True)
    assert "Traceback" not in body
    if response.status_code >= 400 and response.mimetype == "text/html":
        # An error page's message, or the form again with a message beside the field.
        message = re.search(
            r'<p class="(?:error-message|field-error|form-error)"[^>]*>(.*?)</p>', body, re.S
        )
        assert message and re.sub("<[^>]+>", "", message.group(1)).strip(), body[:500]


@FUZZ_SETTINGS
@given(
    page=st.sampled_from(sorted(PAGES)),
    who=st.sampled_from(["admin", "officer", "player"]),
    data=st.data(),
)
def test_query_strings(site, page, who, data):
    _url, clients = site
    names = PAGES[page]
    args = {
        name: data.draw(texts)
        for name in data.draw(st.lists(st.sampled_from(names), unique=True, max_size=len(names)))
    }
    response = clients[who].get(f"{page}?{urlencode(args)}")
    assert_clear(response)


@FUZZ_SETTINGS
@given(action=st.sampled_from(sorted(FORMS)), data=st.data())
def test_forms(site, action, data):
    url, clients = site
    client = clients["officer" if action == "/disputes/new" else "admin"]
    form = {name: data.draw(texts) for name in FORMS[action]}
    if action == "/login":
        from flask.testing import FlaskClient

        client = FlaskClient(client.application, use_cookies=True)
        page = "/login"
    else:
        page = action
    form["csrf_token"] = csrf_token(client.get(page).get_data(as_text=True))
    before = store_fingerprint(url)
    response = client.post(action, data=form)
    assert_clear(response)
    if response.status_code != 302:
        assert_untouched(before, store_fingerprint(url))
        assert store_fingerprint(url).keys() == before.keys()
