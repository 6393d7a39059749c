"""The API's edges (issue 29): what is not a JSON body, a chunked body past 1 MiB, a path or
a method the contract does not list, whole numbers written ``5.0``, the schema agreeing with
the reader, the links a stateful client walks, and a Pool or Deals header's ``reported``.

Through Flask's test client on SQLite and PostgreSQL; the chunked body over real HTTP (the
test client always sends a length)."""

from __future__ import annotations

import http.client
import json
import threading
from pathlib import Path

import pytest
from api_support import check_response, header_of, make_app, openapi_document
from jsonschema import Draft202012Validator
from werkzeug.serving import make_server

from domain.pooldeals.records import match_record_of
from domain.record_schema.common import LINE_BYTES_MAX
from replays.access import tokens
from replays.store.application import GameNotFound, Ledger
from web.api import contract

DATA = Path(__file__).parent / "data"


def first_record() -> dict:
    return json.loads((DATA / "games.jsonl").read_text().splitlines()[0])


def red3_header() -> dict:
    record = json.loads((DATA / "red3_matches.jsonl").read_text().splitlines()[0])
    return {k: v for k, v in record.items() if k not in ("rounds", "reported")}


@pytest.fixture
def app(database_url):
    return make_app(database_url, API_FOLLOW_WRITES=False)


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def auth():
    return {"Authorization": f"Bearer {tokens.create_token('acme-edges').token}"}


def stored(app, game_id: str):
    try:
        return Ledger(app.config["DATABASE_URL"], env={"CREATE_TABLE": "no"}).get_game(game_id)
    except GameNotFound:
        return None


# -- Content-Type --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "text/json", None],
)
def test_a_body_not_sent_as_json_is_415_and_stores_nothing(app, client, auth, content_type):
    record = first_record()
    body = json.dumps(header_of(record))
    headers = dict(auth) if content_type is None else {**auth, "Content-Type": content_type}
    response = client.post("/api/v1/games", data=body, headers=headers)
    assert response.status_code == 415, response.get_json()
    assert "application/json" in response.get_json()["error"]
    check_response("POST", "/games", 415, response.get_json())
    assert stored(app, record["game_id"]) is None

    # The same body as JSON is a game; a move and a close sent as text are 415 too.
    assert client.post("/api/v1/games", json=header_of(record), headers=auth).status_code == 201
    move = json.dumps({"seq": 0, **record["moves"][0]})
    for path, template, data in (
        (f"/api/v1/games/{record['game_id']}/moves", "/games/{game_id}/moves", move),
        (f"/api/v1/games/{record['game_id']}/settle", "/games/{game_id}/settle", "{}"),
    ):
        response = client.post(path, data=data, headers=headers)
        assert response.status_code == 415, (path, response.get_json())
        check_response("POST", template, 415, response.get_json())
    answer = client.get(f"/api/v1/games/{record['game_id']}", headers=auth).get_json()
    assert answer["next_seq"] == 0  # started and dealt, no move recorded


def test_json_with_a_charset_is_json_and_an_empty_close_needs_no_type(client, auth):
    record = first_record()
    response = client.post(
        "/api/v1/games",
        data=json.dumps(header_of(record)).encode(),
        headers={**auth, "Content-Type": "application/json; charset=utf-8"},
    )
    assert response.status_code == 201, response.get_json()
    # No body at all: nothing to read, so no type to check (the game is not over: 422).
    response = client.post(f"/api/v1/games/{record['game_id']}/settle", headers=auth)
    assert response.status_code == 422, response.get_json()


# -- paths and methods ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["/api/v1/nothing", "/api/v1/games/", "/api/v1/games/T7-1/moves/", "/api/v1/games/T7-1/x"],
)
@pytest.mark.parametrize("signed", [True, False])
def test_an_unknown_api_path_is_a_json_404_not_the_sign_in_page(client, auth, path, signed):
    for method in ("GET", "POST"):
        response = client.open(path, method=method, headers=auth if signed else {}, json={})
        assert response.status_code == 404, (method, path, response.status_code)
        assert response.mimetype == "application/json"
        assert response.get_json()["status"] == 404
        assert "Location" not in response.headers


