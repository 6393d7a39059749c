"""Where each page's time goes, request by request, in parts another session's load on the
machine cannot hide (bench/cluster_failover.py collects them for the standby's page).

Around every request of a Flask test client (the page is drawn on the calling thread):

- ``cpu``: the page thread on a CPU; ``runq``: the page thread runnable but waiting for its
  CPU (``/proc/self/task/<tid>/schedstat``: what another process on the same core costs);
  ``off``: the rest of the wall time, the thread asleep (waiting for a server's answer);
  ``slices``: how many times the thread was put on its CPU; ``gc``: Python's garbage
  collections during the request (any thread);
- ``replica`` and ``primary``: the statements' time to each server (SQLAlchemy's cursor
  events, on every thread; ``_Queries`` in the bench);
- the access-log line, written on a writer thread (web/auth.py): when it was sent and when
  its commit came back, from the request's start; the writer's own CPU and run-queue time;
  ``page_ready``: when the page had been drawn and began waiting for that commit, and
  ``end_wait``: how long that wait took (the commit on the page's critical path);
- ``standby_startup``, ``standby_walreceiver``, ``standby_backends``, ``standby_other``:
  the CPU the standby's processes used inside the request's window (WAL replay, WAL
  receipt, the connections answering the page's reads): what shared the page's core.
"""

from __future__ import annotations

import contextlib
import gc
import os
import statistics
import threading
import time


def schedstat(tid: int, path: str = "/proc/self/task/{}/schedstat") -> tuple[float, float, int]:
    """Seconds thread ``tid`` of this process (with ``path`` "/proc/{}/schedstat": process
    ``tid``) has run, and has waited runnable for a CPU; the times it was put on a CPU."""
    with open(path.format(tid)) as stats:
        on_cpu, waiting, slices = stats.read().split()
    return int(on_cpu) / 1e9, int(waiting) / 1e9, int(slices)


def processes_of(postmaster: int) -> dict[str, list[int]]:
    """A PostgreSQL server's processes by what they are: ``startup`` (a standby's WAL
    replay), ``walreceiver``, ``backends`` (the connections serving queries), ``other``."""
    found: dict[str, list[int]] = {"startup": [], "walreceiver": [], "backends": [], "other": []}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline") as cmdline:
                title = cmdline.read()
        except (OSError, ValueError, IndexError):
            continue
        if parent != postmaster:
            continue
        kind = next((k for k in ("startup", "walreceiver") if k in title), None)
        if kind is None:
            kind = "backends" if "(" in title else "other"  # a client's host(port)
        found[kind].append(int(entry))
    return found


def _cpu_of(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError):  # ended
            total += schedstat(pid, "/proc/{}/schedstat")[0]
    return total


class RequestParts:
    """Installs its hooks on the app's modules while :meth:`measure` runs requests."""

    def __init__(self, queries):
        from replays.access import access_log
        from web import auth

        self.queries = queries
        self.rows: list[dict] = []
        # Other processes whose CPU inside each request's window is a part ("standby
        # startup": label -> pids), set by the caller: what shared the page's core.
        self.watched: dict[str, list[int]] = {}
        self._lines: list[dict] = []
        self._ready: list[tuple[float, float]] = []
        self._started = 0.0
        self._lock = threading.Lock()
        record_access, log_view = access_log.record_access, auth._log_privileged_view

        def timed_record_access(*args, **kwargs):
            tid = threading.get_native_id()
            sent, (cpu, runq, _) = time.perf_counter(), schedstat(tid)
            try:
                return record_access(*args, **kwargs)
            finally:
                done, (cpu_after, runq_after, _) = time.perf_counter(), schedstat(tid)
                with self._lock:
                    self._lines.append(
                        {
                            "line_sent": sent - self._started,
                            "line_done": done - self._started,
                            "writer_cpu": cpu_after - cpu,
                            "writer_runq": runq_after - runq,
                        }
                    )

        def timed_log_view(response):
            ready = time.perf_counter()
            try:
                return log_view(response)
            finally:
                self._ready.append((ready - self._started, time.perf_counter() - ready))

        access_log.record_access = timed_record_access
        auth._log_privileged_view = timed_log_view
        self._gc, self._gc_started = 0.0, 0.0
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, _info: dict) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        elif self._gc_started:
            self._gc += time.perf_counter() - self._gc_started

    def get(self, client, path: str):
        """``client.get(path)``, its parts appended to :attr:`rows`."""
        tid = threading.get_native_id()
        seconds = dict(self.queries.seconds)
        watched = {label: _cpu_of(pids) for label, pids in self.watched.items()}
        cpu, runq, slices = schedstat(tid)
        self._lines.clear()
        self._ready.clear()
        self._gc = 0.0
        self._started = started = time.perf_counter()
        response = client.get(path)
        wall = time.perf_counter() - started
        cpu_after, runq_after, slices_after = schedstat(tid)
        row = {
            "server_ms": float(response.headers.get("Server-Timing", "dur=nan").split("dur=")[1]),
            "wall": wall,
            "cpu": cpu_after - cpu,
            "runq": runq_after - runq,
            "slices": (slices_after - slices) / 1000,  # shown as a count by summary()
            "gc": self._gc,
        }
        for label, pids in self.watched.items():
            row[label] = _cpu_of(pids) - watched[label]
        row["off"] = wall - row["cpu"] - row["runq"]
        for server, took in self.queries.seconds.items():
            name = "replica" if server == "replica" else "primary"
            row[name] = row.get(name, 0.0) + took - seconds.get(server, 0.0)
        with self._lock:
            for line in self._lines[-1:]:
                row.update(line)
        for ready, waited in self._ready[-1:]:
            row["page_ready"], row["end_wait"] = ready, waited
        self.rows.append(row)
        return response


PARTS = ("wall", "cpu", "runq", "off", "slices", "gc", "replica", "primary", "line_sent",
         "line_done", "page_ready", "end_wait", "writer_cpu", "writer_runq", "standby_startup",
         "standby_walreceiver", "standby_backends", "standby_other")  # fmt: skip


def summary(rows: list[dict]) -> dict:
    """Mean ms of each part over every request, over the middle tenth by wall time (the
    p50's neighbours) and over the slowest twentieth (those at or beyond the p95)."""
    ordered = sorted(rows, key=lambda row: row["wall"])
    count = len(ordered)
    bands = {
        "all": ordered,
        "p45_p55": ordered[int(0.45 * count) : max(int(0.55 * count), int(0.45 * count) + 1)],
        "p95_up": ordered[min(count - 1, int(0.95 * count)) :],
    }

    def mean_ms(band: list[dict], part: str) -> float | None:
        values = [row[part] for row in band if part in row]
        return round(1000 * statistics.fmean(values), 2) if values else None

    return {
        name: {"n": len(band), **{part: mean_ms(band, part) for part in PARTS}}
        for name, band in bands.items()
        if band
    }
