"""The cyclic garbage collector during bulk work (imports, projection catch-ups, rebuilds).

An import allocates millions of small containers (event dicts, card lists, rows) that die
young and form no cycles; with the default threshold (a young-generation pass every 700
net allocations) the collector scanned them over and over and took about 15-20 % of an
import's CPU time (docs/benchmarks.md, issue 16). Inside :func:`bulk_work` a pass comes
every 50,000 allocations instead: the same collector, run less often, so memory stays
bounded (at most that many uncollected young objects; bench/memory.py measures the peak).

A whole-store ``verify`` is bulk work too, and it keeps a batch of games' events, rows and
aggregates alive while it compares them: they outlive the young generation, and each older
pass walked them and everything imported (the solver's tables, the event library,
SQLAlchemy). Inside :func:`frozen_heap` what was alive at its start is left out of those
passes (``gc.freeze``): with :func:`bulk_work`, a tenth of verify's CPU time at 1,000 games.

A fair-play period worked out for the page is a few hundred thousand rows and sums, all
alive until its review is made and then freed at once, with no cycle among them: every pass
only walked them again (a tenth of a custom period's first look). Inside
:func:`collector_paused` the collector makes no pass at all.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

BULK_THRESHOLD = 50_000
_lock = threading.Lock()
_depth = 0
_saved: tuple[int, int, int] | None = None


@contextmanager
def bulk_work() -> Iterator[None]:
    """Raise the young generation's threshold for the block (nested blocks share it; the
    outermost restores the process's own thresholds)."""
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = gc.get_threshold()
            first, *rest = _saved
            gc.set_threshold(max(first, BULK_THRESHOLD), *rest)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved is not None:
                gc.set_threshold(*_saved)


_frozen_depth = 0
_froze = False


@contextmanager
def frozen_heap() -> Iterator[None]:
    """Leave what is alive at the block's start out of the collector's passes
    (``gc.freeze``) until the outermost block ends; a process that froze objects of its
    own keeps them as they are (nothing is frozen or unfrozen for it here)."""
    global _frozen_depth, _froze
    with _lock:
        if _frozen_depth == 0:
            _froze = gc.get_freeze_count() == 0
            if _froze:
                gc.freeze()
        _frozen_depth += 1
    try:
        yield
    finally:
        with _lock:
            _frozen_depth -= 1
            if _frozen_depth == 0 and _froze:
                gc.unfreeze()
                _froze = False


_paused_depth = 0
_was_enabled = False


@contextmanager
def collector_paused() -> Iterator[None]:
    """No collector pass in the block (nested blocks share it; the outermost turns the
    collector back on if it was on)."""
    global _paused_depth, _was_enabled
    with _lock:
        if _paused_depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _paused_depth += 1
    try:
        yield
    finally:
        with _lock:
            _paused_depth -= 1
            if _paused_depth == 0 and _was_enabled:
                gc.enable()
