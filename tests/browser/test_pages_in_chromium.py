"""The site in a real browser: stepping through a replay with the keyboard, permalinks that
survive a reload, the seat view, autoplay, pages without JavaScript, phone width and print."""

from __future__ import annotations

import re

import pytest
from conftest import sign_in

pytestmark = pytest.mark.browser

REPLAY = "/games/T7-000123/replay"


def frame_move(page) -> int:
    return int(page.locator("#table-frame").get_attribute("data-move"))


def wait_for_move(page, move: int) -> None:
    # A locator wait, not wait_for_function: the site's CSP forbids the eval that
    # Playwright's in-page polling of a string predicate needs.
    page.locator(f"#table-frame[data-move='{move}']").wait_for()


def stock_label(page) -> str:
    return page.locator("#table-frame figure.stock svg").get_attribute("aria-label")


def test_arrow_keys_step_the_table_and_the_permalink_survives_reload(page, site_url, screenshot):
    page.goto(site_url + REPLAY)
    assert frame_move(page) == 0
    deal_stock = stock_label(page)
    p1_before = page.locator('section.seat[data-player="p1"] [data-card]').count()
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    wait_for_move(page, 3)
    assert re.search(r"[?&]move=3\b", page.url)
    assert "Move 3 of 7" in page.locator("#move-caption").inner_text()
    assert "p2 drops" in page.locator("#move-caption").inner_text()
    assert page.locator('#moves a[aria-current="step"]').get_attribute("data-move") == "3"
    assert "dropped" in page.locator('section.seat[data-player="p2"]').inner_text()
    # p1 picked from the stock at move 1 and discarded at move 2: one card fewer in the stock.
    assert stock_label(page) != deal_stock
    assert page.locator('section.seat[data-player="p1"] [data-card]').count() == p1_before
    assert page.locator("#next").get_attribute("href").endswith("move=4")
    screenshot(page, "replay-move-3")

    page.reload()
    assert frame_move(page) == 3
    assert "p2 drops" in page.locator("#move-caption").inner_text()
    assert page.locator('#moves a[aria-current="step"]').get_attribute("data-move") == "3"
    assert page.js_errors == []


def test_home_end_and_j_k(page, site_url):
    page.goto(site_url + REPLAY + "?move=2")
    page.keyboard.press("End")
    wait_for_move(page, 7)
    assert "Final hands" in page.locator("#table-frame").inner_text()
    page.keyboard.press("k")
    wait_for_move(page, 6)
    page.keyboard.press("Home")
    wait_for_move(page, 0)
    assert page.url.endswith("move=0")
    page.keyboard.press("j")
    wait_for_move(page, 1)
    page.keyboard.press("ArrowLeft")
    wait_for_move(page, 0)
    page.keyboard.press("ArrowLeft")  # already at the deal: stays there
    page.wait_for_timeout(150)
    assert frame_move(page) == 0
    page.locator('#moves a[data-move="5"]').click()
    wait_for_move(page, 5)
    assert page.url.endswith("move=5")
    assert page.js_errors == []


def test_seat_view_switch_keeps_the_move_and_hides_other_hands(page, site_url, screenshot):
    page.goto(site_url + REPLAY)
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    wait_for_move(page, 3)
    assert page.locator('section.seat[data-player="p1"] [data-card]').count() == 13
    page.get_by_role("link", name="p2’s view").click()
    page.wait_for_url(re.compile(r"seat=p2"))
    assert re.search(r"[?&]move=3\b", page.url)
    assert frame_move(page) == 3
    assert page.locator('section.seat[data-player="p1"] [data-card]').count() == 0
    assert page.locator('section.seat[data-player="p3"] [data-card]').count() == 0
    assert page.locator('section.seat[data-player="p2"] [data-card]').count() == 13
    assert "as p2 saw it" in page.locator("#move-caption").inner_text()
    # Stepping keeps the seat.
    page.keyboard.press("ArrowRight")
    wait_for_move(page, 4)
    assert "seat=p2" in page.url and re.search(r"[?&]move=4\b", page.url)
    assert page.locator('section.seat[data-player="p1"] [data-card]').count() == 0
    screenshot(page, "replay-seat-view")
    page.get_by_role("link", name="Full table").click()
    page.wait_for_url(re.compile(r"move=4$"))
    assert page.locator('section.seat[data-player="p1"] [data-card]').count() > 0
    assert page.js_errors == []


