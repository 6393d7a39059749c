"""The projection's audit columns come from what the write computed, not from a second
settlement (issue 16, "work done once"), and still agree with the recomputation that
``audit`` and ``verify`` make."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from domain.rummy13 import rows as rows13
from domain.rummy13.game import Game
from domain.rummy13.settlement import settlement_hash
from replays.readmodels import projections
from replays.readmodels.models import GameRow
from replays.records.codec import parse_record
from replays.store.db import engine_for
from tests.test_projections import SAMPLES, ledger, sample_records, simulated_records, store

__all__ = ["ledger"]  # the fixture, re-used


def _no_second_settlement(monkeypatch) -> list[str]:
    """Make any settlement computed from here on fail the test loudly."""
    called: list[str] = []

    def refuse(self):
        called.append(self.game_id)
        raise AssertionError(f"settlement of {self.game_id} computed again")

    monkeypatch.setattr(Game, "compute_settlement", refuse)
    return called


def test_the_settled_event_carries_the_hash_of_what_the_write_computed(ledger):
    record = sample_records()[0]
    game = ledger.record_game(record.config, record.deal, record.move_dicts())
    assert game.computed_hash == settlement_hash(game.recorded_settlement)
    assert ledger.get_game(record.game_id).computed_hash == game.computed_hash


def test_a_misreported_game_is_flagged_without_settling_it_again(ledger, database_url, monkeypatch):
    records = sample_records()
    bad = json.loads(SAMPLES.read_text().splitlines()[0])
    bad["game_id"] = "T7-misreported"
    bad["reported"]["gross"] = "50.00"
    bad["reported"]["points"] = {player: 1 for player in bad["reported"]["points"]}
    records.append(parse_record(bad))
    store(ledger, records)
    called = _no_second_settlement(monkeypatch)
    projections.catch_up(database_url, ledger=ledger)
    assert called == []
    with engine_for(database_url).connect() as connection:
        rows = connection.execute(
            sa.select(GameRow.game_id, GameRow.discrepancy, GameRow.discrepancy_note)
        ).all()
    flagged = {game_id: note for game_id, found, note in rows if found}
    assert list(flagged) == ["T7-misreported"]
    assert "reported gross: 50.00 != computed 49.70" in flagged["T7-misreported"]
    assert "reported points." in flagged["T7-misreported"]


def test_a_game_reported_in_a_later_batch_is_flagged_from_its_stored_hash(
    ledger, database_url, monkeypatch
):
    """The report arrives after the projection closed the game: the game comes back from
    the store (a snapshot), with the hash its Settled event carried."""
    record = sample_records()[0]
    ledger.record_game(record.config, record.deal, record.move_dicts())
    projections.catch_up(database_url, ledger=ledger)
    reported = record.reported.to_dict()
    reported["fee"] = "0.01"
    ledger.report(record.game_id, reported)
    called = _no_second_settlement(monkeypatch)
    projections.catch_up(database_url, ledger=ledger)
    assert called == []
    with engine_for(database_url).connect() as connection:
        row = connection.execute(
            sa.select(GameRow.discrepancy, GameRow.discrepancy_note).where(
                GameRow.game_id == record.game_id
            )
        ).one()
    assert row.discrepancy is True
    assert row.discrepancy_note.startswith("reported fee: 0.01 != computed")


def test_written_and_recomputed_audit_columns_agree_on_simulated_games(ledger):
    """With a quarter of the games misreported, the columns the projection writes are
    exactly those the recomputation (audit, verify's read-model check) gives."""
    records = simulated_records(40, seed=5, discrepancy_rate=0.25)
    store(ledger, records)
    flagged = 0
    for record in records:
        game = ledger.get_game(record.game_id)
        written = rows13.written_audit_row(game)
        assert written == rows13.audit_row(game), record.game_id
        flagged += written["discrepancy"]
    assert 0 < flagged < len(records)


@pytest.mark.parametrize("without", ["hash", "body"])
def test_without_a_matching_hash_the_projection_recomputes(ledger, database_url, without):
    """A Settled event stored before it carried the hash, or whose body no longer matches
    it, is recomputed: the written figures cannot be taken as the computation."""
    store(ledger, sample_records()[:1])
    events = sa.table("ledger_events", sa.column("id"), sa.column("topic"), sa.column("state"))
    with engine_for(database_url).begin() as connection:
        row = connection.execute(
            sa.select(events.c.id, events.c.state).where(
                events.c.topic == "rummy_ledger:Game.Settled"
            )
        ).one()
        state = json.loads(bytes(row.state))
        if without == "hash":
            del state["computed_hash"]
        else:
            state["settlement"]["fee"] = "0.00"
        connection.execute(
            events.update().where(events.c.id == row.id).values(state=json.dumps(state).encode())
        )
    projections.catch_up(database_url, ledger=ledger)
    with engine_for(database_url).connect() as connection:
        game = connection.execute(sa.select(GameRow.__table__)).one()
    if without == "hash":
        assert game.discrepancy is False
        assert game.recomputed_hash == game.settlement_hash
    else:
        assert game.discrepancy is True
        assert "recorded fee: 0.00 != computed" in game.discrepancy_note
