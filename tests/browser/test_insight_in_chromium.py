"""Issue 17 in a real browser: hands in their best grouping in the full and the seat view, a
missed-chance moment, and the auditors' period report (form, chart, downloads, print)."""

from __future__ import annotations

import re

import pytest
from conftest import sign_in

pytestmark = pytest.mark.browser

REPLAY = "/games/T7-000123/replay"


def wait_for_move(page, move: int) -> None:
    # A locator wait: the CSP forbids the in-page eval wait_for_function needs.
    page.locator(f"#table-frame[data-move='{move}']").wait_for()


def test_full_view_draws_every_hand_grouped_with_score_and_declare_mark(page, site_url, screenshot):
    page.goto(site_url + REPLAY + "?move=0")
    page.keyboard.press("ArrowRight")
    wait_for_move(page, 1)
    analyses = page.locator("#table-frame .hand-analysis")
    players = [analyses.nth(i).get_attribute("data-player") for i in range(analyses.count())]
    assert sorted(players) == ["p1", "p2", "p3"]
    p1 = page.locator('.hand-analysis[data-player="p1"]')
    assert p1.get_attribute("data-could-declare") == "yes"
    assert "could declare" in p1.inner_text()
    assert "after discarding 10♣" in p1.inner_text()
    # Grouped as the solver would: a pure sequence among its named groups, drawn as cards.
    assert p1.locator("svg").get_attribute("aria-label").startswith("p1's best grouping")
    assert p1.locator("[data-analysed-card]").count() == 13
    assert "pure sequence" in p1.locator("svg").inner_html()
    # The table still holds each of p1's cards once.
    assert page.locator('section.seat[data-player="p1"] [data-card]').count() == 14
    screenshot(page, "replay-hand-analysis-full")
    assert page.js_errors == []


def test_seat_view_analyses_only_the_seats_own_hand(browser, site_url, screenshot):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    sign_in(context, site_url, "player", player="p2")
    page = context.new_page()
    try:
        page.goto(site_url + REPLAY + "?move=1&seat=p2")
        wait_for_move(page, 1)
        assert page.locator(".hand-analysis").count() == 1
        assert page.locator('.hand-analysis[data-player="p2"]').count() == 1
        assert page.locator('.hand-analysis[data-player="p1"]').count() == 0
        # p1's missed declaration reads p1's cards: p2 never sees it.
        assert page.locator("a.moment-missed_could_declare").count() == 0
        page.keyboard.press("ArrowRight")
        wait_for_move(page, 2)
        assert page.locator(".hand-analysis").count() == 1
        screenshot(page, "replay-hand-analysis-seat")
    finally:
        context.close()


def test_a_missed_chance_is_a_moment_that_jumps_to_its_move(page, site_url, screenshot):
    page.goto(site_url + REPLAY + "?move=0")
    moment = page.locator("a.moment-missed_could_declare")
    assert moment.inner_text() == "2. p1 could have declared, finishing with 10♣, but discarded it"
    moment.click()
    wait_for_move(page, 2)
    assert re.search(r"[?&]move=2\b", page.url)
    assert "p1 discards 10♣" in page.locator("#move-caption").inner_text()
    screenshot(page, "replay-missed-chance")


def test_the_reports_page_in_the_browser(page, site_url, screenshot):
    page.goto(site_url + "/reports")
    page.locator('input[name="from"]').fill("2025-03-01")
    page.locator('input[name="to"]').fill("2025-03-31")
    page.get_by_role("button", name="Show report").click()
    page.wait_for_url(re.compile(r"from=2025-03-01"))
    assert "Reconciled: debits" in page.locator(".reconciliation").inner_text()
    assert page.locator("svg.period-chart").is_visible()
    assert page.locator("svg.period-chart rect.bar-gross").count() >= 1
    link = page.locator("table.discrepancies a", has_text="T7-000124")
    assert link.count() == 1
    assert page.locator(".period-verified").is_visible()
    screenshot(page, "reports-page")
    with page.expect_download() as download:
        page.get_by_role("link", name="Download CSV").click()
    assert download.value.suggested_filename == "report-2025-03-01-2025-03-31.csv"
    link.click()
    page.wait_for_url(re.compile(r"/games/T7-000124/audit"))
    page.go_back()
    page.emulate_media(media="print")
    assert page.locator(".report-form").is_hidden()
    assert page.locator(".downloads").is_hidden()
    assert page.locator("table.by-table").is_visible()
    screenshot(page, "reports-print")
    assert page.js_errors == []
