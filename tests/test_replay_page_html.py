"""The replay page draws the same HTML as before its drawing was made cheaper (issue 31).

``data/replay_pages_before_issue31.json`` was written by the code before that change (the
move list drawn by a Jinja template, move rows loaded as ORM objects): the SHA-256 of every
page below, with the per-request CSRF token blanked, and the move lists themselves, so that a
change shows where it is. Both the kept-state path and ``REPLAY_CACHE`` off are compared.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from auth_support import signed_in
from web_support import load_games

from web import create_app

EXPECTED = json.loads(
    (Path(__file__).parent / "data" / "replay_pages_before_issue31.json").read_text("utf-8")
)
# Game, the moves looked at, a seat to view it as.
GAMES = [("T9-000777", (0, 20, 65), "c3"), ("seed-raise-122", (0, 20, 70), "p2")]
CSRF = re.compile(r'(name="csrf_token"[^>]*value=")[^"]+')
# The marks the page contract reads money by (tests/test_page_contract.py), added since the
# pages were pinned: an element that only carries them is written around its figure.
MONEY_MARKS = ' data-money="[^"]*" data-money-kind="[^"]*"(?: data-player="[^"]*")?'
MARKED_SPAN = re.compile(f"<span{MONEY_MARKS}>([^<]*)</span>")
MARKS = re.compile(MONEY_MARKS)


def as_pinned(html: str) -> str:
    """``html`` as the pinned pages were drawn: its CSRF token blanked, its money marks
    (and the spans that only carry them) taken out."""
    return MARKS.sub("", MARKED_SPAN.sub(r"\1", CSRF.sub(r"\1-", html)))


def _paths():
    for game_id, moves, seat in GAMES:
        for move in moves:
            for view in ("", f"&seat={seat}"):
                for kind in ("replay", "replay/table"):
                    yield f"/games/{game_id}/{kind}?move={move}{view}"


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('pages') / 'ledger.sqlite3'}"
    load_games(url)
    return url


def test_the_expected_pages_cover_every_path():
    assert sorted(EXPECTED["pages"]) == sorted(_paths())


@pytest.mark.parametrize("cache", [True, False], ids=["kept", "uncached"])
def test_replay_pages_are_drawn_as_before(url, cache):
    client = signed_in(create_app({"DATABASE_URL": url, "TESTING": True, "REPLAY_CACHE": cache}))
    for _ in range(2):  # the second round is drawn from what the first kept
        for path in _paths():
            response = client.get(path)
            assert response.status_code == 200, path
            html = as_pinned(response.get_data(as_text=True))
            if path in EXPECTED["move_lists"]:
                moves = re.search(r'<ol id="moves">.*?</ol>', html, re.S)
                assert moves and moves.group(0) == EXPECTED["move_lists"][path], path
            assert hashlib.sha256(html.encode()).hexdigest() == EXPECTED["pages"][path], path
