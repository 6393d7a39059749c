"""An import projects each save from the games it has just built (``SavedGames``) instead of
reading the events back: the read models must end row for row what a projection of the
stored events gives, on SQLite and PostgreSQL, for every variant; rows and position commit
together, and whenever the shortcut cannot be taken (another writer's events first, a
crash before its commit, a game that fails to project) the ordinary catch-up finishes."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa
from pg_support import postgres_schema_url

from domain.simulation.floor import Floor
from replays.integrity.verify import verify_store
from replays.readmodels import projections
from replays.readmodels.projection_runner import POSITIONS, ProjectionCrash
from replays.readmodels.projections import GAMES
from replays.records.codec import parse_record
from replays.records.importer import Importer, import_lines
from replays.simulation.batch import Simulation
from replays.store.application import Ledger
from replays.store.db import engine_for
from replays.store.schema import EVENTS_TABLE, migrate
from tests.test_projections import dump, head

EVERY_VARIANT = ("points", "raise", "red3", "pool", "deals")


def _lines(variants: tuple[str, ...], count: int, seed: int = 31) -> list[str]:
    lines = []
    for name in variants:
        simulation = Simulation(Floor(seed=seed, variants=(name,)), discrepancy_rate=0.3)
        lines += [json.dumps(record) for record in simulation.games(count)]
    return lines


@pytest.fixture
def ledger(database_url):
    migrate(database_url)
    return Ledger(database_url, env={"CREATE_TABLE": "no"})


def _forbid_catch_up_projection(monkeypatch) -> list[int]:
    """Count the notifications the ordinary catch-up projects (the shortcut never calls
    ``process``)."""
    seen: list[int] = []
    original = projections.GameProjection.process

    def counting(self, connection, notifications):
        seen.extend(n.id for n in notifications)
        return original(self, connection, notifications)

    monkeypatch.setattr(projections.GameProjection, "process", counting)
    return seen


def test_an_import_projects_every_variant_like_the_stored_events(ledger, database_url, monkeypatch):
    lines = _lines(EVERY_VARIANT, 4)
    by_catch_up = _forbid_catch_up_projection(monkeypatch)
    summary = import_lines(ledger, lines, batch=3)
    assert (summary.imported, summary.rejected) == (len(lines), 0)
    # Every event projected from memory: the catch-up found nothing to read back.
    assert by_catch_up == []
    assert summary.followers["projected"] == head(database_url)
    status = projections.projection_status(database_url)
    assert status.lag == 0 and status.events_applied == head(database_url)
    assert status.failures == ()

    from_memory = dump(database_url)
    assert len(from_memory["games"]) == len(lines)
    assert len(from_memory["moves"]) > len(lines)
    projections.rebuild(database_url, ledger=ledger)  # from the stored events
    assert dump(database_url) == from_memory
    report = verify_store(database_url)
    assert report.ok, report.problems


def _audit_columns(url: str) -> list[tuple]:
    with engine_for(url).connect() as connection:
        return [
            tuple(row)
            for row in connection.execute(
                sa.select(
                    GAMES.c.game_id,
                    GAMES.c.discrepancy,
                    GAMES.c.discrepancy_note,
                    GAMES.c.recomputed_hash,
                ).order_by(GAMES.c.game_id)
            )
        ]


def test_the_audit_flag_is_what_the_write_knew(ledger, database_url):
    """Misreported figures are flagged by the shortcut exactly as by a rebuild."""
    lines = _lines(("points", "raise"), 12, seed=5)
    import_lines(ledger, lines)
    from_memory = _audit_columns(database_url)
    assert len(from_memory) == 24
    assert any(flagged for _, flagged, _, _ in from_memory)  # some games were misreported
    assert not all(flagged for _, flagged, _, _ in from_memory)
    assert all(recomputed for *_, recomputed in from_memory)
    projections.rebuild(database_url, ledger=ledger)
    assert _audit_columns(database_url) == from_memory


def test_another_writer_s_events_first_are_caught_up_then_the_shortcut_resumes(
    ledger, database_url, monkeypatch
):
    lines = _lines(("points",), 6, seed=7)
    first = parse_record(lines[0])
    ledger.record_game(first.config, first.deal, first.move_dicts())  # not projected
    stored_alone = head(database_url)
    by_catch_up = _forbid_catch_up_projection(monkeypatch)
    summary = import_lines(ledger, lines[1:], batch=2)
    assert summary.imported == 5
    # The first save found the other game waiting: the catch-up took it and that save;
    # the later saves were projected from memory.
    assert stored_alone in by_catch_up
    assert max(by_catch_up) < head(database_url)
    assert projections.projection_status(database_url).lag == 0
    projected = dump(database_url)
    assert len(projected["games"]) == 6
    projections.rebuild(database_url, ledger=ledger)
    assert dump(database_url) == projected


def test_a_crash_before_the_shortcut_commits_leaves_the_catch_up_to_finish(
    ledger, database_url, monkeypatch
):
    lines = _lines(("points", "red3", "pool"), 2, seed=3)
    crashes = []

    def crash(stage, number):
        if stage == "applied":  # the rows written, the position not yet, nothing committed
            crashes.append(number)
            raise ProjectionCrash("killed before the commit")

    saver = projections.SavedGames(ledger)
    saver.runner.hook = crash
    monkeypatch.setattr(projections.SavedGames, "_catch_up", lambda self: None)  # died
    importer = Importer(ledger, batch=2, projector=saver)
    for line in lines:
        importer.add(parse_record(line))
    importer.flush()
    # The first save's shortcut died; the later saves are not right after the position,
    # so they do not take it (their events wait for the catch-up too).
    assert crashes == [0]
    assert dump(database_url)["games"] == []  # nothing half-written
    assert projections.projection_status(database_url).position == 0
    monkeypatch.undo()

    assert projections.catch_up(database_url, ledger=ledger) == head(database_url)
    projected = dump(database_url)
    assert len(projected["games"]) == len(lines)
    projections.rebuild(database_url, ledger=ledger)
    assert dump(database_url) == projected


def test_a_game_that_fails_to_project_is_set_aside_by_the_catch_up(
    ledger, database_url, monkeypatch
):
    from domain.rummy13.variant import Rummy13

    lines = _lines(("points",), 6, seed=13)
    victim = parse_record(lines[2]).game_id
    original = Rummy13.closing_rows

    def failing(self, game, domain_event):
        if game.game_id == victim:
            raise ValueError("settlement body not understood")
        return original(self, game, domain_event)

    monkeypatch.setattr(Rummy13, "closing_rows", failing)
    summary = import_lines(ledger, lines, batch=2)
    assert summary.imported == 6
    (failure,) = projections.projection_status(database_url).failures
    assert failure.game_id == victim
    games = [row[0] for row in dump(database_url)["games"]]
    assert victim not in games and len(games) == 5
    assert projections.projection_status(database_url).lag == 0

    monkeypatch.undo()
    cleared, failing = projections.retry(database_url, ledger=ledger)
    assert [f.game_id for f in cleared] == [victim] and failing == []
    projected = dump(database_url)
    projections.rebuild(database_url, ledger=ledger)
    assert dump(database_url) == projected


def _import_with(url: str, lines: list[str], *, in_save: bool, batch: int = 3) -> dict:
    migrate(url)
    ledger = Ledger(url, env={"CREATE_TABLE": "no"})
    saver = projections.SavedGames(ledger, in_save=in_save)
    importer = Importer(ledger, batch=batch, projector=saver)
    for number, line in enumerate(lines, start=1):
        importer.add(parse_record(line), number)
    importer.flush()
    assert saver.projected == head(url)  # every save projected by its own path
    status = projections.projection_status(url)
    assert (status.position, status.events_applied, status.failures) == (head(url), head(url), ())
    return dump(url)


def test_rows_written_in_the_save_equal_rows_written_after_it(
    database_url, second_url, monkeypatch
):
    """The save writing its games' rows and position in its own transaction leaves the read
    models row for row as the second transaction after the save did (every variant), and
    as a rebuild from the stored events."""
    lines = _lines(EVERY_VARIANT, 3, seed=17)
    after = _import_with(second_url, lines, in_save=False)

    def not_after(*args, **kwargs):
        raise AssertionError("a second transaction after the save")

    monkeypatch.setattr(projections.Runner, "apply_saved", not_after)
    by_catch_up = _forbid_catch_up_projection(monkeypatch)
    within = _import_with(database_url, lines, in_save=True)
    assert by_catch_up == []
    assert within == after
    assert len(within["games"]) == len(lines)
    monkeypatch.undo()
    projections.rebuild(database_url, ledger=Ledger(database_url, env={"CREATE_TABLE": "no"}))
    assert dump(database_url) == within


def test_rows_that_fail_to_write_never_cost_the_save(ledger, database_url, monkeypatch):
    """A failure writing the rows in the save rolls back to its savepoint only: the events
    are stored and sealed, the position stays, and the catch-up projects them."""
    lines = _lines(("points",), 4, seed=5)
    original = projections.run_statements
    failed = []

    def failing(connection, statements):
        original(connection, statements)  # rows written, then the failure
        failed.append(1)
        raise sa.exc.IntegrityError("INSERT", {}, Exception("duplicate key"))

    monkeypatch.setattr(projections, "run_statements", failing)
    monkeypatch.setattr(projections.SavedGames, "_catch_up", lambda self: None)  # not yet
    importer = Importer(ledger, batch=2, projector=projections.SavedGames(ledger))
    for line in lines:
        importer.add(parse_record(line))
    importer.flush()
    # The second save is not right after the position: on SQLite its rows are not tried;
    # on PostgreSQL they went in before the lock, and were taken out again.
    assert len(failed) == (2 if database_url.startswith("postgresql") else 1)
    assert dump(database_url)["games"] == []  # no row of the failed write stayed
    assert projections.projection_status(database_url).position == 0
    assert verify_store(database_url).ok  # every event stored and sealed
    monkeypatch.undo()
    assert projections.catch_up(database_url, ledger=ledger) == head(database_url)
    projected = dump(database_url)
    assert len(projected["games"]) == 4
    projections.rebuild(database_url, ledger=ledger)
    assert dump(database_url) == projected


def test_a_save_does_not_wait_for_a_runner_holding_the_position(postgres_url):
    """PostgreSQL: the save holds the store's lock, so it never waits for the position's
    row; another runner holding it leaves this save's rows to the catch-up."""
    migrate(postgres_url)
    ledger = Ledger(postgres_url, env={"CREATE_TABLE": "no"})
    saver = projections.SavedGames(ledger)
    saver.runner.ensure_position_row()
    lines = _lines(("points",), 2, seed=9)
    engine = engine_for(postgres_url)
    with engine.begin() as holder:  # another runner's batch, in progress
        holder.execute(
            sa.update(POSITIONS)
            .where(POSITIONS.c.name == projections.NAME)
            .values(events_applied=0)
        )
        caught = []
        saver._catch_up = lambda: caught.append(1)
        importer = Importer(ledger, batch=2, projector=saver)
        for line in lines:
            importer.add(parse_record(line))
        importer.flush()  # would hang here if the save waited for the row
        assert caught == [1] and saver.projected == 0
    assert projections.projection_status(postgres_url).position == 0
    assert projections.catch_up(postgres_url, ledger=ledger) == head(postgres_url)


