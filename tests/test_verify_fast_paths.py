"""Two shortcuts of ``verify``'s comparisons (issue 16), each held to the slower path it
spares: it may only settle a comparison that path would settle the same way, and leaves
everything else to it.

- A stored snapshot written byte for byte as the rebuilt game's (any moment taken) is
  equal without reading its JSON back (``snapshot_checks._written_as_rebuilt``).
- A read row whose times come back without a zone (SQLite) is equal in one comparison of
  tuples when the events' zoned UTC times, made naive, equal them
  (``read_model_checks._rows_equal``).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import orjson
import pytest
import sqlalchemy as sa

from replays.integrity import snapshot_checks
from replays.integrity.report import Report
from replays.integrity.snapshot_checks import _TAKEN_AT, _written_as_rebuilt, snapshot_mismatch
from replays.readmodels.read_model_checks import _compare_row, _compare_table, _row_event
from replays.store.application import Ledger, project_game
from replays.store.db import engine_for


# -- snapshots -------------------------------------------------------------------------------
@pytest.fixture
def snapshot_and_game(database_url):
    """A stored snapshot of a simulated game, the game rebuilt from its events up to the
    snapshot's version, and the ledger that decodes them."""
    from replays.simulation import Floor, Simulation, store_games
    from replays.store.schema import migrate

    migrate(database_url)
    records = list(Simulation(Floor(seed=11, tables=3, players=12)).games(6))
    store_games(records, url=database_url, warn=lambda message: None)
    ledger = Ledger(database_url, env={"CREATE_TABLE": "no"})
    with engine_for(database_url).connect() as connection:
        found = connection.execute(
            sa.text("SELECT originator_id FROM ledger_snapshots ORDER BY originator_id")
        ).first()
        assert found is not None, "no simulated game has a snapshot"
        stored = snapshot_checks.snapshots_of(
            connection, [snapshot_checks.raw_id(found[0])]
        ).popitem()[1][0]
    game = None
    for event in ledger.events.get(stored.originator_id, lte=stored.originator_version):
        game = project_game(game, [event])
    assert game.version == stored.originator_version
    return stored, game, ledger


def _with_state(stored, state: bytes):
    return type(stored)(stored.originator_id, stored.originator_version, stored.topic, state)


def _slow_verdict(ledger, stored, game) -> bool:
    """What ``_same_bytes`` said before the shortcut: the stored JSON read and written again."""
    data = orjson.loads(stored.state)
    expected = type(ledger.mapper.to_domain_event(stored)).take(game)
    return orjson.dumps(data["state"]) == ledger.mapper.transcoder.encode(expected.state) and (
        data["topic"] == expected.topic
    )


def test_a_snapshot_as_the_ledger_wrote_it_is_settled_by_its_bytes(snapshot_and_game):
    stored, game, ledger = snapshot_and_game
    assert stored.state.startswith(_TAKEN_AT)
    expected = type(ledger.mapper.to_domain_event(stored)).take(game)
    state = ledger.mapper.transcoder.encode(expected.state)
    assert _written_as_rebuilt(stored.state, expected.topic, state)
    assert _slow_verdict(ledger, stored, game)
    assert snapshot_mismatch(ledger, stored, game) is None
    # Another topic, or one byte of the state changed: not settled here.
    assert not _written_as_rebuilt(stored.state, expected.topic + "X", state)
    assert not _written_as_rebuilt(stored.state, expected.topic, state.replace(b'"', b"'", 1))


def _variants(stored_bytes: bytes) -> list[bytes]:
    """Stored snapshots that differ from the ledger's own in ways the shortcut must
    refuse or get right: a moment text with a quote or backslash, other key orders,
    whitespace, a changed card, a trailing byte, a state that is not the last key."""
    data = orjson.loads(stored_bytes)
    moment = data["timestamp"]["_data_"]
    text = stored_bytes.decode()
    return [
        stored_bytes.replace(moment.encode(), moment.encode() + b'\\"', 1),
        stored_bytes.replace(moment.encode(), b'x"},"state":{},"y":{"z":"', 1),
        orjson.dumps(
            {"topic": data["topic"], "timestamp": data["timestamp"], "state": data["state"]}
        ),
        orjson.dumps({**data, "extra": 1}),
        orjson.dumps(data, option=orjson.OPT_INDENT_2),
        text.replace('"_phase":', '"_phase" :', 1).encode(),
        stored_bytes + b" ",
        stored_bytes[:-1],
        orjson.dumps({**data, "state": {**data["state"], "_phase": "forged"}}),
        stored_bytes,
    ]


