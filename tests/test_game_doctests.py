"""The examples in the game, settlement and store modules' docstrings still hold."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "domain.rummy13.analysis",
    "domain.errors",
    "domain.game_ids",
    "domain.money",
    "domain.records",
    "domain.simulation.floor",
    "domain.snapshots",
    "replays.simulation.variants",
    "domain.rummy13.game",
    "domain.rummy13.moves",
    "domain.rummy13.raise_schedule",
    "domain.rummy13.settlement",
    "domain.rummy13.table",
    "domain.timestamps",
    "replays.store.application",
    "replays.store.transcodings",
    "web.period_chart",
    "replays.access.access_log",
    "replays.fairplay.signals",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    failures, tried = doctest.testmod(importlib.import_module(name), report=True)
    assert tried > 0, f"{name} has no examples"
    assert failures == 0