@pytest.fixture
def other_postgres_url():
    """A second throwaway PostgreSQL store, to compare two imports' rows."""
    url, drop = postgres_schema_url()
    try:
        yield url
    finally:
        drop()


def test_rows_written_before_the_lock_are_taken_out_when_the_position_is_held(
    postgres_url, other_postgres_url, monkeypatch
):
    """PostgreSQL: a save's rows go in before its events' lock. When another runner holds
    the position, the save commits its events with none of those rows (no half-there
    games), and the catch-up then writes exactly the rows the save would have written,
    table by table."""
    lines = _lines(("points", "red3", "pool"), 2, seed=23)
    own_rows = _import_with(
        other_postgres_url, lines, in_save=True
    )  # nothing held: the saves' rows

    migrate(postgres_url)
    ledger = Ledger(postgres_url, env={"CREATE_TABLE": "no"})
    saver = projections.SavedGames(ledger)
    saver.runner.ensure_position_row()
    written_before = []
    original = projections._SaveRows.before_lock

    def noting(self, connection):
        original(self, connection)
        written_before.append(self.written_before)

    monkeypatch.setattr(projections._SaveRows, "before_lock", noting)
    monkeypatch.setattr(projections.SavedGames, "_catch_up", lambda self: None)  # not yet
    with engine_for(postgres_url).begin() as holder:  # another runner's batch, in progress
        holder.execute(
            sa.update(POSITIONS)
            .where(POSITIONS.c.name == projections.NAME)
            .values(events_applied=0)
        )
        importer = Importer(ledger, batch=2, projector=saver)
        for line in lines:
            importer.add(parse_record(line))
        importer.flush()
    assert written_before == [True, True, True]  # every save wrote its rows first
    assert saver.projected == 0
    assert dump(postgres_url) == {table: [] for table in own_rows}  # and took them out
    assert verify_store(postgres_url).ok  # every event stored and sealed all the same
    monkeypatch.undo()

    by_catch_up = _forbid_catch_up_projection(monkeypatch)
    assert projections.catch_up(postgres_url, ledger=ledger) == head(postgres_url)
    assert len(by_catch_up) == head(postgres_url)
    assert dump(postgres_url) == own_rows


