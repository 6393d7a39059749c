"""`rummy-ledger settle`: every record settled in memory, errors on their own lines."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from web.cli import main

DATA = Path(__file__).parent / "data"


def settle(*args: str, input: str | None = None):
    return CliRunner().invoke(main, ["settle", *args], input=input)


def test_settle_json_gives_one_line_per_game_in_the_settle_shape():
    result = settle(str(DATA / "games.jsonl"), "--json")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    records = [json.loads(line) for line in (DATA / "games.jsonl").read_text().splitlines()]
    assert [line["game_id"] for line in lines] == [r["game_id"] for r in records]
    for line, record in zip(lines, records, strict=True):
        assert set(line) == {"game_id", "winner", "gross", "fee", "net_to_winner", "players"}
        players = {p["id"] for p in record["players"]}
        assert set(line["players"]) == players - {line["winner"]}
        for entry in line["players"].values():
            assert set(entry) == {"result", "points", "point_value", "amount"}
            assert entry["amount"].count(".") == 1 and len(entry["amount"].split(".")[1]) == 2
        reported = record.get("reported", {})
        for field in ("winner", "gross", "fee", "net_to_winner"):
            if field in reported:
                assert line[field] == reported[field], (record["game_id"], field)
        for player, points in reported.get("points", {}).items():
            assert line["players"][player]["points"] == points


def test_the_seed_examples_settle_to_their_worked_totals():
    lines = {
        line["game_id"]: line
        for line in map(json.loads, settle(str(DATA / "games.jsonl"), "--json").stdout.splitlines())
    }
    assert lines["seed-raise-122"]["gross"] == "122.00"
    assert lines["seed-points-200"]["gross"] == "200.00"
    assert lines["T7-000123"] == {
        "game_id": "T7-000123",
        "winner": "p1",
        "gross": "49.70",
        "fee": "4.97",
        "net_to_winner": "44.73",
        "players": {
            "p2": {"result": "first_drop", "points": 20, "point_value": "1.00", "amount": "20.00"},
            "p3": {"result": "lost", "points": 27, "point_value": "1.10", "amount": "29.70"},
        },
    }


def test_a_record_breaking_a_rule_is_reported_and_the_rest_still_settle():
    result = settle(str(DATA / "broken.jsonl"), "--json")
    assert result.exit_code == 1
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(lines) == 6
    by_id = {line["game_id"]: line for line in lines}
    assert by_id["bad-not-held"] == {
        "game_id": "bad-not-held",
        "error": "move 1 (p1 discard 9C): p1 cannot discard 9C: not in hand",
    }
    assert by_id["bad-stock"]["error"].startswith("move 0 (p1 pick 5S): ")
    assert by_id["bad-turn"]["error"] == "move 2 (p3 drop): p3 cannot drop: it is p2's turn"
    assert "move 1, field 'card': '1Z' is not a card" in by_id["bad-card"]["error"]
    assert "field 'type': 'fold' is not a move type" in by_id["bad-type"]["error"]
    assert by_id["seed-points-200"]["gross"] == "200.00"
    assert "Traceback" not in result.output


def test_settle_reads_stdin_and_prints_for_people_without_json():
    first = (DATA / "games.jsonl").read_text().splitlines()[0]
    result = settle("-", input=first + "\n{oops\n")
    assert result.exit_code == 1
    assert "T7-000123: p1 wins 44.73 (gross 49.70, fee 4.97)" in result.stdout
    assert "p3           lost          27 pts x   1.10 =     29.70" in result.stdout
    assert "line 2: not valid JSON" in result.stdout


def test_an_unfinished_record_cannot_be_settled():
    record = json.loads((DATA / "games.jsonl").read_text().splitlines()[0])
    record["moves"] = record["moves"][:3]
    result = settle("-", "--json", input=json.dumps(record))
    assert result.exit_code == 1
    error = json.loads(result.stdout)["error"]
    assert "ends before the game is over" in error and "p3 to move" in error


def test_settle_stores_nothing(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite3'}"
    monkeypatch.setenv("RUMMY_LEDGER_DATABASE_URL", url)
    assert settle(str(DATA / "games.jsonl")).exit_code == 0
    assert not (tmp_path / "ledger.sqlite3").exists()
