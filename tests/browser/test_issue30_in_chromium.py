"""Issue 30's money, leak and report items in a real browser, as each role sees them: a
player's nets and stakes against the ledger, hands never shown kept face down while stepping
with the keyboard, the report's discrepancies, chart and integrity answer, player links, and
the access log's words. The site is tests/test_issue30_pages.py's: a game of every variant."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from conftest import LiveServer, sign_in

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def issue30_site(tmp_path_factory):
    from test_issue30_pages import deals_record, pool_record, red3_records
    from web_support import load_games, sample_records

    from web import create_app

    url = f"sqlite:///{tmp_path_factory.mktemp('issue30-browser') / 'ledger.sqlite3'}"
    load_games(url, [*sample_records(), pool_record(), deals_record(), *red3_records()])
    server = LiveServer(create_app({"DATABASE_URL": url, "GAMES_PER_PAGE": 500}))
    try:
        yield server.url, url
    finally:
        server.stop()


@pytest.fixture
def as_role(browser, issue30_site):
    """``as_role(role, player=None, width=1280)``: a signed-in page on the issue's site."""
    contexts = []

    def open_page(role: str, player: str | None = None, width: int = 1280):
        context = browser.new_context(viewport={"width": width, "height": 900})
        contexts.append(context)
        sign_in(context, issue30_site[0], role, player=player)
        page = context.new_page()
        page.js_errors = []
        page.on("pageerror", lambda error: page.js_errors.append(str(error)))
        return page

    yield open_page
    for context in contexts:
        context.close()


def _number(text: str) -> Decimal:
    return Decimal(text.strip().replace("−", "-").replace("+", "").replace(",", ""))


def test_a_players_nets_and_stakes_are_the_ledgers(as_role, issue30_site, screenshot):
    from test_issue30_pages import POOL, ledger_nets

    base, url = issue30_site
    expected = {game: net for (game, player), net in ledger_nets(url).items() if player == "p2"}
    page = as_role("player", "p2")
    page.goto(base + "/players/p2")
    rows = page.locator("table.history tbody tr")
    assert rows.count() >= 3
    seen = {}
    for n in range(rows.count()):
        row = rows.nth(n)
        game = row.get_attribute("data-game")
        net = row.locator("td.net").inner_text()
        if game in expected:
            seen[game] = _number(net)
        else:
            assert net == "—", game
    assert seen == expected
    pool = page.locator(f'table.history tr[data-game="{POOL}"]')
    assert pool.locator("td.net").inner_text() == "−50.00"
    assert pool.locator("td.stake").inner_text() == "entry 25.00 + rejoins 25.00"
    newest = _number(rows.nth(0).locator("td.running-total").inner_text())
    assert newest == sum(expected.values())
    facts = page.locator("ul.facts").inner_text()
    assert f"{abs(newest):,.2f}" in facts
    screenshot(page, "issue30-player-history-money")
    phone = as_role("player", "p2", width=390)
    phone.goto(base + "/players/p2")
    assert phone.locator(f'table.history tr[data-game="{POOL}"] td.net').inner_text() == "−50.00"
    screenshot(phone, "issue30-player-history-money-390")

    page.goto(base + "/games")  # a player's list is their own games
    for n in range(page.locator("table.games tbody tr").count()):
        row = page.locator("table.games tbody tr").nth(n)
        game = row.get_attribute("data-game")
        net = row.locator("td.net").inner_text()
        assert (_number(net) if game in expected else None) == expected.get(game), game
    assert page.js_errors == []


def _own_and_other_cards(page, me: str, other: str) -> tuple[int, int]:
    frame = page.locator("#table-frame")
    own = frame.locator(f'section.seat[data-player="{me}"] [data-card]').count()
    theirs = frame.locator(f'section.seat[data-player="{other}"] .hand-wrap [data-card]').count()
    return own, theirs


def _total(page) -> int:
    return int(page.locator("#replay").get_attribute("data-total"))


