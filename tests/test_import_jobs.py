"""`rummy-ledger import --jobs N` on SQLite and PostgreSQL: worker processes share the
records, and the store ends exactly as a one-process import leaves it (every record
checked, rejects storing nothing, one sealed tree in notification order, the read models
caught up exactly once)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from domain.simulation.floor import Floor
from replays.integrity.verify import verify_store
from replays.readmodels import projections
from replays.readmodels.bulk import Statements, insert_rows, rows_at_once
from replays.records.parallel import Dispatcher, game_key, import_lines_parallel
from replays.simulation.batch import Simulation
from replays.store.application import Ledger
from replays.store.db import engine_for
from replays.store.schema import migrate
from tests.test_projections import dump
from web.cli import main

DATA = Path(__file__).parent / "data"


def _lines(count: int) -> list[str]:
    simulation = Simulation(Floor(seed=23, tables=5, players=30), discrepancy_rate=0.2)
    return [json.dumps(record) for record in simulation.games(count)]


def _mixed_file(tmp_path: Path) -> tuple[Path, str]:
    """Simulated games, the broken records, an identical repeat and a changed repeat."""
    lines = _lines(24)
    broken = (DATA / "broken.jsonl").read_text().splitlines()
    changed = json.loads(lines[3])
    changed["stakes"]["fee_percent"] = "7"
    mixed = lines[:12] + broken + [lines[5], json.dumps(changed)] + lines[12:] + [lines[0]]
    path = tmp_path / "month.jsonl"
    path.write_text("\n".join(mixed) + "\n")
    return path, changed["game_id"]


def _seals(url: str) -> list[tuple[int, int]]:
    with engine_for(url).connect() as connection:
        return [
            tuple(row)
            for row in connection.execute(
                sa.text("SELECT position, notification_id FROM integrity_seals ORDER BY position")
            )
        ]


def _event_ids(url: str) -> list[int]:
    with engine_for(url).connect() as connection:
        return list(
            connection.execute(sa.text("SELECT id FROM ledger_events ORDER BY id")).scalars()
        )


def test_free_lines_go_together_and_one_id_stays_with_its_worker():
    line = '{"format": "rummy-ledger/game@1", "game_id": "T7-000123", "moves": []}'
    same = '{"game_id":"T7-000123","format":"x"}'
    assert game_key(line) == game_key(same) == game_key(line.encode()) == b"T7-000123"
    assert game_key("not json at all") is None
    free, dispatcher = Dispatcher.FREE, Dispatcher(2)
    long = '{"game_id": "A", "moves": [' + "0, " * 100 + "0]}"
    assert [dispatcher.route(1, long), dispatcher.route(2, "not json at all")] == [free, free]
    dispatcher.give_free(1)
    assert dispatcher.load == [0, len(long) + 15] and dispatcher.by_load() == [0, 1]
    assert dispatcher.route(3, '{"game_id": "B"}') == free
    assert dispatcher.route(4, long) == 1  # "A" is still with worker 1: behind it
    assert dispatcher.route(5, '{"game_id": "B"}') == free  # with the first "B"
    dispatcher.give_free(0)
    assert dispatcher.route(6, '{"game_id": "B"}') == 0
    dispatcher.answered(1)
    assert dispatcher.route(7, long) == 1  # "A"'s second line is not answered yet
    for number in (2, 3, 4, 5, 6, 7, 99):  # 99: never given (no worker answers for it)
        dispatcher.answered(number)
    dispatcher.answered(None)
    assert dispatcher.load == [0, 0] and dispatcher.unanswered == 0
    assert dispatcher.route(8, long) == free  # "A" answered: free again


def test_a_slow_worker_is_given_fewer_records(sqlite_url, tmp_path, monkeypatch):
    """Chunks go to whichever worker has room first: one that takes longer over each
    record (here made to sleep) is given fewer of them, and the import ends as usual."""
    import os
    import time

    from replays.records import parallel
    from replays.records.importer import Importer

    migrate(sqlite_url)
    claim, handled = tmp_path / "slow", tmp_path / "handled"
    add, slow = Importer.add, []

    def timed_add(self, record, line=None):
        if not slow:  # the first worker to get here is the slow one
            try:
                os.close(os.open(claim, os.O_CREAT | os.O_EXCL))
                slow.append(True)
            except FileExistsError:
                slow.append(False)
        if slow[0]:
            with handled.open("a") as out:
                out.write(f"{line}\n")
            time.sleep(0.1)
        return add(self, record, line)

    monkeypatch.setattr(Importer, "add", timed_add)
    monkeypatch.setattr(parallel, "CHUNK", 2)
    monkeypatch.setattr(parallel, "QUEUED_CHUNKS", 1)
    summary = import_lines_parallel(sqlite_url, _lines(40), jobs=2, batch=5)
    assert (summary.imported, summary.rejected) == (40, 0)
    assert len(handled.read_text().split()) <= 14  # of 40, where a fixed split gives 20


@pytest.mark.parametrize("jobs", [2, 3])
def test_import_jobs_ends_like_one_process(database_url, tmp_path, jobs):
    path, changed_id = _mixed_file(tmp_path)
    result = CliRunner().invoke(main, ["import", "--jobs", str(jobs), str(path)])
    assert result.exit_code == 1, result.output  # the broken records are refused
    lines = result.stdout.splitlines()
    # Errors still name game, move and card; outcomes are those of a one-process import.
    assert "bad-not-held: move 1 (p1 discard 9C): p1 cannot discard 9C: not in hand" in lines
    assert "bad-turn: move 2 (p3 drop): p3 cannot drop: it is p2's turn" in lines
    assert any(line.startswith(f"{changed_id}: conflict: a different game") for line in lines)
    assert lines[-1] == "25 imported, 2 already recorded, 6 rejected (1 conflicts)"
    assert "Traceback" not in result.output

    ledger = Ledger(database_url, env={"CREATE_TABLE": "no"})
    for game_id in ("bad-not-held", "bad-stock", "bad-card", "bad-type", "bad-turn"):
        assert not ledger.game_exists(game_id)
    assert ledger.get_game(changed_id).config.fee_percent != 7  # the first record stands

    # One tree, in notification order, and it verifies (chains, tree, deals, snapshots,
    # the read rows against the events).
    assert [n for _, n in _seals(database_url)] == _event_ids(database_url)
    assert [p for p, _ in _seals(database_url)] == list(range(len(_event_ids(database_url))))
    report = verify_store(database_url)
    assert report.ok, report.problems
    assert report.games == 25

    # The read models are caught up, and exactly what a rebuild from the events gives.
    status = projections.projection_status(database_url)
    # (PostgreSQL's ids have gaps where a batch met a stored game and rolled back.)
    assert status.lag == 0 and status.events_applied == len(_event_ids(database_url))
    projected = dump(database_url)
    projections.rebuild(database_url, ledger=ledger)
    assert dump(database_url) == projected
    assert len(projected["games"]) == 25


def test_import_jobs_matches_a_one_process_import_row_for_row(database_url, second_url):
    """Read models, events, snapshots, seals and chain heads equal a one-process import's
    row for row; only what the saves' interleaving decides differs (notification ids,
    tree positions, hence the tree's nodes)."""
    lines = _lines(16)
    dumps = []
    for jobs, url in ((1, second_url), (2, database_url)):
        migrate(url)
        if jobs == 1:
            from replays.records.importer import import_lines

            summary = import_lines(Ledger(url, env={"CREATE_TABLE": "no"}), lines)
        else:
            summary = import_lines_parallel(url, copy.copy(lines), jobs=jobs)
        assert (summary.imported, summary.rejected) == (16, 0)
        dumps.append((dump(url), _store_rows(url)))
    assert dumps[0][0] == dumps[1][0]
    assert dumps[0][1] == dumps[1][1]
    assert verify_store(database_url).ok


