"""The ingest API over real HTTP on loopback: a whole game move by move, then settled,
must leave exactly the events that importing the same record leaves."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from api_support import check_response, header_of, make_app
from werkzeug.serving import make_server

from replays.access import tokens
from replays.readmodels.models import GameRow
from replays.records.importer import import_lines
from replays.store.application import Ledger
from replays.store.db import session_factory
from replays.store.schema import migrate

DATA = Path(__file__).parent / "data"


@pytest.fixture
def server(database_url):
    app = make_app(database_url)
    http = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{http.server_port}/api/v1", database_url, app
    finally:
        http.shutdown()
        thread.join(timeout=10)


def call(base: str, token: str, method: str, template: str, path: str, body=None):
    request = urllib.request.Request(
        base + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            status, payload = response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        status, payload = error.code, json.loads(error.read())
    check_response(method, template, status, payload)
    return status, payload


def events(ledger: Ledger, game_id: str) -> list[tuple]:
    return [
        (e.originator_version, e.topic, bytes(e.state))
        for e in ledger.recorder.select_events(ledger.aggregate_id(game_id))
    ]


@pytest.mark.parametrize("game_id", ["seed-raise-122", "T9-000777"])
def test_a_game_played_over_http_settles_identically_to_importing_it(server, tmp_path, game_id):
    base, url, app = server
    record = next(
        r
        for r in map(json.loads, (DATA / "games.jsonl").read_text().splitlines())
        if r["game_id"] == game_id
    )
    token = tokens.create_token("acme-live").token

    status, _ = call(base, token, "POST", "/games", "/games", header_of(record))
    assert status == 201
    moves_path = f"/games/{game_id}/moves"
    for seq, move in enumerate(record["moves"]):
        status, answer = call(
            base, token, "POST", "/games/{game_id}/moves", moves_path, {"seq": seq, **move}
        )
        assert status == 201, answer
        if seq == 3:  # a retry over the wire changes nothing
            again = call(
                base, token, "POST", "/games/{game_id}/moves", moves_path, {"seq": seq, **move}
            )
            assert again == (201, answer)
    settle_body = {"reported": record["reported"]} if "reported" in record else None
    status, settled = call(
        base, token, "POST", "/games/{game_id}/settle", f"/games/{game_id}/settle", settle_body
    )
    assert status == 200 and settled["state"]["phase"] == "settled"
    status, seen = call(base, token, "GET", "/games/{game_id}", f"/games/{game_id}")
    assert status == 200 and seen["settlement"] == settled["settlement"]

    imported_url = f"sqlite:///{tmp_path / 'imported.sqlite3'}"
    migrate(imported_url)
    imported = Ledger(imported_url, env={"CREATE_TABLE": "no"})
    summary = import_lines(imported, [json.dumps(record)], follow=False)
    assert summary.imported == 1

    live = Ledger(url, env={"CREATE_TABLE": "no"})
    assert events(live, game_id) == events(imported, game_id)
    assert (
        live.get_game(game_id).recorded_settlement == imported.get_game(game_id).recorded_settlement
    )
    assert settled["settlement"] == imported.get_game(game_id).settlement.summary()

    # The read models follow the API's writes without a manual step (a background thread).
    assert app.extensions["rummy_ledger_followers"].wait_idle(timeout=60)
    with session_factory(url)() as session:
        row = session.get(GameRow, game_id)
        assert row is not None and row.status == "settled"
        assert f"{row.gross:.2f}" == settled["settlement"]["gross"]


def test_two_writers_racing_for_one_seq_one_wins_the_other_gets_409(server):
    base, url, _app = server
    record = json.loads((DATA / "games.jsonl").read_text().splitlines()[0])
    token = tokens.create_token("acme-race").token
    bodies = [
        {"seq": 0, "player": "p1", "type": "pick", "from": "closed", "card": "4H"},
        {"seq": 0, "player": "p1", "type": "drop"},
    ]
    for round_number in range(4):
        game_id = f"RACE-{round_number}"
        assert (
            call(
                base, token, "POST", "/games", "/games", {**header_of(record), "game_id": game_id}
            )[0]
            == 201
        )
        barrier = threading.Barrier(2)
        answers = [None, None]

        def post(i, game_id=game_id, barrier=barrier, answers=answers):
            barrier.wait()
            answers[i] = call(
                base, token, "POST", "/games/{game_id}/moves", f"/games/{game_id}/moves", bodies[i]
            )

        threads = [threading.Thread(target=post, args=(i,)) for i in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert sorted(status for status, _ in answers) == [201, 409]
        live = Ledger(url, env={"CREATE_TABLE": "no"})
        game = live.get_game(game_id)
        assert game.move_count == 1
        winner = next(i for i, (status, _) in enumerate(answers) if status == 201)
        assert game.moves[0]["type"] == bodies[winner]["type"]
