"""Every page of the site through Flask's test client, on a ledger filled with real records."""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from decimal import Decimal

import pytest
from auth_support import signed_in
from web_support import MISREPORTED, load_games

from web import create_app


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('site') / 'ledger.sqlite3'}"
    records = load_games(url)
    app = create_app({"DATABASE_URL": url, "TESTING": True})
    return app, records


@pytest.fixture
def client(site):
    return signed_in(site[0])


def text_of(html: str) -> str:
    """The visible words of a page (tags dropped, whitespace squeezed)."""
    words = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
    return words.replace("&#39;", "'").replace(" ,", ",").replace(" .", ".")


def listed_games(html: str) -> list[str]:
    return re.findall(r'<th scope="row" class="game-id"><a href="/games/([^/"]+)/replay">', html)


def seat_section(html: str, player: str) -> str:
    match = re.search(
        rf'<section class="seat[^"]*" data-player="{player}".*?</section>', html, re.S
    )
    assert match, f"no seat section for {player}"
    return match.group(0)


def drawn_cards(fragment: str) -> list[str]:
    return re.findall(r'data-card="([^"]+)"', fragment)


# -- the games list ------------------------------------------------------------------------


def test_list_shows_every_game_newest_first(client, site):
    html = client.get("/").get_data(as_text=True)
    games = listed_games(html)
    assert sorted(games) == sorted(site[1])
    assert games[0] == MISREPORTED  # started a day after the others
    assert "9 games." in text_of(html)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("variant=raise", {"T7-000123", MISREPORTED, "seed-raise-122", "T5-000300"}),
        ("table=T7", {"T7-000123", MISREPORTED}),
        ("player=a1", {"T9-000777"}),
        ("result=wrong_show", {"T2-000451"}),
        ("player=p2&result=auto_drop", {"T2-000451"}),
        ("discrepancies=1", {MISREPORTED}),
        ("from=2025-03-02", {MISREPORTED}),
        ("to=2025-03-01&table=T7", {"T7-000123"}),
        ("from=2025-03-03", set()),
    ],
)
def test_filters(client, query, expected):
    html = client.get(f"/games?{query}").get_data(as_text=True)
    assert set(listed_games(html)) == expected
    if not expected:
        assert "No games match these filters." in text_of(html)


def test_player_filter_shows_that_players_result_and_net(client):
    html = client.get("/games?player=p3&table=T7").get_data(as_text=True)
    row = re.search(
        r'<tr[^>]*>\s*<th scope="row" class="game-id"><a href="/games/T7-000123/replay">.*?</tr>',
        html,
        re.S,
    )
    words = text_of(row.group(0))
    assert "lost" in words and "−29.70" in words


def test_pagination_keeps_the_filters(site):
    app = create_app({"DATABASE_URL": site[0].config["DATABASE_URL"], "GAMES_PER_PAGE": 2})
    client = signed_in(app)
    seen = []
    for page in (1, 2):
        html = client.get(f"/games?variant=raise&page={page}").get_data(as_text=True)
        seen += listed_games(html)
        assert f"Page {page} of 2" in text_of(html)
    assert len(seen) == 4 and len(set(seen)) == 4
    assert 'href="/games?variant=raise&amp;page=2"' in client.get("/games?variant=raise").get_data(
        as_text=True
    )


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("variant=red", "'variant' must be one of points, raise, red3, pool, deals, not 'red'"),
        ("from=2025-02-30", "'from' must be a date like 2025-03-01, not '2025-02-30'"),
        ("from=2025-03-05&to=2025-03-01", "'from' is after 'to'"),
        ("page=0", "'page' must be a whole number from 1, not '0'"),
        ("result=cheated", "'result' must be one of won, lost"),
    ],
)
def test_bad_filters_are_a_400_that_says_which(client, query, message):
    response = client.get(f"/games?{query}")
    assert response.status_code == 400
    assert message in text_of(response.get_data(as_text=True))


# -- the replay viewer ---------------------------------------------------------------------


def test_replay_starts_at_the_deal_with_everything_on_the_table(client, site):
    record = site[1]["T7-000123"]
    html = client.get("/games/T7-000123/replay").get_data(as_text=True)
    words = text_of(html)
    assert "Move 0 of 7 · the deal" in words
    assert "Round 1" in words and "Point value 1.00, next 1.10" in words
    for player, hand in record["deal"]["hands"].items():
        assert sorted(drawn_cards(seat_section(html, player))) == sorted(hand)
    assert 'aria-label="wild indicator: 7 of diamonds (7s are jokers)"' in html
    assert 'aria-label="open pile, 1 card, top: king of clubs"' in html
    assert 'aria-label="finish slot, empty"' in html
    stock = len(record["deal"]["stock"])
    assert f'aria-label="stock, {stock} cards"' in html
    assert 'id="prev"' in html and 'aria-disabled="true"' in html


