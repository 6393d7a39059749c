"""The light fold of a 13-card game (domain/rummy13/fold.py) gives the aggregate's rows.

The projection folds 13-card events into a small state instead of applying them to the
game aggregate (issue 16). Its rows must be exactly the aggregate path's: compared event
by event on simulated games (points and raise, drops, misses, auto-drops, declarations,
wrong shows, shows, reshuffles, reported figures), then as whole read models on both
engines (a rebuild, a catch-up in small batches that splits games, a catch-up that keeps
no game in memory, the importer's own projection of its saves).
"""

from __future__ import annotations

import copy
from collections import Counter
from functools import cache

import pytest

from domain import variants
from domain.rummy13 import fold as fold13
from domain.rummy13 import moves as moves13
from domain.rummy13.game import Game
from replays.readmodels import projections
from replays.readmodels.projection_runner import Runner
from replays.store.application import Ledger
from replays.store.db import engine_for
from replays.store.schema import migrate
from tests.test_projections import dump, head, sample_records, simulated_records, store


@cache
def simulated(count: int = 90, seed: int = 23):
    return tuple(simulated_records(count, seed=seed, discrepancy_rate=0.3))


def played(record) -> tuple[Game, list]:
    """The record's game, played and settled in memory (reported figures kept), and every
    event it gave, in order."""
    game = for_game_record(record)
    return game, list(game.collect_events())


def for_game_record(record) -> Game:
    game = moves13.play_game(record.config, record.deal, record.move_dicts(), settle=True)
    if record.reported is not None and game.phase == "settled":
        game.report(record.reported.to_dict())
    return game


def kinds(events) -> Counter:
    """What the events show: each event type, wrong shows and auto-drops apart."""
    found = Counter(type(event).__name__ for event in events)
    found["wrong show"] = sum(1 for e in events if type(e).__name__ == "Declared" and not e.valid)
    found["auto drop"] = sum(1 for e in events if type(e).__name__ == "Missed" and e.auto_drop)
    return found


def records_under_test():
    return list(sample_records()) + list(simulated())


def wrong_shows() -> list[tuple[str, list]]:
    """Games cut short by a wrong show at the first pick of each simulated game: at a
    table of two the other player is left standing and wins, at a larger table play goes
    on without the player (the game then stops there, unsettled)."""
    games, ends = [], set()
    for record in simulated()[:30]:
        moves = record.move_dicts()
        first = next(i for i, move in enumerate(moves) if move["type"] == "pick")
        game = moves13.play_game(record.config, record.deal, moves[: first + 1], settle=False)
        player = moves[first]["player"]
        hand = [str(card) for card in game.hand(player)]
        game.declare(player, hand[0], [hand[1:]])
        games.append((record.config.variant, list(game.collect_events())))
        ends.add(game.phase)
        assert game.winner != player
    assert ends == {"playing", "settled"}, ends  # both kinds are among them
    return games


# -- event by event --------------------------------------------------------------------------


def test_every_event_gives_the_aggregates_rows():
    seen: Counter = Counter()
    variants_seen = set()
    games = [(r.config.variant, played(r)[1]) for r in records_under_test()] + wrong_shows()
    for name, events in games:
        variant = variants.get(name)  # points or raise
        variants_seen.add(variant.name)
        seen += kinds(events)
        game, state = None, None
        for event in events:
            assert variant.move_row(state, event) == variant.move_row(game, event)
            # verify's own (its values, the aggregate's fields read behind its properties)
            fields = variant.move_fields(game, event, str)
            assert fields == variant.move_fields(state, event, str)
            assert fields is None or type(fields[1]) is int  # move_count
            game = event.mutate(game)
            state = fold13.apply(state, event)
            assert state.version == game.version
            assert variant.progress_row(state) == variant.progress_row(game)
            assert variant.started_row(state) == variant.started_row(game)
            assert variant.is_over(state) == variant.is_over(game)
            assert variant.audits_after(state, event) == variant.audits_after(game, event)
            assert variant.closing_rows(state, event) == variant.closing_rows(game, event)
        if game.phase != "settled":
            continue  # no audit before the end
        assert variant.written_audit_columns(state, events) == variant.written_audit_columns(
            game, events
        )
        assert variant.audit_columns(state, events) == variant.audit_columns(game, events)
        assert variant.audit_columns(state, events, verify=False) == variant.audit_columns(
            game, events, verify=False
        )
    # Every kind of end and move is among them (the comparison could not pass vacuously).
    for kind in ("Dropped", "Missed", "Declared", "Shown", "Reshuffled", "Settled"):
        assert seen[kind], (kind, seen)
    assert seen["Reported"] and seen["auto drop"] and seen["wrong show"], seen
    assert variants_seen == {"points", "raise"}


# -- whole read models, both engines ----------------------------------------------------------


