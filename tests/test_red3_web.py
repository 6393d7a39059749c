"""The replay viewer for Red 3 matches, through Flask's test client on a real ledger."""

import html
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from auth_support import signed_in
from web_support import load_games, sample_records

from web import create_app

DATA = Path(__file__).parent / "data"
REPLAY = "/games/R3-EXAMPLE/replay"


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    """The site with the 13-card samples and the Red 3 worked example, migrated and projected."""
    url = f"sqlite:///{tmp_path_factory.mktemp('red3-site') / 'ledger.sqlite3'}"
    red3 = json.loads((DATA / "red3_example.jsonl").read_text().splitlines()[0])
    load_games(url, [*sample_records(), red3])
    return signed_in(create_app({"DATABASE_URL": url, "TESTING": True}))


def page(client, query=""):
    response = client.get(REPLAY + query)
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    return response.get_data(as_text=True)


def seat(html, player):
    found = re.search(
        rf'<section class="seat[^"]*" data-player="{player}".*?</section>', html, re.S
    )
    assert found, player
    return found.group(0)


def cards_in(fragment):
    return re.findall(r'data-card="([^"]+)"', fragment)


def text(html):
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_move_0_is_the_first_deal_with_both_hands_pile_and_stock(client):
    html = page(client)
    words = text(html)
    assert "Move 0 of 19" in words and "round 1 dealt" in words
    assert "Round 1 of 2" in words and "Discard pile 2 cards, top J♦" in words
    assert "Stock 78" in words
    p1 = seat(html, "p1")
    assert sorted(cards_in(p1)) == sorted(["5C", "6C", "7C", "8C", "QS", "QH", "QD"])
    assert "Second hand, face down" in p1 and "7 cards face down" in p1
    assert "not opened: first lay-down needs 70" in text(p1)


def test_the_table_follows_the_moves_books_threshold_and_second_hand(client):
    html = page(client, "?move=2")  # p1 picked 9C and laid down 105
    words = text(html)
    assert "p1 lays down 5♣ 6♣ 7♣ 8♣ 9♣ | Q♠ Q♥ Q♦" in words
    p1 = seat(html, "p1")
    assert "opened with 105" in text(p1)
    assert "run 5♣–9♣: 75" in text(p1) and "kind of Qs: 30" in text(p1)
    assert "Second hand (picked up)" in p1 and "face down" not in p1
    assert "Books 105" in text(p1)
    html = page(client, "?move=4")  # p2 took the pile
    assert "p2 takes the pile (3 cards)" in text(html)
    assert "Discard pile 0 cards" in text(html)


def test_round_two_starts_fresh_and_the_end_shows_the_scores(client):
    html = page(client, "?move=10")
    assert "round 2 dealt" in text(html) and "Round 2 of 2" in text(html)
    assert "Stock 78" in text(html)
    end = page(client, "?move=19")
    words = text(end)
    assert "Winner: p2" in words and "Match over" in words
    table = re.search(r'<table class="red3-scores">.*?</table>', end, re.S).group(0)
    assert "165 − 0 = 165 80 − 95 = −15" in text(table)
    assert "0 − 155 = −155 190 − 0 = 190 Total 10 175" in text(table)


def test_seat_view_hides_other_hands_and_every_face_down_second_hand(client):
    html = page(client, "?move=1&seat=p2")
    p1, p2 = seat(html, "p1"), seat(html, "p2")
    assert cards_in(p1) == [] and "8 cards, hidden" in text(p1)
    assert sorted(cards_in(p2)) == sorted(["KS", "KH", "3D", "JK", "4D", "5D", "6D"])
    assert "Second hand, face down" in p2  # drawn as backs only
    assert "TS" not in cards_in(p2)


def test_every_step_is_a_link_in_the_move_list(client):
    html = page(client, "?move=5")
    links = re.findall(r'<a href="([^"]+)" data-move="(\d+)"', html)
    moves = sorted({int(n) for _, n in links})
    assert moves == list(range(20))
    assert re.search(r'data-move="5"[^>]*aria-current="step"', html)
    assert html.count('class="round-mark"') == 2


def test_fragment_and_svg_image(client):
    fragment = client.get(REPLAY + "/table?move=7")
    assert fragment.status_code == 200
    assert 'id="table-frame"' in fragment.get_data(as_text=True)
    image = client.get(REPLAY + "/table.svg?move=7&seat=p1")
    assert image.mimetype == "image/svg+xml"
    ET.fromstring(image.get_data(as_text=True))  # well-formed


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("?move=20", "has 19 moves: there is no move 20"),
        ("?move=x", "whole number"),
        ("?seat=p9", "no player 'p9'"),
    ],
)
def test_bad_requests_say_why(client, query, message):
    response = client.get(REPLAY + query)
    assert response.status_code == 400
    assert message in html.unescape(response.get_data(as_text=True))


def test_13_card_games_still_replay(client):
    response = client.get("/games/T7-000123/replay?move=3")
    assert response.status_code == 200
    assert "Red 3" not in response.get_data(as_text=True)


