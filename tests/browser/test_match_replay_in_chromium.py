"""Pool and Deals matches in a real browser: the match view (scores after every deal,
eliminations, drops left, rejoins, the split's arithmetic), stepping through a deal move by
move with the keyboard and the permalink, and the seat filter."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.browser

# Simulated matches (deterministic for the seed): a 4-player pool with two rejoins that
# ends in a split, and a best-of deals match that needed a tiebreaker deal.
POOL_INDEX, DEALS_INDEX, SEED = 0, 14, 5


def records():
    from replays.simulation import Floor, Simulation

    pool = Simulation(Floor(seed=SEED, variants=("pool",))).game(POOL_INDEX)
    deals = Simulation(Floor(seed=SEED, variants=("deals",))).game(DEALS_INDEX)
    return pool, deals


@pytest.fixture(scope="module")
def match_site(tmp_path_factory):
    from conftest import LiveServer
    from web_support import load_games

    from web import create_app

    url = f"sqlite:///{tmp_path_factory.mktemp('match-browser') / 'ledger.sqlite3'}"
    load_games(url, list(records()))
    server = LiveServer(create_app({"DATABASE_URL": url}))
    try:
        yield server.url
    finally:
        server.stop()


def wait_for_move(page, move: int) -> None:
    page.locator(f"#table-frame[data-move='{move}']").wait_for()


def steps_of(record) -> list[tuple[str, int | None]]:
    """The match's steps as the replay numbers them: (kind, deal number)."""
    steps = []
    for number, played in enumerate(record["deals"], 1):
        steps += [("rejoin", None)] * len(played.get("rejoins", ()))
        steps.append(("deal", number))
        steps += [("move", number)] * len(played["moves"])
    if "split" in record:
        steps.append(("split", None))
    return steps


def test_the_match_view_shows_scores_rejoins_and_the_split(page, match_site, screenshot):
    pool, _deals = records()
    last = len(steps_of(pool))
    page.goto(f"{match_site}/games/{pool['game_id']}/replay?move={last}")
    wait_for_move(page, last)
    table = page.locator("table.score-table")
    assert table.locator("tbody tr[data-deal]").count() == len(pool["deals"])
    rejoins = sum(len(d.get("rejoins", ())) for d in pool["deals"])
    assert table.locator("tr.rejoin-row").count() == rejoins == 2
    assert "rejoins at" in table.inner_text()
    assert "eliminated" in table.inner_text()
    assert "drops left" in table.inner_text() or "drop left" in table.inner_text()
    split = page.locator("[data-role=split]")
    text = split.inner_text()
    for words in ("Net pool", "One drop's worth", "Drops =", "The rest", "Equal shares"):
        assert words in text, words
    reported = pool["reported"]
    shares = [row.inner_text().split()[-1] for row in split.locator("tbody tr").all()]
    assert sorted(shares) == sorted(reported["payouts"].values())
    assert f"Prize pool {reported['prize_pool']}" in page.locator("[data-role=payout]").inner_text()
    screenshot(page, "match-replay-split")
    assert page.js_errors == []


def test_stepping_through_a_deal_move_by_move(page, match_site, screenshot):
    pool, _deals = records()
    steps = steps_of(pool)
    second = steps.index(("deal", 2)) + 1  # moves count the steps applied
    page.goto(f"{match_site}/games/{pool['game_id']}/replay")
    wait_for_move(page, 0)
    assert "nothing dealt yet" in page.locator("#move-caption").inner_text()
    page.keyboard.press("ArrowRight")
    wait_for_move(page, 1)
    assert re.search(r"[?&]move=1\b", page.url)
    assert "deal 1 dealt" in page.locator("#move-caption").inner_text()
    assert page.locator("section.seat").count() == len(pool["players"])
    assert page.locator("section.seat svg [data-card]").count() >= 13 * len(pool["players"])
    page.keyboard.press("j")
    wait_for_move(page, 2)
    first = pool["deals"][0]["moves"][0]
    assert first["player"] in page.locator("#move-caption").inner_text()
    page.keyboard.press("k")
    wait_for_move(page, 1)
    # Up to the last move of deal 1 and over into deal 2, which deals a fresh table.
    page.goto(f"{match_site}/games/{pool['game_id']}/replay?move={second - 2}")
    wait_for_move(page, second - 2)
    page.keyboard.press("ArrowRight")
    wait_for_move(page, second - 1)
    page.keyboard.press("ArrowRight")
    wait_for_move(page, second)
    caption = page.locator("#move-caption").inner_text()
    assert "deal 2 dealt" in caption, caption
    assert "Deal 2" in page.locator(".table-facts").inner_text()
    assert page.locator("table.score-table tbody tr[data-deal]").count() == 1
    page.reload()
    wait_for_move(page, second)
    page.keyboard.press("End")
    wait_for_move(page, len(steps))
    page.keyboard.press("Home")
    wait_for_move(page, 0)
    screenshot(page, "match-replay-deal-1")
    assert page.js_errors == []


def test_a_deals_match_shows_chips_and_its_tiebreaker(page, match_site, screenshot):
    _pool, deals = records()
    last = len(steps_of(deals))
    page.goto(f"{match_site}/games/{deals['game_id']}/replay?move={last}")
    wait_for_move(page, last)
    assert "Chips after each deal" in page.locator(".match-scores").inner_text()
    assert "(tiebreaker)" in page.locator(".table-facts").inner_text()
    chips = page.locator("table.score-table tfoot td")
    total = sum(int(cell.inner_text().split()[0]) for cell in chips.all())
    assert total == 80 * deals["match"]["deals"] * len(deals["players"])
    screenshot(page, "match-replay-deals")


def test_the_seat_filter_shows_a_player_only_their_own_hand(browser, match_site):
    from conftest import sign_in

    pool, _deals = records()
    me, other = pool["players"][0]["id"], pool["players"][1]["id"]
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        sign_in(context, match_site, "player", player=me)
        page = context.new_page()
        page.goto(f"{match_site}/games/{pool['game_id']}/replay?move=3")
        wait_for_move(page, 3)
        assert f"seat={me}" in page.url  # a player's view is always their own seat
        assert f"as {me} saw it" in page.locator("#move-caption").inner_text()
        mine = page.locator(f'section.seat[data-player="{me}"]')
        theirs = page.locator(f'section.seat[data-player="{other}"]')
        assert mine.locator("svg [data-card]").count() >= 13
        assert theirs.locator("svg [data-card]").count() == 0
        assert "hidden" in theirs.inner_text() or theirs.locator("svg").count() >= 1
        refused = page.goto(f"{match_site}/games/{pool['game_id']}/replay?move=3&seat={other}")
        assert refused.status == 403
        views = page.goto(f"{match_site}/games/{pool['game_id']}/replay?move=3")
        assert views.status == 200
        assert page.locator(".views a").count() == 1  # only their own view is offered
    finally:
        context.close()
