"""The Pool and Deals pages through Flask's test client on a real ledger: the match view,
each deal move by move, seat views, the audit page and its downloads."""

from __future__ import annotations

import csv
import html as html_lib
import io
import json
import random
import re

import pytest
from auth_support import signed_in
from web_support import load_games

from domain.pooldeals.bot import reported_block
from replays.simulation import Floor, Simulation
from web import create_app

SEED, POOL_INDEX, DEALS_INDEX = 5, 0, 14


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pool = Simulation(Floor(seed=SEED, variants=("pool",))).game(POOL_INDEX)
    deals = Simulation(Floor(seed=SEED, variants=("deals",))).game(DEALS_INDEX)
    # A second copy of the pool with an operator's mistake, for the audit.
    wrong = json.loads(json.dumps(pool))
    wrong["game_id"] = pool["game_id"] + "-misreported"
    wrong["reported"] = reported_block(pool, random.Random(3), 1.0)
    url = f"sqlite:///{tmp_path_factory.mktemp('match-site') / 'ledger.sqlite3'}"
    load_games(url, [pool, deals, wrong])
    app = create_app({"DATABASE_URL": url, "TESTING": True})
    return {"app": app, "client": signed_in(app), "pool": pool, "deals": deals, "wrong": wrong}


def get(client, path: str, status: int = 200) -> str:
    response = client.get(path)
    assert response.status_code == status, response.get_data(as_text=True)[:800]
    return response.get_data(as_text=True)


def text(page: str) -> str:
    return re.sub(r"\s+", " ", html_lib.unescape(re.sub(r"<[^>]+>", " ", page)))


def seat(page: str, player: str) -> str:
    found = re.search(
        rf'<section class="seat[^"]*" data-player="{player}".*?</section>', page, re.S
    )
    assert found, player
    return found.group(0)


def steps(record) -> list[tuple[str, int | None]]:
    out = []
    for number, played in enumerate(record["deals"], 1):
        out += [("rejoin", None)] * len(played.get("rejoins", ()))
        out.append(("deal", number))
        out += [("move", number)] * len(played["moves"])
    if "split" in record:
        out.append(("split", None))
    return out


def test_every_step_of_a_pool_replays(site):
    client, pool = site["client"], site["pool"]
    base = f"/games/{pool['game_id']}/replay"
    kinds = steps(pool)
    first_seat = pool["players"][0]["id"]
    words = text(get(client, f"{base}/table?move=0"))
    assert "No deal yet" in words and "nothing dealt yet" in words
    for move in range(1, len(kinds) + 1):
        words = text(get(client, f"{base}/table?move={move}"))
        assert f"Move {move} of {len(kinds)}" in words
        kind, number = kinds[move - 1]
        if kind == "deal":
            assert f"deal {number} dealt by" in words
        if kind == "rejoin":
            assert "rejoins, paying the entry fee again" in words
        if move % 7 == 0:
            get(client, f"{base}/table?move={move}&seat={first_seat}")
            get(client, f"{base}/table.svg?move={move}")


def test_the_match_view_shows_the_arithmetic(site):
    client, pool = site["client"], site["pool"]
    last = len(steps(pool))
    words = text(get(client, f"/games/{pool['game_id']}/replay?move={last}"))
    assert "Scores after each deal" in words
    # Each rejoin: the highest score still in + 1, the entry fee paid again.
    for line in re.findall(r"rejoins at (\d+) \+ 1 = (\d+)", words):
        assert int(line[0]) + 1 == int(line[1])
    assert words.count("pays the entry fee") == 2
    assert "Split by drops after deal 3" in words
    assert "One drop's worth = entry fee 50.00 × (1 − 10 ÷ 100) = 45.00" in words
    assert "Net pool = prize pool 300.00 − fee 30.00 (10 %) = 270.00 INR" in words
    for player, amount in pool["reported"]["payouts"].items():
        assert f"{player} receives {amount}" in words


