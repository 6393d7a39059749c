"""`rummy-ledger import --jobs N` on SQLite and PostgreSQL: worker processes share the
records, and the store ends exactly as a one-process import leaves it (every record
checked, rejects storing nothing, one sealed tree in notification order, the read models
caught up exactly once)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from domain.simulation.floor import Floor
from replays.integrity.verify import verify_store
from replays.readmodels import projections
from replays.records.parallel import import_lines_parallel, worker_of
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


def test_records_of_one_game_id_go_to_one_worker():
    line = '{"format": "rummy-ledger/game@1", "game_id": "T7-000123", "moves": []}'
    same = '{"game_id":"T7-000123","format":"x"}'
    assert worker_of(line, 3) == worker_of(same, 3) == worker_of(line.encode(), 3)
    assert worker_of("not json at all", 3) == 0
    spread = {worker_of(f'{{"game_id": "G{n}"}}', 4) for n in range(40)}
    assert spread == {0, 1, 2, 3}


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


def test_import_jobs_matches_a_one_process_import_row_for_row(tmp_path):
    lines = _lines(16)
    dumps = []
    for jobs in (1, 2):
        url = f"sqlite:///{tmp_path / f'jobs{jobs}.sqlite3'}"
        migrate(url)
        if jobs == 1:
            from replays.records.importer import import_lines

            summary = import_lines(Ledger(url, env={"CREATE_TABLE": "no"}), lines)
        else:
            summary = import_lines_parallel(url, copy.copy(lines), jobs=jobs)
        assert (summary.imported, summary.rejected) == (16, 0)
        dumps.append(dump(url))
    assert dumps[0] == dumps[1]


def test_a_worker_that_dies_stops_the_import_with_a_clear_error(sqlite_url, monkeypatch):
    from replays.records import parallel

    migrate(sqlite_url)

    def die(*args):
        raise SystemExit(3)

    monkeypatch.setattr(parallel, "read_record", die)
    with pytest.raises(parallel.WorkerFailed, match="an import worker failed: SystemExit"):
        import_lines_parallel(sqlite_url, _lines(2), jobs=2, follow=False)
