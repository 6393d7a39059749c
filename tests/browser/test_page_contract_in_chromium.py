"""The page contract in a real browser (issue 30): nothing scrolls sideways at 390 px, for
every variant's replay, audit and history as staff and as a player of the game, with
screenshots of each at 1280 and 390 px; and each of issue 30's items 5, 6, 7, 8, 9, 11, 12 and
15 as a person would see it. The store is tests/test_page_contract.py's (every registered
variant, simulated), with the demo's deccan game and dispute cases.
"""

from __future__ import annotations

import re

import pytest
from test_page_contract import LETTER_CARD, build_store, chosen_game

from domain import variants

pytestmark = pytest.mark.browser

PHONE = 390


@pytest.fixture(scope="module")
def contract_site(tmp_path_factory):
    from conftest import LiveServer

    from replays.demo import create_demo_accounts, seed_deccan_example
    from web import create_app

    url = f"sqlite:///{tmp_path_factory.mktemp('contract-browser') / 'ledger.sqlite3'}"
    build_store(url)
    seed_deccan_example(url)
    create_demo_accounts(url)  # the demo's cases name its officer's account
    app = create_app({"DATABASE_URL": url})
    server = LiveServer(app)
    try:
        yield {"url": server.url, "app": app}
    finally:
        server.stop()


@pytest.fixture
def open_as(browser, contract_site):
    """``open_as(role, width, player=None)``: a signed-in page at that viewport width."""
    from conftest import sign_in

    contexts = []

    def make(role: str = "auditor", width: int = 1280, player: str | None = None):
        context = browser.new_context(viewport={"width": width, "height": 900})
        contexts.append(context)
        sign_in(context, contract_site["url"], role, player=player)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()


def steps_of(app, game_id: str) -> list[dict]:
    from replays.store.application import Ledger

    ledger = Ledger(app.config["DATABASE_URL"])
    return ledger.variant_of(game_id).timeline(ledger.get_game(game_id))


def sideways(page) -> int:
    return page.evaluate("document.documentElement.scrollWidth")


def test_no_page_scrolls_sideways_at_390_px_for_any_variant(contract_site, open_as, screenshot):
    base, app = contract_site["url"], contract_site["app"]
    staff_wide, staff_phone = open_as("auditor", 1280), open_as("auditor", PHONE)
    wide_problems = []
    for variant in variants.all_variants():
        game_id, players = chosen_game(app, variant.name)
        total = len(steps_of(app, game_id))
        player_phone = open_as("player", PHONE, players[0])
        pages = {
            "replay": f"/games/{game_id}/replay?move={total}",
            "replay-mid": f"/games/{game_id}/replay?move={total // 2}",
            "audit": f"/games/{game_id}/audit",
            "history": f"/players/{players[0]}",
        }
        for name, path in pages.items():
            staff_phone.goto(base + path)
            if sideways(staff_phone) > PHONE:
                wide_problems.append(f"{path} (auditor) is {sideways(staff_phone)} px wide")
            if name in ("replay", "audit", "history"):
                screenshot(staff_phone, f"contract-{variant.name}-{name}-390")
                staff_wide.goto(base + path)
                screenshot(staff_wide, f"contract-{variant.name}-{name}-1280")
        for path in (pages["replay"], pages["history"], f"/games?player={players[0]}"):
            player_phone.goto(base + path)
            if sideways(player_phone) > PHONE:
                wide_problems.append(f"{path} ({players[0]}) is {sideways(player_phone)} px wide")
    assert not wide_problems, "\n".join(wide_problems)


# -- 5: hand analysis in Pool and Deals deals; the "could declare" mark ------------------------


@pytest.mark.parametrize(
    "name", [v.name for v in variants.all_variants() if v.web_pages and v.analyses_hands]
)
def test_a_matchs_deal_has_hand_analysis_in_both_views(contract_site, open_as, name):
    base, app = contract_site["url"], contract_site["app"]
    game_id, _ = chosen_game(app, name)
    steps = steps_of(app, game_id)
    move = next(i for i, s in enumerate(steps) if s.get("type") == "discard") + 1
    me = steps[move - 1]["player"]
    staff = open_as("auditor")
    staff.goto(f"{base}/games/{game_id}/replay?move={move}")
    analysed = staff.locator(".seat .hand-analysis")
    assert analysed.count() >= 2 and analysed.first.is_visible()
    assert "Best grouping: hand score" in analysed.first.inner_text()
    player = open_as("player", player=me)
    player.goto(f"{base}/games/{game_id}/replay?move={move}")
    own = player.locator(".seat .hand-analysis")
    assert own.count() == 1 and own.get_attribute("data-player") == me


