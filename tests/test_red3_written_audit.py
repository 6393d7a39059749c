"""Red 3 matches: the projection's audit columns come from what the write computed (the
scores hash ``MatchEnded`` carries), not from a second replay of the match (issue 16, "work
done once"); they still agree with the replay that ``audit`` and ``verify`` make."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from saved_rows import projected

from domain import variants
from domain.red3 import audit as red3_audit
from domain.red3 import rows as red3_rows
from domain.red3.game import Red3Match
from domain.red3.scoring import scores_hash
from domain.simulation.floor import Floor
from replays.readmodels import projections
from replays.readmodels.models import GameRow
from replays.records import importer
from replays.records.codec import parse_record
from replays.simulation import Simulation
from replays.store.application import Ledger
from replays.store.db import engine_for
from replays.store.schema import migrate


@pytest.fixture
def ledger(database_url):
    migrate(database_url)
    return Ledger(database_url, env={"CREATE_TABLE": "no"})


def _matches(count: int, *, seed: int = 7, discrepancy_rate: float = 0.4) -> list[dict]:
    floor = Floor(seed=seed, variants=("red3",), tables=4, players=30)
    return list(Simulation(floor, discrepancy_rate).games(count))


def _rows(url: str) -> dict[str, tuple]:
    with engine_for(url).connect() as connection:
        found = connection.execute(
            sa.select(GameRow.game_id, GameRow.discrepancy, GameRow.discrepancy_note)
        ).all()
    return {row[0]: (row[1], row[2]) for row in found}


def test_match_ended_carries_the_hash_of_the_scores_the_rules_computed(ledger):
    raw = _matches(1)[0]
    match = importer.build_game(parse_record(raw))
    assert match.computed_hash == scores_hash(match.round_scores, match.winners)
    importer.import_lines(ledger, [json.dumps(raw)], follow=False)
    stored = ledger.get_game(raw["game_id"])
    assert isinstance(stored, Red3Match)
    assert stored.computed_hash == match.computed_hash


def test_an_import_writes_the_audit_columns_without_replaying_a_match(
    ledger, database_url, monkeypatch
):
    raws = _matches(8)
    called: list[int] = []

    def refuse(events):
        called.append(1)
        raise AssertionError("a match replayed for its audit")

    monkeypatch.setattr(red3_audit, "audit_events", refuse)
    summary = importer.import_lines(ledger, [json.dumps(raw) for raw in raws])
    assert summary.imported == len(raws)
    assert called == []
    monkeypatch.undo()
    rows = _rows(database_url)
    flagged = 0
    for raw in raws:
        match = ledger.get_game(raw["game_id"])
        replayed = red3_rows.audit_row(ledger.events_of(match))
        assert rows[raw["game_id"]] == (
            replayed["discrepancy"],
            replayed["discrepancy_note"],
        ), raw["game_id"]
        written = variants.for_game(match).written_audit_columns(match, ())
        assert written == replayed
        flagged += replayed["discrepancy"]
    assert 0 < flagged < len(raws)  # misreported matches are still found


@pytest.mark.parametrize("change", ["no hash", "round score"])
def test_without_a_matching_hash_the_projection_replays_the_match(ledger, database_url, change):
    raw = _matches(1, discrepancy_rate=0.0)[0]
    importer.import_lines(ledger, [json.dumps(raw)], follow=False)
    events = sa.table("ledger_events", sa.column("id"), sa.column("topic"), sa.column("state"))
    topic = "rummy_ledger.red3:Red3Match." + (
        "MatchEnded" if change == "no hash" else "RoundScored"
    )
    with engine_for(database_url).begin() as connection:
        row = connection.execute(
            sa.select(events.c.id, events.c.state)
            .where(events.c.topic == topic)
            .order_by(events.c.id)
            .limit(1)
        ).one()
        state = json.loads(bytes(row.state))
        if change == "no hash":
            del state["computed_hash"]
        else:
            first = next(iter(state["score"]["scores"]))
            state["score"]["scores"][first]["score"] += 5
        connection.execute(
            events.update().where(events.c.id == row.id).values(state=json.dumps(state).encode())
        )
    projections.catch_up(database_url, ledger=ledger)
    discrepancy, note = _rows(database_url)[raw["game_id"]]
    if change == "no hash":
        assert (discrepancy, note) == (False, None)
    else:
        assert discrepancy is True
        assert "rounds[0].scores." in note and ".score" in note


def test_a_saved_matchs_rows_are_the_replays_without_applying_its_events_again(ledger):
    """The rows of matches just saved whole come from the match as it ends, its moves
    counted (``Variant.saved_move_rows``): equal, row for row, to applying every event."""
    pairs = []
    for raw in _matches(10, seed=29):
        match = importer.build_game(parse_record(raw))
        pairs.append((match, list(match.pending_events)))
    fast = projected(projections.GameProjection(ledger), pairs)
    slow = projected(projections.GameProjection(ledger, light=False), pairs)
    assert len(fast["moves"]) == sum(m.move_count for m, _ in pairs) > 0
    assert {row["round"] for row in fast["moves"]} == set(
        range(1, 1 + max(m.round for m, _ in pairs))
    )
    assert fast == slow


def test_a_saved_match_is_not_replayed_for_its_rows(ledger, monkeypatch):
    raw = _matches(1)[0]
    match = importer.build_game(parse_record(raw))
    events = list(match.pending_events)
    applied: list[int] = []
    original = Red3Match.Discarded.apply

    def counted(self, aggregate):
        applied.append(1)
        return original(self, aggregate)

    monkeypatch.setattr(Red3Match.Discarded, "apply", counted)
    projections.GameProjection(ledger).rows_of_new_games([(match, events)])
    assert applied == []
    projections.GameProjection(ledger, light=False).rows_of_new_games([(match, events)])
    assert applied
