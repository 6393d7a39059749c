"""A read side no event can stop silently (issue 13, part B), on SQLite and PostgreSQL.

An event the projection cannot apply is recorded with its game and event, the game is set
aside (no half-written rows), later games still project; `projections retry` clears it once
the cause is fixed; `rebuild` is all-or-nothing. Games are stored through the Ledger
directly, as a row stored before the record schema existed would be.
"""

from __future__ import annotations

import dataclasses
import json
from decimal import Decimal

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from domain.rummy13 import rows as rows13  # where the 13-card rows are built
from replays.readmodels import projections
from replays.readmodels.models import ProjectionFailure, ProjectionPosition
from replays.readmodels.projection_runner import ProjectionCrash, RebuildAbandoned
from replays.store.application import Ledger
from replays.store.db import engine_for
from replays.store.schema import migrate
from tests.test_projections import dump, head, sample_records
from web.cli import main

BAD = "BAD-0001"


@pytest.fixture
def ledger(database_url):
    migrate(database_url)
    return Ledger(database_url, env={"CREATE_TABLE": "no"})


def store(ledger: Ledger, records, **config_changes) -> None:
    for record in records:
        config = record.config
        if config_changes:
            config = dataclasses.replace(config, **config_changes)
        ledger.record_game(
            config,
            record.deal,
            record.move_dicts(),
            reported=None if record.reported is None else record.reported.to_dict(),
        )


def store_bad_game(ledger: Ledger, template, database_url: str) -> None:
    """A game with a value the read models cannot hold: a point value finer than the
    column's millionths (both engines); on PostgreSQL also a currency of 9 characters."""
    changes = {"game_id": BAD, "point_value": Decimal("1.0000001")}
    if database_url.startswith("postgresql"):
        changes["currency"] = "RUPEES-XX"
    store(ledger, [template], **changes)


def game_ids(url: str) -> set[str]:
    with engine_for(url).connect() as connection:
        return set(connection.execute(sa.text("SELECT game_id FROM games")).scalars())


def rows_of(url: str, game_id: str) -> int:
    with engine_for(url).connect() as connection:
        return sum(
            connection.execute(
                sa.text(f"SELECT count(*) FROM {table} WHERE game_id = :g"), {"g": game_id}
            ).scalar()
            for table in ("games", "moves", "player_results", "ledger_entries")
        )


def failures(url: str) -> list:
    with engine_for(url).connect() as connection:
        return connection.execute(sa.select(ProjectionFailure.__table__)).all()


def test_a_bad_event_is_set_aside_and_later_games_still_project(ledger, database_url):
    records = sample_records()
    store(ledger, records[:2])
    store_bad_game(ledger, records[0], database_url)
    store(ledger, records[2:])

    applied = projections.catch_up(database_url, ledger=ledger)

    assert applied == head(database_url)  # the position moved past the bad game
    expected = {r.config.game_id for r in records}
    assert game_ids(database_url) == expected  # every later game reached the read models
    assert rows_of(database_url, BAD) == 0
    (failure,) = projections.projection_status(database_url).failures
    assert failure.game_id == BAD
    assert failure.event_version == 1 and failure.event_type.endswith("Started")
    assert f"game {BAD} event 1" in failure.describe()
    # Nothing is left for later: a second run applies nothing and records nothing new.
    assert projections.catch_up(database_url, ledger=ledger) == 0
    assert len(failures(database_url)) == 1


