"""Saves refuse to seal under notification ids they did not get (issue 13, finding 5c).

SQLite does not report which rowids an insert took; a row forged at the top of the id range
(2^63 - 1) makes it hand out free ids at random, and a save that assumed the next ids would
seal other rows than its own. PostgreSQL returns the ids, and its equivalent forgery (a
row at the id the sequence hands out next) makes the insert itself collide.
"""

from __future__ import annotations

import pytest
from test_integrity import insert_row, record, sql

from replays.integrity.evidence import create_tables, verify_store
from replays.store.application import Ledger

TOP = 2**63 - 1


def count(url):
    return sql(url, "SELECT count(*) FROM ledger_events").scalar_one()


def test_a_forged_row_at_the_top_of_the_id_range_makes_saves_refuse(sqlite_url):
    create_tables(sqlite_url)
    ledger = Ledger(sqlite_url)
    record(ledger, "G1")
    insert_row(sqlite_url, "FORGED", 1, b"{}", row=TOP)
    before = count(sqlite_url)
    for attempt in range(3):  # random ids: one lucky draw must not slip through either
        with pytest.raises(Exception, match="did not get notification ids") as caught:
            record(Ledger(sqlite_url), f"G2-{attempt}")
        assert "Nothing was stored" in str(caught.value)
    assert count(sqlite_url) == before
    assert sql(sqlite_url, "SELECT count(*) FROM integrity_seals").scalar_one() == 14
    # The forgery is found, and no genuine event was sealed under its id.
    report = verify_store(sqlite_url, check_read_models=False)
    assert [(p.kind, p.game_id, p.event) for p in report.problems] == [
        ("inserted", str(Ledger.aggregate_id("FORGED")), 1)
    ]


def test_a_forged_row_at_the_next_sequence_id_makes_the_save_refuse(postgres_url):
    url = postgres_url
    create_tables(url)
    ledger = Ledger(url)
    record(ledger, "G1")
    following = sql(url, "SELECT last_value + 1 FROM ledger_events_id_seq").scalar_one()
    insert_row(url, "FORGED", 1, b"{}", row=following + 3)
    before = count(url)
    with pytest.raises(Exception):  # noqa: B017 - the library's own IntegrityError
        record(Ledger(url), "G2")
    assert count(url) == before
    assert sql(url, "SELECT count(*) FROM integrity_seals").scalar_one() == 14
    report = verify_store(url, check_read_models=False)
    assert [(p.kind, p.event) for p in report.problems] == [("inserted", 1)]


# -- a resealed edit, located against the checkpoints (finding 5b) ------------------------------
def test_a_resealed_edit_is_located_and_untouched_games_are_not_blamed(database_url, keys):
    from test_integrity import flip_byte, forget_seals

    from replays.integrity.evidence import make_checkpoint, seal_new_events

    create_tables(database_url)
    ledger = Ledger(database_url)
    record(ledger, "G1")
    record(ledger, "G2")
    first = make_checkpoint(database_url)
    record(ledger, "G3")
    second = make_checkpoint(database_url)
    assert (first.size, second.size) == (28, 42)

    # G3's event 5 edited, then every seal, chain, tree node and the head written anew,
    # exactly as saves would have: the seals alone see nothing.
    flip_byte(database_url, "G3", 5)
    forget_seals(database_url)
    seal_new_events(database_url)
    assert verify_store(database_url, check_read_models=False).ok

    report = verify_store(database_url, checkpoints=[first, second], check_read_models=False)
    assert [(p.kind, p.game_id) for p in report.problems] == [
        ("resealed", "G3"),
        ("checkpoint", None),
    ]
    # The checkpoints' block hashes narrow it to the rest after the last block of 16:
    # positions 32-39, G3's events 5-12 (tests/test_resealed_edit.py names the event).
    assert "tree positions 32-39 (G3 events 5-12)" in report.problems[0].message
    assert "tree positions 28-41" in report.problems[1].message

    for untouched in ("G1", "G2"):
        one = verify_store(database_url, game_id=untouched, checkpoints=[first, second])
        assert not one.ok  # the ledger was rewritten ...
        assert {p.game_id for p in one.problems} == {None}, one.problems  # ... but not here
    one = verify_store(database_url, game_id="G3", checkpoints=[first, second])
    assert [(p.kind, p.game_id) for p in one.problems] == [("resealed", "G3"), ("checkpoint", None)]
