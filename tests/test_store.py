"""The ledger application on a real database: every test runs on SQLite and PostgreSQL."""

from __future__ import annotations

import threading

import pytest
from game_tables import config_for, pass_turn, random_legal_game, three_player_deal
from test_game_examples import raise_example

from domain.errors import CardNotHeld, GameOver
from domain.rummy13.moves import play_game
from domain.rummy13.table import TableConfig
from replays.store.application import (
    ConcurrentWrite,
    GameExists,
    GameNotFound,
    Ledger,
    MoveOutOfRange,
)

P1_DECLARES = [["AS", "2S", "3S"], ["4H", "5H", "JK"], ["9D", "9H", "9S"], ["KS", "KD", "KC", "KH"]]


@pytest.fixture
def ledger(database_url):
    app = Ledger()  # configured from RUMMY_LEDGER_DATABASE_URL, set by the fixture
    assert app.url == database_url or database_url.startswith("postgresql")
    yield app
    app.close()


def stored_versions(ledger: Ledger, game_id: str) -> list[int]:
    events = ledger.recorder.select_events(ledger.aggregate_id(game_id))
    return [event.originator_version for event in events]


def timed(config: TableConfig) -> TableConfig:
    return TableConfig.from_dict({**config.to_dict(), "started_at": "2025-03-01T18:00:00Z"})


def test_a_recorded_game_reads_back_identical(ledger):
    config, deal, moves = raise_example()
    recorded = ledger.record_game(config, deal, moves)
    loaded = ledger.get_game(config.game_id)
    assert loaded == recorded
    assert loaded.settlement == play_game(config, deal, moves, settle=True).settlement
    assert loaded.moves == moves
    assert ledger.game_exists(config.game_id) and ledger.list_game_ids() == [config.game_id]


def test_the_table_after_any_move_is_the_table_reached_by_playing_that_many_moves(ledger):
    config, deal, moves = random_legal_game(5, turns=40)
    ledger.record_game(config, deal, moves)
    for n in range(len(moves) + 1):
        expected = play_game(config, deal, moves[:n]).table_state()
        assert ledger.state_at(config.game_id, n) == expected, f"after move {n}"
    with pytest.raises(MoveOutOfRange):
        ledger.state_at(config.game_id, len(moves) + 1)


def test_the_last_moves_state_includes_the_settlement(ledger):
    config, deal, moves = raise_example()
    ledger.record_game(config, deal, moves)
    final = ledger.state_at(config.game_id, len(moves))
    assert final.phase == "settled" and final.settlement.gross == 122
    before = ledger.state_at(config.game_id, len(moves) - 1)
    assert before.phase == "playing" and before.settlement is None
    assert ledger.get_game(config.game_id, version=2).phase == "playing"  # right after the deal


def test_a_rejected_record_stores_nothing(ledger):
    config, deal, moves = raise_example()
    # Both KS are in p3's and p4's hands, so p2 cannot hold one.
    broken = [*moves[:10], {"player": "p2", "type": "discard", "card": "KS"}, *moves[11:]]
    with pytest.raises(CardNotHeld) as caught:
        ledger.record_game(config, deal, broken)
    assert caught.value.move_index == 10
    assert caught.value.where() == "move 10 (p2 discard KS)"
    assert not ledger.game_exists(config.game_id)
    assert ledger.list_game_ids() == []
    assert ledger.recorder.select_notifications(1, 100) == []


def test_recording_a_game_id_twice_is_a_conflict_and_the_first_stays(ledger):
    config, deal, moves = raise_example()
    first = ledger.record_game(config, deal, moves)
    with pytest.raises(GameExists, match=f"game {config.game_id} is already recorded"):
        ledger.record_game(config, deal, moves[:5])
    assert ledger.get_game(config.game_id) == first
    with pytest.raises(GameExists):
        ledger.start_game(config)


def test_a_game_played_move_by_move_equals_the_same_record_imported_whole(ledger):
    config, deal, moves = raise_example()
    config = timed(config)
    ledger.start_game(config)
    ledger.deal(config.game_id, deal["hands"], deal["wild"], deal["open"], deal["stock"])
    for move in moves:
        ledger.play(config.game_id, move)
    live = ledger.get_game(config.game_id)
    assert live.phase == "showing"
    settlement = ledger.settle(config.game_id)
    assert settlement.gross == 122
    whole = play_game(config, deal, moves, settle=True)
    assert ledger.get_game(config.game_id).table_state() == whole.table_state()
    # Live play snapshots every 20 events, so loading reads a snapshot and a few events.
    snapshots = ledger.snapshots.recorder.select_events(ledger.aggregate_id(config.game_id))
    assert [s.originator_version for s in snapshots] == [20, 40, 60]
    assert ledger.state_at(config.game_id, 45) == play_game(config, deal, moves[:45]).table_state()


def test_an_imported_record_is_snapshotted_once_at_its_end(ledger):
    config, deal, moves = raise_example()
    game = ledger.record_game(config, deal, moves)
    snapshots = ledger.snapshots.recorder.select_events(ledger.aggregate_id(config.game_id))
    assert [s.originator_version for s in snapshots] == [game.version]
    assert stored_versions(ledger, config.game_id) == list(range(1, game.version + 1))


