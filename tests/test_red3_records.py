"""Red 3 match records (docs/red3-format.md): parsed, checked, played, written back."""

import copy
import doctest
import json
import re
from pathlib import Path

import pytest
from red3_factory import random_record, write_data_files

import domain.red3.records
from domain.errors import BadDeal, CardNotHeld
from domain.records import RecordError
from domain.red3.errors import OpeningTooLow
from domain.red3.records import (
    RED3_FORMAT,
    dump_red3,
    explain,
    export_red3,
    is_red3_record,
    parse_red3_record,
    red3_record_of,
)

DATA = Path(__file__).parent / "data"


def lines(name):
    return [json.loads(line) for line in (DATA / name).read_text().splitlines() if line.strip()]


def test_docstring_examples():
    result = doctest.testmod(domain.red3.records)
    assert result.failed == 0 and result.attempted > 0


def test_data_files_are_what_the_factory_writes(tmp_path, monkeypatch):
    before = {
        name: (DATA / name).read_text() for name in ("red3_example.jsonl", "red3_matches.jsonl")
    }
    write_data_files()
    after = {name: (DATA / name).read_text() for name in before}
    assert after == before, "tests/data/red3_*.jsonl are stale: run python tests/red3_factory.py"


@pytest.mark.parametrize(
    "obj", lines("red3_example.jsonl") + lines("red3_matches.jsonl"), ids=lambda obj: obj["game_id"]
)
def test_records_round_trip_and_play_to_the_end(obj):
    record = parse_red3_record(obj)
    assert record.to_dict() == obj
    assert parse_red3_record(json.dumps(obj)) == record
    match = record.build()
    assert match.phase == "finished" and len(match.round_scores) == record.config.rounds
    assert red3_record_of(match) == record
    assert record.canonical() == dump_red3(record)


def test_the_sample_matches_cover_the_ways_a_round_ends():
    outs = []
    for obj in lines("red3_matches.jsonl"):
        match = parse_red3_record(obj).build()
        outs += [score.out for score in match.round_scores]
        stock_known = all(r["deal"].get("stock") is not None for r in obj["rounds"])
        assert stock_known or any("card" in m for r in obj["rounds"] for m in r["moves"])
    assert None in outs  # a round where the stock ran out
    assert sum(out is not None for out in outs) >= 5
    players = {len(obj["players"]) for obj in lines("red3_matches.jsonl")}
    assert players >= {2, 3, 4, 5}


def test_worked_example_settles_as_worked_by_hand():
    record = parse_red3_record(lines("red3_example.jsonl")[0])
    settled = record.settle()
    assert settled["winner"] == "p2" and settled["totals"] == {"p1": 10, "p2": 175}
    assert [r["scores"]["p1"]["score"] for r in settled["rounds"]] == [165, -155]
    assert [r["scores"]["p2"]["score"] for r in settled["rounds"]] == [-15, 190]
    assert settled["rounds"][1]["scores"]["p1"] == {
        "books": 0,
        "held": 155,
        "red_threes": 2,
        "score": -155,
    }
    assert record.reported == {
        "rounds": [{"p1": 165, "p2": -15}, {"p1": -155, "p2": 190}],
        "totals": {"p1": 10, "p2": 175},
        "winner": "p2",
    }


def test_export_carries_the_recorded_scores_and_imports_again_unchanged():
    record = parse_red3_record(lines("red3_example.jsonl")[0])
    exported = json.loads(export_red3(record.build()))
    assert exported["settlement"]["totals"] == {"p1": 10, "p2": 175}
    assert parse_red3_record(exported) == record


def test_canonical_form_fills_what_a_record_may_leave_out():
    obj = lines("red3_example.jsonl")[0]
    terse = copy.deepcopy(obj)
    for played in terse["rounds"]:
        del played["round"]
        del played["deal"]["first"]  # the rotation says who leads
        for move in played["moves"]:
            move.pop("cards", None)  # a pile pick need not list the pile
            if move["type"] == "pick" and move["from"] == "stock":
                del move["card"]  # the stock order is known
    assert parse_red3_record(terse) != parse_red3_record(obj)
    assert parse_red3_record(terse).canonical() == parse_red3_record(obj).canonical()


def test_recognised_by_format_or_variant():
    assert is_red3_record({"format": RED3_FORMAT})
    assert is_red3_record({"format": "rummy-ledger/game@1", "variant": "red3"})
    assert not is_red3_record({"format": "rummy-ledger/game@1", "variant": "points"})


def broken(path, value=None, *, delete=False):
    obj = copy.deepcopy(lines("red3_example.jsonl")[0])
    *parents, last = path
    target = obj
    for key in parents:
        target = target[key]
    if delete:
        del target[last]
    else:
        target[last] = value
    return obj