@pytest.fixture
def ledger(database_url):
    migrate(database_url)
    return Ledger(database_url, env={"CREATE_TABLE": "no"})


def by_aggregate(url: str, ledger: Ledger) -> dict:
    """The read models as the aggregate path writes them (the reference)."""
    projections.runner(url, ledger=ledger, light=False).rebuild()
    return dump(url)


def test_rebuild_and_catch_ups_equal_the_aggregate_path(ledger, database_url):
    records = list(sample_records()) + list(simulated()[:45])
    store(ledger, records[:20])
    # Catch-ups in batches of 7 events, with the store growing between them: games split
    # across batches, some cached from the batch before.
    light = projections.runner(database_url, ledger=ledger, batch_size=7)
    light.catch_up()
    store(ledger, records[20:])
    light.catch_up()
    caught_up = dump(database_url)
    assert len(caught_up["games"]) == len(records)

    expected = by_aggregate(database_url, ledger)
    assert caught_up == expected

    projections.rebuild(database_url, ledger=ledger)  # light, batches of 1000
    assert dump(database_url) == expected

    # No game kept in memory: each event's game folded again from the store.
    forgetful = projections.GameProjection(ledger, cache_size=0)
    Runner(engine_for(database_url), forgetful, batch_size=5).rebuild()
    assert dump(database_url) == expected


def test_the_audit_columns_recomputed_equal_the_aggregate_path(ledger, database_url):
    store(ledger, list(simulated()[:20]))
    projections.runner(database_url, ledger=ledger, light=False, recompute=True).rebuild()
    expected = dump(database_url)
    projections.runner(database_url, ledger=ledger, recompute=True).rebuild()
    assert dump(database_url) == expected
    projections.runner(database_url, ledger=ledger, light=False, verify=False).rebuild()
    expected = dump(database_url)
    projections.runner(database_url, ledger=ledger, verify=False).rebuild()
    assert dump(database_url) == expected


def test_an_imports_own_projection_equals_the_aggregate_path(ledger, database_url):
    import json

    from replays.records.importer import import_lines

    lines = [json.dumps(record.to_dict()) for record in simulated()[45:85]]
    summary = import_lines(ledger, lines, batch=6)
    assert (summary.imported, summary.rejected) == (len(lines), 0)
    assert summary.followers["projected"] == head(database_url)  # from memory, not read back
    assert any(json.loads(line).get("reported") for line in lines)
    from_memory = dump(database_url)
    assert from_memory == by_aggregate(database_url, ledger)


# -- events that cannot follow -----------------------------------------------------------------


def _changed(event, **fields):
    changed = copy.copy(event)
    for name, value in fields.items():
        object.__setattr__(changed, name, value)
    return changed


def test_an_event_that_cannot_follow_is_refused():
    _, events = played(sample_records()[0])
    state = fold13.replay(events[:4])
    fourth = events[4]
    assert type(fourth).__name__ in ("Picked", "Discarded", "Dropped")
    refused = {
        "a version skipped": _changed(fourth, originator_version=fourth.originator_version + 1),
        "another game's": _changed(fourth, originator_id=fold13.GameFold.__name__),
        "a player not seated": _changed(fourth, player="nobody"),
        "a second start": events[0],
    }
    if hasattr(fourth, "card"):
        refused["a card that is none"] = _changed(fourth, card="1X")
    for why, event in refused.items():
        with pytest.raises(fold13.FoldError):
            fold13.apply(copy.copy(state), event)
            pytest.fail(why)
    with pytest.raises(fold13.FoldError, match="cannot start a game"):
        fold13.apply(None, events[1])
    assert fold13.apply(state, fourth).version == fourth.originator_version  # the real one


def test_a_game_the_fold_refuses_is_set_aside_and_the_rest_project(
    ledger, database_url, monkeypatch
):
    from tests.test_projection_failures import failures, game_ids, rows_of

    records = sample_records()
    victim = records[1].config.game_id
    store(ledger, records)
    real = fold13.apply

    def refusing(state, event):
        if state is not None and state.game_id == victim and event.originator_version == 9:
            raise fold13.FoldError("Discarded: '1X' is not a card")
        return real(state, event)

    monkeypatch.setattr(fold13, "apply", refusing)
    projections.runner(database_url, ledger=ledger, batch_size=5).catch_up()
    assert game_ids(database_url) == {r.config.game_id for r in records} - {victim}
    assert rows_of(database_url, victim) == 0
    (failure,) = projections.projection_status(database_url).failures
    assert failure.game_id == victim and failure.event_version == 9
    assert "is not a card" in failure.error
    assert len(failures(database_url)) == 1


def test_the_modules_example_runs():
    import doctest

    failed, tried = doctest.testmod(fold13)
    assert tried and not failed
