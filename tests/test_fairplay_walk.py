"""The walk's facts against those it gave before it was made cheaper.

``tests/data/fairplay_walk_facts.json.gz`` holds 40 simulated games (every 13-card variant,
each kind of cheat at strength 1.0: seed 32, 24 players, 4 tables) and each one's facts as
``replays.fairplay.facts.game_facts`` gave them before its cost was cut (commit f9ccf32). Every fact must come out the same: the signals count them,
and a cheaper walk must not move a single kept row."""

from __future__ import annotations

import gzip
import json
from dataclasses import asdict
from pathlib import Path

import pytest

from replays.fairplay.facts import game_facts

FIXTURE = Path(__file__).parent / "data" / "fairplay_walk_facts.json.gz"


def _games() -> list[dict]:
    with gzip.open(FIXTURE, "rt", encoding="utf-8") as kept:
        return json.load(kept)


GAMES = _games()


def test_the_fixture_holds_every_kind_of_fact():
    kinds = {"choices", "feeds", "exits", "intervals", "deals", "discards"}
    held = {kind for game in GAMES if game["facts"] for kind in kinds if game["facts"][kind]}
    assert held == kinds
    exits = {e["kind"] for game in GAMES if game["facts"] for e in game["facts"]["exits"]}
    assert exits == {"drop", "wrong_show"}
    assert {game["record"]["variant"] for game in GAMES} == {"points", "raise", "pool", "deals"}


@pytest.mark.parametrize("game", GAMES, ids=[g["record"]["game_id"] for g in GAMES])
def test_the_walk_gives_the_facts_it_gave(game):
    facts = game_facts(game["record"])
    # Through JSON as the fixture went (tuples become lists), then compared fact by fact.
    walked = None if facts is None else json.loads(json.dumps(asdict(facts)))
    assert walked == game["facts"]