def test_a_game_failing_mid_way_leaves_no_half_written_rows(ledger, database_url, monkeypatch):
    records = sample_records()
    victim = records[1].config.game_id
    store(ledger, records)
    real = projections.settlement_rows

    def broken(config, *args):
        if config.game_id == victim:
            raise ValueError("settlement body not understood")
        return real(config, *args)

    monkeypatch.setattr(rows13, "settlement_rows", broken)
    # Small batches: the victim's first events are committed before its Settled fails.
    projections.runner(database_url, ledger=ledger, batch_size=5).catch_up()

    assert game_ids(database_url) == {r.config.game_id for r in records} - {victim}
    assert rows_of(database_url, victim) == 0
    (failure,) = projections.projection_status(database_url).failures
    assert failure.game_id == victim and failure.event_type.endswith("Settled")
    assert "settlement body not understood" in failure.error

    # Still broken: retry counts an attempt and keeps the game out.
    cleared, failing = projections.retry(database_url, ledger=ledger)
    assert (cleared, [f.game_id for f in failing]) == ([], [victim])
    assert failures(database_url)[0].attempts == 2
    assert rows_of(database_url, victim) == 0

    # Fixed: retry projects the whole game and clears the failure; the tables then equal
    # a clean rebuild's.
    monkeypatch.setattr(rows13, "settlement_rows", real)
    cleared, failing = projections.retry(database_url, ledger=ledger)
    assert [f.game_id for f in cleared] == [victim] and failing == []
    assert failures(database_url) == []
    after_retry = dump(database_url)
    projections.rebuild(database_url, ledger=ledger)
    assert dump(database_url) == after_retry


def test_events_after_the_failure_are_skipped_until_retry(ledger, database_url, monkeypatch):
    records = sample_records()
    victim = records[0].config.game_id
    real = projections.settlement_rows

    def broken(config, *args):
        if config.game_id == victim:
            raise ValueError("boom")
        return real(config, *args)

    monkeypatch.setattr(rows13, "settlement_rows", broken)
    store(ledger, records[:1])
    projections.catch_up(database_url, ledger=ledger)
    store(ledger, records[1:])
    projections.catch_up(database_url, ledger=ledger)
    monkeypatch.setattr(rows13, "settlement_rows", real)
    projections.catch_up(database_url, ledger=ledger)
    assert victim not in game_ids(database_url)  # still set aside: no gap-built rows
    projections.retry(database_url, ledger=ledger)
    assert game_ids(database_url) == {r.config.game_id for r in records}


def test_a_connection_error_is_not_blamed_on_the_event(ledger, database_url, monkeypatch):
    store(ledger, sample_records()[:2])
    runner = projections.runner(database_url, ledger=ledger)

    def dropped(connection, notifications):
        raise sa.exc.OperationalError("SELECT 1", {}, Exception("server closed the connection"))

    monkeypatch.setattr(runner.projection, "process", dropped)
    with pytest.raises(sa.exc.OperationalError):
        runner.catch_up()
    assert failures(database_url) == []
    assert projections.projection_status(database_url).position == 0


# -- rebuild: all or nothing ----------------------------------------------------------------


def test_rebuild_with_a_bad_event_keeps_the_rows_and_reports_it(ledger, database_url):
    records = sample_records()
    store(ledger, records)
    projections.catch_up(database_url, ledger=ledger)
    store_bad_game(ledger, records[0], database_url)
    projections.catch_up(database_url, ledger=ledger)
    before = dump(database_url)

    out = CliRunner().invoke(main, ["projections", "rebuild", "--url", database_url])

    assert out.exit_code == 1, out.output  # completed, but a game is still set aside
    assert f"game {BAD} event 1" in out.output
    assert dump(database_url) == before
    assert [f.game_id for f in projections.projection_status(database_url).failures] == [BAD]


def test_a_rebuild_that_fails_halfway_leaves_the_old_tables(ledger, database_url):
    store(ledger, sample_records())
    projections.catch_up(database_url, ledger=ledger)
    before = dump(database_url)
    position = projections.projection_status(database_url)

    def crash(stage, batch_number):
        if stage == "applied" and batch_number == 2:
            # The old tables are still what a reader sees while the rebuild runs.
            assert dump(database_url) == before
            raise ProjectionCrash("killed mid-rebuild")

    runner = projections.runner(database_url, ledger=ledger, batch_size=10, hook=crash)
    with pytest.raises(ProjectionCrash):
        runner.rebuild()

    assert dump(database_url) == before
    after = projections.projection_status(database_url)
    assert (after.position, after.events_applied) == (position.position, position.events_applied)