@pytest.mark.parametrize(
    ("method", "path", "allowed"),
    [
        ("DELETE", "/api/v1/games/T7-1", {"GET"}),
        ("PUT", "/api/v1/games", {"POST"}),
        ("GET", "/api/v1/games/T7-1/settle", {"POST"}),
        ("TRACE", "/api/v1/schemas/", {"GET"}),
        ("PATCH", "/api/v1/games/T7-1/moves", {"POST"}),
    ],
)
def test_a_method_the_contract_does_not_list_is_405_with_allow(client, auth, method, path, allowed):
    for headers in (auth, {}):
        response = client.open(path, method=method, headers=headers)
        assert response.status_code == 405, (method, path, response.status_code)
        assert response.get_json()["status"] == 405
        allow = {m.strip() for m in response.headers["Allow"].split(",")}
        assert allowed <= allow and method not in allow


# -- whole numbers ---------------------------------------------------------------------------


def test_a_whole_number_written_with_a_point_is_that_number(app, client, auth):
    record = first_record()
    game_id = record["game_id"]
    assert client.post("/api/v1/games", json=header_of(record), headers=auth).status_code == 201
    move = {"seq": 0, **record["moves"][0]}
    text = json.dumps(move).replace('"seq": 0', '"seq": 0.0')
    assert '"seq": 0.0' in text
    headers = {**auth, "Content-Type": "application/json"}
    response = client.post(f"/api/v1/games/{game_id}/moves", data=text, headers=headers)
    assert response.status_code == 201, response.get_json()
    assert response.get_json()["seq"] == 0 and response.get_json()["next_seq"] == 1
    # A retry written 0 is the same move; a fraction is still not a move index.
    again = client.post(f"/api/v1/games/{game_id}/moves", json=move, headers=auth)
    assert again.status_code == 201 and again.get_json() == response.get_json()
    half = text.replace('"seq": 0.0', '"seq": 1.5')
    response = client.post(f"/api/v1/games/{game_id}/moves", data=half, headers=headers)
    assert response.status_code == 400 and response.get_json()["field"] == "seq"
    for huge in ("1e400", "9007199254740993.0"):
        big = text.replace('"seq": 0.0', f'"seq": {huge}')
        response = client.post(f"/api/v1/games/{game_id}/moves", data=big, headers=headers)
        assert response.status_code == 400, (huge, response.get_json())


# -- the schema says what the reader enforces ------------------------------------------------


def test_red3_rules_are_an_enum_that_the_schema_and_the_reader_share(client, auth):
    schema = json.loads(contract.schema_text("api-red3-game"))
    assert schema["properties"]["rules"]["enum"] == ["standard"]
    header = red3_header()
    validator = Draft202012Validator(schema)
    assert validator.is_valid(header)
    wrong = {**header, "rules": "house"}
    assert not validator.is_valid(wrong)
    response = client.post("/api/v1/games", json=wrong, headers=auth)
    assert response.status_code == 400 and response.get_json()["field"] == "rules"
    assert client.post("/api/v1/games", json=header, headers=auth).status_code == 201


def test_the_schema_documents_are_served_as_documented(client):
    doc = openapi_document()
    content = doc["paths"]["/schemas/{name}.json"]["get"]["responses"]["200"]["content"]
    assert list(content) == ["application/schema+json"]
    response = client.get("/api/v1/schemas/game.json")
    assert response.status_code == 200 and response.mimetype == "application/schema+json"
    for template in ("/games", "/games/{game_id}/moves", "/games/{game_id}/settle"):
        assert "415" in doc["paths"][template]["post"]["responses"]


