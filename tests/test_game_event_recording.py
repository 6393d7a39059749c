"""The write path's short cuts (issue 16) against the reference path they replace.

- ``Game._record`` builds and applies a 13-card game's event itself instead of calling the
  library's ``trigger_event``: every event must be the same object (class, attributes and
  their order) and be stored as the same bytes.
- A parsed record's moves are played as they are (:func:`apply_record_move`) instead of
  being written out as move dicts and read back (:func:`apply_move`): the same events, the
  same refusals, the same record written back.

Both are compared on whole simulated games (both variants, with operators' wrong figures)
and on the sample records, and on records with one move broken.
"""

from __future__ import annotations

import json

import pytest
from fuzz_support import sample_records

from domain.errors import RuleViolation
from domain.records import RecordError
from domain.rummy13.game import Game
from domain.rummy13.moves import play_game
from domain.simulation.floor import Floor
from replays.records.codec import parse_record, read_records
from replays.records.importer import build_game
from replays.simulation.batch import Simulation
from replays.store.transcodings import LedgerMapper, ledger_transcoder


def _library_record(self, event_class, timestamp, fields):
    # What Game._trigger did before it had _record: the library's own path.
    self.trigger_event(event_class, timestamp=timestamp, **fields)


@pytest.fixture
def reference(monkeypatch):
    """Turns the library's trigger_event path on for the ``with`` block's games."""

    class Switch:
        def __enter__(self):
            monkeypatch.setattr(Game, "_record", _library_record)

        def __exit__(self, *_):
            monkeypatch.undo()

    return Switch()


def _records() -> list:
    simulated = []
    for seed, variant in ((3, "points"), (5, "raise"), (8, "points")):
        simulation = Simulation(Floor(seed=seed, variants=(variant,)), discrepancy_rate=0.3)
        simulated.extend(simulation.games(12))
    return [*simulated, *sample_records()]


RECORDS = _records()
MAPPER = LedgerMapper(transcoder=ledger_transcoder())


def _events(game: Game) -> list[tuple]:
    out = []
    for event in game.collect_events():
        stored = MAPPER.to_stored_event(event)
        out.append((type(event), list(vars(event).items()), stored.topic, stored.state))
    return out


def _outcome(build, line: str):
    """The events of a record's game (or the refusal) and the record written back."""
    try:
        game = build(parse_record(line))
    except RecordError as error:
        return ("unreadable", str(error))
    except RuleViolation as error:
        return ("refused", type(error), str(error), error.move_index, error.move)
    return ("built", _events(game), game.moves, game.settled_body, game.computed_hash)


def _by_typed(record):
    return play_game(record.config, record.deal, record.moves, settle=True)


def _by_dicts(record):
    return play_game(record.config, record.deal, record.move_dicts(), settle=True)


def _lines() -> list[str]:
    return [json.dumps(record) for record in RECORDS]


def test_the_records_build_whole_games():
    built = [_outcome(build_game, line)[0] for line in _lines()]
    assert built.count("built") >= 30


@pytest.mark.parametrize(
    "build", [build_game, _by_typed, _by_dicts], ids=["import", "typed moves", "move dicts"]
)
def test_recorded_events_are_the_librarys_byte_for_byte(build, reference):
    for line in _lines():
        fast = _outcome(build, line)
        with reference:
            slow = _outcome(build, line)
        assert fast == slow, json.loads(line)["game_id"]


def test_typed_moves_give_what_move_dicts_give(reference):
    for line in _lines():
        with reference:
            assert _outcome(_by_typed, line) == _outcome(_by_dicts, line)


def _broken(record: dict, index: int, change: dict) -> str:
    record = json.loads(json.dumps(record))
    record["moves"][index].update(change)
    return json.dumps(record)


@pytest.mark.parametrize(
    "change",
    [
        {"card": "JK"},
        {"player": "nobody"},
        {"type": "drop"},
        {"type": "miss"},
        {"at": "2025-01-01T00:00:00+05:30"},
    ],
)
def test_a_broken_move_is_refused_the_same_way(change, reference):
    refused = 0
    for record in RECORDS[:12]:
        for index in (0, 1, len(record["moves"]) // 2, len(record["moves"]) - 1):
            line = _broken(record, index, change)
            outcomes = {}
            for name, build in (("typed", _by_typed), ("dicts", _by_dicts)):
                outcomes[name] = _outcome(build, line)
                with reference:
                    outcomes[name + " library"] = _outcome(build, line)
            assert len({repr(o) for o in outcomes.values()}) == 1, (change, index)
            with reference:
                imported = _outcome(build_game, line)
            assert _outcome(build_game, line) == imported
            refused += outcomes["typed"][0] != "built"
    assert refused or "at" in change  # the other changes do break games


def test_settle_gives_the_same_outcomes_as_before(reference):
    from replays.records.settle import settle_lines

    lines = [*_lines(), _broken(RECORDS[0], 3, {"card": "ZZ"}), "{}"]
    fast = settle_lines(lines)
    with reference:
        assert settle_lines(lines) == fast
    assert len(fast) == len(list(read_records(lines)))


@pytest.mark.parametrize("index", range(len(RECORDS)))
def test_a_new_game_keeps_the_config_it_was_made_with_as_its_started_event_reads(index):
    """``Game(config)`` keeps the TableConfig it was given (its Started body and the fold
    of its Started event do not read the event's dict back): it must be the one a replay
    reads from that dict, field for field and spelling for spelling."""
    from domain.rummy13.table import TableConfig

    parsed = parse_record(json.dumps(RECORDS[index]))
    if isinstance(parsed, RecordError) or not isinstance(parsed.config, TableConfig):
        pytest.skip("not a 13-card record")
    game = Game(parsed.config)
    assert game.config is parsed.config
    started = game.collect_events()[0]
    read_back = TableConfig.from_dict(started.config)
    assert repr(game.config) == repr(read_back)
    assert game.config.to_dict() == started.config
    replayed = started.mutate(None)
    assert repr(replayed.config) == repr(game.config)
    # The projection's fold of this very event takes the same config; a copy of the dict
    # (a stored event read back) is read again, to the same values.
    from domain.rummy13 import fold
    from domain.rummy13.table import config_of_started

    assert config_of_started(started.config) is game.config
    copied = dict(started.config)
    assert config_of_started(copied) is not game.config
    assert repr(config_of_started(copied)) == repr(game.config)
    assert fold.apply(None, started).config is game.config
