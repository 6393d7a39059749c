"""Signing in, a dispute case and the admin pages in a real browser, under the site's
Content-Security-Policy: no page may trip it (no inline script or style sneaks in)."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def case_site(tmp_path_factory):
    import json

    from auth_support import PASSWORD
    from conftest import LiveServer
    from web_support import DATA, load_games, sample_records

    from domain import variants
    from replays.access import accounts
    from replays.disputes.cases import Disputes
    from replays.simulation import Floor, Simulation
    from replays.store.application import Ledger
    from web import create_app

    url = f"sqlite:///{tmp_path_factory.mktemp('accounts-browser') / 'ledger.sqlite3'}"
    red3 = json.loads((DATA / "red3_example.jsonl").read_text("utf-8"))
    pool = Simulation(Floor(seed=5, variants=("pool",))).game(0)
    load_games(url, [*sample_records(), red3, pool])
    officer = accounts.add_user("officer", "dispute_officer", PASSWORD, url=url)
    accounts.add_user("boss", "admin", PASSWORD, url=url)
    ledger = Ledger(url)
    disputes = Disputes(ledger)
    case = disputes.open_case(officer, "T7-000123", 3, "was the drop in turn?")
    # Cases on the other families at the ends of their move range: a Red 3 match's last move,
    # a Pool match's move 0 (its players seated, nothing dealt).
    game = ledger.get_game(red3["game_id"])
    last = variants.for_game(game).last_move_number(game)
    others = [
        disputes.open_case(officer, red3["game_id"], last, "was the last lay-down right?"),
        disputes.open_case(officer, pool["game_id"], 0, "who was seated?"),
    ]
    server = LiveServer(create_app({"DATABASE_URL": url}))
    try:
        yield server.url, case.case_id, [c.case_id for c in others]
    finally:
        server.stop()


def watch_console(page) -> list[str]:
    problems: list[str] = []
    page.on(
        "console",
        lambda message: (
            problems.append(message.text)
            if message.type == "error" or "Content Security Policy" in message.text
            else None
        ),
    )
    page.on("pageerror", lambda error: problems.append(str(error)))
    return problems


def sign_in_by_hand(page, base: str, username: str) -> None:
    from auth_support import PASSWORD

    page.goto(base + "/games")
    assert "/login" in page.url
    page.fill("#username", username)
    page.fill("#password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/games$"))


def image_loads(page, image) -> bool:
    # Polled from here with evaluate (a CDP call the CSP allows), not wait_for_function,
    # whose in-page polling of a string predicate needs the eval the site's CSP forbids.
    loaded = "img => img.complete && img.naturalWidth > 0"
    for _ in range(200):
        if image.evaluate(loaded):
            return True
        page.wait_for_timeout(50)
    return False


def test_an_officer_signs_in_and_works_a_case(browser, case_site, screenshot):
    base, case_id, _others = case_site
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    problems = watch_console(page)
    try:
        sign_in_by_hand(page, base, "officer")
        assert page.locator(".account .who").inner_text().startswith("officer")
        page.goto(f"{base}/disputes")
        assert case_id in page.locator("table.cases").inner_text()
        page.click(f"text={case_id}")
        image = page.locator(".case-table img")
        image.wait_for()
        assert image_loads(page, image), "the contested move's table image did not load"
        assert "(contested)" in page.locator(".case-moves").inner_text()
        page.fill("#text", "asked the table for its log")
        page.click("text=Add the note")
        page.wait_for_url(re.compile(rf"/disputes/{case_id}"))
        assert "asked the table for its log" in page.locator(".timeline").inner_text()
        screenshot(page, "dispute-case-1280")
        page.goto(f"{base}/games/T7-000123/replay?move=2")
        page.keyboard.press("ArrowRight")
        page.locator("#table-frame[data-move='3']").wait_for()
        page.goto(f"{base}/games/T7-000123/audit")
        # The print button's inline handler is allowed by its hash, nothing else inline is.
        page.evaluate("window.print = () => { window.printed = true; }")
        page.click("text=Print report")
        assert page.evaluate("window.printed === true")
        assert problems == [], problems
    finally:
        context.close()


def test_cases_on_every_family_draw_their_table_and_hands(browser, case_site, screenshot):
    base, _case_id, others = case_site
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    problems = watch_console(page)
    try:
        sign_in_by_hand(page, base, "officer")
        for case_id, name in zip(others, ("red3-last-move", "pool-move-0"), strict=True):
            page.goto(f"{base}/disputes/{case_id}")
            image = page.locator(".case-table img")
            image.wait_for()
            assert image_loads(page, image), f"{case_id}: the table image did not load"
            assert page.locator(".case-moves li").count()  # move 0 is a table, not a move
            assert page.locator(".case-hands .final-hand, .case-hands .red3-scores").count()
            screenshot(page, f"dispute-case-{name}")
        assert problems == [], problems
    finally:
        context.close()


def test_admin_pages_and_sign_out(browser, case_site, screenshot):
    base, _case_id, _others = case_site
    context = browser.new_context(viewport={"width": 375, "height": 740}, is_mobile=True)
    page = context.new_page()
    problems = watch_console(page)
    try:
        sign_in_by_hand(page, base, "boss")
        page.goto(f"{base}/admin/access-log")
        assert "Access log" in page.locator("h1").inner_text()
        overflow = page.evaluate(
            "document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        assert overflow <= 1, f"the access log page is {overflow}px too wide on a phone"
        screenshot(page, "access-log-phone")
        page.goto(f"{base}/admin/users")
        screenshot(page, "users-phone")
        page.click("text=Sign out")
        page.wait_for_url(re.compile(r"/login"))
        page.goto(f"{base}/games")
        assert "/login" in page.url
        assert problems == [], problems
    finally:
        context.close()
