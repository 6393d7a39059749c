"""Red 3 matches stored in the ledger (SQLite and PostgreSQL), read back, replayed, audited."""

import copy
import dataclasses
import json
from pathlib import Path

import pytest

from domain.red3.records import parse_red3_record, red3_record_of
from replays.records.red3_ledger import (
    NotARed3Match,
    StepOutOfRange,
    audit_events,
    audit_match,
    get_match,
    is_red3,
    latest_version,
    record_match,
    replay_states,
    state_at,
)
from replays.store.application import GameExists, Ledger

DATA = Path(__file__).parent / "data"


def example():
    return json.loads((DATA / "red3_example.jsonl").read_text().splitlines()[0])


def matches():
    return [json.loads(line) for line in (DATA / "red3_matches.jsonl").read_text().splitlines()]


@pytest.fixture
def ledger(database_url):
    return Ledger(database_url)


def test_a_stored_match_reads_back_identical(ledger):
    record = parse_red3_record(example())
    played = record_match(ledger, record)
    stored = get_match(ledger, "R3-EXAMPLE")
    assert stored.table_state() == played.table_state()
    assert red3_record_of(stored) == record
    assert stored.settlement().to_dict() == played.settlement().to_dict()
    assert is_red3(ledger, "R3-EXAMPLE")


def test_the_same_game_id_cannot_be_stored_twice(ledger):
    record = parse_red3_record(example())
    record_match(ledger, record)
    before = len(ledger.recorder.select_events(ledger.aggregate_id("R3-EXAMPLE")))
    with pytest.raises(GameExists, match="R3-EXAMPLE is already recorded"):
        record_match(ledger, record)
    assert len(ledger.recorder.select_events(ledger.aggregate_id("R3-EXAMPLE"))) == before


def test_state_after_every_step_is_the_state_reached_by_playing_that_far(ledger):
    record = parse_red3_record(matches()[0])
    match = record_match(ledger, record)
    stored = get_match(ledger, match.game_id)
    assert len(match.steps) == sum(1 + len(r.moves) for r in record.rounds)
    for step in (0, 1, 2, 5, len(match.steps) // 2, len(match.steps) - 1, len(match.steps)):
        state = state_at(ledger, match.game_id, step, match=stored)
        assert state.step == step
        assert state == _played_to(record, step).table_state()
    with pytest.raises(StepOutOfRange):
        state_at(ledger, match.game_id, len(match.steps) + 1)


def _played_to(record, step):
    """The match built from only the first ``step`` steps (deals count as steps)."""
    trimmed, left = [], step
    for played in record.rounds:
        if left == 0:
            break
        left -= 1
        trimmed.append(dataclasses.replace(played, moves=played.moves[:left]))
        left -= len(trimmed[-1].moves)
    return dataclasses.replace(record, rounds=tuple(trimmed)).build()


def test_audit_of_an_honest_match_is_clean(ledger):
    record_match(ledger, parse_red3_record(example()))
    report = audit_match(ledger, "R3-EXAMPLE")
    assert report.clean and report.winners == ("p2",)
    assert report.to_dict()["totals"] == {"p1": 10, "p2": 175}
    assert "No discrepancies" in report.for_people()


def test_audit_lists_what_the_operator_reported_wrongly(ledger):
    obj = example()
    obj["reported"] = {
        "rounds": [{"p1": 165, "p2": -10}],
        "totals": {"p1": 10, "p2": 180},
        "winner": "p1",
    }
    record_match(ledger, parse_red3_record(obj))
    report = audit_match(ledger, "R3-EXAMPLE")
    fields = {(d.field, d.reported, d.computed, d.source) for d in report.discrepancies}
    assert fields == {
        ("rounds[0].p2", -10, -15, "reported"),
        ("totals.p2", 180, 175, "reported"),
        ("winner", "p1", "p2", "reported"),
    }
    assert "3 discrepancy(ies)" in report.for_people()


def test_audit_recomputes_rather_than_trusting_the_recorded_scores(ledger):
    match = record_match(ledger, parse_red3_record(example()))
    events = list(ledger.events.get(match.id))
    forged = []
    for event in events:
        if type(event).__name__ == "RoundScored" and event.score["round"] == 2:
            score = copy.deepcopy(event.score)
            score["scores"]["p1"]["held"] = 125  # someone "forgot" a red three
            score["scores"]["p1"]["score"] = -125
            event = dataclasses.replace(event, score=score)
        forged.append(event)
    report = audit_events(forged)
    found = {(d.field, d.reported, d.computed) for d in report.discrepancies}
    assert ("rounds[1].scores.p1.held", 125, 155) in found
    assert ("rounds[1].scores.p1.score", -125, -155) in found
    assert report.totals == {"p1": 10, "p2": 175}


def test_a_13_card_game_is_not_a_red3_match(ledger):
    from domain.rummy13.table import TableConfig

    ledger.start_game(
        TableConfig(game_id="G-13", variant="points", players=("a", "b"), point_value="1")
    )
    assert not is_red3(ledger, "G-13")
    with pytest.raises(NotARed3Match):
        get_match(ledger, "G-13")


def test_replay_states_are_the_states_after_each_step(ledger):
    record = parse_red3_record(example())
    match = record_match(ledger, record)
    stored, states = replay_states(ledger, match.game_id)
    assert len(states) == len(match.steps) and stored.version == match.version
    assert latest_version(ledger, match.game_id) == match.version
    for step in range(1, len(match.steps) + 1):
        assert states[step - 1] == state_at(ledger, match.game_id, step, match=stored)
    assert states[-1].winners == ("p2",) and states[9].round_scores[0].out == "p1"