def test_every_move_is_a_link_and_the_current_one_is_marked(client):
    html = client.get("/games/T7-000123/replay?move=3").get_data(as_text=True)
    links = re.findall(r'<a href="(/games/T7-000123/replay\?move=\d+)" data-move="(\d+)"', html)
    numbers = [int(n) for _, n in links]
    assert list(range(8)) == sorted(set(numbers) & set(range(8)))
    current = re.findall(r'data-move="(\d+)"[^>]*aria-current="step"', html)
    assert current == ["3"]
    assert 'rel="prev" href="/games/T7-000123/replay?move=2"' in html
    assert 'rel="next" href="/games/T7-000123/replay?move=4"' in html
    assert "Move 3 of 7 · p2 drops" in text_of(html)
    assert "dropped (first drop)" in text_of(seat_section(html, "p2"))


def test_the_table_follows_the_moves(client, site):
    record = site[1]["T7-000123"]
    before = client.get("/games/T7-000123/replay?move=0").get_data(as_text=True)
    after = client.get("/games/T7-000123/replay?move=1").get_data(as_text=True)
    picked = record["moves"][0]["card"]
    assert drawn_cards(seat_section(after, "p1")).count(picked) == (
        drawn_cards(seat_section(before, "p1")).count(picked) + 1
    )
    assert "just picked" in seat_section(after, "p1")
    stock = len(record["deal"]["stock"])
    assert f'aria-label="stock, {stock - 1} cards"' in after
    discarded = client.get("/games/T7-000123/replay?move=2").get_data(as_text=True)
    assert "top: 10 of clubs" in discarded


def test_raise_rummy_shows_the_point_value_rising_and_a_chart_with_exits(client):
    html = client.get("/games/T7-000123/replay?move=5").get_data(as_text=True)
    assert "Round 2" in text_of(html) and "Point value 1.10, next 1.20" in text_of(html)
    assert 'class="chart-svg point-values"' in html
    assert 'aria-label="p2: first drop at 1.00 after move 3"' in html
    assert 'aria-label="p3: lost at 1.10 after move 6"' in html
    points = client.get("/games/seed-points-200/replay").get_data(as_text=True)
    assert "point-values" not in points


def test_last_move_lays_out_final_hands_with_cases_and_minimum_scores(client):
    html = client.get("/games/T7-000123/replay?move=7").get_data(as_text=True)
    words = text_of(html)
    assert "Final hands" in words
    assert "p3 · lost" in words
    assert "Scoring case: a pure sequence but fewer than two sequences" in words
    assert "Points 27" in words and "Minimum possible 3" in words
    assert "charged 24 more than the best grouping" in words
    assert "× 1.10 = 29.70" in words
    assert "loose (" in html and "pure sequence" in html
    # Before the end there is nothing to lay out.
    assert "Final hands" not in text_of(
        client.get("/games/T7-000123/replay?move=6").get_data(as_text=True)
    )


def test_moments_link_to_drops_misses_wrong_show_auto_drop_and_declaration(client):
    html = client.get("/games/T2-000451/replay").get_data(as_text=True)
    moments = re.findall(r'data-move="(\d+)" class="moment moment-([a-z_]+)"', html)
    kinds = [kind for _, kind in moments]
    assert "wrong_show" in kinds and "auto_drop" in kinds and kinds[-1] == "declaration"
    assert kinds.count("miss") == 2  # p2's third miss is the auto-drop itself
    reshuffle = client.get("/games/T9-000777/replay").get_data(as_text=True)
    assert "moment-reshuffle" in reshuffle


def test_seat_view_shows_only_what_that_player_saw(client, site):
    record = site[1]["T7-000123"]
    html = client.get("/games/T7-000123/replay?move=1&seat=p2").get_data(as_text=True)
    assert sorted(drawn_cards(seat_section(html, "p2"))) == sorted(record["deal"]["hands"]["p2"])
    for other in ("p1", "p3"):
        section = seat_section(html, other)
        assert drawn_cards(section) == []
        assert "cards, hidden" in section
    # p1's closed pick is not shown to p2, in the caption or in the move list.
    picked = record["moves"][0]["card"]
    assert "p1 picks from the stock" in text_of(html)
    assert f"p1 picks {picked}" not in html
    full = client.get("/games/T7-000123/replay?move=1").get_data(as_text=True)
    assert "p1 picks 4♥ from the stock" in text_of(full)
    # The view switch keeps the move.
    assert 'href="/games/T7-000123/replay?move=1&amp;seat=p3"' in html
    assert "Final hands" not in text_of(html)