def test_autoplay_runs_and_pauses(page, site_url):
    page.goto(site_url + REPLAY)
    page.select_option("#speed", "500")
    page.click("#play")
    assert page.locator("#play").get_attribute("aria-pressed") == "true"
    # Any move from the second to the fifth, so a loaded machine cannot slip past a single
    # one (a move shows for half a second) and reach the end, where autoplay stops itself.
    page.locator(", ".join(f"#table-frame[data-move='{m}']" for m in range(2, 6))).wait_for()
    page.click("#play")
    assert page.locator("#play").get_attribute("aria-pressed") == "false"
    stopped = frame_move(page)
    page.wait_for_timeout(700)
    assert frame_move(page) == stopped
    assert re.search(rf"[?&]move={stopped}\b", page.url)


def test_recorded_timing_is_offered_for_timed_games(page, site_url):
    page.goto(site_url + "/games/T9-000777/replay")
    options = page.locator("#speed option").all_inner_texts()
    assert "recorded timing" in options
    page.goto(site_url + REPLAY)
    assert "recorded timing" not in page.locator("#speed option").all_inner_texts()


def test_replay_works_without_javascript(browser, site_url):
    context = browser.new_context(java_script_enabled=False)
    sign_in(context, site_url)
    page = context.new_page()
    try:
        page.goto(site_url + REPLAY + "?move=2")
        page.click("#next")
        page.wait_for_url(re.compile(r"move=3"))
        assert frame_move(page) == 3
        page.locator('#moves a[data-move="6"]').click()
        page.wait_for_url(re.compile(r"move=6"))
        assert "p1 declares" in page.locator("#move-caption").inner_text()
        assert page.locator(".autoplay").is_hidden()
    finally:
        context.close()


MAIN_PAGES = {
    "games-list": "/",
    "replay": REPLAY + "?move=5",
    "replay-end": REPLAY + "?move=7",
    "game-summary": "/games/seed-raise-122",
    "audit": "/games/T7-000124/audit",
    "player": "/players/p1",
    "not-found": "/games/NOPE/replay",
}


@pytest.mark.parametrize("name", list(MAIN_PAGES))
def test_main_pages_at_desktop_and_phone_width(browser, site_url, screenshot, name):
    for label, viewport in (
        ("1280", {"width": 1280, "height": 900}),
        ("phone", {"width": 375, "height": 740}),
    ):
        context = browser.new_context(viewport=viewport)
        sign_in(context, site_url)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error, errors=errors: errors.append(str(error)))
        try:
            response = page.goto(site_url + MAIN_PAGES[name])
            assert response.status == (404 if name == "not-found" else 200)
            # Nothing sticks out sideways: wide tables and hands scroll inside their boxes.
            overflow = page.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert overflow <= 1, f"{name} is {overflow}px too wide at {label}"
            screenshot(page, f"{name}-{label}")
            assert errors == []
        finally:
            context.close()


def test_audit_prints_as_a_clean_report(page, site_url, screenshot):
    page.goto(site_url + "/games/T7-000124/audit")
    page.emulate_media(media="print")
    assert page.locator(".site-nav").is_hidden()
    assert page.locator(".downloads").is_hidden()
    assert page.locator(".verdict").is_visible()
    assert page.locator("table.totals").is_visible()
    screenshot(page, "audit-print")
    from pathlib import Path

    pdf = Path(screenshot(page, "audit-print-view")).with_suffix(".pdf")
    page.pdf(path=str(pdf), format="A4")
    assert pdf.stat().st_size > 1000
