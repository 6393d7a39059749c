"""The projection worker (`projections run --follow`) as a real process: on PostgreSQL it wakes
on the NOTIFY its commit sends (poll interval ten minutes, so polling cannot be what woke
it), on SQLite it polls; SIGTERM ends it between batches with exit 0 and its position
stored, and a restart goes on from there. In process: a stop asked for during a batch lets
that batch commit whole."""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import sqlalchemy as sa
from web_support import load_games, sample_records

from replays.readmodels.projections import projection_status, runner

ROOT = Path(__file__).resolve().parent.parent


def store_without_projecting(url: str, records: list[dict]) -> None:
    from replays.records.importer import import_lines
    from replays.store.application import Ledger

    summary = import_lines(Ledger(url), [json.dumps(r) for r in records], follow=False)
    assert summary.ok, summary.line()


class Worker:
    def __init__(self, url: str, *options: str):
        command = [sys.executable, "-c", "from web.cli import main; main()"]
        command += ["projections", "run", "--follow", "--url", url, *options]
        self.process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=dict(os.environ, RUMMY_LEDGER_DATABASE_URL=url),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.output: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)

    def expect(self, pattern: str, timeout: float = 30.0) -> re.Match:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                if self.process.poll() is not None and self.lines.empty():
                    break
                continue
            self.output.append(line)
            match = re.search(pattern, line)
            if match:
                return match
        raise AssertionError(f"no line matching {pattern!r} in {self.output}")

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=30)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def wait_caught_up(url: str, timeout: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if projection_status(url, failures=False).lag == 0:
            return time.monotonic() - started
        time.sleep(0.05)
    raise AssertionError(f"the worker did not catch up within {timeout} s")


def game_rows(url: str) -> int:
    from replays.store.db import engine_for

    with engine_for(url).connect() as connection:
        return connection.execute(sa.text("SELECT count(*) FROM games")).scalar()


def test_the_worker_wakes_on_commit_stops_on_sigterm_and_resumes(database_url):
    url = database_url
    records = sample_records()
    load_games(url, records[:1])
    postgres = url.startswith("postgresql")
    # PostgreSQL: ten minutes between looks, so only the notification can wake it in time.
    interval = "600" if postgres else "0.2"
    worker = Worker(url, "--interval", interval, "--batch-size", "7")
    try:
        woken = "on each commit \\(LISTEN\\)" if postgres else "polling"
        worker.expect(f"following the event store, woken {woken}")
        wait_caught_up(url, 30)
        time.sleep(0.5)  # the worker has caught up and waits

        store_without_projecting(url, records[1:2])
        assert projection_status(url, failures=False).lag > 0
        waited = wait_caught_up(url, 15)
        assert waited < 15
        assert game_rows(url) == 2
        worker.expect(r"events applied \(position \d+\)")

        # Stopped while it works through small batches: it ends between two of them.
        store_without_projecting(url, records[2:])
        worker.expect(r"events applied")
        assert worker.stop() == 0
        stopped = int(worker.expect(r"stopped at position (\d+)").group(1))
    finally:
        worker.kill()
    status = projection_status(url, failures=False)
    assert status.position == stopped  # what it said it reached is what is stored

    # A restart goes on from the stored position and reaches the head.
    again = Worker(url, "--interval", interval)
    try:
        again.expect("following the event store")
        wait_caught_up(url, 30)
        assert again.stop() == 0
        again.expect(r"stopped at position (\d+)")
    finally:
        again.kill()
    assert game_rows(url) == len(records)
    final = projection_status(url)
    assert final.position == final.head and not final.failures
    applied_after_restart = final.events_applied - status.events_applied
    assert applied_after_restart == final.head - stopped or postgres  # PostgreSQL ids may skip


def test_a_stop_during_a_batch_lets_it_commit(database_url):
    url = database_url
    records = sample_records()
    load_games(url, records[:1])
    store_without_projecting(url, records[1:])
    before = projection_status(url, failures=False)
    stop = threading.Event()
    batches = []

    def hook(stage: str, number: int) -> None:
        if stage == "applied":
            stop.set()  # SIGTERM arrives with the batch's rows written, not yet committed

    projector = runner(url, batch_size=5, hook=hook)
    done = projector.follow(interval=0.1, stop=stop.is_set, on_batch=batches.append)
    after = projection_status(url, failures=False)
    assert batches == [5] and done == 5
    assert after.events_applied == before.events_applied + 5
    assert 0 < after.lag < before.lag


def test_the_worker_listens_again_after_losing_its_connection(postgres_url):
    url = postgres_url
    records = sample_records()
    load_games(url, records[:1])
    worker = Worker(url, "--interval", "600")
    try:
        worker.expect("woken on each commit")
        wait_caught_up(url, 30)
        from replays.store.db import engine_for

        engine = engine_for(url)
        name = f"rummy-ledger projection worker {worker.process.pid}"
        find = sa.text(
            "SELECT pid FROM pg_stat_activity WHERE application_name = :name "
            "AND query LIKE 'LISTEN%'"
        )
        deadline = time.monotonic() + 20
        while True:  # the worker may still be starting its loop
            with engine.connect() as connection:
                pids = connection.execute(find, {"name": name}).scalars().all()
            if pids or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert len(pids) == 1, f"no LISTEN session named {name!r}"
        with engine.connect() as connection:
            connection.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pids[0]})
        worker.expect("lost the LISTEN connection", timeout=10)

        store_without_projecting(url, records[1:2])
        wait_caught_up(url, 15)
        assert game_rows(url) == 2
        assert worker.stop() == 0
    finally:
        worker.kill()
