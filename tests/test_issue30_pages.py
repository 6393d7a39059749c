"""Issue 30's money, leak and report items on the pages, on SQLite and PostgreSQL.

One site holds a game of every variant: the sample 13-card games (Points and Raise, one of
them won because everyone else dropped), a Pool match with a rejoin whose first deal ends by
drops, a Deals match whose first deal ends by a drop, and the Red 3 example twice (once with
the operator's wrong winner). Every figure is checked against the database itself, read
here with plain SQL, not through the code under test.
"""

from __future__ import annotations

import copy
import json
import re
from collections import defaultdict
from datetime import date
from decimal import Decimal

import pytest
import sqlalchemy as sa
from auth_support import signed_in
from match_player import config, planned_deal
from web_support import DATA, load_games, sample_records

from domain import variants
from domain.pooldeals.match import Match
from domain.pooldeals.records import match_record_of
from web import create_app

POOL, DEALS, RED3, RED3_WRONG = "I30-POOL", "I30-DEALS", "R3-EXAMPLE", "R3-WRONG-WINNER"
BY_DROPS = "T5-000300"  # Raise: p4, p1 and p2 drop, p3 wins and never shows
CARD_WORDS = re.compile(r'aria-label="[^"]*\b(?:of (?:spades|hearts|diamonds|clubs)|joker)\b')


def pool_record() -> dict:
    """A 101 pool: deal 1 ends by drops (p1 never shows), p2 is out and rejoins."""
    match = Match.start(config(POOL, "pool", pool=101, fee_percent="10"))
    planned_deal(match, "p1", {"p2": "middle", "p3": "first"})
    planned_deal(match, "p2", {"p1": "first", "p3": "middle"})
    planned_deal(match, "p3", {"p1": "first", "p2": "wrong"})
    match.rejoin("p2")
    planned_deal(match, "p1", {"p2": "middle", "p3": "wrong"})
    return json.loads(json.dumps(match_record_of(match).to_dict()))


def deals_record() -> dict:
    match = Match.start(config(DEALS, "deals", deals=2, players=("p1", "p2"), entry_fee="40"))
    planned_deal(match, "p1", {"p2": "first"})
    planned_deal(match, "p2", {"p1": "first"})
    planned_deal(match, "p1", {"p2": "middle"})
    return json.loads(json.dumps(match_record_of(match).to_dict()))


def red3_records() -> list[dict]:
    first = json.loads((DATA / "red3_example.jsonl").read_text().splitlines()[0])
    wrong = copy.deepcopy(first)
    wrong["game_id"] = RED3_WRONG
    wrong["reported"] = dict(wrong["reported"], winner="p1")  # the example's winner is p2
    return [first, wrong]


@pytest.fixture
def site(database_url):
    load_games(database_url, [*sample_records(), pool_record(), deals_record(), *red3_records()])
    return create_app({"DATABASE_URL": database_url, "TESTING": True, "GAMES_PER_PAGE": 500})