def test_on_postgresql_rows_go_in_before_the_lock_and_the_position_after(database_url, monkeypatch):
    """Where in the save each part goes: on PostgreSQL the rows before the events (the
    events' table not yet locked by the save), the position after them; on SQLite (one
    write lock for everything) rows and position both after the events."""
    postgres = database_url.startswith("postgresql")
    migrate(database_url)
    ledger = Ledger(database_url, env={"CREATE_TABLE": "no"})
    seen: list[tuple] = []

    def events_and_lock(connection) -> tuple[int, bool]:
        stored = connection.exec_driver_sql(f"SELECT count(*) FROM {EVENTS_TABLE}").scalar()
        locked = (
            postgres
            and connection.exec_driver_sql(
                "SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() "
                f"AND relation = '{EVENTS_TABLE}'::regclass AND mode = 'ExclusiveLock'"
            ).scalar()
        )
        return stored, bool(locked)

    original_rows, original_advance = projections.run_statements, projections.Runner._advance

    def rows(connection, statements):
        if statements:
            seen.append(("rows", *events_and_lock(connection)))
        return original_rows(connection, statements)

    def advance(self, connection, first, last, apply, **kwargs):
        seen.append(("position", *events_and_lock(connection)))
        return original_advance(self, connection, first, last, apply, **kwargs)

    monkeypatch.setattr(projections, "run_statements", rows)
    monkeypatch.setattr(projections.Runner, "_advance", advance)
    import_lines(ledger, _lines(("points",), 2, seed=4), batch=2)
    events = head(database_url)
    if postgres:
        assert seen == [("rows", 0, False), ("position", events, True)]
    else:
        assert seen == [("position", events, False), ("rows", events, False)]
    assert projections.projection_status(database_url).position == events


def test_on_postgresql_a_save_s_rows_go_in_as_arrays(postgres_url, monkeypatch):
    """The save's inserts of many rows are one statement over arrays each, and leave the
    rows a rebuild writes row by row (money, times, JSON, NULLs included)."""
    ran: list[str] = []
    original = projections.run_statements

    def recorded(connection, statements):
        ran.extend(statement for statement, _ in statements)
        return original(connection, statements)

    monkeypatch.setattr(projections, "run_statements", recorded)
    projected = _import_with(postgres_url, _lines(("points", "pool"), 4, seed=2), in_save=True)
    at_once = {s.split(" (")[0] for s in ran if "unnest(" in s}
    assert {"INSERT INTO moves", "INSERT INTO player_results"} <= at_once
    projections.rebuild(postgres_url, ledger=Ledger(postgres_url, env={"CREATE_TABLE": "no"}))
    assert dump(postgres_url) == projected
