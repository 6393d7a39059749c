"""A degraded page in a real browser (issue 29): with one game's ``started_at`` unreadable,
the games list still lists the others, an auditor sees the banner naming the row, and the
page trips neither a script error nor the Content-Security-Policy."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

pytestmark = pytest.mark.browser


@pytest.fixture
def unreadable_site(tmp_path, live_server):
    from web_support import load_games

    from replays.store.db import engine_for
    from web import create_app

    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    games = sorted(load_games(url))
    with engine_for(url).begin() as connection:
        connection.execute(
            sa.text("UPDATE games SET started_at = 'zzz' WHERE game_id = :g"), {"g": games[0]}
        )
    return live_server(create_app({"DATABASE_URL": url})), games


def test_the_list_shows_the_rest_and_names_the_unreadable_row(browser, unreadable_site):
    from conftest import sign_in
    from playwright.sync_api import expect

    base, games = unreadable_site
    problems: list[str] = []
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        sign_in(context, base, "auditor")
        page = context.new_page()
        page.on("pageerror", lambda error: problems.append(str(error)))
        page.on(
            "console",
            lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None,
        )
        response = page.goto(base + "/games")
        assert response is not None and response.status == 200
        banner = page.locator(".unreadable-notice[role=alert]")
        expect(banner).to_be_visible()
        expect(banner).to_contain_text("started_at")
        expect(banner).to_contain_text(games[0])
        for other in games[1:3]:
            expect(page.locator("main")).to_contain_text(other)
    finally:
        context.close()
    assert not problems, problems