def test_a_hand_that_can_declare_is_marked_so(contract_site, open_as):
    base, app = contract_site["url"], contract_site["app"]
    marked = 0
    for variant in variants.all_variants():
        if not variant.analyses_hands:
            continue
        game_id, _ = chosen_game(app, variant.name)
        steps = steps_of(app, game_id)
        declares = [i for i, s in enumerate(steps) if s.get("type") == "declare"]
        page = open_as("auditor")
        for index in declares:
            winner = steps[index]["player"]
            # After the winner's pick, before the declaration: their 14 cards can declare.
            page.goto(f"{base}/games/{game_id}/replay?move={index}")
            seat = page.locator(f'.seat[data-player="{winner}"] .hand-analysis')
            if seat.count() and seat.get_attribute("data-could-declare") == "yes":
                assert seat.locator(".could-declare").is_visible()
                assert "could declare" in seat.inner_text()
                marked += 1
    assert marked, "no declaration's hand was marked as one that could declare"


# -- 6: the history's missed chances ------------------------------------------------------------


@pytest.mark.parametrize(
    "name", [variant.name for variant in variants.all_variants() if variant.analyses_hands]
)
def test_the_history_lists_the_replays_missed_chances(contract_site, open_as, name):
    # Every variant that analyses hands: a match's deals (Pool, Deals) as a 13-card game.
    base, app = contract_site["url"], contract_site["app"]
    game_id, players = chosen_game(app, name)
    found = None
    for player in players:
        page = open_as("player", player=player)
        page.goto(f"{base}/players/{player}")
        links = page.locator(f'tr[data-game="{game_id}"] td.missed-chance a')
        if links.count():
            found = (page, player, links.first)
            break
    assert found, f"no player's history lists a missed chance in {game_id}"
    page, player, link = found
    href = link.get_attribute("href")
    move = re.search(r"move=(\d+)", href).group(1)
    link.click()
    page.wait_for_load_state()
    assert f"seat={player}" in page.url and f"move={move}" in page.url
    assert page.locator("#table-frame").get_attribute("data-move") == move


# -- 7 and 8: audits ---------------------------------------------------------------------------


def test_every_match_audit_marks_its_discrepancies_in_tables(contract_site, open_as):
    from replays.store.application import Ledger

    base, app = contract_site["url"], contract_site["app"]
    ledger = Ledger(app.config["DATABASE_URL"])
    page = open_as("auditor")
    checked = 0
    for variant in variants.all_variants():
        if variant.web_pages is None:
            continue
        game_id, _ = chosen_game(app, variant.name)
        game = ledger.get_game(game_id)
        found = variant.audit(game, ledger.events_of(game)).discrepancies
        page.goto(f"{base}/games/{game_id}/audit")
        text = page.locator("main").inner_text()
        assert "{'" not in text and "': " not in text, f"{game_id}: figures printed as a dict"
        for discrepancy in found:
            marks = page.locator(".differs[data-field]").filter(has_text="differs")
            fields = " | ".join(
                marks.nth(i).get_attribute("data-field") for i in range(marks.count())
            )
            assert discrepancy.field in fields.split(" | "), f"{game_id}: {discrepancy.field}"
        checked += bool(found)
        if variant.has_money:
            entries = page.locator("table.entries tbody tr")
            assert entries.count() >= 2
            assert "balanced" in page.locator("table.entries tfoot").inner_text()
    assert checked, "no match audit had a discrepancy to mark"


