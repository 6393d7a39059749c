"""Every field of every ingest API body, given hostile values over real HTTP (issue 13).

``POST /api/v1/games`` (a header and deal), ``POST /games/{id}/moves`` (a move and its
``seq``) and ``POST /games/{id}/settle`` (``reported``) are sent to a live server on
loopback with each field of a valid body changed: a wrong type, an awkward string, a value
at or past its bound, the field removed, an unknown field beside it. Whatever the body, the
answer is never a 500: it is a documented status with a JSON body of the documented shape,
a 400 names the ``field``, and a refused request leaves no partial game (no game for a
refused header, no new event for a refused move or settle). Then size: bodies just under
and just over 1 MiB, JSON nested thousands deep, bytes that are not UTF-8.
"""

from __future__ import annotations

import copy
import itertools
import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from functools import cache

import pytest
from api_support import check_response, header_of, make_app
from field_walk import (
    GENERIC,
    REMOVE,
    add_unknown,
    bound_values,
    describe,
    dict_paths,
    field_paths,
    hostile_values,
    mutate,
    path_text,
    shape_of,
)
from fuzz_support import FUZZ_EXAMPLES, sample_records
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from werkzeug.serving import make_server

from domain.record_schema.common import LINE_BYTES_MAX
from replays.access import tokens
from replays.store.application import Ledger

GAMES = itertools.count(1)
TEMPLATES = {
    "games": "/games",
    "moves": "/games/{game_id}/moves",
    "settle": "/games/{game_id}/settle",
}


@cache
def records() -> dict[str, dict]:
    from replays.simulation import Floor, Simulation

    by_id = {r["game_id"]: r for r in sample_records()}
    return {
        "points": by_id["seed-points-200"],
        "raise-schedule": by_id["T5-000300"],
        "shuffle": next(iter(Simulation(Floor(seed=7)).games(1))),
    }


class Api:
    """A token holder talking to the live server; every answer is checked against the
    documented contract before the test sees it."""

    def __init__(self, base: str, url: str):
        self.base = base
        self.url = url
        self.token = tokens.create_token("fuzz-fields", url=url).token
        self.ledger = Ledger(url, env={"CREATE_TABLE": "no"})

    def post(self, kind: str, body, game_id: str = "", label: str = "") -> tuple[int, dict]:
        """POST ``body`` (JSON, or raw bytes): never a 500, a 400 names its field."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        path = TEMPLATES[kind].format(game_id=game_id)
        request = urllib.request.Request(
            self.base + path,
            method="POST",
            data=data,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        assert status != 500, f"{label}: 500 {raw[:300]!r}"
        payload = json.loads(raw)  # never an HTML error page
        check_response("POST", TEMPLATES[kind], status, payload)
        if status == 400:
            whole_body = "body" in payload["error"]  # not JSON, not an object, empty
            assert payload.get("field") or whole_body, f"{label}: a 400 naming no field: {payload}"
        return status, payload

    def view(self, game_id: str) -> int:
        """GET the game as the API shows it; the status (the body is checked)."""
        request = urllib.request.Request(
            f"{self.base}/games/{urllib.parse.quote(game_id, safe='')}",
            headers={"Authorization": f"Bearer {self.token}"},
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        check_response("GET", "/games/{game_id}", status, json.loads(raw))
        return status

    def version(self, game_id: str) -> int | None:
        """The game's stored version (None: no such game)."""
        if not self.ledger.game_exists(game_id):
            return None
        return self.ledger.get_game(game_id).version

    def projection_failures(self) -> list:
        import sqlalchemy as sa

        from replays.store.db import engine_for

        with engine_for(self.url).connect() as connection:
            return connection.execute(
                sa.text("SELECT game_id, error FROM projection_failures")
            ).all()


def live_api(url: str):
    app = make_app(url, API_FOLLOW_WRITES="sync")
    http = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    try:
        yield Api(f"http://127.0.0.1:{http.server_port}/api/v1", url)
    finally:
        http.shutdown()
        thread.join(timeout=10)


@pytest.fixture
def api(database_url):
    """The live API on SQLite and on PostgreSQL (the drawn slice and the size checks)."""
    yield from live_api(database_url)


@pytest.fixture
def sqlite_api(sqlite_url):
    """The live API on SQLite, for the sweeps over every field."""
    yield from live_api(sqlite_url)


