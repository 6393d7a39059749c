"""Red 3 deals checked against their shuffle seeds on import and in ``verify``."""

from __future__ import annotations

import json
import random
import re

import pytest

from domain.red3.bot import play, setup_table
from domain.red3.shuffle import commitment
from domain.simulation.floor import Floor
from replays.records.importer import import_lines
from replays.store.application import Ledger


@pytest.fixture
def ledger(database_url):
    return Ledger(database_url)


def simulated(index: int = 0, game_id: str = "R3-W0") -> dict:
    floor = Floor(seed=11, variants=("red3",))
    rng = random.Random(index)
    record = play(rng, floor, setup_table(floor, 1 + index, rng), game_id)
    assert record["shuffle"].get("seed"), "the simulator reveals its seed"
    return record


def stored(ledger: Ledger, game_id: str = "R3-W0") -> bool:
    from domain import variants

    return ledger.variant_of(game_id) is variants.get("red3")


def _import(ledger: Ledger, record: dict):
    return import_lines(ledger, [json.dumps(record)], follow=False)


def test_a_simulated_match_with_its_seed_imports(ledger):
    summary = _import(ledger, simulated())
    assert summary.line() == "1 imported, 0 already recorded, 0 rejected"


def test_a_deal_that_another_seed_does_not_give_is_refused_naming_round_player_and_card(
    ledger,
):
    record = simulated()
    # Same cards and moves (so the match itself plays), but a seed that did not deal them.
    record["shuffle"] = dict(record["shuffle"], seed=b"x".hex(), commitment=commitment(b"x"))
    summary = _import(ledger, record)
    assert summary.rejected == 1 and summary.imported == 0
    message = summary.failures[0].message
    assert message.startswith("R3-W0: ")
    assert "the deal does not come from its shuffle seed: round 1: " in message
    assert re.search(r"round 1: \S+'s first hand holds \w+, but the shuffle deals \w+ to", message)
    assert not stored(ledger)


def test_a_commitment_without_its_seed_is_accepted(ledger):
    record = simulated()
    del record["shuffle"]["seed"]
    assert _import(ledger, record).imported == 1


def test_a_seed_that_breaks_its_commitment_is_refused(ledger):
    record = simulated()
    record["shuffle"]["commitment"] = commitment(b"some other seed")
    summary = _import(ledger, record)
    assert summary.rejected == 1
    assert "does not match the shuffle commitment" in summary.failures[0].message
    assert "shuffle" in summary.failures[0].message
    assert not stored(ledger)