def test_seat_view_at_the_end_reveals_the_hands_shown(client):
    html = client.get("/games/T7-000123/replay?move=7&seat=p3").get_data(as_text=True)
    assert drawn_cards(seat_section(html, "p1")), "the declaration is public"
    assert "Final hands" in text_of(html)
    final = re.search(r'<article class="final-hand" data-player="p2">.*?</article>', html, re.S)
    assert drawn_cards(final.group(0)) == [], "p2 dropped: their cards were never shown"
    assert "p2's hand, not shown" in final.group(0)
    full = client.get("/games/T7-000123/replay?move=7").get_data(as_text=True)
    final = re.search(r'<article class="final-hand" data-player="p2">.*?</article>', full, re.S)
    assert len(drawn_cards(final.group(0))) == 13


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (
            "move=8",
            "Game T7-000123 has 7 moves: there is no move 8 (0 is the deal, 7 the last move).",
        ),
        ("move=-1", "there is no move -1"),
        ("move=three", "move must be a whole number from 0 to 7, not 'three'"),
        ("move=2&seat=p9", "Game T7-000123 has no player 'p9' (players: p1, p2, p3)."),
    ],
)
def test_bad_move_or_seat_is_a_400_naming_game_and_move(client, query, message):
    for path in ("/games/T7-000123/replay", "/games/T7-000123/replay/table"):
        response = client.get(f"{path}?{query}")
        assert response.status_code == 400
        assert message in text_of(response.get_data(as_text=True))


def test_unknown_game_is_a_404(client):
    for path in ("/games/NOPE/replay", "/games/NOPE", "/games/NOPE/audit", "/games/NOPE/audit.csv"):
        response = client.get(path)
        assert response.status_code == 404, path
        assert "No game 'NOPE' in the ledger." in text_of(response.get_data(as_text=True))


def test_fragment_is_exactly_the_table_of_the_page(client):
    page = client.get("/games/T9-000777/replay?move=30&seat=c3").get_data(as_text=True)
    fragment = client.get("/games/T9-000777/replay/table?move=30&seat=c3").get_data(as_text=True)
    assert fragment.lstrip().startswith('<section id="table-frame"')
    embedded = re.search(r'<section id="table-frame".*?\n</section>', page, re.S).group(0)
    assert fragment.strip() == embedded.strip()


def test_table_image_is_standalone_svg(client):
    response = client.get("/games/T7-000123/replay/table.svg?move=4&seat=p1")
    assert response.mimetype == "image/svg+xml"
    root = ET.fromstring(response.data)
    assert root.get("aria-label").startswith("Table of game T7-000123 after move 4")


# -- summary, audit, players ---------------------------------------------------------------


def test_game_summary_shows_results_and_final_hands(client):
    html = client.get("/games/seed-points-200").get_data(as_text=True)
    words = text_of(html)
    assert "Gross 200.00 INR" in words
    for player, result in (
        ("p2", "first drop"),
        ("p3", "middle drop"),
        ("p4", "lost"),
        ("p5", "lost"),
    ):
        assert f"{player} · {result}" in words
    assert "Fee (10 %) 20.00" in words
    assert "Minimum possible 30" in words


def test_audit_page_shows_the_arithmetic_and_agrees(client):
    html = client.get("/games/T7-000123/audit").get_data(as_text=True)
    words = text_of(html)
    assert "No discrepancies" in words
    assert "49.70 × 10 % (half-up to 0.01)" in words
    assert "20.00 + 29.70" in words
    assert "27 × 1.10 = 29.70" in words
    assert "(balanced)" in words
    assert "differs" not in words


def test_audit_page_highlights_what_the_operator_got_wrong(client):
    html = client.get(f"/games/{MISREPORTED}/audit").get_data(as_text=True)
    words = text_of(html)
    assert "2 discrepancies" in words
    gross = re.search(r'<th scope="row">Gross</th>.*?</tr>', html, re.S).group(0)
    assert 'class="num differs"' in gross and "52.70" in gross and "differs" in text_of(gross)
    fee = re.search(r'<th scope="row">Fee</th>.*?</tr>', html, re.S).group(0)
    assert "differs" not in fee


def test_audit_downloads(client):
    from replays.records.audit import audit
    from replays.store.application import Ledger

    response = client.get(f"/games/{MISREPORTED}/audit.json")
    assert response.mimetype == "application/json"
    assert "attachment" in response.headers["Content-Disposition"]
    body = json.loads(response.data)
    ledger = Ledger(client.application.config["DATABASE_URL"])
    expected = json.loads(json.dumps(audit(ledger, MISREPORTED).to_dict(), default=str))
    assert {k: v for k, v in body.items() if k != "status"} == expected
    assert {d["field"] for d in body["discrepancies"]} == {"gross", "net_to_winner"}

    rows = list(
        csv.DictReader(
            io.StringIO(client.get(f"/games/{MISREPORTED}/audit.csv").get_data(as_text=True))
        )
    )
    by_item = {row["item"]: row for row in rows}
    assert by_item["gross"] == {
        "game_id": MISREPORTED,
        "item": "gross",
        "computed": "49.70",
        "recorded": "49.70",
        "reported": "52.70",
        "differs": "yes",
    }
    assert by_item["fee"]["differs"] == ""
    assert by_item["p3 amount"]["computed"] == "29.70"


