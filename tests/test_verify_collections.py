"""The collector during a whole-store verify (replays.store.collector): the heap alive at
its start frozen and young passes rarer inside, the process's own settings back after."""

import gc

import pytest

from replays.integrity import evidence as integrity
from replays.store import collector
from replays.store.collector import BULK_THRESHOLD, collector_paused, frozen_heap


def test_frozen_inside_and_unfrozen_after_even_on_an_error():
    assert gc.get_freeze_count() == 0
    with pytest.raises(ValueError), frozen_heap():
        assert gc.get_freeze_count() > 0
        with frozen_heap():  # nested: the outer block unfreezes
            pass
        assert gc.get_freeze_count() > 0
        raise ValueError("stop")
    assert gc.get_freeze_count() == 0


def test_a_process_that_froze_objects_keeps_them_frozen():
    gc.freeze()
    try:
        with frozen_heap():
            pass
        # Unfreezing would have left nothing frozen (the count only shrinks as frozen
        # objects die).
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_verify_runs_with_the_bulk_settings_and_puts_them_back(sqlite_url, monkeypatch):
    seen = []

    def spy(*args, **kwargs):
        seen.append((gc.get_threshold()[0], gc.get_freeze_count() > 0))
        return None

    before = gc.get_threshold()
    monkeypatch.setattr("replays.integrity.verify._resilient", spy)
    integrity.verify_store(sqlite_url)
    assert seen == [(max(before[0], BULK_THRESHOLD), True)]
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
    assert collector.frozen_heap.depth == 0


def test_no_collector_pass_inside_and_the_collector_back_after_even_on_an_error():
    assert gc.isenabled()
    with pytest.raises(ValueError), collector_paused():
        assert not gc.isenabled()
        with collector_paused():  # nested: the outer block turns it back on
            pass
        assert not gc.isenabled()
        raise ValueError("stop")
    assert gc.isenabled()


def test_a_process_that_turned_the_collector_off_keeps_it_off():
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_rarer_young_passes_inside_and_the_process_thresholds_back_after_even_on_an_error():
    before = gc.get_threshold()
    with pytest.raises(ValueError), collector.bulk_work():
        assert gc.get_threshold()[0] == max(before[0], BULK_THRESHOLD)
        with collector.bulk_work():  # nested: the outer block puts them back
            pass
        assert gc.get_threshold()[0] == max(before[0], BULK_THRESHOLD)
        raise ValueError("stop")
    assert gc.get_threshold() == before
    assert collector.bulk_work.depth == 0
