"""`import`, `export`, `settle` and `audit` with Red 3 matches, on SQLite and PostgreSQL."""

import copy
import json
from pathlib import Path

from click.testing import CliRunner

from replays.store.application import Ledger
from web.cli import main

DATA = Path(__file__).parent / "data"
EXAMPLE = DATA / "red3_example.jsonl"
MATCHES = DATA / "red3_matches.jsonl"
GAMES = DATA / "games.jsonl"  # 13-card games (docs/record-format.md), imported beside the matches


def run(*args, input=None):
    return CliRunner().invoke(main, list(args), input=input)


def records(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def stored_events(url, game_id):
    ledger = Ledger(url, env={"CREATE_TABLE": "no"})
    return [
        (e.originator_version, e.topic, bytes(e.state))
        for e in ledger.recorder.select_events(ledger.aggregate_id(game_id))
    ]


def test_import_export_round_trip_beside_13_card_games(database_url, tmp_path, monkeypatch):
    mixed = EXAMPLE.read_text() + GAMES.read_text() + MATCHES.read_text()
    first = run("import", "-", input=mixed)
    assert first.exit_code == 0, first.output
    total = len(records(EXAMPLE)) + len(records(GAMES)) + len(records(MATCHES))
    assert f"{total} imported, 0 already recorded, 0 rejected" in first.stdout
    ids = [r["game_id"] for r in records(EXAMPLE) + records(MATCHES)]
    before = {game_id: stored_events(database_url, game_id) for game_id in ids}

    again = run("import", str(MATCHES))
    assert f"0 imported, {len(records(MATCHES))} already recorded" in again.stdout

    exported = run("export", "--all")
    assert exported.exit_code == 0, exported.output
    lines = [json.loads(line) for line in exported.stdout.splitlines()]
    red3 = [line for line in lines if line["format"] == "rummy-ledger/red3@1"]
    assert [line["game_id"] for line in red3] == ids
    example = red3[0]
    assert example.pop("settlement")["totals"] == {"p1": 10, "p2": 175}
    assert example == records(EXAMPLE)[0]

    # Into a fresh store: the same events, byte for byte.
    fresh = f"sqlite:///{tmp_path / 'fresh.sqlite3'}"
    monkeypatch.setenv("RUMMY_LEDGER_DATABASE_URL", fresh)
    assert run("import", "-", input=exported.stdout).exit_code == 0
    assert {game_id: stored_events(fresh, game_id) for game_id in ids} == before


def test_a_broken_match_stores_nothing_and_says_where(database_url):
    bad = records(EXAMPLE)[0]
    bad["game_id"] = "R3-BAD"
    bad["rounds"][1]["moves"][5]["card"] = "KS"
    good = records(MATCHES)[0]
    text = json.dumps(bad) + "\n" + json.dumps(good) + "\n"
    result = run("import", "-", input=text)
    assert result.exit_code == 1
    assert (
        "R3-BAD: round 2 move 5 (p1 discard KS): p1 cannot discard KS: not in hand" in result.stdout
    )
    assert "1 imported, 0 already recorded, 1 rejected" in result.stdout
    assert stored_events(database_url, "R3-BAD") == []
    unknown = run("export", "R3-BAD")
    assert unknown.exit_code == 1 and "no game R3-BAD" in unknown.stderr


def test_a_different_match_under_a_stored_id_is_a_conflict(database_url):
    assert run("import", str(EXAMPLE)).exit_code == 0
    before = stored_events(database_url, "R3-EXAMPLE")
    changed = records(EXAMPLE)[0]
    changed["reported"]["totals"]["p1"] = 11
    result = run("import", "-", input=json.dumps(changed) + "\n")
    assert result.exit_code == 1 and "R3-EXAMPLE: conflict" in result.stdout
    assert stored_events(database_url, "R3-EXAMPLE") == before


def test_settle_gives_per_round_and_total_scores():
    result = run("settle", "--json", str(EXAMPLE))
    assert result.exit_code == 0, result.output
    settled = json.loads(result.stdout)
    assert settled["totals"] == {"p1": 10, "p2": 175} and settled["winner"] == "p2"
    assert [r["scores"]["p2"]["score"] for r in settled["rounds"]] == [-15, 190]
    people = run("settle", str(EXAMPLE))
    assert "R3-EXAMPLE: p2 wins the Red 3 match, 2 of 2 rounds" in people.stdout
    assert "round 2, p2 went out" in people.stdout


def test_settle_mixes_games_and_reports_a_bad_match_on_its_line():
    bad = records(EXAMPLE)[0]
    bad["rounds"][0]["moves"][1]["books"] = [["5C", "6C", "7C", "8C"]]
    text = GAMES.read_text().splitlines()[0] + "\n" + json.dumps(bad) + "\n" + MATCHES.read_text()
    result = run("settle", "--json", "-", input=text)
    assert result.exit_code == 1
    outcomes = [json.loads(line) for line in result.stdout.splitlines()]
    assert "gross" in outcomes[0]
    assert outcomes[1]["game_id"] == "R3-EXAMPLE"
    assert outcomes[1]["error"].startswith(
        "round 1 move 1 (p1 lay_down): p1 cannot lay down 5C 6C 7C 8C: "
        "the first lay-down of a round is worth 60, at least 70 needed"
    )
    assert all(o["variant"] == "red3" and o["complete"] for o in outcomes[2:])


def test_audit_of_a_match(database_url):
    honest = records(EXAMPLE)[0]
    wrong = copy.deepcopy(honest)
    wrong["game_id"] = "R3-WRONG"
    wrong["reported"]["rounds"][1]["p1"] = -125
    text = json.dumps(honest) + "\n" + json.dumps(wrong) + "\n"
    assert run("import", "-", input=text).exit_code == 0
    clean = run("audit", "R3-EXAMPLE")
    assert clean.exit_code == 0, clean.output
    assert "No discrepancies" in clean.stdout and "winner: p2" in clean.stdout
    found = run("audit", "--json", "R3-WRONG")
    assert found.exit_code == 2
    report = json.loads(found.stdout)
    assert report["discrepancies"] == [
        {"field": "rounds[1].p1", "reported": -125, "computed": -155, "source": "reported"}
    ]
    assert report["totals"] == {"p1": 10, "p2": 175}