def test_red3_writes_cards_counts_and_negatives_as_the_site_does(contract_site, open_as):
    base, app = contract_site["url"], contract_site["app"]
    red3 = [v for v in variants.all_variants() if not v.analyses_hands]
    assert red3, "every variant analyses hands: nothing to check here"
    page = open_as("auditor")
    for variant in red3:
        game_id, _ = chosen_game(app, variant.name)
        total = len(steps_of(app, game_id)) - 1
        for move in (1, total // 2, total):
            page.goto(f"{base}/games/{game_id}/replay?move={move}")
            text = page.locator("main").inner_text()
            assert not LETTER_CARD.findall(text), LETTER_CARD.findall(text)[:5]
            assert not re.search(r"\b1 cards\b", text)
            assert not re.search(r"(?<![\w-])-\d", text), re.findall(r".{12}(?<![\w-])-\d+", text)
            assert variant.no_analysis_words in text and page.locator(".hand-analysis").count() == 0
        page.goto(f"{base}/games/{game_id}/audit")
        tables = page.locator("table.red3-audit:not(.totals)")
        assert tables.count() >= 2
        lefts = {
            round(tables.nth(i).locator("thead th").nth(3).bounding_box()["x"])
            for i in range(tables.count())
        }
        assert len(lefts) == 1, f"the Score column moves from round to round: {lefts}"
        assert not re.search(r"(?<![\w-])-\d", page.locator("main").inner_text())


# -- 9: hands that scroll say so ---------------------------------------------------------------


def test_a_hand_wider_than_its_seat_says_it_scrolls(contract_site, open_as):
    base, app = contract_site["url"], contract_site["app"]
    game_id, _ = chosen_game(app, "points")
    page = open_as("auditor", PHONE)
    page.goto(f"{base}/games/{game_id}/replay?move=1")
    scrolling = page.locator(".hand-wrap[data-scrolls]")
    scrolling.first.wait_for()
    hint = scrolling.first.evaluate("el => getComputedStyle(el, '::before').content")
    assert "Scroll for more cards" in hint
    assert sideways(page) <= PHONE


# -- 11: seat tags and the facts line ------------------------------------------------------------


def test_a_player_in_their_first_turn_is_not_waiting_for_it(contract_site, open_as):
    base, app = contract_site["url"], contract_site["app"]
    page = open_as("auditor")
    for name in ("points", "pool"):
        game_id, _ = chosen_game(app, name)
        steps = steps_of(app, game_id)
        first_pick = next(i for i, s in enumerate(steps) if s.get("type") == "pick")
        player = steps[first_pick]["player"]
        page.goto(f"{base}/games/{game_id}/replay?move={first_pick + 1}")
        tags = page.locator(f'.seat[data-player="{player}"] h3').inner_text()
        assert "in their first turn" in tags and "waiting for a first turn" not in tags
        facts = page.locator(".table-facts").inner_text()
        assert not re.search(r"(?i)in play: in play", facts)


# -- 12: dispute pages ---------------------------------------------------------------------------


def test_dispute_pages_read_right(contract_site, open_as):
    from replays.access import accounts

    base, app = contract_site["url"], contract_site["app"]
    page = open_as("dispute_officer")
    page.goto(f"{base}/disputes?status=all")
    rows = page.locator("table.cases tbody tr")
    assert rows.count() >= 3
    game_link = rows.first.locator("td.game-id a")
    assert game_link.count() == 1 and "/replay" in game_link.get_attribute("href")
    ages = page.locator("td.age").all_inner_texts()
    assert not [age for age in ages if re.search(r"\d{2,} days", age)], ages
    for i in range(rows.count()):
        page.goto(f"{base}/disputes?status=all")
        page.locator("table.cases tbody tr").nth(i).locator("th a").click()
        page.wait_for_load_state()
        for author in page.locator(".timeline p.when > strong:first-of-type").all_inner_texts():
            is_player = re.fullmatch(r"p\d+", author)
            account = accounts.find_user(author, url=app.config["DATABASE_URL"])
            assert is_player or account is not None, f"{author} is no account"
        hands = page.locator("section.case-hands")
        if hands.count():
            assert page.locator(".case-layout section.case-hands").count() == 0
            layout = page.locator(".case-layout").bounding_box()
            assert hands.bounding_box()["width"] >= layout["width"] - 2


# -- 15: deccan's two-point rule -----------------------------------------------------------------


def test_the_demos_deccan_game_shows_the_two_point_rule_apart(contract_site, open_as):
    from replays.demo import DECCAN_GAME

    base = contract_site["url"]
    page = open_as("auditor")
    page.goto(f"{base}/games/{DECCAN_GAME}/audit")
    cell = page.locator("[data-rule='met-objective']").first
    assert "flat 2 points" in cell.inner_text()
    row = page.locator("tr", has=page.locator("[data-rule='met-objective']")).first.inner_text()
    assert "puremet" not in row.replace(" ", "")
    assert re.search(r"pure\s*\n\s*met the objective", row), row
    page.goto(f"{base}/games/{DECCAN_GAME}/replay?move=2")
    assert "met the objective without declaring" in page.locator("main").inner_text()