def test_player_history_with_running_total(client):
    html = client.get("/players/p3").get_data(as_text=True)
    words = text_of(html)
    nets = [
        Decimal(n.replace("−", "-").replace("+", "").replace(",", ""))
        for n in re.findall(r'<td class="num net"[^>]*>([+−]?[\d,]+\.\d\d)</td>', html)
    ]
    totals = re.findall(r'<td class="num running-total"[^>]*>([+−]?[\d,]+\.\d\d)</td>', html)
    assert len(nets) == len(totals) > 3
    # Newest first: the first row's running total is the sum of every net amount.
    assert Decimal(totals[0].replace("−", "-").replace("+", "")) == sum(nets)
    assert 'class="chart-svg running-total"' in html
    assert "running total" in words


def test_unknown_player_is_a_404(client):
    response = client.get("/players/nobody")
    assert response.status_code == 404
    assert "No games recorded for player 'nobody'." in text_of(response.get_data(as_text=True))


# -- the app shell ---------------------------------------------------------------------------


def test_unknown_page_and_server_error_pages(site):
    app = create_app({"DATABASE_URL": site[0].config["DATABASE_URL"]})

    @app.get("/boom")
    def boom():
        raise RuntimeError("secret detail")

    client = signed_in(app)
    missing = client.get("/no/such/page")
    assert missing.status_code == 404 and "Not found" in missing.get_data(as_text=True)
    failed = client.get("/boom")
    assert failed.status_code == 500
    page = failed.get_data(as_text=True)
    assert "Something went wrong" in page
    assert "secret detail" not in page and "Traceback" not in page
    api = client.get("/api/v1/no-such-thing", headers={"Accept": "application/json"})
    assert api.status_code == 404 and api.is_json


def test_responses_carry_server_timing(client):
    response = client.get("/games/T7-000123/replay?move=2")
    assert re.fullmatch(r"app;dur=\d+\.\d\d", response.headers["Server-Timing"])


def test_config_comes_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("RUMMY_LEDGER_DATABASE_URL", f"sqlite:///{tmp_path}/x.sqlite3")
    monkeypatch.setenv("SECRET_KEY", "from-env")
    app = create_app()
    assert app.config["DATABASE_URL"] == f"sqlite:///{tmp_path}/x.sqlite3"
    assert app.config["SECRET_KEY"] == "from-env"
    monkeypatch.delenv("SECRET_KEY")
    assert len(create_app().config["SECRET_KEY"]) == 64


def test_a_game_still_in_play(tmp_path):
    import copy

    from web_support import sample_records

    example = next(r for r in sample_records() if r["game_id"] == "T7-000123")
    live = copy.deepcopy(example)
    live["game_id"] = "LIVE-1"
    live["moves"] = live["moves"][:4]
    del live["reported"]
    url = f"sqlite:///{tmp_path / 'live.sqlite3'}"
    load_games(url, [live])
    client = signed_in(create_app({"DATABASE_URL": url, "TESTING": True}))

    listing = text_of(client.get("/").get_data(as_text=True))
    assert "LIVE-1" in listing and "playing" in listing
    assert listed_games(client.get("/games?player=p2").get_data(as_text=True)) == ["LIVE-1"]
    assert listed_games(client.get("/games?player=p").get_data(as_text=True)) == []
    replay = client.get("/games/LIVE-1/replay?move=4").get_data(as_text=True)
    assert "Move 4 of 4 · p3 misses the turn" in text_of(replay)
    assert "To play: p1" in text_of(replay)
    assert "Final hands" not in text_of(replay)  # the latest move, but the game goes on
    seat_view = client.get("/games/LIVE-1/replay?move=4&seat=p2").get_data(as_text=True)
    assert drawn_cards(seat_section(seat_view, "p1")) == []
    assert "moment-drop" in replay
    audit = client.get("/games/LIVE-1/audit")
    assert audit.status_code == 200
    assert "has no winner yet" in text_of(audit.get_data(as_text=True))
    assert json.loads(client.get("/games/LIVE-1/audit.json").data)["status"] == "not_settled"
    player = text_of(client.get("/players/p2").get_data(as_text=True))
    assert "p2 has no settled games yet" in player