def body_mutations(body: dict, *, generic_per_shape: int = 4) -> list[tuple[str, dict]]:
    """``(label, body)`` for each shape of field in ``body``: a few generic values in turn,
    every bound value, removal; and an unknown field in every object."""
    out, seen, turn = [], set(), itertools.cycle(GENERIC)
    for path in field_paths(body):
        if shape_of(path) in seen:
            continue
        seen.add(shape_of(path))
        values = [next(turn) for _ in range(generic_per_shape)] + bound_values(path) + [REMOVE]
        out += [(f"{path_text(path)} = {describe(v)}", mutate(body, path, v)) for v in values]
    for path in dict_paths(body):
        out.append((f"unknown field at {path_text(path) or 'the top'}", add_unknown(body, path)))
    return out


# -- POST /games -------------------------------------------------------------------------


def check_header(api: Api, label: str, body) -> int:
    game_id = body.get("game_id") if isinstance(body, dict) else None
    existed = isinstance(game_id, str) and api.version(game_id) is not None
    status, payload = api.post("games", body, label=label)
    assert status in (201, 400, 409, 413, 422), f"{label}: {status} {payload}"
    if status == 201:
        assert api.version(payload["game_id"]) is not None, f"{label}: 201 but not stored"
        assert api.view(payload["game_id"]) == 200, f"{label}: stored, but cannot be shown"
    elif isinstance(game_id, str) and game_id and not existed:
        assert api.version(game_id) is None, f"{label}: refused with {status}, yet stored"
    return status


@pytest.mark.parametrize("kind", ["points", "raise-schedule", "shuffle"])
def test_every_field_of_a_game_header(sqlite_api, kind):
    api = sqlite_api
    header = header_of(records()[kind])
    statuses = []
    for label, body in body_mutations(header):
        if "game_id" in body and label.split(" =")[0] != "game_id":
            body["game_id"] = f"FZH-{next(GAMES)}"
        statuses.append(check_header(api, f"{kind}: {label}", body))
    assert 400 in statuses and 201 in statuses
    assert not api.projection_failures()


