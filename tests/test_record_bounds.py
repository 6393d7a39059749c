"""Issue 13 (part A): records the read side cannot hold are refused at the edge.

Each finding of the issue is a test here, through ``rummy-ledger import`` and through
``POST /api/v1/games``, on SQLite and PostgreSQL: a refused record stores nothing, its error
names the game and the field, and the good records around it are all stored.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from api_support import check_response, ensure_schema, header_of, make_app
from click.testing import CliRunner

from replays.access import tokens
from replays.readmodels.projections import catch_up
from replays.store.application import Ledger
from web.cli import main

DATA = Path(__file__).parent / "data"
GOOD = [json.loads(line) for line in (DATA / "games.jsonl").read_text().splitlines()]


def good(index: int = 1) -> dict:
    return copy.deepcopy(GOOD[index])


def with_field(path: str, value, *, game_id: str = "bad-1", index: int = 1) -> dict:
    record = good(index)
    record["game_id"] = game_id
    *parents, last = path.split(".")
    target = record
    for name in parents:
        target = target[name]
    target[last] = value
    return record


# (field path, hostile value, the words the error must carry)
HOSTILE = [
    ("stakes.point_value", "1.0000001", "decimal places"),
    ("stakes.point_value", 10**30, "stakes.point_value"),
    ("stakes.currency", "RUPEESRUPEES", "stakes.currency"),
    ("stakes.currency", "inr", "stakes.currency"),
    ("stakes.fee_percent", "10.001", "stakes.fee_percent"),
    ("table.decks", 10**8, "table.decks"),
    ("table.decks", 10**9, "table.decks"),
    ("table.jokers_per_deck", 10**30, "table.jokers_per_deck"),
    ("reported.winner", ["p1"], "reported.winner"),
    ("reported.winner", {"p1": 1}, "reported.winner"),
    ("reported.gross", "200.001", "reported.gross"),
    ("table.id", "T" * 65, "table.id"),
]
IDS = [f"{path}={str(value)[:12]}" for path, value, _ in HOSTILE]


def run(*args: str, input: str | None = None):
    return CliRunner().invoke(main, list(args), input=input)


def ledger_for(url: str) -> Ledger:
    return Ledger(url, env={"CREATE_TABLE": "no"})


@pytest.mark.parametrize(("path", "value", "words"), HOSTILE, ids=IDS)
def test_import_refuses_an_out_of_bounds_field_and_keeps_the_good_records_around_it(
    database_url, tmp_path, path, value, words
):
    lines = [good(1), with_field(path, value), good(3)]
    source = tmp_path / "games.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    result = run("import", str(source))
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    refused = [line for line in result.stdout.splitlines() if line.startswith("bad-1:")]
    assert len(refused) == 1, result.stdout
    assert f"field '{path}'" in refused[0] and words in refused[0]
    assert result.stdout.splitlines()[-1] == "2 imported, 0 already recorded, 1 rejected"
    ledger = ledger_for(database_url)
    assert sorted(ledger.list_game_ids()) == sorted([GOOD[1]["game_id"], GOOD[3]["game_id"]])
    # Whatever was stored, the read side takes it all: a projection failure raises here.
    catch_up(database_url)
    assert catch_up(database_url) == 0


def test_a_crash_while_building_one_game_costs_only_that_game(database_url, monkeypatch):
    """Any exception from building a game becomes that record's rejection; the batch of
    good records waiting with it is stored all the same."""
    from replays.records import importer

    real = importer.build_game

    def flaky(record):
        if record.game_id == GOOD[2]["game_id"]:
            raise OverflowError("int too large to convert")
        return real(record)

    monkeypatch.setattr(importer, "build_game", flaky)
    ensure_schema(database_url)
    ledger = ledger_for(database_url)
    summary = importer.import_lines(ledger, [json.dumps(r) for r in GOOD[:4]], follow=False)
    assert (summary.imported, summary.rejected) == (3, 1)
    assert summary.failures[0].game_id == GOOD[2]["game_id"]
    assert "int too large" in summary.failures[0].reason
    assert GOOD[2]["game_id"] not in ledger.list_game_ids()


def test_import_refuses_a_line_over_one_mebibyte_naming_the_line(database_url, tmp_path):
    huge = good(1)
    huge["game_id"] = "huge"
    huge["shuffle"] = {"commitment": "sha256:" + "a" * (1 << 20)}
    source = tmp_path / "games.jsonl"
    source.write_text(json.dumps(good(1)) + "\n" + json.dumps(huge) + "\n" + json.dumps(good(3)))
    result = run("import", str(source))
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert any(
        line.startswith("line 2:") and "1 MiB" in line for line in result.stdout.splitlines()
    ), result.stdout
    assert result.stdout.splitlines()[-1] == "2 imported, 0 already recorded, 1 rejected"


# -- the API -----------------------------------------------------------------------------


@pytest.fixture
def api(database_url):
    app = make_app(database_url, API_FOLLOW_WRITES=False)
    client = app.test_client()
    token = tokens.create_token("acme-games").token
    return client, {"Authorization": f"Bearer {token}"}, database_url


API_HOSTILE = [(p, v, w) for p, v, w in HOSTILE if not p.startswith("reported.")]


@pytest.mark.parametrize(
    ("path", "value", "words"),
    API_HOSTILE,
    ids=[i for i, (p, _, _) in zip(IDS, HOSTILE, strict=True) if not p.startswith("reported.")],
)
def test_the_api_refuses_an_out_of_bounds_header_with_400_and_stores_nothing(
    api, path, value, words
):
    client, headers, url = api
    body = header_of(with_field(path, value))
    response = client.post("/api/v1/games", json=body, headers=headers)
    assert response.status_code == 400, response.get_json()
    check_response("POST", "/games", 400, response.get_json())
    assert response.get_json()["field"] == path
    assert words in response.get_json()["error"] or words == path
    assert not ledger_for(url).game_exists("bad-1")


@pytest.mark.parametrize("winner", [["p1"], {"p1": 1}, 10**30])
def test_the_api_refuses_a_reported_winner_that_is_not_a_player_id(api, winner):
    client, headers, _ = api
    record = good(3)
    response = client.post("/api/v1/games", json=header_of(record), headers=headers)
    assert response.status_code == 201
    game_id = record["game_id"]
    for seq, move in enumerate(record["moves"]):
        answer = client.post(
            f"/api/v1/games/{game_id}/moves", json={"seq": seq, **move}, headers=headers
        )
        assert answer.status_code == 201, answer.get_json()
    response = client.post(
        f"/api/v1/games/{game_id}/settle",
        json={"reported": {"winner": winner}},
        headers=headers,
    )
    assert response.status_code == 400, response.get_json()
    assert response.get_json()["field"] == "reported.winner"


def test_a_body_over_one_mebibyte_is_413_in_the_api_error_shape(api):
    client, headers, url = api
    body = header_of(with_field("shuffle", {"commitment": "sha256:" + "a" * (1 << 20)}))
    response = client.post(
        "/api/v1/games", data=json.dumps(body), headers=headers, content_type="application/json"
    )
    assert response.status_code == 413
    check_response("POST", "/games", 413, response.get_json())
    assert "1 MiB" in response.get_json()["error"]
    assert not ledger_for(url).game_exists("bad-1")


# -- Red 3 matches -----------------------------------------------------------------------

RED3_HOSTILE = [
    ("table", {"id": "T" * 65}, "table.id"),
    ("round_count", 10**9, "round_count"),
    ("reported", {"winner": ["p1"]}, "reported.winner"),
    ("reported", {"totals": {"p1": 10**30}}, "reported.totals.p1"),
    ("players", [{"id": f"p{i}", "seat": i} for i in range(1, 10)], "players"),
]


@pytest.mark.parametrize(("name", "value", "path"), RED3_HOSTILE, ids=[p for *_, p in RED3_HOSTILE])
def test_import_refuses_an_out_of_bounds_red3_field_between_good_matches(
    database_url, tmp_path, name, value, path
):
    from red3_factory import example_record, random_record

    first, last = example_record(), random_record(5)
    bad = copy.deepcopy(first)
    bad["game_id"] = "bad-r3"
    bad[name] = value
    source = tmp_path / "red3.jsonl"
    source.write_text("\n".join(json.dumps(r) for r in (first, bad, last)) + "\n")
    result = run("import", str(source))
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    refused = [line for line in result.stdout.splitlines() if line.startswith("bad-r3:")]
    assert len(refused) == 1 and f"field '{path}'" in refused[0], result.stdout
    assert result.stdout.splitlines()[-1] == "2 imported, 0 already recorded, 1 rejected"
    assert not ledger_for(database_url).game_exists("bad-r3")
