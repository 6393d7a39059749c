"""A lost database connection at the worst moment, on both engines, without a cluster (the
cluster tests lose real servers): the importer's batch whose commit went through but whose
answer was lost is stored once and counted imported; the projection worker's follow loop
waits out a lost connection; a query error is not mistaken for a lost connection."""

from __future__ import annotations

import json

import psycopg
import pytest
import sqlalchemy as sa
from web_support import sample_records

from replays.readmodels import projections
from replays.records.codec import read_records
from replays.records.importer import IMPORTED, Importer
from replays.store import replicas
from replays.store.application import Ledger
from replays.store.schema import migrate


def lost(message: str = "server closed the connection unexpectedly") -> sa.exc.OperationalError:
    return sa.exc.OperationalError("COMMIT", {}, psycopg.OperationalError(message))


@pytest.fixture
def ledger(database_url):
    migrate(database_url)
    return Ledger(database_url, env={"CREATE_TABLE": "no"})


def test_a_batch_whose_commit_answer_was_lost_is_stored_once(ledger, monkeypatch):
    records = [record for _, record in read_records(json.dumps(r) for r in sample_records())]
    importer = Importer(ledger, batch=len(records))
    real_save = Importer._save
    calls = []

    def save_then_lose_the_answer(self, *games):
        calls.append(len(games))
        real_save(self, *games)
        if len(calls) == 1:
            raise lost()

    monkeypatch.setattr(Importer, "_save", save_then_lose_the_answer)
    monkeypatch.setattr("replays.records.importer.time.sleep", lambda _seconds: None)
    outcomes = []
    for record in records:
        outcomes += importer.add(record)
    outcomes += importer.flush()
    assert calls == [len(records)]  # stored by the first attempt; the second only looked
    assert [o.status for o in outcomes] == [IMPORTED] * len(records)
    assert ledger.stored_games(r.game_id for r in records) == {r.game_id for r in records}


def test_a_batch_lost_before_its_commit_is_saved_by_the_next_attempt(ledger, monkeypatch):
    records = [record for _, record in read_records(json.dumps(r) for r in sample_records())]
    importer = Importer(ledger, batch=len(records))
    real_save = Importer._save
    calls = []

    def lose_the_first(self, *games):
        calls.append(len(games))
        if len(calls) == 1:
            raise lost("terminating connection due to administrator command")
        real_save(self, *games)

    monkeypatch.setattr(Importer, "_save", lose_the_first)
    monkeypatch.setattr("replays.records.importer.time.sleep", lambda _seconds: None)
    outcomes = []
    for record in records:
        outcomes += importer.add(record)
    outcomes += importer.flush()
    assert calls == [len(records), len(records)]
    assert [o.status for o in outcomes] == [IMPORTED] * len(records)


def test_the_follow_loop_waits_out_a_lost_connection(database_url, ledger, monkeypatch):
    runner = projections.runner(database_url, ledger=ledger)
    answers = [lost(), 3, 0]
    seen = []

    def catch_up(*_args, **_kwargs):
        answer = answers.pop(0)
        seen.append(answer)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(runner, "catch_up", catch_up)
    done = runner.follow(interval=0, stop=lambda: not answers)
    assert done == 3 and len(seen) == 3


def test_the_follow_loop_does_not_swallow_a_broken_query(database_url, ledger, monkeypatch):
    runner = projections.runner(database_url, ledger=ledger)
    monkeypatch.setattr(runner, "catch_up", lambda *a, **k: (_ for _ in ()).throw(KeyError("x")))
    with pytest.raises(KeyError):
        runner.follow(interval=0, stop=lambda: False)


def test_which_errors_are_a_lost_connection():
    assert replicas.is_connection_error(lost())
    read_only = psycopg.errors.ReadOnlySqlTransaction(
        "cannot execute INSERT in a read-only transaction"
    )
    assert replicas.is_connection_error(sa.exc.InternalError("INSERT", {}, read_only))
    # SQLite's OperationalError is about the file or the query, not a connection.
    import sqlite3

    missing = sa.exc.OperationalError("SELECT", {}, sqlite3.OperationalError("no such table: x"))
    assert not replicas.is_connection_error(missing)
    assert not replicas.is_connection_error(ValueError("x"))
    # A transaction left invalid by a connection that died under it, as eventsourcing wraps it.
    from eventsourcing.persistence import PersistenceError

    pending = sa.exc.PendingRollbackError(
        "Can't reconnect until invalid transaction is rolled back"
    )
    assert replicas.is_connection_error(PersistenceError(pending))
