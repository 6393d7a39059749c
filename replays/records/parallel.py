"""``rummy-ledger import --jobs N``: N worker processes, each checking and storing a share
of the records, each save projecting its own games into the read models.

- **Who imports what.** Each record goes to the worker with the least work given and not
  yet answered (bytes of lines; :class:`Dispatcher`), so a worker that draws long games
  gets fewer of them and both finish together. A record whose game id (as the line
  states it) is still with a worker goes to that worker, behind it, so records with one
  id are judged in file order, each after the one before it was stored or refused: the
  outcomes are a one-process import's (the first imported, a later identical record
  *already recorded*, a different one a *conflict*).
- **Every check, every seal.** A worker is the ordinary :class:`~replays.records.importer.Importer`
  on its own :class:`~replays.store.application.Ledger`: each record is parsed, played
  through its aggregate and its deal checked against a revealed seed before its batch is
  saved; a rejected record stores nothing. Each save seals its events inside its own
  transaction, under the lock every save takes first (PostgreSQL ``LOCK TABLE ... IN
  EXCLUSIVE MODE``, SQLite's write lock), so the saves of all workers take their
  notification ids and their places in the one Merkle tree in one order
  (:mod:`replays.integrity.append`); what the workers do in parallel is everything before
  the lock: parsing, the rules, the settlement, encoding and hashing the leaves.
- **The read models.** Each worker projects its own saves as a one-process import does
  (:class:`~replays.readmodels.projections.SavedGames`): the rows of the games it is about
  to save are worked out from the games in memory before the save, and the save writes them
  and moves the projection's position inside its own transaction; the position under the
  store's lock it already holds, so positions advance in notification order whichever
  worker saves (on PostgreSQL the rows go in before that lock, so the other worker's save
  waits only for the events, the seals and the position).
  The parent writes nothing. A save whose rows could not be worked out or written, or that
  did not come right after the position (another writer's events): that worker runs the
  ordinary catch-up right after (its position lock keeps it exactly once). Once the
  workers are done, a last catch-up with the usual warnings for games it had to set aside.
- **Handing on the lock.** On SQLite the workers' saves queue at a :class:`WriteGate`
  before SQLite's write lock, so each starts as the one before commits; on PostgreSQL the
  saves' inserts of many read rows are one statement over arrays each
  (:func:`~replays.readmodels.bulk.rows_at_once`).

The parent reads the file (a line never more than its limit, :func:`bounded_lines`),
hands lines to the workers in small chunks through bounded queues (memory stays flat in
the number of records) and reports each outcome as it comes back, for the progress bar.
"""

from __future__ import annotations

import multiprocessing
import queue
import re
import time
from collections.abc import Callable, Iterable
from typing import Any

from replays.records.codec import bounded_lines, read_record
from replays.records.importer import BATCH, REJECTED, Importer, ImportSummary, Outcome
from replays.store.settings import database_url

CHUNK = 25  # lines per message to a worker
# Per worker: enough to keep it busy, never the whole file (and the less is queued, the
# less is left unevenly shared when the file ends).
QUEUED_CHUNKS = 2
_GAME_ID = re.compile(rb'"game_id"\s*:\s*"((?:[^"\\]|\\.)*)"')


# How long the parent sleeps when every worker's queue is full before trying again.
FREE_WAIT = 0.005

# How long a writer waits at the gate before going on to SQLite's own lock (a process that
# died holding the gate must not stop the others).
GATE_WAIT = 5.0


class WriteGate:
    """SQLite: one lock for the writers of one import (the workers' saves, with their
    read-model rows), taken just before SQLite's write lock and given back after the
    commit.

    SQLite's lock stays the one that orders the writes; this only hands it on. A writer
    that finds SQLite's lock taken polls it, sleeping 1, 2, 5, 10 ... 100 ms between
    tries, so it went on 10-30 ms after the holder had committed, for every save; waiting
    here, it is woken at the release. ``enter`` and ``leave`` pair up within one process; a writer that waits longer than :data:`GATE_WAIT` goes on
    without it."""

    def __init__(self, context: Any) -> None:
        self._lock = context.Lock()
        self._held = False

    def enter(self) -> None:
        if not self._held:
            self._held = self._lock.acquire(timeout=GATE_WAIT)

    def leave(self) -> None:
        if self._held:
            self._held = False
            self._lock.release()


