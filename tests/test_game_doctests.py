"""The examples in the game, settlement and store modules' docstrings still hold."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "domain.analysis",
    "domain.errors",
    "domain.game",
    "domain.moves",
    "domain.raise_schedule",
    "domain.settlement",
    "domain.table",
    "domain.timestamps",
    "replays.store.application",
    "replays.store.transcodings",
    "web.period_chart",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    failures, tried = doctest.testmod(importlib.import_module(name), report=True)
    assert tried > 0, f"{name} has no examples"
    assert failures == 0