def test_a_rebuild_meeting_a_new_failure_rolls_back(ledger, database_url, monkeypatch):
    records = sample_records()
    victim = records[2].config.game_id
    store(ledger, records)
    projections.catch_up(database_url, ledger=ledger)
    before = dump(database_url)
    real = projections.settlement_rows

    def broken(config, *args):
        if config.game_id == victim:
            raise ValueError("a rules change broke this game")
        return real(config, *args)

    monkeypatch.setattr(rows13, "settlement_rows", broken)
    with pytest.raises(RebuildAbandoned, match=f"game {victim} event"):
        projections.rebuild(database_url, ledger=ledger)
    assert dump(database_url) == before
    (failure,) = projections.projection_status(database_url).failures
    assert failure.during_rebuild and failure.game_id == victim
    # The live projection is not affected by a rolled-back rebuild's failure.
    assert rows_of(database_url, victim) > 0

    out = CliRunner().invoke(main, ["projections", "rebuild", "--url", database_url])
    assert out.exit_code == 1 and "the read models are unchanged" in out.output
    assert "Traceback" not in out.output

    monkeypatch.setattr(rows13, "settlement_rows", real)
    projections.rebuild(database_url, ledger=ledger)
    assert dump(database_url) == before
    assert failures(database_url) == []


def test_rebuild_keep_failed_commits_without_the_failing_game(ledger, database_url, monkeypatch):
    records = sample_records()
    victim = records[2].config.game_id
    store(ledger, records)
    projections.catch_up(database_url, ledger=ledger)
    real = projections.settlement_rows

    def broken(config, *args):
        if config.game_id == victim:
            raise ValueError("a rules change broke this game")
        return real(config, *args)

    monkeypatch.setattr(rows13, "settlement_rows", broken)
    projections.rebuild(database_url, ledger=ledger, keep_failed=True)
    assert game_ids(database_url) == {r.config.game_id for r in records} - {victim}
    assert [f.projection for f in projections.projection_status(database_url).failures] == [
        projections.NAME
    ]


# -- status on the command line -------------------------------------------------------------


def test_status_names_the_failure_and_exits_non_zero(ledger, database_url):
    records = sample_records()
    store_bad_game(ledger, records[0], database_url)
    store(ledger, records[1:3])
    cli = CliRunner()
    run = cli.invoke(main, ["projections", "run", "--url", database_url])
    assert run.exit_code == 0, run.output
    assert f"game {BAD} event 1" in run.output  # the warning on stderr

    status = cli.invoke(main, ["projections", "status", "--url", database_url])
    assert status.exit_code == 1
    assert "1 failed to project" in status.stdout and f"game {BAD} event 1" in status.stdout

    as_json = cli.invoke(main, ["projections", "status", "--json", "--url", database_url])
    assert as_json.exit_code == 1
    body = json.loads(as_json.stdout)
    assert body["lag"] == 0
    (failure,) = body["failures"]
    assert failure["game_id"] == BAD and failure["event_version"] == 1
    assert failure["attempts"] == 1 and failure["error"]

    retry = cli.invoke(main, ["projections", "retry", "--url", database_url])
    assert retry.exit_code == 1 and "0 cleared, 1 still failing" in retry.stdout


def test_status_exits_zero_when_all_is_well(ledger, database_url):
    store(ledger, sample_records()[:2])
    projections.catch_up(database_url, ledger=ledger)
    status = CliRunner().invoke(main, ["projections", "status", "--json", "--url", database_url])
    assert status.exit_code == 0, status.output
    assert json.loads(status.stdout)["failures"] == []
    with engine_for(database_url).connect() as connection:
        assert connection.execute(sa.select(ProjectionPosition.position)).scalar() == head(
            database_url
        )


def test_the_importer_warns_about_a_game_it_stored_but_could_not_project(
    ledger, database_url, monkeypatch
):
    from replays.records.importer import import_lines
    from tests.web_support import sample_records as sample_lines

    real = projections.settlement_rows
    records = sample_lines()
    victim = records[0]["game_id"]

    def broken(config, *args):
        if config.game_id == victim:
            raise ValueError("not understood")
        return real(config, *args)

    monkeypatch.setattr(rows13, "settlement_rows", broken)
    warnings: list[str] = []
    summary = import_lines(ledger, [json.dumps(r) for r in records], warn=warnings.append)
    assert summary.ok
    assert any(f"game {victim} event" in w and "not on the pages" in w for w in warnings)
    assert game_ids(database_url) == {r["game_id"] for r in records} - {victim}