def test_links_lead_from_a_new_game_to_its_moves_settle_and_state():
    doc = openapi_document()
    operations = {
        op["operationId"]: (path, method)
        for path, ops in doc["paths"].items()
        for method, op in ops.items()
    }
    links = doc["paths"]["/games"]["post"]["responses"]["201"]["links"]
    assert {link["operationId"] for link in links.values()} == {
        "getGame",
        "postMove",
        "settleGame",
    }
    for link in links.values():
        path, _method = operations[link["operationId"]]
        assert link["parameters"] == {"game_id": "$response.body#/game_id"}
        assert "{game_id}" in path
    # The answer they read from carries the game_id they name.
    response_schema = doc["components"]["schemas"]["GameResponse"]
    assert "game_id" in response_schema["required"]


# -- a Pool or Deals header's reported figures --------------------------------------------


def test_a_pool_header_carries_reported_as_import_does_and_a_13_card_one_does_not(
    app, client, auth
):
    from test_pool_deals_storage import rejoin_match

    record = json.loads(json.dumps(match_record_of(rejoin_match()).to_dict()))
    reported = {"winner": "p1", "prize_pool": "67.50", "fee": "7.50"}
    header = {k: v for k, v in record.items() if k not in ("deals", "split", "reported")}
    header["reported"] = reported
    response = client.post("/api/v1/games", json=header, headers=auth)
    assert response.status_code == 201, response.get_json()
    check_response("POST", "/games", 201, response.get_json())
    assert stored(app, record["game_id"]).reported == reported

    # A 13-card game's figures come with /settle: in its header they are refused, by name;
    # a null says nothing and is taken, as the schema allows.
    thirteen = first_record()
    with_figures = {**header_of(thirteen), "reported": {"winner": "p1"}}
    response = client.post("/api/v1/games", json=with_figures, headers=auth)
    assert response.status_code == 400 and response.get_json()["field"] == "reported"
    assert stored(app, thirteen["game_id"]) is None
    response = client.post(
        "/api/v1/games", json={**header_of(thirteen), "reported": None}, headers=auth
    )
    assert response.status_code == 201, response.get_json()


# -- a chunked body over real HTTP -----------------------------------------------------------


@pytest.fixture
def live(sqlite_url):
    app = make_app(sqlite_url, API_FOLLOW_WRITES=False)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_port, app
    finally:
        server.shutdown()
        thread.join(timeout=10)


def post_chunked(port: int, token: str, path: str, body: bytes) -> tuple[int, dict]:
    def chunks():
        for start in range(0, len(body), 64 * 1024):
            yield body[start : start + 64 * 1024]

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        connection.request(
            "POST",
            path,
            body=chunks(),
            encode_chunked=True,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def padded(body: dict, size: int) -> bytes:
    """``body`` as JSON of exactly ``size`` bytes (spaces are JSON whitespace)."""
    text = json.dumps(body).encode()
    return text + b" " * (size - len(text))


def test_a_chunked_body_over_one_mebibyte_is_413_as_a_sized_one_is(live):
    port, app = live
    token = tokens.create_token("acme-chunked", url=app.config["DATABASE_URL"]).token
    record = first_record()
    header = header_of(record)
    status, payload = post_chunked(port, token, "/api/v1/games", padded(header, LINE_BYTES_MAX + 1))
    assert status == 413 and "1 MiB" in payload["error"], payload
    check_response("POST", "/games", 413, payload)
    assert stored(app, record["game_id"]) is None
    # Exactly 1 MiB, chunked, is read whole: the game starts.
    status, payload = post_chunked(port, token, "/api/v1/games", padded(header, LINE_BYTES_MAX))
    assert status == 201, payload
    move = padded({"seq": 0, **record["moves"][0]}, 4 * LINE_BYTES_MAX)
    status, payload = post_chunked(port, token, f"/api/v1/games/{record['game_id']}/moves", move)
    assert status == 413, payload
    view = app.test_client().get(
        f"/api/v1/games/{record['game_id']}", headers={"Authorization": f"Bearer {token}"}
    )
    assert view.get_json()["next_seq"] == 0