@pytest.mark.parametrize(
    ("path", "value", "field", "reason"),
    [
        (("format",), "rummy-ledger/red3@9", "format", "is not 'rummy-ledger/red3@1'"),
        (("colour",), "red", "colour", "not a field of a Red 3 match record"),
        (("round_count",), 0, "round_count", "0 is not a whole number at least 1"),
        (("round_count",), 1, "rounds", "2 rounds played but the match has 1"),
        (("players",), [{"id": "p1"}], "players", "1 given: at least 2 needed"),
        (("first_player",), "p9", "first_player", "first player p9 is not seated"),
        (("rounds", 0, "deal", "pile", 0), "1Z", "rounds[0].deal.pile[0]", "'1Z' is not a card"),
        (
            ("rounds", 1, "moves", 2, "type"),
            "declare",
            "rounds[1].moves[2].type",
            "not a move type",
        ),
        (
            ("rounds", 1, "moves", 0, "from"),
            "open",
            "rounds[1].moves[0].from",
            "not 'stock' or 'pile'",
        ),
        (
            ("rounds", 1, "moves", 7, "add"),
            [{"book": -1, "cards": ["QH"]}],
            "rounds[1].moves[7].add[0].book",
            "-1 is not a whole number at least 0",
        ),
        (("rounds", 1, "round"), 3, "rounds[1]", "round 3 listed as round 2"),
        (("reported", "totals", "p1"), "10", "reported.totals.p1", "not a whole number"),
        (("reported", "winner"), "p7", "reported.winner", "'p7' is not seated"),
        (("started_at",), "yesterday", "started_at", "is not an ISO-8601 time"),
    ],
)
def test_format_errors_name_the_game_and_field(path, value, field, reason):
    with pytest.raises(RecordError) as error:
        parse_red3_record(broken(path, value))
    assert error.value.game_id == "R3-EXAMPLE" and error.value.field == field
    assert reason in str(error.value)
    assert str(error.value).startswith(f"R3-EXAMPLE: field '{field}': ")


def test_missing_fields_are_named():
    with pytest.raises(RecordError, match=re.escape("field 'rounds[0].deal': missing")):
        parse_red3_record(broken(("rounds", 0, "deal"), delete=True))
    with pytest.raises(RecordError, match=re.escape("field 'rounds[0].moves[2].card': missing")):
        parse_red3_record(broken(("rounds", 0, "moves", 2, "card"), delete=True))
    with pytest.raises(RecordError, match="field 'game_id': missing"):
        parse_red3_record(broken(("game_id",), delete=True))


def test_broken_rules_say_round_move_player_and_card():
    obj = broken(("rounds", 1, "moves", 5, "card"), "KS")
    record = parse_red3_record(obj)
    with pytest.raises(CardNotHeld) as error:
        record.build()
    assert (
        explain(error.value) == "round 2 move 5 (p1 discard KS): p1 cannot discard KS: not in hand"
    )
    low = broken(("rounds", 0, "moves", 1, "books"), [["5C", "6C", "7C", "8C"]])
    with pytest.raises(OpeningTooLow) as error:
        parse_red3_record(low).build()
    assert explain(error.value).startswith("round 1 move 1 (p1 lay_down): p1 cannot lay down")


def test_a_bad_deal_names_its_round():
    obj = broken(("rounds", 1, "deal", "pile"), ["3H"])
    with pytest.raises(BadDeal) as error:
        parse_red3_record(obj).build()
    assert explain(error.value) == (
        "round 2 deal: cannot deal: the pile starts with 2 cards, not 1"
    )


def test_a_running_match_round_trips_too():
    obj = random_record(9, rounds=3)
    obj["rounds"] = obj["rounds"][:2]
    obj["rounds"][1]["moves"] = obj["rounds"][1]["moves"][:7]
    record = parse_red3_record(obj)
    match = record.build()
    assert match.phase in ("pick", "play") and match.round == 2
    assert red3_record_of(match) == record
    assert record.settle()["complete"] is False and record.settle()["winner"] is None


def test_a_shuffle_block_is_kept_verbatim():
    obj = copy.deepcopy(lines("red3_example.jsonl")[0])
    obj["shuffle"] = {"commitment": "sha256:" + "ab" * 32}
    record = parse_red3_record(obj)
    assert record.to_dict()["shuffle"] == obj["shuffle"]
    assert red3_record_of(record.build()).to_dict() == record.to_dict()
    with pytest.raises(RecordError, match="field 'shuffle': must be an object"):
        parse_red3_record(dict(obj, shuffle="seed"))