def ledger_nets(url: str) -> dict[tuple[str, str], Decimal]:
    """(game, player) -> credits minus debits, straight from ledger_entries (stored in paise)."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                sa.text(
                    "SELECT game_id, player, SUM(credit) - SUM(debit) FROM ledger_entries "
                    "WHERE player IS NOT NULL GROUP BY game_id, player"
                )
            ).all()
    finally:
        engine.dispose()
    return {(game, player): Decimal(int(paise)).scaleb(-2) for game, player, paise in rows}


def _rows(html: str, table: str) -> list[str]:
    body = html[html.index(f'<table class="{table}"') :]
    return re.findall(r"<tr[^>]*>.*?</tr>", body[: body.index("</table>")], re.S)[1:]


def _net_cell(row: str) -> str | None:
    found = re.search(r'class="num net" data-net="([^"]*)"', row)
    assert found, row
    return found.group(1) or None


def _game_of(row: str) -> str:
    return re.match(r'<tr data-game="([^"]+)"', row).group(1)


def _variant_of(row: str) -> str:
    return re.search(r'data-variant="([^"]+)"', row).group(1)


def test_every_net_shown_is_the_sum_of_the_players_ledger_entries(site):
    expected = ledger_nets(site.config["DATABASE_URL"])
    # The fixture's matches are what issue 30 saw go wrong: a lost entry fee, two entry fees
    # after a rejoin, a prize net of the winner's own entry fee.
    assert expected[(POOL, "p2")] == Decimal("-50.00") and expected[(POOL, "p3")] == Decimal("-25")
    assert expected[(POOL, "p1")] == Decimal("65.00")
    client = signed_in(site, "auditor")
    games = {}
    for (game, player), net in expected.items():
        games.setdefault(player, {})[game] = net
    seen_variants = set()
    for player, nets in games.items():
        page = client.get(f"/players/{player}").get_data(as_text=True)
        rows = _rows(page, "history")
        running = Decimal("0.00")
        shown = {}
        for row in reversed(rows):  # newest first on the page
            game = _game_of(row)
            net = _net_cell(row)
            variant = _variant_of(row)
            seen_variants.add(variant)
            if not variants.get(variant).has_money:
                assert net is None and "—" in row and game not in nets
                continue
            shown[game] = Decimal(net)
            running += Decimal(net)
            total = re.search(r'class="num running-total" data-total="([^"]+)"', row).group(1)
            assert Decimal(total) == running, (player, game)
        assert shown == nets, player
        listed = client.get(f"/games?player={player}").get_data(as_text=True)
        for row in _rows(listed, "games"):
            game, net = _game_of(row), _net_cell(row)
            if game in nets:
                assert Decimal(net) == nets[game], (player, game)
            else:
                assert net is None, (player, game)
    assert seen_variants == set(variants.names())
    # The 13-card summary page: each player's net beside the result.
    for game in ("T7-000123", BY_DROPS):
        summary = client.get(f"/games/{game}").get_data(as_text=True)
        rows = [row for row in _rows(summary, "results") if 'class="num net"' in row]
        assert len(rows) >= 3
        for row in rows:
            player = re.search(r">(p\d+)</", row).group(1)
            assert Decimal(_net_cell(row)) == expected[(game, player)], (game, player)


def test_a_match_history_row_shows_its_entry_fees_not_a_point_value(site):
    page = signed_in(site, "auditor").get("/players/p2").get_data(as_text=True)
    row = next(r for r in _rows(page, "history") if _game_of(r) == POOL)
    stake = re.search(r'class="num stake">([^<]*)<', row).group(1)
    assert stake == "entry 25.00 + rejoins 25.00"
    assert "0.00 a point" not in page


def _seat_section(html: str, player: str) -> str:
    found = re.search(
        rf'<section class="seat[^"]*"[^>]*data-player="{player}".*?</section>', html, re.S
    )
    assert found, player
    return found.group(0)


def _face_up(html: str, player: str) -> bool:
    """Whether any card of ``player``'s hand is drawn face up (books laid on the table are
    shown to everyone and do not count)."""
    section = _seat_section(html, player)
    section = section.split('<div class="books"')[0]
    return bool(CARD_WORDS.search(section))


def _last_step(client, game_id: str) -> int:
    """The replay's last step, as the replay page numbers it (its ``data-total``)."""
    html = client.get(f"/games/{game_id}/replay").get_data(as_text=True)
    return int(re.search(r'id="replay"[^>]*data-total="(\d+)"', html).group(1))