def test_drawn_values_at_drawn_header_fields(api):
    on_sqlite = api.url.startswith("sqlite")

    @given(data=st.data())
    @settings(
        max_examples=FUZZ_EXAMPLES if on_sqlite else max(5, FUZZ_EXAMPLES // 4),
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    def check(data):
        header = header_of(records()[data.draw(st.sampled_from(sorted(records())))])
        header["game_id"] = f"FZH-{next(GAMES)}"
        path = data.draw(st.sampled_from([p for p in field_paths(header) if p != ("game_id",)]))
        value = data.draw(hostile_values(path))
        check_header(api, f"{path_text(path)} = {describe(value)}", mutate(header, path, value))

    check()
    assert not api.projection_failures()


# -- POST /games/{id}/moves and /settle ---------------------------------------------------


def new_game(api: Api, record: dict, moves: int) -> str:
    """A fresh copy of ``record``'s game with its first ``moves`` moves posted."""
    game_id = f"FZM-{next(GAMES)}"
    assert api.post("games", {**header_of(record), "game_id": game_id})[0] == 201
    for seq, move in enumerate(record["moves"][:moves]):
        assert api.post("moves", {"seq": seq, **move}, game_id)[0] == 201
    return game_id


def check_move(api: Api, game_id: str, label: str, body) -> int:
    before = api.version(game_id)
    status, payload = api.post("moves", body, game_id, label=label)
    assert status in (201, 400, 404, 409, 413, 422), f"{label}: {status} {payload}"
    if status != 201:
        assert api.version(game_id) == before, f"{label}: refused with {status}, yet stored"
    return status


@pytest.mark.parametrize("kind", ["points", "raise-schedule"])
def test_every_field_of_every_move_body(sqlite_api, kind):
    """Before each real move, every field of it is tried changed: each try is refused and
    stores nothing, or is a legal move (then the game is played again up to there)."""
    api, record = sqlite_api, records()[kind]
    game_id = new_game(api, record, 0)
    refused = 0
    for seq, move in enumerate(record["moves"]):
        body = {"seq": seq, **move}
        for label, changed in body_mutations(body, generic_per_shape=2):
            status = check_move(api, game_id, f"{kind} move {seq}: {label}", changed)
            moved_on = changed != body and changed.get("seq") == seq
            if status == 201 and moved_on:  # a legal other move: play the game up to here again
                assert api.ledger.get_game(game_id).move_count == seq + 1
                game_id = new_game(api, record, seq)
            refused += status != 201
        assert check_move(api, game_id, f"{kind} move {seq}", body) == 201
    assert refused
    check_settle_bodies(api, game_id, record)
    assert not api.projection_failures()


def check_settle_bodies(api: Api, game_id: str, record: dict) -> None:
    """Every field of a settle body, changed, on a finished game; then the real one."""
    body = {"reported": copy.deepcopy(record["reported"])}
    for label, changed in [*body_mutations(body), ("a list", []), ("text", "settle")]:
        before = api.version(game_id)
        status, payload = api.post("settle", changed, game_id, label=f"settle: {label}")
        assert status in (200, 400, 409, 413, 422), f"settle {label}: {status} {payload}"
        if status == 200:
            # Settling stores the settlement once, and figures once: never more.
            game = api.ledger.get_game(game_id)
            assert game.phase == "settled"
        else:
            assert api.version(game_id) == before, f"settle {label}: refused, yet stored"
    status, payload = api.post("settle", body, game_id)
    assert status in (200, 409), payload  # 409: other valid figures were kept first


# -- sizes and encodings ------------------------------------------------------------------


def padded(body: dict, size: int) -> bytes:
    """``body`` as JSON padded with trailing whitespace to exactly ``size`` bytes."""
    text = json.dumps(body).encode()
    return text + b" " * (size - len(text))


def test_a_body_of_exactly_one_mebibyte_is_read_and_one_byte_more_is_413(api):
    header = {**header_of(records()["points"]), "game_id": "FZ-SIZE-1"}
    assert api.post("games", padded(header, LINE_BYTES_MAX))[0] == 201
    over = {**header, "game_id": "FZ-SIZE-2"}
    status, payload = api.post("games", padded(over, LINE_BYTES_MAX + 1))
    assert status == 413 and "1 MiB" in payload["error"]
    assert api.version("FZ-SIZE-2") is None
    game_id, started = "FZ-SIZE-1", api.version("FZ-SIZE-1")
    move = {"seq": 0, **records()["points"]["moves"][0]}
    assert api.post("moves", padded(move, LINE_BYTES_MAX + 1), game_id)[0] == 413
    assert api.post("settle", padded({}, LINE_BYTES_MAX + 1), game_id)[0] == 413
    assert api.version(game_id) == started
    assert api.post("moves", padded(move, LINE_BYTES_MAX), game_id)[0] == 201


@pytest.mark.parametrize(
    "raw",
    [
        b"[" * 100_000 + b"]" * 100_000,
        b'{"game_id": "FZ-DEEP", "table": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
        b'{"game_id": "FZ-DEEP", "players": ' + b'{"a":' * 20_000 + b"1" + b"}" * 20_001,
        b'{"game_id": "FZ-\xff\xfe"}',
        b'{"game_id": "FZ-UTF", "variant": "\xed\xa0\x80"}',  # an encoded lone surrogate
        b'{"seq": 0, "type": "pi',  # cut short
        b'{"game_id": "FZ-NUL"\x00}',
    ],
    ids=[
        "nested-array",
        "nested-in-field",
        "nested-objects",
        "not-utf8",
        "surrogate",
        "cut",
        "nul",
    ],
)
def test_deep_and_undecodable_bodies_are_400_on_every_endpoint(api, raw):
    game_id = new_game(api, records()["points"], 1)
    for kind in ("games", "moves", "settle"):
        before = api.version(game_id)
        status, payload = api.post(kind, raw, game_id, label=kind)
        assert status == 400, (kind, status, payload)
        assert api.version(game_id) == before
    for name in ("FZ-DEEP", "FZ-UTF", "FZ-NUL"):
        assert api.version(name) is None


def test_the_api_names_players_for_a_seat_count_out_of_range(sqlite_api):
    header = {**header_of(records()["shuffle"]), "game_id": "FZ-SEATS"}
    header["players"] = header["players"][1:]
    header["dealer"] = header["players"][0]["id"]
    status, payload = sqlite_api.post("games", header)
    assert status == 400 and payload.get("field") == "players", payload


@pytest.mark.parametrize("move_type", ["jump", True, [], 1.5])
def test_the_api_names_the_type_field_of_an_unknown_move(sqlite_api, move_type):
    game_id = new_game(sqlite_api, records()["points"], 0)
    body = {"seq": 0, **records()["points"]["moves"][0], "type": move_type}
    status, payload = sqlite_api.post("moves", body, game_id)
    assert status == 400 and payload.get("field") == "type", payload
