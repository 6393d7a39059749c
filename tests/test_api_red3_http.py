"""Red 3 matches over the live API, on real HTTP (loopback), on SQLite and PostgreSQL.

A match is started from its record header, each round's deal and moves are posted as steps
(``seq`` counts deals and moves), then settled and read back: the events must be exactly
those importing the same record leaves. Refusals name the round, the move and the field.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_api_http import call, events, server  # noqa: F401 - the live server fixture

from replays.access import tokens
from replays.records.importer import import_lines
from replays.store.application import Ledger
from replays.store.schema import migrate

DATA = Path(__file__).parent / "data"


def example() -> dict:
    record = json.loads((DATA / "red3_example.jsonl").read_text().splitlines()[0])
    record.pop("reported")  # figures go with a header the API does not take them in
    return record


def header(record: dict) -> dict:
    return {k: v for k, v in record.items() if k != "rounds"}


def steps(record: dict) -> list[dict]:
    """Each round's deal as a step, then its moves: the order the table played them."""
    out = []
    for played in record["rounds"]:
        out.append({"type": "deal", "deal": played["deal"], "at": played["at"]})
        out.extend(played["moves"])
    return out


def post_step(base, token, game_id, seq, step):
    path = f"/games/{game_id}/moves"
    return call(base, token, "POST", "/games/{game_id}/moves", path, {"seq": seq, **step})


def test_a_red3_match_played_over_http_is_the_match_importing_it_stores(server, tmp_path):  # noqa: F811
    base, url, _app = server
    record = example()
    game_id = record["game_id"]
    token = tokens.create_token("acme-red3").token

    status, started = call(base, token, "POST", "/games", "/games", header(record))
    assert status == 201 and started["next_seq"] == 0
    assert started["state"]["phase"] == "dealing"
    for seq, step in enumerate(steps(record)):
        status, answer = post_step(base, token, game_id, seq, step)
        assert status == 201, answer
        if seq in (0, 3):  # a retried deal or move over the wire changes nothing
            assert post_step(base, token, game_id, seq, step) == (201, answer)
        # The public view shows no hand.
        assert all(seat["hand"] is None for seat in answer["state"]["seats"])
    status, settled = call(
        base, token, "POST", "/games/{game_id}/settle", f"/games/{game_id}/settle"
    )
    assert status == 200 and settled["state"]["phase"] == "finished"
    assert settled["settlement"]["totals"] == {"p1": 10, "p2": 175}
    status, seen = call(base, token, "GET", "/games/{game_id}", f"/games/{game_id}")
    assert status == 200 and seen["settlement"] == settled["settlement"]
    assert seen["next_seq"] == len(steps(record))

    imported_url = f"sqlite:///{tmp_path / 'imported.sqlite3'}"
    migrate(imported_url)
    imported = Ledger(imported_url, env={"CREATE_TABLE": "no"})
    assert import_lines(imported, [json.dumps(record)], follow=False).imported == 1
    live = Ledger(url, env={"CREATE_TABLE": "no"})
    assert events(live, game_id) == events(imported, game_id)


def test_red3_refusals_name_the_round_the_move_and_the_field(server):  # noqa: F811
    base, _url, _app = server
    record = example()
    game_id = record["game_id"]
    token = tokens.create_token("acme-red3").token
    whole = call(base, token, "POST", "/games", "/games", record)
    assert whole[0] == 400 and whole[1]["field"] == "rounds"  # deals come as steps
    assert call(base, token, "POST", "/games", "/games", header(record))[0] == 201
    deal, *moves = steps(record)

    bad_deal = {"type": "deal", "deal": {**deal["deal"], "pile": ["4C", "ZZ"]}}
    status, answer = post_step(base, token, game_id, 0, bad_deal)
    assert status == 400 and answer["field"] == "deal.pile[1]"
    assert "ZZ" in answer["error"]

    early = post_step(base, token, game_id, 0, moves[0])  # a move before the first deal
    assert early[0] == 422 and "round 0" not in early[1]["error"]

    assert post_step(base, token, game_id, 0, deal)[0] == 201
    bad_card = post_step(base, token, game_id, 1, {**moves[0], "card": "X9"})
    assert bad_card[0] == 400 and bad_card[1]["field"] == "card"

    out_of_turn = post_step(base, token, game_id, 1, {**moves[0], "player": "p2"})
    assert out_of_turn[0] == 422
    assert out_of_turn[1]["error"].startswith("round 1 move 0 (p2 pick"), out_of_turn[1]

    status, answer = call(
        base, token, "POST", "/games/{game_id}/settle", f"/games/{game_id}/settle"
    )
    assert status == 422 and "round 1 of 2" in answer["error"]

    other = post_step(base, token, game_id, 0, {**deal, "at": "2025-03-01T19:00:00Z"})
    assert other[0] == 409 and other[1]["field"] == "seq"


@pytest.mark.parametrize("field", ["moves", "reported"])
def test_a_red3_header_with_play_or_figures_is_refused(server, field):  # noqa: F811
    base, _url, _app = server
    token = tokens.create_token("acme-red3").token
    body = {**header(example()), field: [1] if field == "moves" else {"winner": "p1"}}
    status, answer = call(base, token, "POST", "/games", "/games", body)
    assert status == 400 and answer["field"] == field