def test_a_hand_never_shown_stays_face_down_in_every_variant(site):
    from replays.store.application import Ledger

    ledger = Ledger(site.config["DATABASE_URL"])
    # 13-card: everyone else dropped; the winner p3 never showed.
    client = signed_in(site, "player", player="p1")
    staff_client = signed_in(site, "auditor")
    last = _last_step(staff_client, BY_DROPS)
    end = client.get(f"/games/{BY_DROPS}/replay?seat=p1&move={last}").get_data(as_text=True)
    assert not _face_up(end, "p3") and _face_up(end, "p1")
    summary = client.get(f"/games/{BY_DROPS}").get_data(as_text=True)
    final = re.search(r'<article class="final-hand" data-player="p3">.*?</article>', summary, re.S)
    assert final is None or not CARD_WORDS.search(final.group(0))
    staff = signed_in(site, "auditor").get(f"/games/{BY_DROPS}/replay?move={last}")
    assert _face_up(staff.get_data(as_text=True), "p3")  # the full view shows every card
    # ...while a declared game lays the winner's groups open to every seat.
    last = _last_step(staff_client, "T7-000123")
    declared = client.get(f"/games/T7-000123/replay?seat=p1&move={last}").get_data(as_text=True)
    assert _face_up(declared, "p1") and _face_up(declared, "p3")

    # Pool and Deals: the first deal ends by drops; its winner p1 never showed.
    viewer = signed_in(site, "player", player="p2")
    for game_id in (POOL, DEALS):
        game = ledger.get_game(game_id)
        steps = variants.for_game(game).timeline(game)
        starts = [n for n, step in enumerate(steps, 1) if step.get("type") == "deal"]
        assert len(starts) >= 2, steps[:3]
        last = starts[1] - 1  # the first deal's last move
        page = viewer.get(f"/games/{game_id}/replay?seat=p2&move={last}")
        html = page.get_data(as_text=True)
        assert page.status_code == 200, html[:300]
        assert not _face_up(html, "p1"), (game_id, last)
        assert _face_up(html, "p2"), (game_id, last)

    # Red 3: another seat's hands are never shown, only the books laid down.
    last = _last_step(staff_client, RED3)
    for move in (1, 5, last // 2, last):
        html = client.get(f"/games/{RED3}/replay?seat=p1&move={move}").get_data(as_text=True)
        assert not _face_up(html, "p2"), move
    staff = signed_in(site, "auditor").get(f"/games/{RED3}/replay?move=5").get_data(as_text=True)
    assert _face_up(staff, "p2")


def test_the_seat_view_is_the_variants_question(site):
    """Every variant answers what a seat may see; a hand never shown is not in it."""
    from replays.store.application import Ledger

    ledger = Ledger(site.config["DATABASE_URL"])
    game = ledger.get_game(BY_DROPS)
    variant = variants.for_game(game)
    seen = variant.seat_view(variant.table_state(game), "p1").to_dict()
    seats = {s["player"]: s for s in seen["seats"]}
    assert seats["p3"]["hand"] in ([], None) and seats["p1"]["hand"]
    full = variant.seat_view(variant.table_state(game), None).to_dict()
    assert {s["player"]: s for s in full["seats"]}["p3"]["hand"]


def test_the_report_lists_every_discrepancy_the_games_list_flags(site):
    client = signed_in(site, "auditor")
    listed = client.get("/games?discrepancies=1&from=2025-03-01&to=2025-03-31")
    flagged = {_game_of(row) for row in _rows(listed.get_data(as_text=True), "games")}
    assert RED3_WRONG in flagged and "T7-000124" in flagged
    report = client.get("/reports.json?from=2025-03-01&to=2025-03-31").get_json()
    reported = {d["game_id"] for d in report["discrepancies"]}
    assert flagged <= reported
    page = client.get("/reports?from=2025-03-01&to=2025-03-31").get_data(as_text=True)
    for game_id in flagged:
        assert f'<a href="/games/{game_id}/audit">{game_id}</a>' in page


def test_no_page_links_a_player_to_a_history_they_cannot_open(site):
    player = signed_in(site, "player", player="p1")
    for url in ("/games/T7-000123", "/games?player=p1", "/players/p1", f"/games/{BY_DROPS}"):
        html = player.get(url).get_data(as_text=True)
        targets = set(re.findall(r'href="/players/([^"?#]+)"', html))
        assert targets <= {"p1"}, (url, targets)
        for target in targets:
            assert player.get(f"/players/{target}").status_code == 200
    assert player.get("/players/p2").status_code == 403
    staff = signed_in(site, "auditor").get("/games/T7-000123").get_data(as_text=True)
    assert {"p1", "p2", "p3"} <= set(re.findall(r'href="/players/([^"?#]+)"', staff))


def test_the_access_log_counts_the_moves_viewed(site):
    auditor = signed_in(site, "auditor")
    for move in (0, 2, 7, 3):
        assert auditor.get(f"/games/T7-000123/replay/table?move={move}").status_code == 200
    html = signed_in(site, "admin").get("/admin/access-log?game=T7-000123").get_data(as_text=True)
    words = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
    assert "4 moves viewed, between move 0 and 7" in words
    assert "0–7 (4 moves)" not in words


def test_period_chart_bars_stand_inside_the_plot():
    from web.period_chart import BOTTOM, HEIGHT, LEGEND_Y, TOP, gross_and_fees_chart

    days = [
        (date(2025, 3, 3), Decimal("5579.90"), Decimal("557.99")),
        (date(2025, 3, 4), Decimal("1200.00"), Decimal("120.00")),
        (date(2025, 3, 26), Decimal("4726.00"), Decimal("472.60")),
    ]
    svg = gross_and_fees_chart(days)
    bars = defaultdict(dict)
    for y, height, title in re.findall(
        r'<rect[^>]*y="([\d.]+)"[^>]*height="([\d.]+)"[^>]*class="bar-\w+"[^>]*>'
        r"<title>([^<]+)</title>",
        svg,
    ):
        day, name, value = re.match(r"(\S+): (\w+) ([\d.]+)", title).groups()
        bars[day][name] = (float(y), float(height), Decimal(value))
    assert len(bars) == 3
    plot_bottom = HEIGHT - BOTTOM
    for day in bars.values():
        for y, height, _ in day.values():
            assert y >= TOP and abs(y + height - plot_bottom) < 0.2  # inside, on the axis
            assert y > LEGEND_Y + 12  # below the legend
    # Heights in proportion to the figures (3 March is taller than 26 March).
    tallest = bars["2025-03-03"]["gross"]
    for day in bars.values():
        for _, height, value in day.values():
            assert abs(height / tallest[1] - float(value / tallest[2])) < 0.01
    ticks = [Decimal(t.replace(",", "")) for t in re.findall(r">([\d,]+\.\d\d)</text>", svg)]
    assert max(ticks) >= Decimal("5579.90") and max(ticks) == Decimal("6000")


def test_the_report_page_verifies_no_game_its_integrity_part_verifies_each(site):
    """The figures are served without checking a game against its seals (seconds for a
    month); the integrity part, the JSON and the CSV check every game of the period."""
    checked: list[str] = []

    def verdict(url, game_id):
        checked.append(game_id)
        return "verified"

    site.config["INTEGRITY_VERDICT"] = verdict
    site.config["INTEGRITY_CACHE_SECONDS"] = 0
    client = signed_in(site, "auditor")
    period = "from=2025-03-01&to=2025-03-31"
    assert client.get(f"/reports?{period}").status_code == 200
    assert checked == []
    part = client.get(f"/reports/integrity?{period}").get_data(as_text=True)
    games = set(checked)
    assert {POOL, DEALS, RED3, "T7-000123"} <= games and 'data-status="verified"' in part
    checked.clear()
    data = client.get(f"/reports.json?{period}").get_json()
    assert set(checked) == games and data["verification"]["status"] == "verified"
    assert data["verification"]["games_checked"] == len(games)
