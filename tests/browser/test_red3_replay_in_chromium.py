"""A Red 3 match replayed in a real browser: keyboard stepping across rounds, the permalink,
the seat view, and the page at phone width."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

DATA = Path(__file__).resolve().parent.parent / "data"
REPLAY = "/games/R3-EXAMPLE/replay"


@pytest.fixture(scope="module")
def red3_site(tmp_path_factory):
    from conftest import LiveServer
    from web_support import load_games

    from web import create_app

    url = f"sqlite:///{tmp_path_factory.mktemp('red3-browser') / 'ledger.sqlite3'}"
    load_games(url, [json.loads((DATA / "red3_example.jsonl").read_text().splitlines()[0])])
    server = LiveServer(create_app({"DATABASE_URL": url}))
    try:
        yield server.url
    finally:
        server.stop()


def wait_for_move(page, move: int) -> None:
    # A locator wait, not wait_for_function: the site's CSP forbids the eval that
    # Playwright's in-page polling of a string predicate needs.
    page.locator(f"#table-frame[data-move='{move}']").wait_for()


def test_stepping_through_a_red3_match(page, red3_site, screenshot):
    page.goto(red3_site + REPLAY + "?move=1")
    p1 = page.locator('section.seat[data-player="p1"]')
    assert "not opened" in p1.inner_text()
    page.keyboard.press("ArrowRight")
    wait_for_move(page, 2)
    assert re.search(r"[?&]move=2\b", page.url)
    assert "p1 lays down 5♣ 6♣ 7♣ 8♣ 9♣ | Q♠ Q♥ Q♦" in page.locator("#move-caption").inner_text()
    assert "opened with 105" in p1.inner_text()
    assert p1.locator(".books figure.book").count() == 2
    assert "Second hand (picked up)" in p1.inner_text()
    screenshot(page, "red3-replay-move-2")

    page.keyboard.press("j")
    page.keyboard.press("j")
    wait_for_move(page, 4)
    assert "Discard pile 0 cards" in page.locator("#table-frame").inner_text()
    page.reload()
    wait_for_move(page, 4)
    assert "p2 takes the pile (3 cards)" in page.locator("#move-caption").inner_text()

    page.keyboard.press("End")
    wait_for_move(page, 19)
    assert "Winner: p2" in page.locator("#table-frame").inner_text()
    assert page.locator("table.red3-scores tfoot").inner_text().split()[-2:] == ["10", "175"]
    screenshot(page, "red3-replay-end")
    assert page.js_errors == []


def test_seat_view_and_phone_width(phone_page, red3_site, screenshot):
    phone_page.goto(red3_site + REPLAY + "?move=12&seat=p1")
    p2 = phone_page.locator('section.seat[data-player="p2"]')
    assert p2.locator("[data-card]").count() > 0  # p2's books are on the table, in view
    assert "hidden" in p2.inner_text()  # but p2's hand is not
    width = phone_page.evaluate("document.documentElement.scrollWidth")
    assert width <= 375 + 1, f"the page scrolls sideways at phone width ({width}px)"
    screenshot(phone_page, "red3-replay-phone")
