"""The store pass's reading of events and seals (``replays.integrity.store._stored`` and
``_seal``, ``replays.integrity.verify._StorePass.run``): the rows it makes are the named
tuples the plain constructors make, and its progress bar is told of every stored event
it reads, in batches."""

from __future__ import annotations

from uuid import UUID

import pytest
import sqlalchemy as sa

from domain.rummy13.game import Game
from replays.integrity import verify as verifying
from replays.integrity.store import SealRow, StoredRow, _seal, _stored, raw_id
from replays.store.db import engine_for

TOPIC = Game.Picked.TOPIC
RAW = bytes(range(16))


@pytest.mark.parametrize("stored_id", [RAW, RAW.hex(), UUID(bytes=RAW)])
def test_stored_rows_are_the_named_tuples(stored_id):
    row = _stored((7, stored_id, 3, TOPIC, b"{}"))
    assert type(row) is StoredRow
    assert row == StoredRow(7, RAW, 3, TOPIC, b"{}")
    assert row.defect is None and row.originator_id == UUID(bytes=RAW)


@pytest.mark.parametrize("stored_id", [RAW.hex(), RAW, UUID(bytes=RAW)])
def test_seal_rows_are_the_named_tuples(stored_id):
    seal = _seal((0, 7, stored_id, 3, "g1", b"l" * 32, b"c" * 32))
    assert type(seal) is SealRow
    assert seal == SealRow(0, 7, raw_id(stored_id), 3, "g1", b"l" * 32, b"c" * 32)
    assert seal.originator == RAW


def test_a_seal_id_that_is_not_hex_fails_as_raw_id_does():
    with pytest.raises(ValueError):
        raw_id("z" * 32)
    with pytest.raises(ValueError):
        _seal((0, 7, "z" * 32, 3, "g1", b"l" * 32, b"c" * 32))


class _Bar:
    def __init__(self) -> None:
        self.total, self.calls = 0, 0

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def update(self, count: int) -> None:
        self.total += count
        self.calls += 1


def test_the_bar_counts_every_event_read(database_url, monkeypatch):
    from replays.simulation import Floor, Simulation, store_games
    from replays.store.schema import migrate

    migrate(database_url)
    records = list(Simulation(Floor(seed=5, tables=2, players=8)).games(3))
    store_games(records, url=database_url, warn=lambda message: None)
    with engine_for(database_url).begin() as connection:
        # One sealed event deleted (its seal is passed without a row) and the rest counted.
        connection.execute(
            sa.text("DELETE FROM ledger_events WHERE id = (SELECT max(id) - 3 FROM ledger_events)")
        )
        events = connection.execute(sa.text("SELECT count(*) FROM ledger_events")).scalar_one()
    bars = []

    def progress_bar(total, desc, enabled):
        bars.append((desc, _Bar()))
        return bars[-1][1]

    monkeypatch.setattr(verifying, "progress_bar", progress_bar)
    monkeypatch.setattr(verifying, "_SHOWN_EVERY", 7)
    report = verifying.verify_store(database_url, check_read_models=False)
    assert [p.kind for p in report.problems] == ["deleted"]
    (desc, bar), *_ = bars
    assert desc == "verifying"
    assert bar.total == events == report.events
    assert bar.calls == events // 7 + 1


def _one_by_one(self, seals, rows, limit):
    """``_StorePass.usual`` taking nothing: every event through ``sealed`` as before."""
    return 0


