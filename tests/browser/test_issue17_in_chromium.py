"""Issue 17 in a real browser (Debian's chromium): the Red 3 seat leak, and the defects that
are about layout: the Scores table mid-match, labels that overprint, sideways scrolling at
390 px, and the move list following the move shown. Screenshots go to tests/artifacts/."""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

DATA = Path(__file__).resolve().parent.parent / "data"
RED3 = "/games/R3-EXAMPLE/replay"


@pytest.fixture(scope="module")
def issue_site(tmp_path_factory):
    from conftest import LiveServer
    from web_support import load_games, sample_records

    from web import create_app

    url = f"sqlite:///{tmp_path_factory.mktemp('issue17-browser') / 'ledger.sqlite3'}"
    red3 = json.loads((DATA / "red3_example.jsonl").read_text().splitlines()[0])
    load_games(url, [*sample_records(), red3])
    server = LiveServer(create_app({"DATABASE_URL": url}))
    try:
        yield server.url
    finally:
        server.stop()


def _context(browser, base: str, width: int = 1280, **player):
    from conftest import sign_in

    context = browser.new_context(viewport={"width": width, "height": 900})
    if player:
        sign_in(context, base, "player", player=player["player"])
    else:
        sign_in(context, base)
    return context


def wait_for_move(page, move: int) -> None:
    page.locator(f"#table-frame[data-move='{move}']").wait_for()


def _boxes_overlap(a: dict, b: dict) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


# -- the leak ------------------------------------------------------------------------------


def test_a_red3_player_never_sees_another_players_stock_draw(browser, issue_site, screenshot):
    context = _context(browser, issue_site, player="p2")
    page = context.new_page()
    try:
        # Move 1: p1 draws 9C from the stock; p2 is signed in.
        page.goto(f"{issue_site}{RED3}?move=1&seat=p2")
        wait_for_move(page, 1)
        caption = page.locator("#move-caption").inner_text()
        assert "p1 picks from the stock" in caption, caption
        moves = page.locator("#moves").inner_text()
        assert not re.search(r"p1 picks \S+ from the stock", moves.replace("picks from", "")), moves
        screenshot(page, "issue17-red3-seat-leak")
        # Stepping by keyboard swaps in the /replay/table fragment: it must not tell either.
        page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowLeft")
        wait_for_move(page, 1)
        assert "p1 picks from the stock" in page.locator("#move-caption").inner_text()
        assert "9♣" not in page.locator("#move-caption").inner_text()
    finally:
        context.close()


# -- layout defects ------------------------------------------------------------------------


def test_red3_scores_table_is_readable_mid_match(browser, issue_site, screenshot):
    context = _context(browser, issue_site)
    page = context.new_page()
    try:
        page.goto(f"{issue_site}{RED3}?move=12")
        table = page.locator("table.red3-scores")
        table.wait_for()
        assert "Round 2" in page.locator(".table-facts").inner_text()
        rows = table.locator("tbody tr")
        assert rows.count() >= 1
        cell = rows.first.locator("td").first
        assert cell.is_visible() and cell.inner_text().strip()
        ink = cell.evaluate("el => getComputedStyle(el).color")
        paper = table.evaluate("el => getComputedStyle(el).backgroundColor")
        header = table.locator("thead th").first.evaluate("el => getComputedStyle(el).color")
        assert ink != paper and header != "rgb(255, 255, 255)", (ink, paper, header)
        table.scroll_into_view_if_needed()
        screenshot(page, "issue17-red3-scores-mid-match")
    finally:
        context.close()


def _text_boxes(page, selector: str) -> list[tuple[str, dict]]:
    found = []
    for item in page.locator(selector).all():
        found.append((item.text_content(), item.bounding_box()))
    return found


def test_chart_labels_do_not_overprint(browser, screenshot):
    from web import charts

    exits = [
        charts.Exit(61, "p3", "middle drop", Decimal("1.90")),
        charts.Exit(62, "p4", "auto-drop", Decimal("1.90")),
        charts.Exit(63, "p5", "wrong show", Decimal("1.90")),
        charts.Exit(64, "p2", "middle drop", Decimal("1.90")),
        charts.Exit(66, "p1", "declared", Decimal("2.00")),
        charts.Exit(66, "p6", "lost", Decimal("2.00")),
    ]
    values = [Decimal("1.00") + Decimal("0.10") * (m // 7) for m in range(67)]
    point_values = charts.point_value_chart([min(v, Decimal("2.00")) for v in values], exits)
    totals = charts.running_total_chart(
        [("g1", Decimal("-427.88")), ("g2", Decimal("-855.76")), ("g3", Decimal("-600.00"))]
    )
    context = browser.new_context(viewport={"width": 800, "height": 700})
    page = context.new_page()
    try:
        page.set_content(f"<body style='margin:0'>{point_values}{totals}</body>")
        labels = _text_boxes(page, "svg.point-values g.exit text")
        assert len(labels) == len(exits)
        for i, (one, box) in enumerate(labels):
            for other, other_box in labels[i + 1 :]:
                assert not _boxes_overlap(box, other_box), f"{one!r} overprints {other!r}"
        title = page.locator("svg.running-total text.y-title").bounding_box()
        for tick, box in _text_boxes(page, "svg.running-total text.y-tick"):
            assert not _boxes_overlap(title, box), f"the axis title overprints {tick!r}"
        screenshot(page, "issue17-charts")
    finally:
        context.close()


def test_wide_tables_and_charts_say_they_scroll_at_390px(browser, issue_site, screenshot):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    from conftest import sign_in

    sign_in(context, issue_site)
    page = context.new_page()
    try:
        for path, selector in (("/games", ".table-scroll"), ("/games/seed-raise-122", ".chart")):
            page.goto(issue_site + path)
            box = page.locator(selector).first
            box.wait_for()
            overflow = page.evaluate(
                "document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert overflow <= 1, f"{path}: the page itself scrolls sideways"
            assert box.evaluate("el => el.scrollWidth > el.clientWidth"), f"{path}: fits anyway"
            hint = box.evaluate("el => getComputedStyle(el, '::before').content")
            assert "Scroll sideways" in hint, f"{path}: no hint ({hint})"
            screenshot(page, f"issue17-390px-{path.strip('/').replace('/', '-')}", full_page=False)
    finally:
        context.close()


def test_the_move_list_opens_at_the_move_shown(browser, issue_site, screenshot):
    context = _context(browser, issue_site)
    page = context.new_page()
    try:
        page.goto(f"{issue_site}/games/seed-raise-122/replay?move=64")
        wait_for_move(page, 64)
        box = page.locator("nav.move-list")
        current = page.locator('#moves a[aria-current="step"]')
        current.wait_for()
        # Polled from Python (no in-page eval of a predicate): the script scrolls on load.
        for _ in range(50):
            outer, inner = box.bounding_box(), current.bounding_box()
            if (
                outer["y"] <= inner["y"]
                and inner["y"] + inner["height"] <= outer["y"] + outer["height"]
            ):
                break
            page.wait_for_timeout(100)
        else:
            pytest.fail(f"move 64 is outside the list's view: list {outer}, move {inner}")
        screenshot(page, "issue17-move-list-at-move-64", full_page=False)
    finally:
        context.close()
