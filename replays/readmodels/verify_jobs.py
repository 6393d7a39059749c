"""``rummy-ledger verify --jobs N``: the read-model step over N processes.

The step that costs (every game replayed into its rows, its snapshots compared on the way:
:func:`replays.readmodels.read_model_checks.replay_games`) is split by ranges of aggregate
ids, each holding a 2N-th of the games left (:func:`spans`): few ranges in all, narrowing
towards the last so that the ranges replayed while the other processes finish are the
shortest; the rest of ``verify`` (seals, chains, the tree) stays one streaming pass in the
main process, which runs while the workers replay (:class:`SpanReplays` is submitted before it, as soon as the pass has its
snapshot: ``replays.integrity.verify._EarlyReplays``). Once
that pass is done, the main process replays the ranges no worker has taken yet itself,
as the Nth process (there are N - 1 workers, each taking the next free range as it
finishes one, from a table of taken ranges they share with the main process), in the
pass's own view; its results go the same way as a worker's, and it takes those the workers
sent between its own ranges. The workers are forked from the main process, with the
ledger's code already imported, and send each range's result back as they finish it.

Each worker reads in one transaction of its own for all its ranges, which may begin after
the main pass's and so see saves made since: it reads only the events up to the projection
position the main pass read, and every game a worker finds anything wrong with is checked
again in the main pass's own snapshot, which alone decides what is reported. The deal checks ride the
workers' replays (:class:`replays.integrity.deal_checks.WorkerDeals`); the main pass
takes each game's verdict, and feeds a game found wanting again from its own view. The
findings are therefore the ones a single process gives; a game a worker found in order
was in order in the newer view it read (on a store nobody writes to, the same view). The games the main pass finds
wanting (their events fail their seals or deals) are dropped from the workers' results,
as one process would not have replayed them, and only the main pass stores memos.
"""

from __future__ import annotations

import contextlib
import copy
import multiprocessing
import os
import pickle
import queue
from typing import Any

import sqlalchemy as sa

from replays.integrity.report import Report
from replays.integrity.snapshot_checks import snapshotted
from replays.integrity.store import engine, read_snapshot
from replays.readmodels.read_model_checks import (
    SnapshotTally,
    check_store_ends,
    finish_store_check,
    games_with_rows,
    ledger_for,
    projection_position,
    replay_games,
)

# The games a range holds, at the end: each range costs its own queries (a variant's
# events, the snapshots, a read-model table's rows) besides its games, so the ranges handed
# out first hold many games, and the last ones, which a process may be left waiting for
# while the others finish theirs, a few (a few milliseconds' replay).
LAST_RANGE = 4
Span = tuple[bytes | None, bytes | None]