@pytest.mark.parametrize(
    "tamper",
    ["none", "state", "node", "chain", "node_and_state", "text", "unsealed", "seal_deleted"],
)
def test_the_usual_events_taken_in_runs_give_the_same_report(
    database_url, keys, monkeypatch, tamper
):
    """The store pass takes runs of usual events at once (``_StorePass.usual``): its report
    is the one taking them one by one gives, finding for finding and in the same order,
    with checkpoints met mid-run, stored nodes read back every few nodes (a finding there
    lands between the deal check's) and the bar told every 7 events."""
    from replays.integrity.evidence import make_checkpoint
    from replays.simulation import Floor, Simulation, store_games
    from replays.store.schema import migrate

    migrate(database_url)
    records = list(Simulation(Floor(seed=11, tables=2, players=8)).games(6))
    store_games(records[:3], url=database_url, warn=lambda message: None)
    make_checkpoint(database_url)  # a checkpoint the pass meets halfway
    store_games(records[3:], url=database_url, warn=lambda message: None)
    with engine_for(database_url).begin() as connection:
        ids = [
            i for (i,) in connection.execute(sa.text("SELECT id FROM ledger_events ORDER BY id"))
        ]
        if tamper in ("state", "node_and_state"):
            event_id = ids[len(ids) // 3]
            state = connection.execute(
                sa.text("SELECT state FROM ledger_events WHERE id = :i"), {"i": event_id}
            ).scalar_one()
            connection.execute(
                sa.text("UPDATE ledger_events SET state = :s WHERE id = :i"),
                {"s": bytes(state).replace(b'"', b"'", 1), "i": event_id},
            )
        if tamper in ("node", "node_and_state"):
            connection.execute(
                sa.text('UPDATE integrity_nodes SET hash = :h WHERE level = 4 AND "index" = 1'),
                {"h": bytes(32)},
            )
        if tamper == "text":
            # A value no page of the fast path holds: its page is read row by row. On
            # PostgreSQL an insider must change the column's type first (every value is
            # text then, and every page read row by row).
            if connection.dialect.name == "postgresql":
                connection.execute(
                    sa.text(
                        "ALTER TABLE ledger_events ALTER COLUMN state TYPE text "
                        "USING encode(state, 'escape')"
                    )
                )
            else:
                connection.execute(
                    sa.text("UPDATE ledger_events SET state = CAST(state AS TEXT) WHERE id = :i"),
                    {"i": ids[len(ids) // 3]},
                )
        if tamper == "unsealed":
            connection.execute(
                sa.text(
                    "INSERT INTO ledger_events (id, originator_id, originator_version, topic, "
                    "state) SELECT -5, originator_id, originator_version + 500, topic, state "
                    "FROM ledger_events WHERE id = :i"
                ),
                {"i": ids[len(ids) // 3]},
            )
        if tamper == "seal_deleted":
            connection.execute(
                sa.text("DELETE FROM integrity_seals WHERE notification_id = :i"),
                {"i": ids[len(ids) // 2]},
            )
        if tamper == "chain":
            connection.execute(
                sa.text("UPDATE integrity_seals SET chain_hash = :h WHERE notification_id = :i"),
                {"h": bytes(32), "i": ids[len(ids) // 2]},
            )
    monkeypatch.setattr(verifying, "_SHOWN_EVERY", 7)
    monkeypatch.setattr(verifying, "_NODES_READ_AT", 2)
    bars = []

    def progress_bar(total, desc, enabled):
        bars.append(_Bar())
        return bars[-1]

    monkeypatch.setattr(verifying, "progress_bar", progress_bar)
    in_runs = verifying.verify_store(database_url, check_snapshots=False).to_dict()
    runs_bar = bars[0]
    monkeypatch.setattr(verifying._StorePass, "usual", _one_by_one)
    one_by_one = verifying.verify_store(database_url, check_snapshots=False).to_dict()
    assert in_runs == one_by_one
    assert (runs_bar.total, runs_bar.calls) == (bars[-2].total, bars[-2].calls)
    assert in_runs["ok"] is (tamper == "none")


def test_a_clean_store_takes_the_fast_path(database_url, keys, monkeypatch):
    """On a clean store every event but those ending at a checkpoint's or the tree head's
    size is taken by ``_StorePass.usual`` straight from the pages: its leaves and chains
    hashed inline are the canonical ones (were they not, each event would go through
    ``sealed``, with the same report, only slower)."""
    from replays.integrity.evidence import make_checkpoint
    from replays.simulation import Floor, Simulation, store_games
    from replays.store.schema import migrate

    migrate(database_url)
    records = list(Simulation(Floor(seed=3, tables=2, players=8)).games(4))
    store_games(records[:2], url=database_url, warn=lambda message: None)
    make_checkpoint(database_url)
    store_games(records[2:], url=database_url, warn=lambda message: None)
    general = []
    sealed = verifying._StorePass.sealed

    def counted(self, seal, row):
        general.append(seal.position)
        return sealed(self, seal, row)

    monkeypatch.setattr(verifying._StorePass, "sealed", counted)
    report = verifying.verify_store(database_url, check_snapshots=False)
    assert report.ok and report.events > 100
    assert len(general) == 2  # the event reaching the checkpoint's size, the head's last


def _page(**changes):
    row = dict(id=7, originator=RAW, version=3, topic=TOPIC, state=b"{}", game="g1", leaf=b"l" * 32)
    row.update(changes)
    event = (row["id"], row["originator"], row["version"], row["topic"], row["state"])
    seal = (0, row["id"], row["originator"], row["version"], row["game"], row["leaf"], b"c" * 32)
    return [event, event], [seal, seal]


@pytest.mark.parametrize("stored_id", [RAW, RAW.hex(), UUID(bytes=RAW)])
def test_pages_of_the_ledgers_own_values_give_their_ids(stored_id):
    from replays.integrity.store import _event_ids, _seal_ids

    events, seals = _page(originator=stored_id)
    assert list(_event_ids(events)) == list(_seal_ids(seals)) == [RAW, RAW]


@pytest.mark.parametrize(
    "changes",
    [
        {"state": "{}"},
        {"state": memoryview(b"{}")},
        {"topic": "not.a:Topic"},
        {"topic": None},
        {"version": "3"},
        {"version": True},
        {"originator": RAW[:15]},
        {"originator": "z" * 32},
        {"originator": None},
    ],
)
def test_a_page_with_an_odd_event_value_is_read_row_by_row(changes):
    from replays.integrity.store import _event_ids

    events, _ = _page(**changes)
    assert _event_ids([events[0], _page()[0][0]]) is None


@pytest.mark.parametrize(
    "changes",
    [
        {"game": b"g1"},
        {"leaf": memoryview(b"l" * 32)},
        {"leaf": "l" * 32},
        {"version": 3.5},
        {"id": "7"},
        {"originator": "z" * 32},
        {"originator": "ab" * 15 + "  "},
        {"originator": RAW + b"x"},
    ],
)
def test_a_page_with_an_odd_seal_value_is_read_row_by_row(changes):
    from replays.integrity.store import _seal_ids

    _, seals = _page(**changes)
    assert _seal_ids([seals[0], _page()[1][0]]) is None
