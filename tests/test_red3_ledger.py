"""Red 3 matches stored in the ledger (SQLite and PostgreSQL), read back, replayed, audited."""

import copy
import dataclasses
import json
from pathlib import Path

import pytest

from domain import variants
from domain.red3.audit import audit_events
from domain.red3.records import parse_red3_record, red3_record_of
from replays.store.application import GameExists, Ledger
from replays.store.timeline import (
    NotOfVariant,
    StepOutOfRange,
    audit_stored,
    game_of,
    latest_version,
    state_at_step,
    states_after_steps,
    store_record,
)

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
    played = store_record(ledger, record)
    stored = game_of(ledger, "R3-EXAMPLE", variants.get("red3"))
    assert stored.table_state() == played.table_state()
    assert red3_record_of(stored) == record
    assert stored.settlement().to_dict() == played.settlement().to_dict()
    assert ledger.variant_of("R3-EXAMPLE") is variants.get("red3")


def test_the_same_game_id_cannot_be_stored_twice(ledger):
    record = parse_red3_record(example())
    store_record(ledger, record)
    before = len(ledger.recorder.select_events(ledger.aggregate_id("R3-EXAMPLE")))
    with pytest.raises(GameExists, match="R3-EXAMPLE is already recorded"):
        store_record(ledger, record)
    assert len(ledger.recorder.select_events(ledger.aggregate_id("R3-EXAMPLE"))) == before


def test_state_after_every_step_is_the_state_reached_by_playing_that_far(ledger):
    record = parse_red3_record(matches()[0])
    match = store_record(ledger, record)
    stored = game_of(ledger, match.game_id, variants.get("red3"))
    assert len(match.steps) == sum(1 + len(r.moves) for r in record.rounds)
    for step in (0, 1, 2, 5, len(match.steps) // 2, len(match.steps) - 1, len(match.steps)):
        state = state_at_step(ledger, match.game_id, step, game=stored)
        assert state.step == step
        assert state == _played_to(record, step).table_state()
    with pytest.raises(StepOutOfRange):
        state_at_step(ledger, match.game_id, len(match.steps) + 1)


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
    store_record(ledger, parse_red3_record(example()))
    report = audit_stored(ledger, "R3-EXAMPLE", variants.get("red3"))
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
    store_record(ledger, parse_red3_record(obj))
    report = audit_stored(ledger, "R3-EXAMPLE", variants.get("red3"))
    fields = {(d.field, d.reported, d.computed, d.source) for d in report.discrepancies}
    assert fields == {
        ("rounds[0].p2", -10, -15, "reported"),
        ("totals.p2", 180, 175, "reported"),
        ("winner", "p1", "p2", "reported"),
    }
    assert "3 discrepancy(ies)" in report.for_people()


def test_audit_recomputes_rather_than_trusting_the_recorded_scores(ledger):
    match = store_record(ledger, parse_red3_record(example()))
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
    assert ledger.variant_of("G-13") is not variants.get("red3")
    with pytest.raises(NotOfVariant):
        game_of(ledger, "G-13", variants.get("red3"))


def test_replay_states_are_the_states_after_each_step(ledger):
    record = parse_red3_record(example())
    match = store_record(ledger, record)
    stored, states = states_after_steps(ledger, match.game_id)
    assert len(states) == len(match.steps) and stored.version == match.version
    assert latest_version(ledger, match.game_id) == match.version
    for step in range(1, len(match.steps) + 1):
        assert states[step - 1] == state_at_step(ledger, match.game_id, step, game=stored)
    assert states[-1].winners == ("p2",) and states[9].round_scores[0].out == "p1"
