"""The ids ``verify`` reads from stored rows (issue 16's faster verify): ``raw_id`` gives
the same 16 bytes for every form a driver returns, and the read-model replay, which now
builds a game's UUID once, still decodes every event with its own row's id, so an event
of another game slipped into a game's rows cannot replay. SQLite and PostgreSQL.
"""

from __future__ import annotations

import uuid

import pytest

from replays.integrity.store import event_rows, raw_id
from replays.readmodels.read_model_checks import Unreplayable, expected_rows, ledger_for
from replays.store.db import engine_for

AN_ID = uuid.UUID("0123456789abcdef0123456789abcdef")


@pytest.mark.parametrize(
    "stored",
    [AN_ID, AN_ID.bytes, AN_ID.hex, str(AN_ID), bytearray(AN_ID.bytes)],
    ids=["uuid", "bytes", "sqlite hex", "dashed text", "bytearray"],
)
def test_raw_id_reads_every_driver_form_as_the_same_bytes(stored):
    assert raw_id(stored) == AN_ID.bytes


def test_raw_id_refuses_32_characters_that_are_not_hex():
    with pytest.raises(ValueError):
        raw_id("z" * 32)


@pytest.fixture
def two_games(database_url):
    """Two simulated games' stored rows (each in version order) and the store's URL."""
    from replays.readmodels.projections import catch_up
    from replays.simulation import Floor, Simulation, store_games
    from replays.store.schema import migrate

    migrate(database_url)
    records = list(Simulation(Floor(seed=5, tables=2, players=8)).games(2))
    store_games(records, url=database_url, warn=lambda message: None)
    catch_up(database_url)
    by_game: dict[bytes, list] = {}
    with engine_for(database_url).connect() as connection:
        for row in event_rows(connection):
            by_game.setdefault(row.originator, []).append(row)
    games = [sorted(rows, key=lambda r: r.version) for rows in by_game.values()]
    assert len(games) == 2
    return database_url, games


def test_every_event_is_replayed_with_its_own_rows_id(two_games):
    url, (first, second) = two_games
    ledger = ledger_for(url)
    assert expected_rows(ledger, first).replayed_all
    assert expected_rows(ledger, second).replayed_all
    # The other game's event at the same version, in this game's rows: its own id must
    # reach the aggregate, which refuses it (a UUID kept from the first row would not).
    mixed = [*first[:3], second[3], *first[4:]]
    with pytest.raises(Unreplayable) as refused:
        expected_rows(ledger, mixed)
    assert refused.value.version == 4
