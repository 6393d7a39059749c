"""Pool and Deals matches on the site: listed and filtered, replayed step by step on the
family's pages (each deal move by move, the match's scores beside it), audited, summarised."""

from __future__ import annotations

import html
import json
import re

import pytest
from auth_support import signed_in
from match_player import config, planned_deal
from web_support import load_games, sample_records

from domain.pooldeals.match import Match
from domain.pooldeals.records import match_record_of
from web import create_app


def pool_record() -> dict:
    match = Match.start(config("W-POOL", "pool", pool=101, fee_percent="10"))
    planned_deal(match, "p1", {"p2": "middle", "p3": "first"})
    planned_deal(match, "p2", {"p1": "first", "p3": "middle"})
    planned_deal(match, "p3", {"p1": "first", "p2": "wrong"})
    match.rejoin("p2")
    planned_deal(match, "p1", {"p2": "middle", "p3": "wrong"})
    return json.loads(json.dumps(match_record_of(match).to_dict()))


def deals_record() -> dict:
    match = Match.start(config("W-DEALS", "deals", deals=2, players=("p1", "p2")))
    planned_deal(match, "p1", {"p2": "first"})
    planned_deal(match, "p2", {"p1": "first"})
    planned_deal(match, "p1", {"p2": "middle"})
    return json.loads(json.dumps(match_record_of(match).to_dict()))


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('pool-site') / 'ledger.sqlite3'}"
    load_games(url, [*sample_records(), pool_record(), deals_record()])
    return signed_in(create_app({"DATABASE_URL": url, "TESTING": True}))


def text_of(client, path):
    response = client.get(path, follow_redirects=True)
    assert response.status_code == 200, (path, response.get_data(as_text=True)[:400])
    return response.get_data(as_text=True)


def test_matches_are_listed_and_filtered(client):
    listed = text_of(client, "/games?variant=pool")
    assert "W-POOL" in listed and "W-DEALS" not in listed and "T7-000123" not in listed
    assert "W-DEALS" in text_of(client, "/games?variant=deals")


def test_every_step_replays_with_the_scores_beside_the_deal(client):
    # The family's own pages (web/pooldeals_replay.py): the score table after every deal
    # stands beside the deal's 13-card table; ``move`` counts the steps applied.
    record = pool_record()
    steps = sum(len(d["rejoins"]) + 1 + len(d["moves"]) for d in record["deals"])
    last = text_of(client, f"/games/W-POOL/replay?move={steps}")
    foot = last[last.index("<tfoot>") : last.index("</tfoot>")]
    now = dict(re.findall(r'data-player="(p\d)"><strong>(\d+)</strong>', foot))
    assert now == {"p1": "40", "p2": "101", "p3": "140"}
    assert f"Move {steps} of {steps}" in last
    rejoin_step = sum(1 + len(d["moves"]) for d in record["deals"][:3]) + 1
    rejoined = html.unescape(text_of(client, f"/games/W-POOL/replay/table?move={rejoin_step}"))
    assert "p2 rejoins, paying the entry fee again" in rejoined
    assert re.search(r"before deal 4</th>\s*<td[^>]*>p2 rejoins at <strong>61</strong>", rejoined)
    seat = text_of(client, "/games/W-POOL/replay/table?move=5&seat=p1")
    assert "Deal <strong>1</strong>" in seat and "as p1 saw it" in seat
    assert client.get(f"/games/W-POOL/replay?move={steps + 1}").status_code in (400, 404)


def test_audit_and_summary_pages(client):
    audit = text_of(client, "/games/W-POOL/audit")
    assert "W-POOL" in audit
    as_json = json.loads(text_of(client, "/games/W-POOL/audit.json"))
    assert as_json["payouts"] == {"p1": "90.00"} and as_json["discrepancies"] == []
    assert text_of(client, "/games/W-DEALS")
    assert "W-POOL" in text_of(client, "/players/p2")
