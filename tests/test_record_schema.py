"""The declared record schema (issue 13): one set of models, from which the published JSON
Schemas (docs/schema/*.json, /api/v1/schemas/) and the OpenAPI request bodies are generated.

The committed files must be what the models generate, and the published schema must say
what the code enforces: every good record (test data, simulator output) fits it, and on
records drawn at and around every bound the JSON Schema (checked by ``jsonschema``) and the
models (pydantic) give the same verdict.
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path

import pytest
from api_support import check_response, header_of, make_app
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import ValidationError

from domain.red3.record_schema import Red3Record
from domain.rummy13.api_schema import MOVE_BODY, GameHeader, SettleRequest
from domain.rummy13.record_schema import GameRecord
from web.api import contract
from web.cli import main

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parent.parent
MODELS = {
    "game": GameRecord,
    "red3": Red3Record,
    "api-game": GameHeader,
    "api-settle": SettleRequest,
}


def lines(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text().splitlines() if line.strip()]


@cache
def validator(name: str) -> Draft202012Validator:
    schema = json.loads((ROOT / "docs" / "schema" / f"{name}.json").read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def model_errors(name: str, obj) -> list[dict]:
    try:
        if name == "api-move":
            MOVE_BODY.validate_python(obj)
        else:
            MODELS[name].model_validate(obj)
    except ValidationError as error:
        return error.errors()
    return []


def cross_field(error: dict) -> bool:
    """A check of the whole record tying fields together (a player named is seated, raise
    max not below the point value): JSON Schema cannot say it, the published schema's
    description says so."""
    return error["type"] == "record" and error["loc"] == ()


def agree(name: str, obj) -> bool:
    """The published schema's verdict on ``obj``, after checking the models give the same
    (the models may refuse more only by a cross-field check)."""
    published = validator(name).is_valid(obj)
    errors = model_errors(name, obj)
    if published and errors and all(cross_field(error) for error in errors):
        return False
    assert published == (not errors), (
        f"{name}: JSON Schema says {published}, the models say {errors[:1]}: "
        f"{json.dumps(obj)[:300]}"
    )
    return published


# -- generated, never hand-kept ------------------------------------------------------------


def test_the_committed_schema_files_are_what_the_models_generate():
    assert contract.drifted() == [], "run `rummy-ledger schema --write`"
    assert sorted(p.name for p in (ROOT / "docs" / "schema").glob("*.json")) == sorted(
        f"{name}.json" for name in contract.schema_names()
    )


def test_schema_check_fails_when_a_file_drifts(monkeypatch, tmp_path):
    result = CliRunner().invoke(main, ["schema", "--check"])
    assert result.exit_code == 0, result.output
    stale = tmp_path / "schema"
    stale.mkdir()
    for name in contract.schema_names():
        (stale / f"{name}.json").write_text(contract.schema_text(name))
    (stale / "game.json").write_text("{}\n")  # a hand edit
    monkeypatch.setattr(contract, "SCHEMA_DIR", stale)
    monkeypatch.setattr(contract, "ROOT", tmp_path.parent)
    result = CliRunner().invoke(main, ["schema", "--check"])
    assert result.exit_code == 1
    assert "game.json differs from the models" in result.output


def test_schema_prints_one_schema_and_refuses_an_unknown_name():
    printed = CliRunner().invoke(main, ["schema", "api-move"])
    assert printed.exit_code == 0
    assert json.loads(printed.output) == json.loads(contract.schema_text("api-move"))
    unknown = CliRunner().invoke(main, ["schema", "nope"])
    assert unknown.exit_code == 2 and "no schema 'nope'" in unknown.output


def test_openapi_request_bodies_are_the_generated_ones():
    document = json.loads((ROOT / "web" / "api" / "openapi.json").read_text())
    components = document["components"]["schemas"]
    api_game = json.loads(contract.schema_text("api-game"))
    assert components["GameHeader"]["properties"].keys() == api_game["properties"].keys()
    paths = document["paths"]
    body = paths["/games/{game_id}/moves"]["post"]["requestBody"]["content"]["application/json"]
    # A 13-card move, a Red 3 step or a Pool/Deals step; a Red 3 discard has a 13-card
    # discard's shape (and a match's moves are 13-card moves), so they are alternatives
    # (anyOf), and the game's variant decides.
    assert body["schema"] == {
        "anyOf": [
            {"$ref": "#/components/schemas/Move"},
            {"$ref": "#/components/schemas/Red3Step"},
            {"$ref": "#/components/schemas/MatchStep"},
        ]
    }
    assert components["Move"]["discriminator"]["propertyName"] == "type"
    assert components["Red3Step"]["discriminator"]["propertyName"] == "type"
    assert components["MatchStep"]["discriminator"]["propertyName"] == "type"
    api_red3 = json.loads(contract.schema_text("api-red3-game"))
    assert components["Red3GameHeader"]["properties"].keys() == api_red3["properties"].keys()


# -- served ----------------------------------------------------------------------------


@pytest.fixture
def client(sqlite_url):
    return make_app(sqlite_url, API_FOLLOW_WRITES=False).test_client()


def test_the_schemas_are_served_without_a_token(client):
    index = client.get("/api/v1/schemas/")
    assert index.status_code == 200
    check_response("GET", "/schemas/", 200, index.get_json())
    entries = index.get_json()["schemas"]
    assert [entry["name"] for entry in entries] == contract.schema_names()
    for entry in entries:
        served = client.get(entry["url"])
        assert served.status_code == 200, entry
        committed = (ROOT / "docs" / "schema" / f"{entry['name']}.json").read_text()
        assert served.get_data(as_text=True) == committed


def test_an_unknown_schema_is_404_in_the_api_error_shape(client):
    response = client.get("/api/v1/schemas/nope.json")
    assert response.status_code == 404
    check_response("GET", "/schemas/{name}.json", 404, response.get_json())
    assert "no schema 'nope'" in response.get_json()["error"]


# -- what the schema accepts is what the code accepts ----------------------------------------


def simulated_games(count: int) -> list[dict]:
    from domain.simulation.floor import Floor
    from replays.simulation.batch import Simulation

    return list(Simulation(Floor(seed=5, variants=("points", "raise"))).games(count))


def test_every_good_record_fits_the_published_schema():
    from red3_factory import example_record, random_record

    games = lines("games.jsonl") + simulated_games(12)
    matches = [*lines("red3_example.jsonl"), *lines("red3_matches.jsonl"), example_record()]
    matches += [random_record(seed, players=2 + seed % 4) for seed in range(4)]
    for record in games:
        assert agree("game", record), record["game_id"]
        assert agree("api-game", header_of(record))
        for seq, move in enumerate(record["moves"]):
            assert agree("api-move", {"seq": seq, **move})
        if "reported" in record:
            assert agree("api-settle", {"reported": record["reported"]})
    for match in matches:
        assert agree("red3", match), match["game_id"]


def test_broken_records_get_the_same_verdict_from_both():
    for record in lines("broken.jsonl"):
        agree("game", record)


def put(record: dict, path: str, value) -> dict:
    record = copy.deepcopy(record)
    *parents, last = path.split(".")
    target = record
    for name in parents:
        target = target[int(name)] if isinstance(target, list) else target[name]
    if isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return record


GAME = lines("games.jsonl")[0]  # T7-000123: a raise game with every block
OUT_OF_BOUNDS = [
    ("stakes.point_value", "1.0000001"),
    ("stakes.point_value", "100000.000001"),
    ("stakes.point_value", "0.000"),
    ("stakes.point_value", 1.5),
    ("stakes.point_value", 10**30),
    ("stakes.point_value", "1e2"),
    ("stakes.point_value", " 1.00"),
    ("stakes.fee_percent", "100.01"),
    ("stakes.fee_percent", "10.001"),
    ("stakes.currency", "inr"),
    ("stakes.currency", "RUPEES"),
    ("stakes.raise.schedule", []),
    ("table.decks", 10**8),
    ("table.decks", 0),
    ("table.decks", "2"),
    ("table.decks", True),
    ("table.jokers_per_deck", 3),
    ("table.id", "T" * 65),
    ("table.id", "-x"),
    ("game_id", ".."),
    ("started_at", "1969-12-31T23:59:59Z"),
    ("started_at", "2100-01-01T00:00:00Z"),
    ("deal.wild", "1Z"),
    ("deal.hands.p1", ["AS"] * 217),
    ("moves.1.card", "ZZ"),
    ("moves.1.colour", "red"),
    ("moves.3.type", "fold"),
    ("reported.winner", ["p1"]),
    ("reported.gross", "49.701"),
    ("reported.points.p2", -1),
    ("shuffle", {"seed": "a" * 257}),
    ("colour", "red"),
]


@pytest.mark.parametrize(("path", "value"), OUT_OF_BOUNDS, ids=[p for p, _ in OUT_OF_BOUNDS])
def test_out_of_bounds_values_are_refused_by_the_published_schema_too(path, value):
    assert not agree("game", put(GAME, path, value))


def test_a_hand_under_a_key_that_is_not_an_id_is_refused_by_both():
    record = copy.deepcopy(GAME)
    record["deal"]["hands"]["p 1"] = record["deal"]["hands"].pop("p1")
    assert not agree("game", record)


digits = st.text("0123456789", min_size=1, max_size=11)
decimal_texts = st.builds(
    lambda whole, fraction: whole + fraction,
    st.sampled_from(["0", "1", "99", "100", "101", "99999", "100000", "100001"]) | digits,
    st.sampled_from(["", ".", ".0", ".00", ".000000", ".0000000", ".5", ".01", ".001"])
    | st.text("0123456789", max_size=8).map(lambda s: "." + s if s else ""),
)
values = st.one_of(
    decimal_texts,
    st.integers(-2, 10**10),
    st.sampled_from([True, None, [], {}, "", "INR", "inr", "p1", "T" * 64, "T" * 65, "1Z"]),
)
GAME_FIELDS = [
    "stakes.point_value",
    "stakes.fee_percent",
    "stakes.raise.step",
    "stakes.raise.max",
    "stakes.currency",
    "table.decks",
    "table.jokers_per_deck",
    "table.id",
    "players.0.seat",
    "reported.gross",
    "reported.points.p2",
    "moves.0.card",
    "moves.0.at",
]


RED3 = lines("red3_example.jsonl")[0]
RED3_FIELDS = [
    "round_count",
    "players.0.seat",
    "table.id",
    "started_at",
    "reported.totals.p1",
    "rounds.0.moves.0.card",
    "rounds.1.moves.7.add",
    "rounds.0.deal.pile.0",
    "rounds.0.round",
]

DRAWN = {"game": (GAME, GAME_FIELDS), "red3": (RED3, RED3_FIELDS)}


@pytest.mark.parametrize("name", DRAWN)
def test_values_drawn_around_the_bounds_get_the_same_verdict(name):
    record, fields = DRAWN[name]

    @settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(path=st.sampled_from(fields), value=values)
    def check(path, value):
        agree(name, put(record, path, value))

    check()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=st.dictionaries(
        st.sampled_from(["seq", "player", "type", "from", "card", "finish", "groups", "at", "x"]),
        st.one_of(values, st.sampled_from(["pick", "drop", "closed", "open", "4H"])),
        max_size=6,
    )
)
def test_drawn_move_bodies_get_the_same_verdict(body):
    agree("api-move", body)