def test_the_snapshot_shortcut_settles_nothing_the_full_reading_would_not(snapshot_and_game):
    stored, game, ledger = snapshot_and_game
    expected = type(ledger.mapper.to_domain_event(stored)).take(game)
    state = ledger.mapper.transcoder.encode(expected.state)
    settled = []
    for forged in _variants(stored.state):
        if _written_as_rebuilt(forged, expected.topic, state):
            settled.append(forged)
            assert _slow_verdict(ledger, _with_state(stored, forged), game)
    assert settled == [stored.state]  # only the ledger's own form takes the shortcut
    # A forged state is still found, whichever path decides it.
    forged = _variants(stored.state)[-2]
    assert snapshot_mismatch(ledger, _with_state(stored, forged), game) is not None
    # A moment with a quote in it is not taken for a moment.
    quoted = _TAKEN_AT + b'2026"},"topic":"a' + stored.state[len(_TAKEN_AT) :]
    assert not _written_as_rebuilt(quoted, expected.topic, state)


def test_one_byte_changed_anywhere_in_the_state_is_found(snapshot_and_game):
    """Each part of the stored state (every top-level key) with one byte of its value
    changed: a finding, whether the change still reads as JSON or not."""
    stored, game, ledger = snapshot_and_game
    state = orjson.loads(stored.state)["state"]
    assert len(state) > 20
    start = stored.state.index(b'"state":')
    for key in state:
        name = orjson.dumps(key) + b":"
        at = stored.state.index(name, start) + len(name)
        value = orjson.dumps(state[key])
        at += len(value) // 2
        for byte in {b"0", b"Z", b"}"} - {stored.state[at : at + 1]}:
            forged = stored.state[:at] + byte + stored.state[at + 1 :]
            assert snapshot_mismatch(ledger, _with_state(stored, forged), game), (key, byte)


def test_the_ledger_transcoder_writes_a_game_state_as_the_library_does(snapshot_and_game):
    """The card envelopes found by id() (``OrjsonTranscoder``): the same bytes as the
    library's own JSON transcoder with the same transcodings."""
    from eventsourcing.persistence import JSONTranscoder

    from replays.store.transcodings import ledger_transcoder, register_ledger_transcodings

    stored, game, ledger = snapshot_and_game
    expected = type(ledger.mapper.to_domain_event(stored)).take(game)
    library = JSONTranscoder()
    register_ledger_transcodings(library)
    assert ledger_transcoder().encode(expected.state) == library.encode(expected.state)


# -- read rows -------------------------------------------------------------------------------
AT = datetime(2025, 3, 2, 20, 45, 59, tzinfo=UTC)


def _row(**changes):
    row = {
        "game_id": "g1",
        "move_index": 3,
        "player": "p2",
        "point_value": Decimal("0.50"),
        "at": AT,
        "id": 77,
    }
    return {**row, **changes}


def _found(stored: dict, computed: dict) -> list[str]:
    report = Report()
    _compare_row(report, "g1", "moves[3]", stored, computed, 4)
    return [p.message for p in report.problems]


def test_a_naive_stored_time_equals_the_events_utc_time():
    naive = AT.replace(tzinfo=None)
    assert _found(_row(at=naive), _row()) == []
    # The same moment written in another zone by the events is still the same moment.
    east = AT.astimezone(timezone(timedelta(hours=5, minutes=30)))
    assert _found(_row(at=naive), _row(at=east)) == []


def test_a_row_that_differs_is_still_found_column_by_column():
    naive = AT.replace(tzinfo=None)
    assert _found(_row(at=naive + timedelta(seconds=1)), _row()) == [
        "moves[3].at: stored 2025-03-02T20:46:00, from events 2025-03-02T20:45:59+00:00"
    ]
    # A zone's hours are not dropped: 20:45:59 at +05:30 is 15:15:59 UTC.
    east = datetime(2025, 3, 2, 20, 45, 59, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    assert len(_found(_row(at=naive), _row(at=east))) == 1
    assert _found(_row(at=naive, player="p3"), _row()) == [
        "moves[3].player: stored p3, from events p2"
    ]
    # Equal in value but of another type: the column-by-column reading decides.
    assert _found(_row(at=naive, point_value=0.5), _row()) == []
    assert _found(_row(at=naive, point_value="0.51"), _row()) == [
        "moves[3].point_value: stored 0.51, from events 0.50"
    ]


def test_a_table_names_only_the_rows_that_differ_with_their_events():
    naive = AT.replace(tzinfo=None)
    computed = {3: _row(version=4), 4: _row(move_index=4, version=5), 5: _row(version=6)}
    stored = {
        3: _row(at=naive, version=4),
        4: _row(move_index=4, at=naive + timedelta(minutes=1), version=5),
        6: _row(move_index=6, at=naive, version=7),
    }
    report = Report()
    _compare_table(report, "g1", "moves", stored, computed, str, _row_event)
    assert [(p.message, p.event) for p in report.problems] == [
        ("moves[4].at: stored 2025-03-02T20:46:59, from events 2025-03-02T20:45:59+00:00", 5),
        ("moves[5]: missing, the events give one", 6),
        ("moves[6]: stored, but the game's events give no such row", 7),
    ]