_TAKEN_AT = re.compile(rb'^\{"timestamp":\{"_type_":"datetime_iso","_data_":"[^"]*"\}')


def _store_rows(url: str) -> dict[str, list[tuple]]:
    """The stored rows whose content does not depend on the order of the saves, sorted:
    a snapshot without the moment it was taken."""
    queries = {
        "events": "SELECT originator_id, originator_version, topic, state FROM ledger_events",
        "snapshots": "SELECT originator_id, originator_version, topic, state FROM ledger_snapshots",
        "seals": "SELECT originator_id, originator_version, game_id, leaf_hash, chain_hash "
        "FROM integrity_seals",
        "chains": "SELECT originator_id, game_id, version, chain_hash FROM integrity_games",
    }
    out = {}
    with engine_for(url).connect() as connection:
        for name, query in queries.items():
            rows = [
                tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)
                for row in connection.execute(sa.text(query))
            ]
            if name == "snapshots":
                rows = [(*row[:3], _TAKEN_AT.sub(b"", row[3])) for row in rows]
            out[name] = sorted(rows, key=repr)
    assert out["snapshots"] and len(out["seals"]) == len(out["events"])
    return out


def _counting(monkeypatch) -> dict:
    """Count, across the worker processes (forked after this), the saves that wrote their
    own rows and position, the events they covered, and the events any catch-up projected
    (a catch-up replays events through ``process``; the saves never do)."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    calls = {name: context.Value("i", 0) for name in ("written", "events", "caught_up")}
    apply_in_save, process = projections.Runner.apply_in_save, projections.GameProjection.process

    def counted_apply_in_save(self, connection, first, last, apply):
        done = apply_in_save(self, connection, first, last, apply)
        with calls["written"].get_lock():
            calls["written"].value += done
            calls["events"].value += (last - first + 1) * done
        return done

    def counted_process(self, connection, notifications):
        with calls["caught_up"].get_lock():
            calls["caught_up"].value += len(notifications)
        return process(self, connection, notifications)

    monkeypatch.setattr(projections.Runner, "apply_in_save", counted_apply_in_save)
    monkeypatch.setattr(projections.GameProjection, "process", counted_process)
    return calls


def _rebuilt_equal(url: str) -> dict:
    """The read models as the import left them, checked against a rebuild from the events."""
    status = projections.projection_status(url)
    assert status.lag == 0 and status.events_applied == len(_event_ids(url))
    projected = dump(url)
    projections.rebuild(url, ledger=Ledger(url, env={"CREATE_TABLE": "no"}))
    assert dump(url) == projected
    return projected


def test_jobs_saves_write_their_own_rows(database_url, monkeypatch):
    """Each worker's save writes its games' rows and moves the position in its own
    transaction, in notification order whichever worker saves: no catch-up replays an
    event, and the parent writes nothing."""
    migrate(database_url)
    calls = _counting(monkeypatch)
    lines = _lines(20)
    summary = import_lines_parallel(database_url, lines, jobs=2, batch=3)
    assert (summary.imported, summary.rejected) == (20, 0)
    assert calls["caught_up"].value == 0
    assert calls["written"].value == 7  # ceil(20 / 3) saves
    assert calls["events"].value == len(_event_ids(database_url))  # every save's rows
    assert len(_rebuilt_equal(database_url)["games"]) == 20


def test_only_plain_inserts_with_typed_binds_go_in_as_arrays():
    rows = [{"a": 1, "b": None}, {"a": 2, "b": "x"}]
    plain = "INSERT INTO t (a, b) VALUES (%(a)s::INTEGER, %(b)s::NUMERIC(12, 2))"
    assert rows_at_once(plain, rows) == (
        "INSERT INTO t (a, b) SELECT * FROM unnest(%b::INTEGER[], %b::NUMERIC(12, 2)[])",
        ([1, 2], [None, "x"]),
    )
    assert rows_at_once(plain, rows[:1]) is None  # one row: as it is
    assert rows_at_once(plain + " RETURNING t.id", rows) is None
    assert rows_at_once(plain.replace("::NUMERIC(12, 2)", ""), rows) is None
    assert rows_at_once("UPDATE t SET a = %(a)s::INTEGER", rows) is None
    assert rows_at_once(plain, [(1, None), (2, "x")]) is None


def test_every_read_model_table_of_a_save_goes_in_as_arrays():
    """A save's rows of every read-model table, ``games`` (a boolean column the dialect
    binds uncast) and ``ledger_entries`` (a serial id) included, become one statement over
    arrays on PostgreSQL, not one statement a row."""
    from sqlalchemy.dialects import postgresql

    from replays.readmodels.projections import ENTRIES, GAMES, MOVES, RESULTS

    kept = Statements(postgresql.psycopg.dialect())
    for table in (GAMES, ENTRIES, MOVES, RESULTS):
        columns = [column.name for column in table.c if column.name != "id"]
        insert_rows(kept, table, [dict.fromkeys(columns) for _ in range(3)])
    assert len(kept.statements) == 4
    for statement, parameters in kept.statements:
        assert " SELECT * FROM unnest(" in statement, statement
        assert "RETURNING" not in statement
        assert all(len(column) == 3 for column in parameters)


def test_jobs_fall_back_to_the_catch_up_when_a_save_cannot_write_its_rows(
    database_url, monkeypatch
):
    """Rows that could not be worked out: the events are saved all the same, the position
    is not moved, and the worker's catch-up projects them right after."""
    migrate(database_url)
    calls = _counting(monkeypatch)

    def no_rows(self, saver, games):
        original_init(self, saver, games)
        self.statements = None

    original_init = projections._SaveRows.__init__
    monkeypatch.setattr(projections._SaveRows, "__init__", no_rows)
    summary = import_lines_parallel(database_url, _lines(12), jobs=2, batch=3)
    assert (summary.imported, summary.rejected) == (12, 0)
    assert calls["written"].value == 0
    assert calls["caught_up"].value == len(_event_ids(database_url))
    assert len(_rebuilt_equal(database_url)["games"]) == 12


def test_a_workers_save_leaves_the_write_gate_whether_stored_or_refused(sqlite_url):
    """The gate is entered as the insert starts and left after the commit or the rollback:
    a refused save must not keep the other writers waiting."""
    import multiprocessing

    from replays.records import parallel
    from replays.records.codec import parse_record
    from replays.records.importer import build_game

    migrate(sqlite_url)
    gate = parallel.WriteGate(multiprocessing.get_context("fork"))
    entered = []
    enter = gate.enter
    gate.enter = lambda: (entered.append(1), enter())
    ledger = Ledger(sqlite_url, env={"CREATE_TABLE": "no"})
    parallel._gated(ledger, gate)
    record = parse_record(_lines(1)[0])
    ledger.save(build_game(record))
    assert entered and not gate._held
    assert gate._lock.acquire(block=False)
    gate._lock.release()
    with pytest.raises(Exception):  # noqa: B017 - the library's IntegrityError
        ledger.save(build_game(record))  # the same game again: refused
    assert len(entered) == 2 and not gate._held
    assert gate._lock.acquire(block=False)
