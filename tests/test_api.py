"""The live ingest API through Flask's test client, on SQLite and PostgreSQL.

Every response is checked against the OpenAPI document at /api/v1/openapi.json.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from api_support import check_request, check_response, header_of, make_app, openapi_document
from openapi_spec_validator import validate

from replays.access import tokens
from replays.records.settle import settle_lines
from replays.store.application import Ledger
from replays.store.db import engine_for

DATA = Path(__file__).parent / "data"


def records() -> dict[str, dict]:
    lines = (DATA / "games.jsonl").read_text().splitlines()
    return {r["game_id"]: r for r in map(json.loads, lines)}


class Api:
    """A test client that authenticates and checks every answer against the contract."""

    def __init__(self, client, token: str | None):
        self.client = client
        self.token = token

    def call(self, method: str, template: str, path: str, body=None, *, raw: bytes | None = None):
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        data = raw if raw is not None else (None if body is None else json.dumps(body))
        response = self.client.open(
            path, method=method, data=data, headers=headers, content_type="application/json"
        )
        check_response(method, template, response.status_code, response.get_json())
        return response

    def start(self, header: dict):
        return self.call("POST", "/games", "/api/v1/games", header)

    def move(self, game_id: str, seq: int, move: dict):
        return self.call(
            "POST", "/games/{game_id}/moves", f"/api/v1/games/{game_id}/moves", {"seq": seq, **move}
        )

    def get(self, game_id: str):
        return self.call("GET", "/games/{game_id}", f"/api/v1/games/{game_id}")

    def settle(self, game_id: str, body=None):
        return self.call("POST", "/games/{game_id}/settle", f"/api/v1/games/{game_id}/settle", body)


@pytest.fixture
def app(database_url):
    return make_app(database_url, API_FOLLOW_WRITES=False)


@pytest.fixture
def api(app):
    return Api(app.test_client(), tokens.create_token("acme-games").token)


def events(app, game_id: str) -> list:
    ledger = Ledger(app.config["DATABASE_URL"], env={"CREATE_TABLE": "no"})
    return list(ledger.recorder.select_events(ledger.aggregate_id(game_id)))


# -- the contract ------------------------------------------------------------------------


def test_openapi_document_is_valid_and_lists_exactly_the_routes(app):
    served = app.test_client().get("/api/v1/openapi.json")
    assert served.status_code == 200
    doc = served.get_json()
    assert doc == openapi_document()
    validate(doc)
    routes = set()
    for rule in app.url_map.iter_rules():
        if rule.rule.startswith("/api/v1/"):
            template = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", rule.rule[len("/api/v1") :])
            routes |= {(template, m.lower()) for m in rule.methods - {"HEAD", "OPTIONS"}}
    documented = {(path, method) for path, ops in doc["paths"].items() for method in ops}
    assert routes == documented


def test_sample_bodies_fit_the_documented_requests():
    for record in records().values():
        check_request("/games", header_of(record))
        for seq, move in enumerate(record["moves"]):
            check_request("/games/{game_id}/moves", {"seq": seq, **move})


# -- tokens ------------------------------------------------------------------------------


def test_requests_without_a_valid_token_get_401(app):
    record = records()["T7-000123"]
    for token in (None, "rlk_000000000000_forged", "not-even-a-token"):
        anonymous = Api(app.test_client(), token)
        assert anonymous.start(header_of(record)).status_code == 401
        assert anonymous.get("T7-000123").status_code == 401
    issued = tokens.create_token("acme")
    api = Api(app.test_client(), issued.token)
    assert api.start(header_of(record)).status_code == 201
    tokens.revoke_token(issued.token_id)
    refused = api.get("T7-000123")
    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"].startswith("Bearer")


# -- a whole game --------------------------------------------------------------------------


def test_a_game_played_move_by_move_settles_like_its_record(api, app):
    record = records()["T7-000123"]
    started = api.start(header_of(record))
    assert started.status_code == 201
    state = started.get_json()["state"]
    assert started.get_json()["next_seq"] == 0
    assert state["phase"] == "playing" and state["current_player"] == "p1"
    assert all(seat["hand"] is None and seat["hand_size"] == 13 for seat in state["seats"])
    assert state["stock_count"] == len(record["deal"]["stock"])
    assert "4H" not in json.dumps(state)  # the stock's order is not public
    assert (state["point_value"], state["next_point_value"]) == ("1.00", "1.10")

    for seq, move in enumerate(record["moves"]):
        answer = api.move("T7-000123", seq, move)
        assert answer.status_code == 201, answer.get_json()
        assert answer.get_json()["seq"] == seq and answer.get_json()["next_seq"] == seq + 1
    final = api.get("T7-000123").get_json()
    assert final["state"]["phase"] == "settled"
    assert final["settlement"] == settle_lines([json.dumps(record)])[0]
    p1 = next(seat for seat in final["state"]["seats"] if seat["player"] == "p1")
    assert p1["status"] == "won" and p1["shown_groups"]  # a declaration is public


def test_retries_are_idempotent_and_conflicts_are_409(api, app):
    record = records()["T7-000123"]
    header = header_of(record)
    first = api.start(header)
    again = api.start(copy.deepcopy(header))
    assert again.status_code == 201 and again.get_json() == first.get_json()
    other = copy.deepcopy(header)
    other["stakes"]["fee_percent"] = "5"
    clash = api.start(other)
    assert clash.status_code == 409 and clash.get_json()["field"] == "game_id"

    moves = record["moves"]
    original = api.move("T7-000123", 0, moves[0]).get_json()
    api.move("T7-000123", 1, moves[1])
    stored = len(events(app, "T7-000123"))
    retry = api.move("T7-000123", 0, {**moves[0], "card": "4h"})  # same move, other spelling
    assert retry.status_code == 201 and retry.get_json() == original
    assert len(events(app, "T7-000123")) == stored

    different = api.move("T7-000123", 1, {"player": "p1", "type": "discard", "card": "AS"})
    assert different.status_code == 409
    assert different.get_json()["error"] == (
        "seq 1 is already recorded as p1 discard TC; this body differs"
    )
    ahead = api.move("T7-000123", 5, moves[2])
    assert ahead.status_code == 409 and "the next move is seq 2" in ahead.get_json()["error"]
    assert len(events(app, "T7-000123")) == stored


def test_an_illegal_move_is_422_with_the_domain_message_and_records_nothing(api, app):
    record = records()["T7-000123"]
    api.start(header_of(record))
    stored = len(events(app, "T7-000123"))
    illegal = api.move("T7-000123", 0, {"player": "p1", "type": "discard", "card": "9C"})
    assert illegal.status_code == 422
    assert illegal.get_json()["error"] == "p1 cannot discard 9C: must pick before discarding"
    wrong_turn = api.move("T7-000123", 0, {"player": "p2", "type": "drop"})
    assert wrong_turn.status_code == 422
    assert wrong_turn.get_json()["error"] == "p2 cannot drop: it is p1's turn"
    assert len(events(app, "T7-000123")) == stored


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"player": "p1", "type": "pick", "from": "closed", "card": "4H"}, "seq"),
        ({"seq": "0", "player": "p1", "type": "drop"}, "seq"),
        ({"seq": 0, "player": "p1", "type": "pick", "from": "closed", "card": "4Z"}, "card"),
        ({"seq": 0, "player": "p1", "type": "pick", "card": "4H"}, "from"),
        ({"seq": 0, "player": "p9", "type": "drop"}, "player"),
        ({"seq": 0, "player": "p1", "type": "drop", "colour": "red"}, "colour"),
    ],
)
def test_a_malformed_move_is_400_naming_the_field(api, body, field):
    api.start(header_of(records()["T7-000123"]))
    response = api.call("POST", "/games/{game_id}/moves", "/api/v1/games/T7-000123/moves", body)
    assert response.status_code == 400
    assert response.get_json()["field"] == field


def test_malformed_game_bodies_are_400_naming_the_field(api):
    header = header_of(records()["T7-000123"])
    broken = copy.deepcopy(header)
    broken["deal"]["hands"]["p3"][4] = "1Z"
    answer = api.start(broken)
    assert answer.status_code == 400 and answer.get_json()["field"] == "deal.hands.p3[4]"
    with_moves = {**header, "moves": records()["T7-000123"]["moves"]}
    assert api.start(with_moves).get_json()["field"] == "moves"
    not_json = api.call("POST", "/games", "/api/v1/games", raw=b"{oops")
    assert not_json.status_code == 400 and "not valid JSON" in not_json.get_json()["error"]
    short_deal = copy.deepcopy(header)
    short_deal["deal"]["hands"]["p1"] = short_deal["deal"]["hands"]["p1"][:12]
    assert api.start(short_deal).status_code == 422


def test_unknown_games_are_404(api):
    assert api.get("nope").status_code == 404
    assert api.move("nope", 0, {"player": "p1", "type": "drop"}).status_code == 404
    assert api.settle("nope").status_code == 404


def test_the_operator_closes_a_game_and_reports_figures(api, app):
    record = records()["seed-points-200"]
    api.start(header_of(record))
    too_early = api.settle("seed-points-200")
    assert too_early.status_code == 422 and "still playing" in too_early.get_json()["error"]
    for seq, move in enumerate(record["moves"]):
        assert api.move("seed-points-200", seq, move).status_code == 201
    waiting = api.get("seed-points-200").get_json()
    assert waiting["state"]["phase"] == "showing" and waiting["settlement"] is None
    closed = api.settle("seed-points-200", {"reported": record["reported"]})
    assert closed.status_code == 200
    assert closed.get_json()["settlement"]["gross"] == "200.00"
    stored = len(events(app, "seed-points-200"))
    again = api.settle("seed-points-200", {"reported": record["reported"]})
    assert again.status_code == 200 and again.get_json() == closed.get_json()
    assert len(events(app, "seed-points-200")) == stored
    other = api.settle("seed-points-200", {"reported": {"gross": "1.00"}})
    assert other.status_code == 409 and other.get_json()["field"] == "reported"
    bad = api.settle("seed-points-200", {"reported": {"gross": 1.5}})
    assert bad.status_code == 400 and bad.get_json()["field"] == "reported.gross"


def test_a_red3_record_with_its_rounds_is_not_a_live_header(api):
    # Red 3 matches are taken since issue 14 (tests/test_api_red3_http.py), one step at a
    # time: a header that carries the whole match's rounds is refused, naming them.
    from red3_factory import example_record

    header = {k: v for k, v in example_record().items() if k not in ("moves", "reported")}
    answer = api.start(header)
    assert answer.status_code == 400 and answer.get_json()["field"] == "rounds"


def test_an_unknown_record_format_is_refused_naming_the_field(api):
    # (pool@1 was the unknown format here until Pool Rummy was registered; gin@1 is not)
    answer = api.start({"format": "rummy-ledger/gin@1", "game_id": "P-1"})
    assert answer.status_code == 400 and answer.get_json()["field"] == "format"


def test_junk_moves_get_a_documented_error_never_a_500(sqlite_url):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    api = Api(make_app(sqlite_url, API_FOLLOW_WRITES=False).test_client(), None)
    api.token = tokens.create_token("fuzz").token
    assert api.start(header_of(records()["T7-000123"])).status_code == 201
    value = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-2, 3),
        st.floats(allow_nan=False),
        st.sampled_from(["p1", "p2", "pick", "drop", "closed", "4H", "TC", "9C", "ZZ", ""]),
        st.lists(st.lists(st.sampled_from(["AS", "4H", "XX"]), max_size=3), max_size=2),
    )
    body = st.dictionaries(
        st.sampled_from(["seq", "player", "type", "from", "card", "finish", "groups", "at", "x"]),
        value,
        max_size=6,
    )

    @settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
    @given(body=st.one_of(body, value))
    def post(body):
        response = api.call("POST", "/games/{game_id}/moves", "/api/v1/games/T7-000123/moves", body)
        assert response.status_code in (201, 400, 409, 422)

    post()


# -- stored rows that cannot be read -----------------------------------------------------------


def test_a_game_whose_events_cannot_be_read_is_a_named_409_and_reaches_no_other_operator(api, app):
    """GET answered 500: a 409 naming the table and column; other operators still get 404."""
    _named_409(api, app, "ledger_events", "originator_version", "")


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize("value", ["not utf-8", "blob"])
def test_a_game_whose_owner_cannot_be_read_is_a_named_409_for_every_operator(api, app, value):
    """GET answered 500: a 409 naming the table and column, never the stored value of an
    owner row (it may be another operator's name); fail closed on ownership. SQLite only:
    PostgreSQL holds such bytes as text, an owner of another name."""
    from corruption_support import BLOB, NOT_UTF8

    _named_409(api, app, "game_owners", "operator", {"not utf-8": NOT_UTF8, "blob": BLOB}[value])


def _named_409(api, app, table: str, column: str, stored) -> None:
    from corruption_support import Case, corrupt, target_row

    url = app.config["DATABASE_URL"]
    assert api.start(header_of(records()["T7-000123"])).status_code == 201
    with engine_for(url).begin() as connection:
        corrupt(connection, Case(table, column, stored, True), target_row(connection, table, None))

    answer = api.get("T7-000123")
    assert answer.status_code == 409, answer.get_data(as_text=True)
    error = answer.get_json()["error"]
    assert error.startswith("game T7-000123") and f"{column}" in error, error
    other = Api(app.test_client(), tokens.create_token("other-operator").token).get("T7-000123")
    if table == "game_owners":  # whose game it is cannot be read: no operator's, and unnamed
        assert other.status_code == 409 and "acme-games" not in other.get_data(as_text=True)
    else:
        assert other.status_code == 404
