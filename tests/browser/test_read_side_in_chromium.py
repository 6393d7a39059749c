"""The read-models banner in a real browser: an auditor sees which game failed to project,
a player only a neutral line, and no page trips the Content-Security-Policy."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


@pytest.fixture
def broken_site(tmp_path, live_server):
    from test_projection_failures import BAD, store, store_bad_game
    from test_projections import sample_records

    from replays.readmodels import projections
    from replays.store.application import Ledger
    from replays.store.schema import migrate
    from web import create_app

    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    migrate(url)
    ledger = Ledger(url, env={"CREATE_TABLE": "no"})
    records = sample_records()
    store_bad_game(ledger, records[0], url)
    store(ledger, records)
    projections.catch_up(url, ledger=ledger)
    return live_server(create_app({"DATABASE_URL": url})), BAD, records


def test_an_auditor_sees_the_failed_game_and_a_player_does_not(browser, broken_site, screenshot):
    from conftest import sign_in
    from playwright.sync_api import expect

    base, bad, records = broken_site
    problems: list[str] = []
    auditor = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        sign_in(auditor, base, "auditor")
        page = auditor.new_page()
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.on(
            "console",
            lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None,
        )
        page.goto(base + "/games")
        banner = page.locator(".read-side-notice[role=alert]")
        expect(banner).to_be_visible()
        expect(banner).to_contain_text("Read models incomplete:")
        expect(banner).to_contain_text(f"game {bad} event 1 failed to project")
        expect(banner).to_contain_text("1 failure in all")
        screenshot(page, "read-side-banner-auditor")
        # On a game page too, not just the list.
        page.goto(base + f"/games/{records[1].config.game_id}")
        expect(page.locator(".read-side-notice[role=alert]")).to_contain_text(bad)
    finally:
        auditor.close()

    player = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        sign_in(player, base, "player", player=records[1].config.players[0])
        page = player.new_page()
        page.goto(base + "/games")
        notice = page.locator(".read-side-notice")
        expect(notice).to_have_text("Some games are not yet available.")
        assert bad not in page.content()
    finally:
        player.close()
    assert problems == []
