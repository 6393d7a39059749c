"""`/healthz` and the staff banner when a game failed to project (issue 13, part B), on
SQLite and PostgreSQL, through Flask's test client."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from domain.rummy13 import rows as rows13  # where the 13-card rows are built
from replays.readmodels import projections
from replays.readmodels.models import ProjectionPosition
from replays.store.application import Ledger
from replays.store.db import engine_for
from replays.store.schema import migrate
from tests.auth_support import signed_in
from tests.test_projection_failures import BAD, store, store_bad_game
from tests.test_projections import sample_records
from web import create_app

BANNER = "Read models incomplete:"
NEUTRAL = "Some games are not yet available."


@pytest.fixture
def ledger(database_url):
    migrate(database_url)
    return Ledger(database_url, env={"CREATE_TABLE": "no"})


@pytest.fixture
def app(database_url):
    return create_app({"DATABASE_URL": database_url, "TESTING": True})


@pytest.fixture
def broken(ledger, database_url):
    """The sample games and one whose Started event cannot be projected, caught up."""
    records = sample_records()
    store_bad_game(ledger, records[0], database_url)
    store(ledger, records)
    projections.catch_up(database_url, ledger=ledger)
    return records


def test_healthz_is_ok_when_every_event_projected(app, ledger, database_url):
    store(ledger, sample_records()[:2])
    projections.catch_up(database_url, ledger=ledger)
    response = app.test_client().get("/healthz")
    assert response.status_code == 200
    assert response.get_json() == {"status": "ok"}


def test_healthz_names_the_failed_game_and_event(app, broken, database_url):
    response = app.test_client().get("/healthz")
    assert response.status_code == 503
    body = response.get_json()
    assert body["status"] == "degraded"
    (failure,) = body["read_models"]["failures"]
    assert failure["game_id"] == BAD and failure["event_version"] == 1
    assert failure["event_type"].endswith("Started")
    assert "error" not in failure  # the error text is for staff, not a public route


def test_healthz_is_ok_again_after_a_successful_retry(app, ledger, database_url, monkeypatch):
    records = sample_records()
    store(ledger, records)
    real = projections.settlement_rows
    victim = records[0].config.game_id

    def broken_rows(config, *args):
        if config.game_id == victim:
            raise ValueError("not understood")
        return real(config, *args)

    monkeypatch.setattr(rows13, "settlement_rows", broken_rows)
    projections.catch_up(database_url, ledger=ledger)
    assert app.test_client().get("/healthz").status_code == 503
    monkeypatch.setattr(rows13, "settlement_rows", real)
    projections.retry(database_url, ledger=ledger)
    assert app.test_client().get("/healthz").status_code == 200


def test_healthz_reports_a_stuck_projection(app, ledger, database_url):
    store(ledger, sample_records()[:2])
    projections.catch_up(database_url, ledger=ledger)
    store(ledger, sample_records()[2:3])  # waiting, and nobody projects it
    assert app.test_client().get("/healthz").status_code == 200  # just written: not stuck
    with engine_for(database_url).begin() as connection:
        connection.execute(
            sa.update(ProjectionPosition).values(
                updated_at=datetime.now(UTC) - timedelta(minutes=10)
            )
        )
    response = app.test_client().get("/healthz")
    assert response.status_code == 503
    models = response.get_json()["read_models"]
    assert models["stuck"] is True and models["lag"] > 0 and models["failures"] == []


@pytest.mark.parametrize("role", ["auditor", "dispute_officer", "admin"])
def test_staff_see_a_banner_naming_the_failure(app, broken, role):
    client = signed_in(app, role)
    for path in ("/", f"/games/{broken[1].config.game_id}"):
        html = client.get(path).get_data(as_text=True)
        assert BANNER in html, path
        assert f"game {BAD} event 1 failed to project" in html
        assert 'data-failures="1"' in html


def test_players_see_only_a_neutral_line(app, broken):
    player = broken[1].config.players[0]
    html = (
        signed_in(app, "player", player=player)
        .get("/", follow_redirects=True)
        .get_data(as_text=True)
    )
    assert BANNER not in html and BAD not in html
    assert NEUTRAL in html


def test_no_banner_when_all_is_well(app, ledger, database_url):
    store(ledger, sample_records()[:2])
    projections.catch_up(database_url, ledger=ledger)
    html = signed_in(app, "auditor").get("/").get_data(as_text=True)
    assert BANNER not in html and NEUTRAL not in html


def test_the_status_is_reused_for_a_moment_and_then_read_again(ledger, database_url, monkeypatch):
    """Every page asks for the read side's status; a process reuses it briefly (the cost
    under concurrent load), and a failure shows once that moment has passed."""
    import web.read_side as read_side_module

    app = create_app({"DATABASE_URL": database_url, "TESTING": True, "READ_SIDE_CACHE_SECONDS": 60})
    read_side_module._cache.clear()
    store(ledger, sample_records()[:2])
    projections.catch_up(database_url, ledger=ledger)
    reads = []
    real = projections.projection_status
    monkeypatch.setattr(
        projections, "projection_status", lambda *a, **k: reads.append(1) or real(*a, **k)
    )
    client = app.test_client()
    assert [client.get("/healthz").status_code for _ in range(5)] == [200] * 5
    assert len(reads) == 1

    store_bad_game(ledger, sample_records()[2], database_url)
    projections.catch_up(database_url, ledger=ledger)
    before = len(reads)
    assert client.get("/healthz").status_code == 200  # still the answer of a moment ago
    assert len(reads) == before
    clock = [read_side_module.time.monotonic() + 61]
    monkeypatch.setattr(read_side_module.time, "monotonic", lambda: clock[0])
    assert client.get("/healthz").status_code == 503
    assert len(reads) == before + 1