def spans(originators: list[bytes], jobs: int) -> list[tuple[Span, list[bytes]]]:
    """Ranges of 16-byte aggregate ids covering every id, cut at the ids of
    ``originators`` (sorted): each with the ids it holds, a ``2 * jobs``-th of those not
    in a range before it and at least :data:`LAST_RANGE` (guided self-scheduling). Taken
    in order, the first ones keep every process busy with few ranges' fixed cost, and
    the last ones taken, while the others finish theirs, are the shortest."""
    parts: list[tuple[Span, list[bytes]]] = []
    low: bytes | None = None
    start, left = 0, len(originators)
    while left > 0:
        size = min(left, max(LAST_RANGE, -(-left // (2 * jobs))))
        start, left = start + size, left - size
        high = originators[start] if left else None
        parts.append(((low, high), originators[start - size : start]))
        low = high
    return parts or [((None, None), [])]


def _context():
    """Workers forked from this process: they start with the ledger's code imported and
    take no setup of their own (a spawned worker, or a fork server, imports it again: on
    a first run, which is every command-line run, as much CPU as replaying a few hundred
    games, while the main pass waits for it). A forked child does not use its parent's
    connections: the engine cache and the applications forget them in the child
    (``replays.store.db.forget_pool_in_child``), and each worker opens its own."""
    return multiprocessing.get_context("fork")


class SpanReplays:
    """The games' replays, submitted to ``jobs`` processes before the main pass reads the
    events, so that the workers replay while the main process hashes and checks the seals.

    The workers cannot know which games the main pass will find wanting (their events
    fail their seals or deals), so they replay every game of their ranges and write
    nothing: the memos they would write come back to :meth:`collect`, which drops those
    of the games found wanting, as it drops their replays, and stores the rest."""

    def __init__(
        self,
        connection: sa.Connection,
        url: str,
        jobs: int,
        *,
        names: dict[bytes, str],
        events: str = "ledger_events",
        snapshots: bool = False,
        remember_deals: bool | None = None,
    ) -> None:
        from replays.integrity.replay_memos import memo_writer

        self.url, self.names, self.events = url, names, events
        self.position = projection_position(connection, events)
        # Made in the main process: the workers hold back what it would store.
        self.memos = None if remember_deals is None else memo_writer(url, deals=remember_deals)
        self.work = spans(sorted(names), jobs)
        self.parts = [part for part, _ in self.work]
        # The deal checks ride the workers' replays (the main pass only notes what it
        # would feed them: replays.integrity.deal_checks.DeferredDeals).
        deals = bool(remember_deals)
        self.replayer = _Replayer(
            url,
            names,
            self.position,
            events,
            snapshots,
            remember_deals if self.memos is not None else None,
            deals,
        )
        # Made before the fork, so each worker inherits it rather than importing the event
        # store's code and building its own (a third of a small range's replay).
        ledger_for(url)
        if deals:
            import replays.integrity.deal_checks  # noqa: F401 (imported once, not per worker)
        # This process is one of the ``jobs`` once its own pass is done: a worker fewer
        # than that spends less CPU in all (each worker warms its own copy of what the
        # replay touches) and leaves the cores to this process's pass meanwhile.
        self.workers = max(1, jobs - 1)
        context = _context()
        # Which ranges are taken, shared: every process (the workers, and this one once
        # its pass is done) takes the next free range itself as it finishes one. Handed
        # out from this process instead (a pool's callback submitting the next range),
        # each range waited for this busy process's threads to get the interpreter lock
        # in turn: 10-25 ms a range, a twentieth of the step in all.
        self.claimed = context.Array("b", len(self.work))
        self.results = context.Queue()
        self.taken: set[int] = set()  # the ranges this process replays itself
        self.given: dict[int, int] = {}  # the ranges a worker replayed, by process id
        self.closed = False
        # The aggregates with snapshots (sorted), read while the workers replay: the
        # snapshot step then reads only those of the games no replay compared.
        self.snapshotted: list[bytes] | None = None
        self.processes = [
            context.Process(
                target=_work, args=(self.replayer, self.work, self.claimed, self.results)
            )
            for _ in range(self.workers)
        ]
        self._start()

    def _start(self) -> None:
        """Fork the workers (a few milliseconds: they start with the code this process
        has imported); each takes the first free range, and the next as it finishes one
        (:func:`_claim`), so that every range not begun is left for whichever process is
        free first, this one included (:meth:`_take`)."""
        for process in self.processes:
            process.start()

    def _take(self) -> int | None:
        """A range no worker has taken, for this process to replay itself once its own
        pass is done (rather than wait: it is one more worker). None: every range is
        running or done in a worker."""
        index = _claim(self.claimed)
        if index is not None:
            self.taken.add(index)
        return index

    def _receive(self) -> tuple[int, dict[str, Any]]:
        """The next result a worker sends: (range, result); a worker's error raised
        here."""
        while True:
            try:
                index, result, error = self.results.get(timeout=0.5)
            except queue.Empty:
                if any(process.is_alive() for process in self.processes):
                    continue
                try:  # the last words of a worker that has just exited
                    index, result, error = self.results.get(timeout=0.5)
                except queue.Empty:
                    raise RuntimeError(
                        "a verify worker stopped before sending its results"
                    ) from None
            if error is not None:
                raise error
            return index, result

    def _poll(self) -> tuple[int, dict[str, Any]] | None:
        """A result a worker has sent already, or None; a worker's error raised here."""
        try:
            index, result, error = self.results.get_nowait()
        except queue.Empty:
            return None
        if error is not None:
            raise error
        return index, result

    def _replay_all(self, connection: sa.Connection, merge, bar) -> None:
        """Replay here, as a worker would (in the main pass's own view, ``connection``:
        the workers' results allow for a newer one), the ranges :meth:`_take` gives, and
        take the workers' results, until every range's result is in; each result goes
        to ``merge`` as it comes, the workers' sent meanwhile taken between this
        process's own ranges (not all at the end, which this process does alone)."""
        replayer = self.replayer.reading(connection)
        missing = len(self.work)

        def given(index: int, result: dict[str, Any]) -> None:
            self.given[index] = result["by"]
            merge(result)
            if bar is not None:
                bar.update(result["events"])

        while (index := self._take()) is not None:
            result = replayer(*self.work[index])
            merge(result)
            missing -= 1
            if bar is not None:
                bar.update(result["events"])
            while (sent := self._poll()) is not None:
                given(*sent)
                missing -= 1
        for _ in range(missing):
            given(*self._receive())

    def close(self) -> None:
        """Stop what has not started (if the main pass failed): no range is left to take,
        and the workers are waited for (their results read and dropped, so that none
        waits to send them)."""
        if self.closed:
            return
        self.closed = True
        with self.claimed.get_lock():
            self.claimed[:] = [1] * len(self.claimed)
        self._join()

    def _join(self) -> None:
        self.closed = True
        for process in self.processes:
            # What a worker is still sending is read (and dropped) so that it can exit;
            # then its exit is waited for, which returns as it exits (waiting on the
            # queue instead took its whole timeout, 50 ms, whenever every result was in
            # and the worker was still exiting).
            while process.is_alive():
                with contextlib.suppress(queue.Empty):
                    while True:
                        self.results.get_nowait()
                process.join(timeout=0.01)
            process.join()
        self.results.close()

    def collect(
        self,
        connection: sa.Connection,
        report: Report,
        *,
        skip: frozenset[bytes] = frozenset(),
        bar=None,
        snapshots: SnapshotTally | None = None,
        deals=None,
    ) -> int:
        """The workers' results, less the games in ``skip`` (whose events the main pass
        found wanting: one process does not replay them); the games a worker found
        anything wrong with checked again in the main pass's own view. ``deals``: the
        main pass's :class:`~replays.integrity.deal_checks.DeferredDeals`, which takes
        the workers' deal checks (a game whose deal it finds wanting is then left alone,
        as one the store pass found something about). Returns the number of games
        checked."""
        merged = _Merged(connection, skip, snapshots, deals)
        ledger = ledger_for(self.url)
        try:
            # Read while the workers replay, not at the end, which this process does alone:
            # which games have read rows, the findings of the step's end that no replay
            # decides (in a report of their own, added where one process adds them), and
            # the games with snapshots, for the snapshot step.
            with_rows = games_with_rows(connection)
            ends = Report()
            check_store_ends(connection, ledger, ends, self.position, self.events)
            if snapshots is not None:
                self.snapshotted = snapshotted(connection)
            self._replay_all(connection, merged, bar)
        except BaseException:
            self.close()
            raise
        # Every result is in: the workers have no range left and exit on their own, while
        # this process finishes the step and the rest of verify (:meth:`close` waits for
        # them at the end).
        checked, seen, troubled, held = merged.checked, merged.seen, merged.troubled, merged.held
        skip = merged.skip
        if troubled:
            # Decided in the main pass's own view (see the module's docstring).
            checked_again, seen_again = replay_games(
                connection,
                ledger,
                report,
                names=self.names,
                skip=skip,
                position=self.position,
                events=self.events,
                snapshots=snapshots,
                only=troubled,
                deals=deals,
            )
            checked += checked_again
            seen |= seen_again
        finish_store_check(
            connection, ledger, report, seen, self.position, self.events, with_rows, ends
        )
        if self.memos is not None:
            # Only games nothing was found about, once every check has spoken.
            found = {p.game_id for p in report.problems}
            again = set(troubled)
            self.memos.store(
                {
                    game_id: memo
                    for originator, game_id, memo in held
                    if game_id not in found and originator not in again
                }
            )
        return checked


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
    started: SpanReplays | None = None,
    deals=None,
) -> int:
    """:func:`replays.readmodels.read_model_checks.check_read_models` with the games
    replayed in ``jobs`` processes (``started``: already submitted, before the main pass
    read the events, and closed by the caller). ``url`` is the database's, for the workers; each clean replay is
    remembered for the games' badges unless ``remember_deals`` is None (it says whether
    the main pass checked the deals)."""
    if started is not None:  # the caller closes it
        return started.collect(
            connection, report, skip=skip, bar=bar, snapshots=snapshots, deals=deals
        )
    started = SpanReplays(
        connection,
        url,
        jobs,
        names=names,
        events=events,
        snapshots=snapshots is not None,
        remember_deals=remember_deals,
    )
    try:
        return started.collect(
            connection, report, skip=skip, bar=bar, snapshots=snapshots, deals=deals
        )
    finally:
        started.close()


def _claim(claimed, wanted=None) -> int | None:
    """The first range no process has taken (they narrow towards the end: :func:`spans`,
    so the last ones taken are the shortest), now taken; None when none is left.
    ``wanted(index)``: whether this process may take that range."""
    with claimed.get_lock():
        for index in range(len(claimed)):
            if not claimed[index] and (wanted is None or wanted(index)):
                claimed[index] = 1
                return index
    return None


def _worker_takes(index: int) -> bool:
    """Whether a worker may take a range (tests leave some to the main process)."""
    return True


def _work(replayer: _Replayer, work: list, claimed, results) -> None:
    """A worker: the next free range replayed, and its result sent, until none is left;
    an error is sent in place of the result (and ends the worker)."""
    try:
        while (index := _claim(claimed, _worker_takes)) is not None:
            try:
                result = replayer(*work[index])
                result["by"] = os.getpid()
            except BaseException as error:  # the main process raises it
                try:
                    pickle.dumps(error)
                except Exception:
                    error = RuntimeError(f"{type(error).__name__}: {error}")
                results.put((index, None, error))
                return
            results.put((index, result, None))
    finally:
        replayer.close()


class _Merged:
    """The ranges' results as they come (:meth:`__call__`), less the games in ``skip``
    (whose events the main pass found wanting) and those whose deal the main pass's
    ``deals`` finds wanting (taken from the workers' verdicts, and left alone then): the
    games checked and found in order, the game ids met, the aggregates to check again in
    the main pass's view, the memos held. Each game is in one range, so a result's
    games are decided by that result alone, in whatever order the results come."""

    def __init__(self, connection, skip: frozenset[bytes], snapshots, deals) -> None:
        self.connection, self.skip, self.snapshots, self.deals = connection, skip, snapshots, deals
        self.checked, self.seen = 0, set()
        self.troubled: list[bytes] = []
        self.held: list = []

    def __call__(self, result: dict[str, Any]) -> None:
        skip, snapshots = self.skip, self.snapshots
        if self.deals is not None:
            take, connection = self.deals.take, self.connection
            found = {
                verdict[0]
                for verdict in result["deal_verdicts"]
                if verdict[0] not in skip and take(connection, *verdict)
            }
            if found:
                skip = self.skip = skip | found
                if snapshots is not None:
                    snapshots.done |= found
        self.checked += sum(1 for o in result["counted"] if o not in skip)
        self.seen |= result["seen"]
        self.troubled += [o for o in result["troubled"] if o not in skip]
        self.held += [memo for memo in result["memos"] if memo[0] not in skip]
        if snapshots is not None:
            for originator, count in result["snapshots"].items():
                if originator not in skip:
                    snapshots.done.add(originator)
                    snapshots.checked += count


class _Held:
    """A worker's memo writer: the memos it would store, kept for the main pass."""

    def __init__(self, writer) -> None:
        self.writer = writer
        self.memos: list[tuple[bytes, str, Any]] = []
        self.originators: dict[str, bytes] = {}

    def write(self, connection: sa.Connection, report: Report, batch: list) -> None:
        for game_id, rows, *_ in batch:
            self.originators[game_id] = rows[0].originator
        prepared = self.writer.prepare(connection, report, batch)
        self.memos += [(self.originators[g], g, memo) for g, memo in prepared.items()]


class _Count:
    def __init__(self) -> None:
        self.events = 0

    def update(self, count: int) -> None:
        self.events += count


class _Replayer:
    """One process's replays of the ranges it takes (:meth:`__call__`, a range at a time):
    in one connection and one read transaction for them all, a worker's own (opened at
    its first range) or the main pass's (:meth:`reading`), and with one memo writer.
    Each range's result: the games it checked and found in order, the aggregates it found
    anything wrong with (their findings are left to the main pass), and the memos it would
    write."""

    def __init__(
        self,
        url: str,
        names: dict[bytes, str],
        position: int,
        events: str,
        with_snapshots: bool,
        remember_deals: bool | None,
        with_deals: bool,
    ) -> None:
        self.url, self.names, self.position, self.events = url, names, position, events
        self.with_snapshots, self.with_deals = with_snapshots, with_deals
        self.remember_deals = remember_deals
        self.connection: sa.Connection | None = None
        self.opened: sa.Connection | None = None
        self.writer: Any = None
        self.ready = False

    def reading(self, connection: sa.Connection) -> _Replayer:
        """A replayer like this one (not yet used) reading in ``connection`` (the main
        pass's)."""
        replayer = copy.copy(self)
        replayer.connection = connection
        return replayer

    def _connect(self) -> sa.Connection:
        from replays.integrity.replay_memos import memo_writer

        if self.remember_deals is not None:
            self.writer = memo_writer(self.url, deals=self.remember_deals)
        if self.connection is None:
            self.opened = self.connection = engine(self.url).connect()
            read_snapshot(self.connection)
        self.ready = True
        return self.connection

    def close(self) -> None:
        if self.opened is not None:
            self.opened.close()
        self.opened = self.connection = None
        self.ready = False

    def __call__(self, span: Span, originators: list[bytes]) -> dict[str, Any]:
        """Every game in ``span`` replayed (the main pass drops those it found wanting);
        ``originators``: the ids of the chain heads in it, whose games the main pass
        named."""
        from replays.integrity.deal_checks import WorkerDeals

        connection = self.connection if self.ready else self._connect()
        names = self.names
        report, count, troubled, counted = Report(), _Count(), set(), set()
        tally = SnapshotTally() if self.with_snapshots else None
        memos = None if self.writer is None else _Held(self.writer)
        deals = WorkerDeals() if self.with_deals else None
        _, seen = replay_games(
            connection,
            ledger_for(self.url),
            report,
            names={o: names[o] for o in originators},
            skip=frozenset(),
            position=self.position,
            events=self.events,
            bar=count,
            snapshots=tally,
            span=span,
            troubled=troubled,
            counted=counted,
            memos=memos,
            deals=deals,
        )
        return {
            "counted": sorted(counted - troubled),
            "seen": seen,
            "troubled": sorted(troubled),
            "snapshots": {
                o: n for o, n in (tally.counts.items() if tally else ()) if o not in troubled
            },
            "memos": [] if memos is None else [m for m in memos.memos if m[0] not in troubled],
            "events": count.events,
            "deal_verdicts": [] if deals is None else deals.verdicts,
        }