class WorkerFailed(RuntimeError):
    """A worker process died or crashed outside any one record (its records' outcomes
    that came back stand; the others are unknown)."""


def game_key(line: str | bytes) -> bytes | None:
    """The first ``game_id`` a line states, as written (None when it states none; such a
    line is refused by whichever worker reads it)."""
    data = line.encode() if isinstance(line, str) else line
    found = _GAME_ID.search(data)
    return None if found is None else found.group(1)


class Dispatcher:
    """Which worker each line goes to, in file order.

    A line whose game id is not with any worker joins the *free* chunk, which goes, once
    full, to the first worker with room in its queue (the one with the least work given
    and not yet answered first): a worker that draws long games takes fewer chunks, and
    both finish together. Records were once shared by a hash of their ids: 600 simulated
    games split 15,454 events against 14,383, and the import waited for the busier worker.

    A line whose game id is still with a worker (or in the free chunk) follows it there,
    behind it, so records with one id are judged in file order, each after the one before
    was stored or refused: a worker answers a record once its batch is committed or it is
    refused, and only then may a record with that id go elsewhere, where it is found
    stored, as a one-process import finds it. What is held is an entry per line not yet
    answered (bounded by the queues and the workers' batches), never the whole file."""

    FREE = -1

    def __init__(self, jobs: int) -> None:
        self.load = [0] * jobs  # bytes given to each worker and not yet answered
        self._lines: dict[int, tuple[bytes | None, int, int]] = {}  # number -> key, worker, bytes
        self._keys: dict[bytes, list[int]] = {}  # game key -> [worker or FREE, lines held]
        self._free: list[int] = []  # the free chunk's line numbers

    def route(self, number: int, line: str | bytes) -> int:
        """The worker the line must go to (its id is with it), or :data:`FREE`."""
        key, size = game_key(line), len(line)
        held = None if key is None else self._keys.get(key)
        if held is None:
            worker = self.FREE
            if key is not None:
                self._keys[key] = [worker, 1]
        else:
            worker = held[0]
            held[1] += 1
        self._lines[number] = (key, worker, size)
        if worker == self.FREE:
            self._free.append(number)
        else:
            self.load[worker] += size
        return worker

    def by_load(self) -> list[int]:
        """The workers, least work given and not yet answered first."""
        return sorted(range(len(self.load)), key=self.load.__getitem__)

    def give_free(self, worker: int) -> None:
        """The free chunk was handed to ``worker``: its ids are with it now."""
        for number in self._free:
            key, _, size = self._lines[number]
            self._lines[number] = (key, worker, size)
            self.load[worker] += size
            if key is not None:
                self._keys[key][0] = worker
        self._free = []

    def answered(self, number: int | None) -> None:
        entry = self._lines.pop(number, None) if number is not None else None
        if entry is None:
            return
        key, worker, size = entry
        self.load[worker] -= size
        if key is not None:
            held = self._keys[key]
            held[1] -= 1
            if not held[1]:
                del self._keys[key]

    @property
    def unanswered(self) -> int:
        return len(self._lines)


def _work(
    url: str, batch: int, inbox: Any, results: Any, follow: bool, gate: WriteGate | None = None
) -> None:
    """One worker: import the chunks it is given until ``None``, report every outcome."""
    from replays.store.collector import bulk_work

    try:
        with bulk_work():
            _import_chunks(url, batch, inbox, results, follow, gate)
        results.put(("done", None))
    except BaseException as error:  # reported to the parent, which stops the import
        results.put(("crash", f"{type(error).__name__}: {error}"))


def _import_chunks(
    url: str, batch: int, inbox: Any, results: Any, follow: bool, gate: WriteGate | None = None
) -> None:
    from replays.store.application import Ledger

    ledger = Ledger(url, env={"CREATE_TABLE": "no"})
    if gate is not None:
        _gated(ledger, gate)
    projector = None
    if follow:
        from replays.readmodels.projections import SavedGames

        projector = SavedGames(ledger)
    importer = Importer(ledger, batch=batch, projector=projector)
    while (chunk := inbox.get()) is not None:
        outcomes: list[Outcome] = []
        for number, line in chunk:
            parsed = read_record(number, line)
            if parsed is None:
                continue
            if isinstance(parsed, Exception):
                outcomes.append(Outcome(parsed.game_id, REJECTED, parsed.detail, number))
            else:
                outcomes.extend(importer.add(parsed, number))
        if outcomes:
            results.put(("outcomes", outcomes))
    results.put(("outcomes", importer.flush()))


