"""Operators kept apart (issue 13, finding 6): a game belongs to the operator whose token
created it; any other operator's token gets the same 404 as for a game that does not
exist, on reads, moves and settle, over real HTTP and through the test client, on SQLite
and PostgreSQL."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from api_support import check_response, header_of, make_app
from click.testing import CliRunner
from werkzeug.serving import make_server

from domain.rummy13.moves import play_game
from replays.access import tokens
from replays.access.ownership import GameOwner, owner_of, save_owned_game
from replays.records.codec import parse_record
from replays.records.importer import import_lines
from replays.store.application import GameExists, Ledger
from replays.store.db import session_factory
from web.cli import main

DATA = Path(__file__).parent / "data"
GAME = "seed-raise-122"


def record(game_id: str = GAME) -> dict:
    lines = (DATA / "games.jsonl").read_text().splitlines()
    return next(r for r in map(json.loads, lines) if r["game_id"] == game_id)


def stored_events(url: str, game_id: str) -> list:
    ledger = Ledger(url=url)
    return list(ledger.recorder.select_events(ledger.aggregate_id(game_id)))


@pytest.fixture
def server(database_url):
    app = make_app(database_url, API_FOLLOW_WRITES=False)
    http = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{http.server_port}/api/v1", database_url
    finally:
        http.shutdown()
        thread.join(timeout=10)


def http_call(base: str, token: str, method: str, template: str, path: str, body=None):
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


def test_another_operators_token_gets_404_on_reads_moves_and_settle_over_http(server):
    base, url = server
    game = record()
    acme = tokens.create_token("acme-games").token
    rival = tokens.create_token("rival-games").token

    assert http_call(base, acme, "POST", "/games", "/games", header_of(game))[0] == 201
    assert owner_of(GAME, url=url) == "acme-games"
    first = game["moves"][0]
    before = len(stored_events(url, GAME))

    # What the rival gets for acme's game is word for word what a missing game gets.
    for game_id, expect_id in ((GAME, GAME), ("no-such-game", "no-such-game")):
        status, answer = http_call(base, rival, "GET", "/games/{game_id}", f"/games/{game_id}")
        assert (status, answer) == (
            404,
            {"error": f"no game {expect_id} is recorded", "status": 404},
        )
        status, answer = http_call(
            base,
            rival,
            "POST",
            "/games/{game_id}/moves",
            f"/games/{game_id}/moves",
            {"seq": 0, **first},
        )
        assert (status, answer) == (
            404,
            {"error": f"no game {expect_id} is recorded", "status": 404},
        )
        status, answer = http_call(
            base, rival, "POST", "/games/{game_id}/settle", f"/games/{game_id}/settle", {}
        )
        assert (status, answer) == (
            404,
            {"error": f"no game {expect_id} is recorded", "status": 404},
        )

    # Re-creating it under the rival's token is the conflict a different game gets: no state,
    # no owner, nothing stored.
    status, answer = http_call(base, rival, "POST", "/games", "/games", header_of(game))
    assert status == 409 and answer["field"] == "game_id"
    assert "state" not in answer and "acme" not in json.dumps(answer)
    assert len(stored_events(url, GAME)) == before
    assert owner_of(GAME, url=url) == "acme-games"

    # The owner still plays on; a second token of the same operator is the same operator.
    second = tokens.create_token("acme-games").token
    status, answer = http_call(
        base, second, "POST", "/games/{game_id}/moves", f"/games/{GAME}/moves", {"seq": 0, **first}
    )
    assert status == 201 and answer["next_seq"] == 1
    assert http_call(base, acme, "GET", "/games/{game_id}", f"/games/{GAME}")[0] == 200
    # Retrying the creation as the owner is still the idempotent 201.
    assert http_call(base, acme, "POST", "/games", "/games", header_of(game))[0] == 201


def test_imported_games_belong_to_no_operator(database_url):
    app = make_app(database_url, API_FOLLOW_WRITES=False)
    game = record()
    summary = import_lines(Ledger(url=database_url), [json.dumps(game)], follow=False)
    assert summary.imported == 1
    client = app.test_client()
    token = tokens.create_token("acme-games").token
    headers = {"Authorization": f"Bearer {token}"}
    response = client.get(f"/api/v1/games/{GAME}", headers=headers)
    assert response.status_code == 404
    assert response.get_json()["error"] == f"no game {GAME} is recorded"
    response = client.post(f"/api/v1/games/{GAME}/settle", json={}, headers=headers)
    assert response.status_code == 404
    # Claiming it by posting its header is a conflict, and does not make it the caller's.
    response = client.post("/api/v1/games", json=header_of(game), headers=headers)
    assert response.status_code == 409 and "state" not in response.get_json()
    assert owner_of(GAME, url=database_url) is None


def test_the_owner_is_saved_with_the_game_or_not_at_all(database_url):
    make_app(database_url)
    ledger = Ledger(url=database_url)
    header = {**header_of(record()), "moves": []}
    parsed = parse_record(header)
    # A stale owner row for the id (written by hand, say) makes the owner insert fail:
    # then the game's events must not be stored either.
    with session_factory(database_url).begin() as session:
        session.add(GameOwner(game_id=GAME, operator="rival-games", created_at=datetime.now(UTC)))
    with pytest.raises(GameExists):
        save_owned_game(ledger, play_game(parsed.config, parsed.deal, []), "acme-games")
    assert stored_events(database_url, GAME) == []

    with session_factory(database_url).begin() as session:
        session.execute(sa.delete(GameOwner))
    save_owned_game(ledger, play_game(parsed.config, parsed.deal, []), "acme-games")
    assert owner_of(GAME, url=database_url) == "acme-games"
    assert len(stored_events(database_url, GAME)) > 0


def test_an_imported_game_is_handed_to_an_operator_by_the_tokens_command(database_url):
    app = make_app(database_url, API_FOLLOW_WRITES=False)
    import_lines(Ledger(url=database_url), [json.dumps(record())], follow=False)
    runner = CliRunner()
    shown = runner.invoke(main, ["tokens", "owner", GAME])
    assert shown.exit_code == 0 and "no operator" in shown.output
    refused = runner.invoke(main, ["tokens", "owner", "no-such-game", "--operator", "acme-games"])
    assert refused.exit_code == 1 and "no game no-such-game is recorded" in refused.output
    bad = runner.invoke(main, ["tokens", "owner", GAME, "--operator", "not a name"])
    assert bad.exit_code == 1 and "not an operator name" in bad.output
    assert owner_of(GAME, url=database_url) is None

    handed = runner.invoke(main, ["tokens", "owner", GAME, "--operator", "acme-games"])
    assert handed.exit_code == 0, handed.output
    client = app.test_client()
    acme = tokens.create_token("acme-games").token
    rival = tokens.create_token("rival-games").token
    get = f"/api/v1/games/{GAME}"
    assert client.get(get, headers={"Authorization": f"Bearer {acme}"}).status_code == 200
    assert client.get(get, headers={"Authorization": f"Bearer {rival}"}).status_code == 404
    moved = runner.invoke(main, ["tokens", "owner", GAME, "--operator", "rival-games"])
    assert "was acme-games's" in moved.output
    assert client.get(get, headers={"Authorization": f"Bearer {acme}"}).status_code == 404
    assert client.get(get, headers={"Authorization": f"Bearer {rival}"}).status_code == 200
