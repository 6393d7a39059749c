"""A game is nothing but its events: replays rebuild it exactly, at every version.

These run without a database (events go through the same mapper and transcoder the store
uses); tests/test_store.py repeats the storage half on SQLite and PostgreSQL.
"""

from __future__ import annotations

import pytest
from eventsourcing.persistence import Mapper
from eventsourcing.utils import get_topic, resolve_topic
from game_tables import random_legal_game
from test_game_examples import raise_example

from domain.cards import full_deck
from domain.rummy13.game import Game
from domain.rummy13.moves import apply_move, play_game
from replays.store.application import project_game
from replays.store.transcodings import ledger_transcoder

MAPPER = Mapper(transcoder=ledger_transcoder())


def through_the_store_format(events):
    """Each event as the store would keep it (bytes) and read it back."""
    return [MAPPER.to_domain_event(MAPPER.to_stored_event(e)) for e in events]


def recorded_games():
    yield "raise example", *raise_example()
    for seed in range(12):
        yield f"random {seed}", *random_legal_game(seed, known_stock=seed % 3 != 0, turns=120)


@pytest.mark.parametrize(
    ("name", "config", "deal", "moves"),
    list(recorded_games()),
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_replaying_the_stored_events_rebuilds_an_identical_game(name, config, deal, moves):
    game = play_game(config, deal, moves, settle=True)
    events = game.collect_events()
    rebuilt = project_game(None, through_the_store_format(events))
    assert rebuilt == game
    assert rebuilt.table_state() == game.table_state()
    assert rebuilt.moves == moves
    assert rebuilt.card_counts() == full_deck(config.decks, config.jokers_per_deck)


@pytest.mark.parametrize("seed", [3, 7, 11])
def test_the_state_at_version_n_is_the_state_after_the_first_n_moves(seed):
    config, deal, moves = random_legal_game(seed, turns=60)
    events = through_the_store_format(play_game(config, deal, moves).collect_events())
    for n in range(len(moves) + 1):
        # Versions: 1 Started, 2 Dealt, then one event per move (a settlement may follow
        # the last move, so the last move's state is the latest one).
        version = n + 2 if n < len(moves) else len(events)
        replayed = project_game(None, events[:version])
        direct = play_game(config, deal, moves[:n])
        assert replayed.table_state() == direct.table_state(), f"after move {n}"


def test_a_snapshot_restores_the_same_game_and_play_continues_from_it():
    config, deal, moves = raise_example()
    game = play_game(config, deal, moves[:40])
    events = game.collect_events()
    snapshot = through_the_store_format([Game.Snapshot.take(game)])[0]
    restored = snapshot.mutate(None)
    assert restored == game
    for move in moves[40:]:
        apply_move(game, move)
        apply_move(restored, move)
    restored.settle()
    game.settle()
    assert restored.table_state() == game.table_state()
    assert len(events) == 42


def test_the_same_record_always_gives_byte_identical_events():
    config, deal, moves = raise_example()
    config = type(config).from_dict({**config.to_dict(), "started_at": "2025-03-01T18:00:00Z"})

    def stored():
        game = play_game(config, deal, moves, settle=True)
        return [MAPPER.to_stored_event(e) for e in game.collect_events()]

    first, second = stored(), stored()
    assert [(e.topic, e.state) for e in first] == [(e.topic, e.state) for e in second]
    # A move's `at` is its event's timestamp; a move without one keeps the previous time.
    timestamps = [MAPPER.to_domain_event(e).timestamp.isoformat() for e in first]
    assert timestamps[0] == "2025-03-01T18:00:00+00:00"
    assert timestamps[2] == "2025-03-01T18:04:05+00:00"  # p1's drop
    assert timestamps[3] == "2025-03-01T18:04:05+00:00"  # no `at`: unchanged
    assert timestamps[-2] == "2025-03-01T18:30:00+00:00"  # the declaration


def test_every_event_class_has_its_own_explicit_topic():
    names = [
        "Started",
        "Dealt",
        "Picked",
        "Discarded",
        "Dropped",
        "Missed",
        "Declared",
        "Shown",
        "Reshuffled",
        "Settled",
        "Reported",
        "Event",
        "Created",
        "Snapshot",
    ]
    topics = [getattr(Game, name).TOPIC for name in names]
    assert len(set(topics)) == len(topics)
    assert all(topic.startswith("rummy_ledger:Game") for topic in topics)
    for name, topic in zip(names, topics, strict=True):
        if name != "Event":
            assert resolve_topic(topic) is getattr(Game, name)
    assert get_topic(Game) == "rummy_ledger:Game"


def test_the_ledgers_mapper_writes_exactly_the_libraries_bytes():
    from replays.store.transcodings import LedgerMapper

    config, deal, moves = raise_example()
    game = play_game(config, deal, moves, settle=True)
    events = [*game.collect_events(), Game.Snapshot.take(game)]
    fast = LedgerMapper(transcoder=ledger_transcoder())
    assert [fast.to_stored_event(e) for e in events] == [MAPPER.to_stored_event(e) for e in events]