def test_an_illegal_live_move_stores_nothing(ledger):
    config = config_for()
    ledger.start_game(config)
    deal = three_player_deal()
    ledger.deal(config.game_id, deal["hands"], deal["wild"], deal["open"], deal["stock"])
    ledger.play(config.game_id, {"player": "p1", "type": "pick", "from": "closed", "card": "4H"})
    with pytest.raises(CardNotHeld, match="p1 cannot discard 9C: not in hand"):
        ledger.play(config.game_id, {"player": "p1", "type": "discard", "card": "9C"})
    assert stored_versions(ledger, config.game_id) == [1, 2, 3]


def test_two_writers_on_one_game_exactly_one_wins_and_nothing_is_lost(ledger, database_url):
    config = config_for()
    ledger.start_game(config)
    deal = three_player_deal()
    ledger.deal(config.game_id, deal["hands"], deal["wild"], deal["open"], deal["stock"])
    other = Ledger(database_url)
    try:
        mine = ledger.get_game(config.game_id)
        theirs = other.get_game(config.game_id)
        mine.drop("p1")
        theirs.pick("p1", "closed", "4H")
        ledger.save(mine)
        with pytest.raises(Exception) as caught:
            other.save(theirs)
        assert type(caught.value).__name__ == "IntegrityError"
        # Through the use case the loser gets a clear conflict and the winner's move stays.
        stale = ledger.get_game(config.game_id).version - 1
        with pytest.raises(ConcurrentWrite, match="it changed since you last read it"):
            other.play(config.game_id, {"player": "p2", "type": "drop"}, expected_version=stale)
        assert ledger.get_game(config.game_id).moves == [{"player": "p1", "type": "drop"}]
    finally:
        other.close()


def test_racing_threads_append_one_move_exactly_once(ledger, database_url):
    config = config_for()
    ledger.start_game(config)
    deal = three_player_deal()
    ledger.deal(config.game_id, deal["hands"], deal["wild"], deal["open"], deal["stock"])
    version = ledger.get_game(config.game_id).version
    barrier = threading.Barrier(4)
    outcomes: list[str] = []

    def writer() -> None:
        app = Ledger(database_url)
        try:
            game = app.get_game(config.game_id)
            game.pick("p1", "closed", "4H")
            barrier.wait()
            try:
                app._save(game)
                outcomes.append("stored")
            except ConcurrentWrite:
                outcomes.append("conflict")
        finally:
            app.close()

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["conflict", "conflict", "conflict", "stored"]
    assert stored_versions(ledger, config.game_id) == list(range(1, version + 2))


def test_unknown_games_and_moves_after_the_end_are_clear_errors(ledger):
    with pytest.raises(GameNotFound, match="no game nope is recorded"):
        ledger.get_game("nope")
    with pytest.raises(GameNotFound):
        ledger.state_at("nope", 0)
    assert not ledger.game_exists("nope")
    config = config_for()
    ledger.record_game(
        config,
        three_player_deal(),
        [{"player": "p1", "type": "drop"}, {"player": "p2", "type": "drop"}],
    )
    with pytest.raises(GameOver, match="p3 cannot pick 4H: the game is over"):
        ledger.play(
            config.game_id, {"player": "p3", "type": "pick", "from": "closed", "card": "4H"}
        )


def test_reported_figures_are_kept_after_the_settlement(ledger):
    config = config_for()
    reported = {"winner": "p3", "gross": "40.00"}
    moves = [
        *pass_turn("p1", "4H"),
        {"player": "p2", "type": "drop"},
        {"player": "p3", "type": "drop"},
    ]
    ledger.record_game(config, three_player_deal(), moves, reported=reported)
    game = ledger.get_game(config.game_id)
    assert game.reported == reported and game.winner == "p1"
    assert ledger.move_count(config.game_id) == (4, 8)  # Started, Dealt, 4 moves, Settled, Reported
    assert ledger.state_at(config.game_id, 4).settlement is not None


def test_game_ids_are_listed_in_the_order_games_started(ledger):
    for name in ("g-2", "g-10", "g-1"):
        ledger.start_game(config_for(game_id=name))
    assert ledger.list_game_ids() == ["g-2", "g-10", "g-1"]
    assert list(ledger.iter_game_ids(batch=2)) == ["g-2", "g-10", "g-1"]


def test_the_core_insert_path_stores_the_same_rows(database_url, monkeypatch):
    from replays.store.recorders import LedgerApplicationRecorder

    config, deal, moves = raise_example()
    fast = Ledger(database_url)
    try:
        fast.record_game(config, deal, moves)
        expected = fast.recorder.select_events(fast.aggregate_id(config.game_id))
    finally:
        fast.close()
    monkeypatch.setattr(LedgerApplicationRecorder, "driver_inserts", False)
    other = TableConfig.from_dict({**config.to_dict(), "game_id": "core-path"})
    slow = Ledger(database_url)
    try:
        slow.record_game(other, deal, moves)
        with pytest.raises(GameExists):
            slow.record_game(other, deal, moves)
        stored = slow.recorder.select_events(slow.aggregate_id("core-path"))
        assert [(e.originator_version, e.topic) for e in stored] == [
            (e.originator_version, e.topic) for e in expected
        ]
        core = slow.get_game("core-path").settlement.to_dict()
        assert {**core, "game_id": config.game_id} == slow.get_game(
            config.game_id
        ).recorded_settlement
        ids = [n.id for n in slow.recorder.select_notifications(1, 1000)]
        assert ids == sorted(ids) and len(ids) == 2 * len(expected)
    finally:
        slow.close()