def _gated(ledger: Any, gate: WriteGate) -> None:
    """The worker's saves enter ``gate`` as their insert starts (the recorder does) and
    leave it once committed or rolled back (the ledger's ``_record`` does)."""
    ledger.recorder.write_gate = gate


def import_lines_parallel(
    url: str,
    lines: Iterable[str | bytes],
    *,
    jobs: int,
    batch: int = BATCH,
    on_outcome: Callable[[Outcome], None] | None = None,
    follow: bool = True,
    warn: Callable[[str], None] | None = None,
    progress: bool = False,
) -> ImportSummary:
    """Import every record of a JSON Lines stream on ``jobs`` worker processes; the same
    summary as :func:`~replays.records.importer.import_lines` (failures in line order)."""
    context = multiprocessing.get_context("fork")  # workers start with the modules loaded
    results = context.Queue()
    inboxes = [context.Queue(maxsize=QUEUED_CHUNKS) for _ in range(jobs)]
    gate = WriteGate(context) if database_url(url).startswith("sqlite") else None
    workers = [
        context.Process(target=_work, args=(url, batch, inbox, results, follow, gate), daemon=True)
        for inbox in inboxes
    ]
    for worker in workers:
        worker.start()
    summary = ImportSummary()
    dispatcher = Dispatcher(jobs)
    finished: list[int] = []  # workers that reported "done"

    def receive(block: bool) -> None:
        while True:
            try:
                kind, body = results.get(block=block, timeout=0.5 if block else None)
            except queue.Empty:
                _check_alive(workers, finished)
                return
            if kind == "outcomes":
                for outcome in body:
                    dispatcher.answered(outcome.line)
                    summary.add(outcome)
                    if on_outcome is not None:
                        on_outcome(outcome)
            elif kind == "done":
                finished.append(1)
            else:
                raise WorkerFailed(f"an import worker failed: {body}")
            block = False

    def send(index: int, chunk: Any) -> None:
        while True:
            try:
                inboxes[index].put(chunk, timeout=0.2)
                return
            except queue.Full:
                receive(block=False)
                _check_alive(workers, finished)

    def send_free(chunk: list) -> None:
        """The free chunk to the first worker with room, the least loaded first."""
        while True:
            for index in dispatcher.by_load():
                try:
                    inboxes[index].put_nowait(chunk)
                except queue.Full:
                    continue
                dispatcher.give_free(index)
                return
            receive(block=False)
            _check_alive(workers, finished)
            time.sleep(FREE_WAIT)

    try:
        if hasattr(lines, "readline"):  # a file: never read an unbounded line into memory
            lines = bounded_lines(lines)
        chunks: list[list] = [[] for _ in range(jobs)]  # lines that follow their game id
        free: list = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue  # a blank line: nothing to import, nothing to report
            index = dispatcher.route(number, line)
            if index == Dispatcher.FREE:
                free.append((number, line))
                if len(free) >= CHUNK:
                    send_free(free)
                    free = []
                    receive(block=False)
            else:
                chunks[index].append((number, line))
                if len(chunks[index]) >= CHUNK:
                    send(index, chunks[index])
                    chunks[index] = []
        if free:
            send_free(free)
        for index in range(jobs):
            if chunks[index]:
                send(index, chunks[index])
            send(index, None)
        while len(finished) < jobs:
            receive(block=True)
        for worker in workers:
            worker.join()
    except BaseException:
        for worker in workers:
            if worker.is_alive():
                worker.terminate()
        raise
    summary.failures.sort(key=lambda outcome: outcome.line or 0)
    if follow and summary.imported:
        from replays.store.followers import catch_up_followers

        summary.followers = catch_up_followers(url, warn, progress=progress)
    return summary


def _check_alive(workers: list, finished: list[int]) -> None:
    dead = [w for w in workers if not w.is_alive() and w.exitcode not in (0, None)]
    if dead:
        raise WorkerFailed(
            f"an import worker stopped (exit code {dead[0].exitcode}); "
            "the batches it had saved stay stored"
        )


__all__ = ["Dispatcher", "WorkerFailed", "game_key", "import_lines_parallel"]
