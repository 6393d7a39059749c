"""The collector policy of whole-store replays (replays.integrity.replaying.fewer_collections):
fewer collections inside, and the process's own settings back afterwards."""

import gc

from replays.integrity.replaying import FEWER_COLLECTIONS, fewer_collections


def test_fewer_collections_inside_and_settings_back_after():
    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    with fewer_collections():
        assert gc.get_threshold() == FEWER_COLLECTIONS
        assert gc.get_freeze_count() > 0
        with fewer_collections():  # nested: the outer block restores
            assert gc.get_threshold() == FEWER_COLLECTIONS
        assert gc.get_threshold() == FEWER_COLLECTIONS
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_settings_back_after_an_error():
    before = gc.get_threshold()
    try:
        with fewer_collections():
            raise ValueError("stop")
    except ValueError:
        pass
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_a_process_that_froze_objects_keeps_them_frozen():
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with fewer_collections():
            pass
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
