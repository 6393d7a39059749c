"""``rummy-ledger import --jobs N``: N worker processes, each checking and storing a share
of the records, while the parent keeps the read models caught up.

- **Who imports what.** Each record goes to the worker its game id names (a stable hash of
  the id as the line states it), so every record with one id meets the same worker, in
  file order: the outcomes are a one-process import's (the first imported, a later
  identical record *already recorded*, a different one a *conflict*).
- **Every check, every seal.** A worker is the ordinary :class:`~replays.records.importer.Importer`
  on its own :class:`~replays.store.application.Ledger`: each record is parsed, played
  through its aggregate and its deal checked against a revealed seed before its batch is
  saved; a rejected record stores nothing. Each save seals its events inside its own
  transaction, under the lock every save takes first (PostgreSQL ``LOCK TABLE ... IN
  EXCLUSIVE MODE``, SQLite's write lock), so the saves of all workers take their
  notification ids and their places in the one Merkle tree in one order
  (:mod:`replays.integrity.append`); what the workers do in parallel is everything before
  the lock: parsing, the rules, the settlement, encoding and hashing the leaves.
- **The read models.** The parent runs the projection's catch-up in a loop while the
  workers store (its position lock keeps it exactly once), then once more at the end with
  the usual warnings for games it had to set aside.

The parent reads the file (a line never more than its limit, :func:`bounded_lines`),
hands lines to the workers in small chunks through bounded queues (memory stays flat in
the number of records) and reports each outcome as it comes back, for the progress bar.
"""

from __future__ import annotations

import multiprocessing
import queue
import re
import threading
import zlib
from collections.abc import Callable, Iterable
from typing import Any

from replays.records.codec import bounded_lines, read_record
from replays.records.importer import BATCH, REJECTED, Importer, ImportSummary, Outcome

CHUNK = 25  # lines per message to a worker
QUEUED_CHUNKS = 8  # per worker: enough to keep it busy, never the whole file
_GAME_ID = re.compile(rb'"game_id"\s*:\s*"((?:[^"\\]|\\.)*)"')


class WorkerFailed(RuntimeError):
    """A worker process died or crashed outside any one record (its records' outcomes
    that came back stand; the others are unknown)."""


def worker_of(line: str | bytes, jobs: int) -> int:
    """The worker for a line: a stable hash of the first ``game_id`` the line states
    (worker 0 when it states none; such a line is refused by whichever worker reads it)."""
    data = line.encode() if isinstance(line, str) else line
    found = _GAME_ID.search(data)
    return 0 if found is None else zlib.crc32(found.group(1)) % jobs


def _work(url: str, batch: int, inbox: Any, results: Any) -> None:
    """One worker: import the chunks it is given until ``None``, report every outcome."""
    from replays.store.collector import bulk_work

    try:
        with bulk_work():
            _import_chunks(url, batch, inbox, results)
        results.put(("done", None))
    except BaseException as error:  # reported to the parent, which stops the import
        results.put(("crash", f"{type(error).__name__}: {error}"))


def _import_chunks(url: str, batch: int, inbox: Any, results: Any) -> None:
    from replays.store.application import Ledger

    ledger = Ledger(url, env={"CREATE_TABLE": "no"})
    importer = Importer(ledger, batch=batch)
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


def _keep_projecting(url: str, stop: threading.Event, errors: list[str]) -> None:
    """Catch the read models up while the workers store, until ``stop``."""
    from replays.readmodels.projections import catch_up

    while not stop.is_set():
        try:
            if catch_up(url) == 0:
                stop.wait(0.2)
        except Exception as error:  # the final catch-up retries and warns
            errors.append(f"{type(error).__name__}: {error}")
            stop.wait(1.0)


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
    workers = [
        context.Process(target=_work, args=(url, batch, inbox, results), daemon=True)
        for inbox in inboxes
    ]
    for worker in workers:
        worker.start()
    summary = ImportSummary()
    finished: list[int] = []  # workers that reported "done"
    stop, projection_errors = threading.Event(), []
    projector = None
    if follow:
        projector = threading.Thread(
            target=_keep_projecting, args=(url, stop, projection_errors), daemon=True
        )
        projector.start()

    def receive(block: bool) -> None:
        while True:
            try:
                kind, body = results.get(block=block, timeout=0.5 if block else None)
            except queue.Empty:
                _check_alive(workers, finished)
                return
            if kind == "outcomes":
                for outcome in body:
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

    try:
        if hasattr(lines, "readline"):  # a file: never read an unbounded line into memory
            lines = bounded_lines(lines)
        chunks: list[list] = [[] for _ in range(jobs)]
        for number, line in enumerate(lines, start=1):
            index = worker_of(line, jobs)
            chunks[index].append((number, line))
            if len(chunks[index]) >= CHUNK:
                send(index, chunks[index])
                chunks[index] = []
                receive(block=False)
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
    finally:
        stop.set()
        if projector is not None:
            projector.join()
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


__all__ = ["WorkerFailed", "import_lines_parallel", "worker_of"]