def test_a_hand_never_shown_stays_face_down_while_stepping(as_role, issue30_site, screenshot):
    from test_issue30_pages import BY_DROPS, POOL, RED3

    base, _ = issue30_site
    # 13-card: p4, p1 and p2 drop; p3 wins and never shows. Step onto the end with the key.
    page = as_role("player", "p1")
    page.goto(base + f"/games/{BY_DROPS}/replay?seat=p1")
    last = _total(page)
    page.goto(base + f"/games/{BY_DROPS}/replay?seat=p1&move={last - 1}")
    page.keyboard.press("ArrowRight")
    page.locator(f"#table-frame[data-move='{last}']").wait_for()
    own, theirs = _own_and_other_cards(page, "p1", "p3")
    assert own > 0 and theirs == 0
    assert "hidden" in page.locator('section.seat[data-player="p3"]').inner_text() or (
        page.locator('section.seat[data-player="p3"] svg.hidden').count() == 1
    )
    screenshot(page, "issue30-points-won-by-drops-seat-view")

    # Pool: the first deal ends by drops; its winner p1 never showed, seen by p2.
    page = as_role("player", "p2")
    from domain import variants
    from replays.store.application import Ledger

    match = Ledger(issue30_site[1]).get_game(POOL)
    steps = variants.for_game(match).timeline(match)
    second_deal = [n for n, step in enumerate(steps, 1) if step.get("type") == "deal"][1]
    page.goto(base + f"/games/{POOL}/replay?seat=p2&move={second_deal - 2}")
    page.keyboard.press("ArrowRight")
    page.locator(f"#table-frame[data-move='{second_deal - 1}']").wait_for()
    own, theirs = _own_and_other_cards(page, "p2", "p1")
    assert own > 0 and theirs == 0, second_deal
    screenshot(page, "issue30-pool-deal-won-by-drops-seat-view")

    # Red 3: p2's hands stay face down to p1 all through the match.
    page = as_role("player", "p1")
    page.goto(base + f"/games/{RED3}/replay?seat=p1")
    last = _total(page)
    for _ in range(last):
        page.keyboard.press("ArrowRight")
    page.locator(f"#table-frame[data-move='{last}']").wait_for()
    assert _own_and_other_cards(page, "p1", "p2")[1] == 0
    assert page.js_errors == []


def test_the_report_lists_flagged_games_and_draws_its_chart_inside(
    as_role, issue30_site, screenshot
):
    from test_issue30_pages import RED3_WRONG

    base, _ = issue30_site
    page = as_role("auditor")
    page.goto(base + "/games?discrepancies=1&from=2025-03-01&to=2025-03-31")
    flagged = {
        page.locator("table.games tbody tr").nth(n).get_attribute("data-game")
        for n in range(page.locator("table.games tbody tr").count())
    }
    assert RED3_WRONG in flagged
    page.goto(base + "/reports?from=2025-03-01&to=2025-03-31")
    listed = set(page.locator("table.discrepancies tbody th a").all_inner_texts())
    assert flagged <= listed
    # The integrity answer arrives after the page, into its place.
    verdict = page.locator("#period-integrity .period-verified")
    page.locator("#period-integrity .period-verified:not([data-status='pending'])").wait_for()
    assert verdict.get_attribute("data-status") in ("verified", "not_checkpointed", "broken")
    chart = page.locator("svg.period-chart")
    legend_bottom = max(
        box["y"] + box["height"]
        for box in (
            chart.locator(".legend").nth(n).bounding_box()
            for n in range(chart.locator(".legend").count())
        )
    )
    grid = chart.locator("line")
    top_line = min(grid.nth(n).bounding_box()["y"] for n in range(grid.count()))
    bars = chart.locator("rect.bar-gross")
    assert bars.count() >= 1
    for n in range(bars.count()):
        box = bars.nth(n).bounding_box()
        assert box["y"] >= top_line - 0.5 and box["y"] > legend_bottom
    screenshot(page, "issue30-report")
    phone = as_role("auditor", width=390)
    phone.goto(base + "/reports?from=2025-03-01&to=2025-03-31")
    phone.locator("#period-integrity .period-verified:not([data-status='pending'])").wait_for()
    screenshot(phone, "issue30-report-390")
    assert page.js_errors == []


def test_no_link_to_a_history_the_viewer_cannot_open(as_role, issue30_site):
    base, _ = issue30_site
    page = as_role("player", "p1")
    for path in ("/games/T7-000123", "/games", "/players/p1", "/games/T5-000300"):
        page.goto(base + path)
        links = page.locator('a[href^="/players/"]')
        hrefs = {links.nth(n).get_attribute("href") for n in range(links.count())}
        assert hrefs <= {"/players/p1"}, (path, hrefs)
    response = page.goto(base + "/players/p1")
    assert response.status == 200
    staff = as_role("auditor")
    staff.goto(base + "/games/T7-000123")
    assert staff.locator('a[href="/players/p2"]').count() >= 1


def test_the_access_log_says_how_many_moves_were_viewed(as_role, issue30_site, screenshot):
    base, _ = issue30_site
    page = as_role("dispute_officer")
    page.goto(base + "/games/T7-000123/replay?move=0")
    page.keyboard.press("End")
    page.locator("#table-frame[data-move='7']").wait_for()
    admin = as_role("admin")
    admin.goto(base + "/admin/access-log?game=T7-000123")
    rows = admin.locator("table.access-log tbody tr", has_text="dispute")
    assert rows.count() == 1
    cell = rows.nth(0).locator("td.moves-viewed").inner_text()
    # Moves 0 and 7, and the neighbours the replay fetched ahead: never a bare range that
    # reads as eight moves.
    found = re.fullmatch(r"(\d) moves viewed, between move 0 and 7", cell)
    assert found and 2 <= int(found.group(1)) < 8, cell
    screenshot(admin, "issue30-access-log")