def test_a_seat_view_hides_the_other_hands_and_stock_picks(site):
    client, pool = site["client"], site["pool"]
    me, other = pool["players"][0]["id"], pool["players"][1]["id"]
    moves = pool["deals"][0]["moves"]
    index = next(
        i
        for i, m in enumerate(moves)
        if m["type"] == "pick" and m["from"] == "closed" and m["player"] == other
    )
    move = index + 2  # the deal is step 1, its first move step 2
    full = get(client, f"/games/{pool['game_id']}/replay/table?move={move}")
    mine = get(client, f"/games/{pool['game_id']}/replay/table?move={move}&seat={me}")
    card = moves[index]["card"]
    assert "data-card" in seat(full, other) and "data-card" in seat(mine, me)
    assert 'data-card="' not in seat(mine, other)
    assert f"{other} picks" in text(mine) and "from the stock" in text(mine)
    assert re.search(rf"{other} picks \S+ from the stock", text(full))
    assert card not in re.sub(r"<section class=\"seat.*?</section>", "", mine, flags=re.S)


def test_bad_move_and_seat_say_what_is_wrong(site):
    client, pool = site["client"], site["pool"]
    base = f"/games/{pool['game_id']}/replay"
    total = len(steps(pool))
    assert f"has {total} moves" in text(get(client, f"{base}?move={total + 1}", 400))
    assert "has no player 'nobody'" in text(get(client, f"{base}?seat=nobody", 400))
    assert "whole number" in text(get(client, f"{base}?move=x", 400))


def test_the_summary_is_the_replay_at_the_last_step(site):
    client, pool = site["client"], site["pool"]
    response = client.get(f"/games/{pool['game_id']}")
    assert response.status_code == 302
    assert response.headers["Location"].endswith(f"move={len(steps(pool))}")


def test_a_deals_match_shows_chips_and_shortfalls_add_up(site):
    client, deals = site["client"], site["deals"]
    last = len(steps(deals))
    page = get(client, f"/games/{deals['game_id']}/replay?move={last}")
    assert "Chips after each deal" in text(page)
    assert "(tiebreaker)" in text(page)
    foot = re.search(r"<tfoot>.*?</tfoot>", page, re.S).group(0)
    chips = [int(v) for v in re.findall(r"<strong>(\d+)</strong>", foot)]
    assert sum(chips) == 80 * deals["match"]["deals"] * len(deals["players"])


def test_the_audit_page_and_downloads(site):
    client, pool, wrong = site["client"], site["pool"], site["wrong"]
    clean = text(get(client, f"/games/{pool['game_id']}/audit"))
    assert "No discrepancies" in clean and "Split by drops" in clean
    bad = text(get(client, f"/games/{wrong['game_id']}/audit"))
    assert "discrepanc" in bad and "No discrepancies" not in bad
    body = json.loads(get(client, f"/games/{wrong['game_id']}/audit.json"))
    assert body["discrepancies"] and body["payouts"] == pool["reported"]["payouts"]
    rows = list(csv.reader(io.StringIO(get(client, f"/games/{pool['game_id']}/audit.csv"))))
    assert rows[0] == ["deal", "winner", "player", "points", "score_after", "recorded"]
    payouts = {r[2]: r[4] for r in rows if r[:2] == ["money", "payout"]}
    assert payouts == pool["reported"]["payouts"]
    assert not [r for r in rows if r[0] == "discrepancy"]


def test_a_player_sees_only_their_own_seat(site):
    pool = site["pool"]
    me, other = pool["players"][0]["id"], pool["players"][1]["id"]
    client = signed_in(site["app"], "player", player=me)
    response = client.get(f"/games/{pool['game_id']}/replay?move=2")
    assert response.status_code == 302 and f"seat={me}" in response.headers["Location"]
    assert client.get(f"/games/{pool['game_id']}/replay?move=2&seat={other}").status_code == 403
    assert client.get(f"/games/{pool['game_id']}/audit").status_code in (403, 404)
