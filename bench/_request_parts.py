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
- the access-log line (web/auth.py): when it was sent (``send_access``, on the page's thread,
  not waiting for the answer; ``line_sending``: what sending it took) and when the page had
  its commit (``line_done``), from the request's start; a line written at the end
  (``record_access``) has instead its own CPU and run-queue time (``writer_cpu``,
  ``writer_runq``); ``page_ready``: when the page had been drawn and began waiting for
  that commit, and ``end_wait``: how long that wait took (the commit on the page's critical
  path);
- ``standby_startup``, ``standby_walreceiver``, ``standby_backends``, ``standby_other``:
  the CPU the standby's processes used inside the request's window (WAL replay, WAL
  receipt, the connections answering the page's reads): what shared the page's core;
  ``primary_walsender``, ``primary_walwriter``, ``primary_line_backends`` (the page
  process's connections), ``primary_other_backends``, ``primary_importer``: the same on
  the primary's host; each with its run-queue wait beside it (``..._runq``).
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


KINDS = ("startup", "walreceiver", "walsender", "walwriter")


def processes_of(postmaster: int) -> dict[str, list[int]]:
    """A PostgreSQL server's processes by what they are: ``startup`` (a standby's WAL
    replay), ``walreceiver``, ``walsender`` (a primary's, streaming to the standby),
    ``walwriter``, ``backends`` (the connections serving queries), ``other``."""
    found: dict[str, list[int]] = {kind: [] for kind in (*KINDS, "backends", "other")}
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
        kind = next((k for k in KINDS if k in title), None)
        if kind is None:
            kind = "backends" if "(" in title else "other"  # a client's host(port)
        found[kind].append(int(entry))
    return found


def _cpu_of(pids: list[int]) -> tuple[float, float]:
    """The CPU time and the run-queue wait of ``pids``, summed (their threads: processes)."""
    cpu = runq = 0.0
    for pid in pids:
        with contextlib.suppress(OSError):  # ended
            on, waiting, _ = schedstat(pid, "/proc/{}/schedstat")
            cpu, runq = cpu + on, runq + waiting
    return cpu, runq


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
        record_access = access_log.record_access
        send_access = getattr(access_log, "send_access", None)  # (a line sent on a thread)
        log_view = auth._log_privileged_view

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

        def timed_send_access(*args, **kwargs):
            sent = time.perf_counter()
            line = send_access(*args, **kwargs)
            sending = time.perf_counter() - sent
            result = line.result

            def timed_result():
                try:
                    return result()
                finally:
                    with self._lock:
                        self._lines.append(
                            {
                                "line_sent": sent - self._started,
                                "line_done": time.perf_counter() - self._started,
                                "line_sending": sending,
                            }
                        )

            line.result = timed_result
            return line

        access_log.record_access = timed_record_access
        if send_access is not None:
            access_log.send_access = timed_send_access

        def timed_log_view(response):
            ready = time.perf_counter()
            try:
                return log_view(response)
            finally:
                self._ready.append((ready - self._started, time.perf_counter() - ready))

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
            cpu_now, runq_now = _cpu_of(pids)
            row[label] = cpu_now - watched[label][0]
            row[f"{label}_runq"] = runq_now - watched[label][1]
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
         "line_done", "line_sending", "page_ready", "end_wait", "writer_cpu", "writer_runq")  # fmt: skip


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

    watched = sorted({key for row in rows for key in row if key.startswith(("standby_",
                                                                          "primary_"))})  # fmt: skip

    def mean_ms(band: list[dict], part: str) -> float | None:
        values = [row[part] for row in band if part in row]
        return round(1000 * statistics.fmean(values), 2) if values else None

    return {
        name: {"n": len(band), **{part: mean_ms(band, part) for part in (*PARTS, *watched)}}
        for name, band in bands.items()
        if band
    }


def client_ports(pid: int | str = "self") -> set[int]:
    """The local TCP ports of process ``pid``'s sockets (its connections to the servers)."""
    inodes = set()
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as lines:
            for line in list(lines)[1:]:
                fields = line.split()
                if fields[9] in inodes:
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def backends_for(backends: list[int], ports: set[int]) -> list[int]:
    """Those of a server's ``backends`` serving a client on one of ``ports`` (the process
    title names the client as ``host(port)``)."""
    found = []
    for pid in backends:
        with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline") as cmdline:
            title = cmdline.read()
        if any(f"({port})" in title for port in ports):
            found.append(pid)
    return found
