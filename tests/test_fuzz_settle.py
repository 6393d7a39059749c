"""Fuzzing `settle` with random and mutated records: one answer per record, either a
settlement whose money adds up or an error that names the game and says why; never a
traceback, and the command's exit status tells which."""

from __future__ import annotations

import json
from decimal import Decimal

from click.testing import CliRunner
from fuzz_support import FUZZ_SETTINGS, mutated_lines, red3_records, sample_records
from hypothesis import event, given
from hypothesis import strategies as st

from domain.records import RecordError
from replays.records.codec import parse_record
from replays.records.settle import settle_lines
from web.cli import main

RECORDS = sample_records() + red3_records()


def record_game_id(line: str) -> str | None:
    try:
        return parse_record(line).game_id
    except RecordError as error:
        return error.game_id
    except Exception:  # pragma: no cover - parse_record raises only RecordError
        return None


def check_money(answer: dict) -> None:
    """A 13-card settlement: two-decimal amounts, and the losers' amounts make the gross."""
    if "gross" not in answer:
        return  # a Red 3 match has per-round scores, no money
    values = [answer["gross"], answer["fee"], answer["net_to_winner"]]
    values += [line["amount"] for line in answer["players"].values()]
    for text in values:
        assert Decimal(text) == Decimal(text).quantize(Decimal("0.01")), text
    gross = sum(Decimal(line["amount"]) for line in answer["players"].values())
    assert gross == Decimal(answer["gross"])
    assert Decimal(answer["gross"]) - Decimal(answer["fee"]) == Decimal(answer["net_to_winner"])


@FUZZ_SETTINGS
@given(line=mutated_lines(RECORDS))
def test_each_mutated_record_gets_one_clear_answer(line):
    answers = settle_lines([line])
    if not line.strip():
        assert answers == []
        return
    (answer,) = answers
    json.dumps(answer)  # JSON-able, as the command prints it
    if "error" in answer:
        event("error")
        assert isinstance(answer["error"], str) and answer["error"].strip()
        assert "Traceback" not in answer["error"]
        assert answer["game_id"] == record_game_id(line)
    else:
        event("settled")
        check_money(answer)


@FUZZ_SETTINGS
@given(lines=st.lists(mutated_lines(RECORDS), min_size=1, max_size=5))
def test_the_settle_command_answers_every_line(lines, tmp_path_factory):
    path = tmp_path_factory.mktemp("settle") / "records.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for_people = CliRunner().invoke(main, ["settle", str(path)])
    assert "Traceback" not in for_people.output and for_people.exit_code in (0, 1)
    result = CliRunner().invoke(main, ["settle", "--json", str(path)])
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    printed = [json.loads(text) for text in result.stdout.splitlines() if text.strip()]
    assert len(printed) == sum(1 for line in lines if line.strip())
    failed = any("error" in answer for answer in printed)
    assert result.exit_code == (1 if failed else 0), result.output
