"""The save's fast paths against the slow ones they replace, on both engines: the same
imports stored through the driver (event rows and seals as binary arrays on PostgreSQL,
snapshots by one ``executemany``, before the events' lock on PostgreSQL) and through the
library's paths (Core inserts, ORM snapshots flushed at the commit, seals, tree nodes and
chain heads one row an execution) leave every event, snapshot, seal, tree node, chain head and tree
head equal, row for row."""

from __future__ import annotations

import json
import re

import pytest
import sqlalchemy as sa

from domain.simulation.floor import Floor
from replays.integrity import append
from replays.records.importer import import_lines
from replays.simulation.batch import Simulation
from replays.store import recorders
from replays.store.application import Ledger
from replays.store.db import engine_for
from replays.store.recorders import LedgerAggregateRecorder, LedgerApplicationRecorder
from replays.store.schema import migrate

TABLES = {
    "ledger_events": "id",
    "ledger_snapshots": "originator_id, originator_version",
    "integrity_seals": "position",
    "integrity_nodes": 'level, "index"',
    "integrity_games": "originator_id",
    "integrity_head": "id",
}
# A snapshot carries the moment it was taken; everything after it is the game's state.
_TAKEN_AT = re.compile(rb'^\{"timestamp":\{"_type_":"datetime_iso","_data_":"[^"]*"\}')


def _stored(url: str) -> dict[str, list[tuple]]:
    out = {}
    with engine_for(url).connect() as connection:
        for table, order in TABLES.items():
            rows = connection.execute(sa.text(f"SELECT * FROM {table} ORDER BY {order}")).all()
            out[table] = [
                tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in rows
            ]
    out["ledger_snapshots"] = [
        (*row[:3], _TAKEN_AT.sub(b"", row[3])) for row in out["ledger_snapshots"]
    ]
    return out


def _import(url: str, lines: list[str]) -> dict[str, list[tuple]]:
    migrate(url)
    summary = import_lines(Ledger(url, env={"CREATE_TABLE": "no"}), lines, batch=4, follow=False)
    assert (summary.imported, summary.rejected) == (len(lines), 0)
    return _stored(url)


def test_driver_saves_store_what_the_library_paths_store(database_url, second_url, monkeypatch):
    lines = [json.dumps(r) for r in Simulation(Floor(seed=31)).games(14)]
    fast = _import(database_url, lines)
    assert fast["ledger_snapshots"], "the games must cross a snapshot interval"
    monkeypatch.setattr(LedgerApplicationRecorder, "driver_inserts", False)
    monkeypatch.setattr(LedgerAggregateRecorder, "driver_inserts", False)
    monkeypatch.setattr(append, "_sql", _text_arrays(append._sql))
    slow = _import(second_url, lines)
    for table in TABLES:
        assert fast[table] == slow[table], table


def _text_arrays(sql):
    """The seals' statements one execution a row (no arrays, no pipeline)."""

    def text_form(dialect: str):
        statements = sql(dialect)
        changed = object.__new__(type(statements))
        changed.__dict__.update(statements.__dict__)
        changed.pipelines = False  # every insert row by row, as the library's paths do
        return changed

    return text_form


def test_event_rows_must_take_their_ids_in_the_order_given():
    """The check on PostgreSQL's returned ids: each id's row is the one given at its place,
    game and version both, compared as the UUIDs' text."""
    game_a, game_b = "6f1c7a52-0d5e-4c57-9a57-0b1f1d0e2a01", "0a9d3c1e-7b2f-4f4e-8d6a-5e4f3c2b1a00"
    columns = [[game_a, game_a, game_b, game_b], [1, 2, 1, 2]]
    in_order = [(7, game_a, 1), (8, game_a, 2), (9, game_b, 1), (10, game_b, 2)]
    assert recorders._in_given_order(in_order, columns)
    traded = [(7, game_b, 1), (8, game_b, 2), (9, game_a, 1), (10, game_a, 2)]
    assert not recorders._in_given_order(traded, columns)  # same versions, games traded
    assert not recorders._in_given_order([(7, game_a, 2), (8, game_a, 1), *in_order[2:]], columns)
    assert not recorders._in_given_order([(7, game_a.upper(), 1), *in_order[1:]], columns)


def test_a_save_whose_ids_came_out_of_order_stores_nothing(postgres_url, monkeypatch):
    """PostgreSQL: were the ids ever drawn out of the rows' order, the server's own
    answer (two rows' ids swapped here) is refused and the save rolls back whole."""
    migrate(postgres_url)
    ledger = Ledger(postgres_url, env={"CREATE_TABLE": "no"})
    original = recorders._in_given_order

    def swapped(returned, columns):
        (first, *_), (second, *_) = returned[0], returned[-1]
        moved = [(second, *returned[0][1:]), *returned[1:-1], (first, *returned[-1][1:])]
        return original(sorted(moved), columns)

    monkeypatch.setattr(recorders, "_in_given_order", swapped)
    lines = [json.dumps(r) for r in Simulation(Floor(seed=5)).games(2)]
    with pytest.raises(append.SealingError, match="notification ids in the order"):
        import_lines(ledger, lines, follow=False)
    with engine_for(postgres_url).connect() as connection:
        assert connection.execute(sa.text("SELECT count(*) FROM ledger_events")).scalar() == 0
    monkeypatch.undo()
    assert import_lines(ledger, lines, follow=False).imported == 2  # the real order
