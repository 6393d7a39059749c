"""``verify``'s replays decode and apply stored events without the library's generic
per-event work (:mod:`replays.integrity.replaying`, issue 16): every event must come out
as the library's mapper gives it (class, attributes and their order) and leave the
aggregate exactly as the library's ``mutate`` does, after every event, on every variant;
a forged event must fail the same way."""

from __future__ import annotations

import json
from copy import deepcopy
from uuid import UUID

import orjson
import pytest
from eventsourcing.domain import OriginatorIDError, OriginatorVersionError
from eventsourcing.persistence import MapperDeserialisationError, StoredEvent

from domain.simulation.floor import Floor
from replays.integrity.replaying import Replayer
from replays.records.codec import parse_record
from replays.records.importer import build_game
from replays.simulation.batch import Simulation
from replays.simulation.variants import VARIANTS
from replays.store.transcodings import LedgerMapper, ledger_transcoder

MAPPER = LedgerMapper(transcoder=ledger_transcoder())


def _stored_games(variant: str, count: int = 2) -> list[list]:
    records = Simulation(Floor(seed=5, variants=(variant,)), discrepancy_rate=0.3).games(count)
    games = []
    for record in records:
        aggregate = build_game(parse_record(json.dumps(record)))
        games.append([MAPPER.to_stored_event(e) for e in aggregate.collect_events()])
    return games


def _library(stored: list) -> list:
    """The aggregate's state after each event, as the library replays it."""
    states, aggregate = [], None
    for row in stored:
        aggregate = MAPPER.to_domain_event(row).mutate(aggregate)
        states.append(deepcopy(vars(aggregate)))
    return states


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_replays_give_the_librarys_events_and_aggregates(variant):
    replayer = Replayer(MAPPER)
    applied_here = set()
    for stored in _stored_games(variant):
        expected = _library(stored)
        aggregate = None
        for row, state in zip(stored, expected, strict=True):
            reference = MAPPER.to_domain_event(row)
            event = replayer.event(row.originator_id, row.originator_version, row.topic, row.state)
            assert type(event) is type(reference)
            assert list(vars(event).items()) == list(vars(reference).items())
            aggregate = replayer.apply(event, aggregate)
            assert vars(aggregate) == state, (variant, type(event).__name__)
            if replayer._bodies.get(type(event)) is not None:
                applied_here.add(type(event).__name__)
    # The short cut is taken (else this test would compare the library with itself).
    assert len(applied_here) >= 3, applied_here


def _failure(work):
    try:
        work()
    except Exception as error:
        return type(error), str(error)
    return None


@pytest.mark.parametrize("variant", ["points", "red3", "pool"])
def test_forged_events_fail_as_in_the_library(variant):
    stored = _stored_games(variant, 1)[0]
    replayer = Replayer(MAPPER)
    before = None
    for row in stored[:3]:
        before = MAPPER.to_domain_event(row).mutate(before)
    row = stored[3]
    state = orjson.loads(row.state)
    dropped = next(k for k in state if k != "timestamp")
    other_game = UUID(int=row.originator_id.int ^ 1)
    forgeries = {
        "undecodable": StoredEvent(row.originator_id, row.originator_version, row.topic, b"{"),
        "a field missing": StoredEvent(
            row.originator_id,
            row.originator_version,
            row.topic,
            orjson.dumps({k: v for k, v in state.items() if k != dropped}),
        ),
        "another game's": StoredEvent(other_game, row.originator_version, row.topic, row.state),
        "a version ahead": StoredEvent(
            row.originator_id, row.originator_version + 1, row.topic, row.state
        ),
    }
    kinds = set()
    for name, forged in forgeries.items():
        theirs = _failure(lambda f=forged: MAPPER.to_domain_event(f).mutate(deepcopy(before)))
        ours = _failure(
            lambda f=forged: replayer.apply(
                replayer.event(f.originator_id, f.originator_version, f.topic, f.state),
                deepcopy(before),
            )
        )
        assert theirs is not None, name
        assert ours == theirs, name
        kinds.add(theirs[0])
    assert {MapperDeserialisationError, OriginatorIDError, OriginatorVersionError} <= kinds
