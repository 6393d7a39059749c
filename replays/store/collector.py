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
from collections.abc import Callable, Iterator
from contextlib import contextmanager

BULK_THRESHOLD = 50_000


class _Switch:
    """A process-wide setting of the collector, shared by nested blocks and threads: the
    outermost block turns it on (``turn_on`` returns how to undo what it changed, or
    ``None`` when it changed nothing) and puts the process's own setting back at its end,
    even on an error."""

    _lock = threading.Lock()  # one for every switch: they all change the one collector

    def __init__(self, turn_on: Callable[[], Callable[[], None] | None]) -> None:
        self._turn_on = turn_on
        self._undo: Callable[[], None] | None = None
        self.depth = 0

    @contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self.depth == 0:
                self._undo = self._turn_on()
            self.depth += 1
        try:
            yield
        finally:
            with self._lock:
                self.depth -= 1
                if self.depth == 0 and self._undo is not None:
                    self._undo()
                    self._undo = None


def _rarer_young_passes() -> Callable[[], None]:
    saved = gc.get_threshold()
    first, *rest = saved
    gc.set_threshold(max(first, BULK_THRESHOLD), *rest)
    return lambda: gc.set_threshold(*saved)


def _freeze() -> Callable[[], None] | None:
    if gc.get_freeze_count():
        return None  # the process froze objects of its own: leave them as they are
    gc.freeze()
    return gc.unfreeze


def _disable() -> Callable[[], None] | None:
    if not gc.isenabled():
        return None  # the process turned the collector off itself: keep it off
    gc.disable()
    return gc.enable


#: Raise the young generation's threshold for the block.
bulk_work = _Switch(_rarer_young_passes)
#: Leave what is alive at the block's start out of the collector's passes (``gc.freeze``).
frozen_heap = _Switch(_freeze)
#: No collector pass in the block.
collector_paused = _Switch(_disable)