# -- the rest of the site --------------------------------------------------------------------
def test_the_games_list_shows_red3_matches_and_filters_them(client):
    everything = client.get("/").get_data(as_text=True)
    assert "/games/R3-EXAMPLE/replay" in everything and "/games/T7-000123/replay" in everything
    only = client.get("/games?variant=red3").get_data(as_text=True)
    listed = re.findall(r'<th scope="row"[^>]*><a href="/games/([^/"]+)/replay">', only)
    assert listed == ["R3-EXAMPLE"]
    row = re.search(r'<th scope="row"[^>]*><a href="/games/R3-EXAMPLE/replay">.*?</tr>', only, re.S)
    assert "red3" in text(row.group(0)) and "p2" in text(row.group(0))


def test_the_summary_of_a_match_is_its_final_table(client):
    response = client.get("/games/R3-EXAMPLE")
    assert response.status_code == 302
    assert response.headers["Location"].endswith("/games/R3-EXAMPLE/replay?move=19")


def test_a_match_not_dealt_yet_has_a_summary_and_a_replay_page(tmp_path):
    """Found by the field fuzz (issue 13): a Red 3 record with ``"rounds": []`` is a running
    match the importer accepts and lists, yet its summary and replay answered 404."""
    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    red3 = json.loads((DATA / "red3_example.jsonl").read_text().splitlines()[0])
    undealt = {**red3, "game_id": "R3-UNDEALT", "rounds": []}
    del undealt["reported"]
    load_games(url, [undealt])
    client = signed_in(create_app({"DATABASE_URL": url, "TESTING": True}))
    for path in ("/games/R3-UNDEALT", "/games/R3-UNDEALT/replay"):
        response = client.get(path, follow_redirects=True)
        assert response.status_code == 200, path
        shown = text(response.get_data(as_text=True))
        assert "No round has been dealt yet" in shown and "0 of 2 rounds played" in shown
        assert "p1" in shown and "p2" in shown
    # The table views have no move to show: they still say so.
    assert client.get("/games/R3-UNDEALT/replay/table").status_code == 404


def test_audit_page_and_downloads(client):
    response = client.get("/games/R3-EXAMPLE/audit")
    assert response.status_code == 200
    words = text(response.get_data(as_text=True))
    assert "No discrepancies" in words
    assert "Round 2: p2 went out" in words and "p1 0 155 (2 red threes) −155 −155 −155" in words
    assert "p2 (winner) 175" in words
    as_json = json.loads(client.get("/games/R3-EXAMPLE/audit.json").get_data(as_text=True))
    assert as_json["totals"] == {"p1": 10, "p2": 175} and as_json["discrepancies"] == []
    as_csv = client.get("/games/R3-EXAMPLE/audit.csv").get_data(as_text=True).splitlines()
    assert as_csv[0] == "round,out,player,books,held,red_threes,score,recorded"
    assert "2,p2,p1,0,155,2,-155,-155" in as_csv


def test_a_player_sees_a_match_only_from_their_own_seat(tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    load_games(url, [json.loads((DATA / "red3_example.jsonl").read_text().splitlines()[0])])
    player = signed_in(create_app({"DATABASE_URL": url, "TESTING": True}), "player", player="p1")
    response = player.get(REPLAY + "?move=1")
    assert response.status_code == 302 and "seat=p1" in response.headers["Location"]
    html = player.get(REPLAY + "?move=1&seat=p1").get_data(as_text=True)
    assert cards_in(seat(html, "p2")) == [] and cards_in(seat(html, "p1"))
    assert player.get(REPLAY + "?move=1&seat=p2").status_code == 403


def test_a_first_view_shows_what_the_whole_timeline_shows_at_every_move(tmp_path):
    """A first view reads only the move it shows (the match from its snapshot, the table
    from the events up to that step); a second view builds every state. Both must draw the
    same table, full view and seat view, at every step of a 3-player, 3-round match."""
    from red3_factory import random_record

    record = random_record(5, players=3, rounds=2)
    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    load_games(url, [record])
    app = create_app({"DATABASE_URL": url, "TESTING": True})
    client = signed_in(app)
    base = f"/games/{record['game_id']}/replay"
    steps = sum(1 + len(r["moves"]) for r in record["rounds"])
    assert steps > 30
    starts = [0]
    for played in record["rounds"][:-1]:
        starts.append(starts[-1] + 1 + len(played["moves"]))
    # Each round's deal, the steps either side of it, the last steps, and one in nine between.
    shown = {m + d for m in starts for d in (-1, 0, 1)} | {steps - 2, steps - 1}
    for move in sorted(m for m in shown | set(range(0, steps, 9)) if 0 <= m < steps):
        for query in (f"?move={move}", f"?move={move}&seat=p5-2"):
            app.extensions.pop("red3_timelines", None)  # a process that never saw the match
            first = client.get(base + query)
            second = client.get(base + query)  # the whole timeline, built now
            assert first.status_code == second.status_code == 200
            assert "red3_timelines" in app.extensions
            assert drawn(first) == drawn(second), query


def drawn(response) -> str:
    """The page without its per-request sign-out token."""
    return re.sub(r'name="csrf_token" value="[^"]*"', "", response.get_data(as_text=True))
