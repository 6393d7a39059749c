"""The cyclic garbage collector during bulk work (imports, projection catch-ups, rebuilds).

An import allocates millions of small containers (event dicts, card lists, rows) that die
young and form no cycles; with the default threshold (a young-generation pass every 700
net allocations) the collector scanned them over and over and took about 15-20 % of an
import's CPU time (docs/benchmarks.md, issue 16). Inside :func:`bulk_work` a pass comes
every 50,000 allocations instead: the same collector, run less often, so memory stays
bounded (at most that many uncollected young objects; bench/memory.py measures the peak).
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
