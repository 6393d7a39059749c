"""The fair-play page in a real browser: an evidence link opens the replay at the flagged
move, and a dispute officer opens a case from a flag."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def fairplay_site(tmp_path_factory):
    from conftest import LiveServer
    from fairplay_support import fairplay_store

    from web import create_app

    url = f"sqlite:///{tmp_path_factory.mktemp('fairplay-browser') / 'ledger.sqlite3'}"
    fairplay_store(url)
    server = LiveServer(create_app({"DATABASE_URL": url}))
    try:
        yield server.url
    finally:
        server.stop()


def test_evidence_links_open_the_replay_at_the_flagged_move(browser, fairplay_site, screenshot):
    from conftest import sign_in
    from fairplay_support import FROM, TO
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        sign_in(context, fairplay_site, "auditor")
        page = context.new_page()
        page.goto(f"{fairplay_site}/fairplay?from={FROM}&to={TO}")
        flag = page.locator('section.fairplay-flag[data-key^="feeding:"]').first
        expect(flag).to_be_visible()
        screenshot(page, "fairplay-review")
        feeder, picker = flag.get_attribute("data-key").split(":", 1)[1].split("+")
        link = flag.locator("a.evidence-link").first
        move = int(re.search(r"move=(\d+)", link.get_attribute("href")).group(1))
        link.click()
        page.wait_for_url(re.compile(rf"/replay\?move={move}$"))
        shown = page.locator('[aria-current="step"]')
        expect(shown).to_have_attribute("data-move", str(move))
        # The flagged move is the picker taking the feeder's discard from the open pile.
        expect(shown).to_contain_text(picker)
        before = page.locator(
            f'.moves a[data-move="{move - 1}"], ol a[data-move="{move - 1}"]'
        ).first
        expect(before).to_contain_text(feeder)
    finally:
        context.close()


def test_an_officer_opens_a_case_from_a_flag(browser, fairplay_site, screenshot):
    from conftest import sign_in
    from fairplay_support import FROM, TO
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        sign_in(context, fairplay_site, "dispute_officer")
        page = context.new_page()
        page.goto(f"{fairplay_site}/fairplay?from={FROM}&to={TO}")
        flag = page.locator('section.fairplay-flag[data-key^="timing:"]').first
        player = flag.get_attribute("data-key").split(":", 1)[1]
        first = flag.locator("a.evidence-link").first.get_attribute("href")
        flag.get_by_role("button", name="Open a dispute case").click()
        page.wait_for_url(re.compile(r"/disputes/DC-[0-9A-F]+$"))
        step = page.locator("li.step-flag")
        expect(step).to_contain_text("attached a fair-play flag")
        expect(step).to_contain_text(player)
        expect(step.locator(f'a[href="{first}"]')).to_have_count(1)
        screenshot(page, "fairplay-case")
    finally:
        context.close()
