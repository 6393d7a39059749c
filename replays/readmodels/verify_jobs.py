"""``rummy-ledger verify --jobs N``: the read-model step over N processes.

The step that costs (every game replayed into its rows, its snapshots compared on the way:
:func:`replays.readmodels.read_model_checks.replay_games`) is split by ranges of aggregate
ids, a few ranges per process, so the slices stay even whatever the ids; the rest of
``verify`` (seals, chains, the tree, deals) stays one streaming pass in the main process.

Each worker reads in its own transaction, which may begin after the main pass's and so see
saves made since: it reads only the events up to the projection position the main pass
read, and every game a worker finds anything wrong with is checked again in the main
pass's own snapshot, which alone decides what is reported. The findings are therefore the
ones a single process gives; a game a worker found in order was in order in the newer view
it read (on a store nobody writes to, the same view).
"""

from __future__ import annotations

import itertools
import multiprocessing
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

import sqlalchemy as sa

from replays.integrity.report import Report
from replays.integrity.store import engine, read_snapshot
from replays.readmodels.read_model_checks import (
    SnapshotTally,
    finish_store_check,
    ledger_for,
    projection_position,
    replay_games,
)

RANGES_PER_JOB = 8
Span = tuple[bytes | None, bytes | None]


def spans(count: int) -> list[Span]:
    """``count`` (at most 256) ranges of 16-byte ids, cut at their first byte."""
    count = max(1, min(256, count))
    cuts = [bytes([256 * i // count]) + bytes(15) for i in range(1, count)]
    bounds: list[bytes | None] = [None, *cuts, None]
    return list(itertools.pairwise(bounds))


def _within(originator: bytes, span: Span) -> bool:
    low, high = span
    return (low is None or originator >= low) and (high is None or originator < high)


def check_read_models(
    connection: sa.Connection,
    url: str,
    report: Report,
    jobs: int,
    *,
    names: dict[bytes, str],
    skip: frozenset[bytes] = frozenset(),
    events: str = "ledger_events",
    bar=None,
    snapshots: SnapshotTally | None = None,
    remember_deals: bool | None = None,
) -> int:
    """:func:`replays.readmodels.read_model_checks.check_read_models` with the games
    replayed in ``jobs`` processes. ``url`` is the database's, for the workers, which
    remember each clean replay for the games' badges unless ``remember_deals`` is None
    (it says whether the main pass checked the deals)."""
    ledger = ledger_for(url)
    position = projection_position(connection)
    parts = spans(jobs * RANGES_PER_JOB)
    results: list[dict[str, Any] | None] = [None] * len(parts)
    context = multiprocessing.get_context("spawn")  # a forked child would share connections
    with ProcessPoolExecutor(jobs, mp_context=context) as pool:
        futures = {
            pool.submit(
                _replay_span,
                url,
                part,
                position,
                {o: g for o, g in names.items() if _within(o, part)},
                frozenset(o for o in skip if _within(o, part)),
                events,
                snapshots is not None,
                remember_deals,
            ): index
            for index, part in enumerate(parts)
        }
        for future in as_completed(futures):
            result = future.result()
            results[futures[future]] = result
            if bar is not None:
                bar.update(result["events"])
    checked, seen, troubled = 0, set(), []
    for result in results:
        checked += result["checked"]
        seen |= result["seen"]
        troubled += result["troubled"]
        if snapshots is not None:
            for originator, count in result["snapshots"].items():
                snapshots.done.add(originator)
                snapshots.checked += count
    if troubled:
        # Decided in the main pass's own view (see the module's docstring).
        checked_again, seen_again = replay_games(
            connection,
            ledger,
            report,
            names=names,
            skip=skip,
            position=position,
            events=events,
            snapshots=snapshots,
            only=troubled,
        )
        checked += checked_again
        seen |= seen_again
    finish_store_check(connection, ledger, report, seen, position, events)
    return checked


class _Count:
    def __init__(self) -> None:
        self.events = 0

    def update(self, count: int) -> None:
        self.events += count


def _replay_span(
    url: str,
    span: Span,
    position: int,
    names: dict[bytes, str],
    skip: frozenset[bytes],
    events: str,
    with_snapshots: bool,
    remember_deals: bool | None,
) -> dict[str, Any]:
    """One worker's range: the games it checked and found in order, and the aggregates
    it found anything wrong with (their findings are left to the main pass)."""
    from replays.integrity.replay_memos import memo_writer

    report, count, troubled, counted = Report(), _Count(), set(), set()
    tally = SnapshotTally() if with_snapshots else None
    memos = None if remember_deals is None else memo_writer(url, deals=remember_deals)
    with engine(url).connect() as connection:
        read_snapshot(connection)
        _, seen = replay_games(
            connection,
            ledger_for(url),
            report,
            names=names,
            skip=skip,
            position=position,
            events=events,
            bar=count,
            snapshots=tally,
            span=span,
            troubled=troubled,
            counted=counted,
            memos=memos,
        )
    return {
        "checked": len(counted - troubled),
        "seen": seen,
        "troubled": sorted(troubled),
        "snapshots": {
            o: n for o, n in (tally.counts.items() if tally else ()) if o not in troubled
        },
        "events": count.events,
    }
