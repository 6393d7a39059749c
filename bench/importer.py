"""Import speed: simulated records stored through ``rummy-ledger import``'s code path.

Two baselines, measured in the same run on the same records:

- ``settle``: the records parsed and played through the aggregate in memory with nothing
  stored (what ``rummy-ledger settle`` does): the rules' own cost, which an import pays too;
- raw ``executemany``: the import's own event rows (read back from the SQLite import: same
  ids, sizes and bytes) inserted by the DB-API driver alone, one ``executemany`` per 50
  games' rows and one commit each, into a bare table of the same columns and index: the
  ceiling a store could reach with no rules, no seals and no read models.

The import figures (events/s, every event counted as stored) are reported as fractions of
both, on SQLite and PostgreSQL, storing one game per transaction (``batch=1``, one
``record_game`` save each) and 50 games per transaction (the importer's default). The
machine's load average at the start and end is recorded: the machine is shared.

Then the whole of ``rummy-ledger import`` (issue 16): records checked, stored, sealed *and*
projected into the read models (``follow=True``: each save projected from the games in
memory, :class:`~replays.readmodels.projections.SavedGames`), in one process and with ``--jobs 2``
(:mod:`replays.records.parallel`), on both engines, alternating, three rounds on the same
records; the scaling figure is the median one-process time over the median two-worker
time, with each round's ratio and load average, and the CPU-bound scaling beside it (on
PostgreSQL also with the server's CPU for the import's connections, from ``/proc``).

Run: ``python -m bench importer`` (or ``python -m bench.importer``); ``quick=True`` for a
smoke run.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from typing import Any

import sqlalchemy as sa

from replays.records.codec import parse_record
from replays.records.importer import import_lines
from replays.records.settle import play_record
from replays.store.application import Ledger
from replays.store.schema import migrate

POSTGRES_URL = os.environ.get(
    "RUMMY_LEDGER_BENCH_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def simulated_lines(count: int, seed: int = 11) -> list[str]:
    from domain.simulation.floor import Floor
    from replays.simulation.batch import Simulation

    simulation = Simulation(Floor(seed=seed, variants=("points", "raise")))
    return [json.dumps(record) for record in simulation.games(count)]


def in_memory(lines: list[str]) -> float:
    """The settle path's time, under the collector setting the import runs with (so the
    baseline has the same head start)."""
    from replays.store.collector import bulk_work

    with bulk_work():
        start = time.perf_counter()
        for line in lines:
            play_record(parse_record(line))
        return time.perf_counter() - start


def stored(url: str, lines: list[str], batch: int, follow: bool = False) -> tuple[float, int]:
    seconds, imported, _ = stored_timed(url, lines, batch, follow)
    return seconds, imported


def stored_timed(
    url: str, lines: list[str], batch: int = 50, follow: bool = False
) -> tuple[float, int, float]:
    """(wall seconds, games imported, CPU seconds of this process)."""
    migrate(url)
    ledger = Ledger(url, env={"CREATE_TABLE": "no"})
    start, cpu = time.perf_counter(), time.process_time()
    summary = import_lines(ledger, lines, batch=batch, follow=follow)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    if summary.imported != len(lines):
        raise RuntimeError(f"only {summary.line()}: {summary.failures[:3]}")
    return seconds, summary.imported, cpu


def stored_jobs(url: str, lines: list[str], jobs: int) -> float:
    """``import --jobs N`` with the read models kept up: wall seconds."""
    return stored_jobs_timed(url, lines, jobs)[0]


def stored_jobs_timed(url: str, lines: list[str], jobs: int) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds of the parent, CPU seconds of the workers together).

    On a shared machine the wall time says little about scaling; the CPU split says where
    the work went (the workers should hold nearly all of it)."""
    import resource

    from replays.records.parallel import import_lines_parallel

    migrate(url)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    start, cpu = time.perf_counter(), time.process_time()
    summary = import_lines_parallel(url, lines, jobs=jobs)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    workers = (after.ru_utime - children.ru_utime) + (after.ru_stime - children.ru_stime)
    if summary.imported != len(lines):
        raise RuntimeError(f"only {summary.line()}: {summary.failures[:3]}")
    return seconds, cpu, workers


class ServerCPU:
    """PostgreSQL: the CPU seconds of the server processes serving this process and its
    children, read from ``/proc`` while they run (a backend's times go with it when its
    connection closes). A backend is ours when its client's port is a socket one of our
    processes holds; others' backends (other sessions share the server) are left out.

    Kept cheap, since it runs in the measured process: the server's children are listed
    from one file, each new backend's port is read once, and only ours are read again."""

    POLL = 0.1

    def __init__(self) -> None:
        self._ports: dict[int, int | None] = {}  # backend pid -> client port
        self._postmaster = None
        for pid in self._children_of_server():
            self._ports[pid] = None  # there before: not ours
        self._ours: set[int] = set()
        self._seen: dict[int, float] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def stop(self) -> float:
        if not self._done.is_set():
            self._done.set()
            self._thread.join()
        return sum(self._seen.values())

    def _watch(self) -> None:
        tick = os.sysconf("SC_CLK_TCK")
        while not self._done.is_set():
            new = [pid for pid in self._children_of_server() if pid not in self._ports]
            for pid in new:
                self._ports[pid] = _client_port(pid)
            if new:
                ports = _our_ports()
                self._ours.update(p for p in new if self._ports[p] in ports)
            for pid in self._ours:
                try:
                    with open(f"/proc/{pid}/stat") as file:
                        fields = file.read().rsplit(")", 1)[1].split()
                    self._seen[pid] = (int(fields[11]) + int(fields[12])) / tick
                except (OSError, ValueError, IndexError):
                    continue
            time.sleep(self.POLL)

    def _children_of_server(self) -> list[int]:
        if self._postmaster is None:
            self._postmaster = _postmaster()
            if self._postmaster is None:
                return []
        try:
            with open(f"/proc/{self._postmaster}/task/{self._postmaster}/children") as file:
                return [int(pid) for pid in file.read().split()]
        except OSError:
            return []


def _postmaster() -> int | None:
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as file:
                    command = file.read().split(b"\0")
            except OSError:
                continue
            if command[0].endswith(b"/postgres") and b"-D" in command:
                return int(name)
    return None


def _client_port(pid: int) -> int | None:
    """A backend's client port, from its title: ``postgres: ... 127.0.0.1(43210) ...``."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            title = file.read().decode(errors="replace")
        return int(title.split("(", 1)[1].split(")", 1)[0])
    except (OSError, ValueError, IndexError):
        return None


def _our_ports() -> set[int]:
    """The local ports of the TCP sockets this process and its children hold."""
    pids = [os.getpid()]
    try:
        with open(f"/proc/{os.getpid()}/task/{os.getpid()}/children") as file:
            pids += [int(pid) for pid in file.read().split()]
    except OSError:
        pass
    sockets = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:["):
                    sockets.add(target[8:-1])
        except OSError:
            continue
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as file:
                for line in file.read().splitlines()[1:]:
                    fields = line.split()
                    if fields[9] in sockets:
                        ports.add(int(fields[1].rsplit(":", 1)[1], 16))
        except OSError:
            continue
    return ports


RAW_BATCH = 50  # games per executemany and commit, as the importer's default batch
RAW_TABLE = (
    "CREATE TABLE raw_events (id BIGINT PRIMARY KEY, originator_id {uuid} NOT NULL, "
    "originator_version BIGINT NOT NULL, topic TEXT NOT NULL, state {blob} NOT NULL)"
)
RAW_INDEX = "CREATE UNIQUE INDEX raw_events_idx ON raw_events (originator_id, originator_version)"


def stored_rows(url: str) -> list[list[tuple]]:
    """The event rows an import stored, in batches of ``RAW_BATCH`` games' rows."""
    engine = sa.create_engine(url)
    with engine.connect() as connection:
        rows = connection.execute(
            sa.text(
                "SELECT id, originator_id, originator_version, topic, state FROM ledger_events "
                "ORDER BY id"
            )
        ).all()
    engine.dispose()
    batches: list[list[tuple]] = []
    games: set = set()
    for row in rows:
        if row[1] not in games and len(games) % RAW_BATCH == 0:
            batches.append([])
        games.add(row[1])
        batches[-1].append((row[0], row[1], row[2], row[3], bytes(row[4])))
    return batches


def raw_sqlite(path: str, batches: list[list[tuple]]) -> float:
    import sqlite3

    connection = sqlite3.connect(path)
    connection.execute(RAW_TABLE.format(uuid="BLOB", blob="BLOB"))
    connection.execute(RAW_INDEX)
    connection.commit()
    start = time.perf_counter()
    for batch in batches:
        connection.executemany("INSERT INTO raw_events VALUES (?, ?, ?, ?, ?)", batch)
        connection.commit()
    seconds = time.perf_counter() - start
    connection.close()
    return seconds


def raw_postgres(batches: list[list[tuple]]) -> float | None:
    import psycopg

    made = _postgres_schema()
    if made is None:
        return None
    url, drop = made
    schema = url.rsplit("%3D", 1)[1]
    dsn = POSTGRES_URL.replace("postgresql+psycopg://", "postgresql://")
    try:
        with psycopg.connect(dsn, options=f"-csearch_path={schema}") as connection:
            connection.execute(RAW_TABLE.format(uuid="UUID", blob="BYTEA"))
            connection.execute(RAW_INDEX)
            connection.commit()
            rows = [
                [
                    (i, uuid.UUID(bytes=o) if isinstance(o, bytes) else o, v, t, s)
                    for i, o, v, t, s in b
                ]
                for b in batches
            ]
            start = time.perf_counter()
            with connection.cursor() as cursor:
                for batch in rows:
                    cursor.executemany("INSERT INTO raw_events VALUES (%s, %s, %s, %s, %s)", batch)
                    connection.commit()
            return time.perf_counter() - start
    finally:
        drop()


def _postgres_schema():
    schema = "bench_" + uuid.uuid4().hex[:12]
    base = POSTGRES_URL
    try:
        engine = sa.create_engine(base, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))
    except Exception as error:
        print(f"PostgreSQL not reachable ({error}); skipping it", file=sys.stderr)
        return None

    def drop() -> None:
        with engine.connect() as conn:
            conn.execute(sa.text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        engine.dispose()

    return f"{base}?options=-csearch_path%3D{schema}", drop


def run(quick: bool = False) -> dict[str, Any]:
    count = 60 if quick else 600
    load = os.getloadavg()
    lines = simulated_lines(count)
    events = sum(len(json.loads(line)["moves"]) + 4 for line in lines)  # + start, deal, settle
    baseline = in_memory(lines)
    result: dict[str, Any] = {
        "games": count,
        "events_approx": events,
        "in_memory_games_per_s": round(count / baseline, 1),
    }
    with tempfile.TemporaryDirectory() as folder:
        for engine_name in ("sqlite", "postgresql"):
            for batch in (1, 50):
                if engine_name == "sqlite":
                    url, drop = f"sqlite:///{folder}/batch{batch}.sqlite3", None
                else:
                    made = _postgres_schema()
                    if made is None:
                        break
                    url, drop = made
                try:
                    seconds, imported = stored(url, lines, batch)
                finally:
                    if drop is not None:
                        drop()
                key = f"{engine_name}_batch{batch}"
                result[f"{key}_games_per_s"] = round(imported / seconds, 1)
                result[f"{key}_events_per_s"] = round(events / seconds)
                result[f"{key}_ratio_to_in_memory"] = round(baseline / seconds, 3)
        # The rows the SQLite import stored: the exact event count, and the raw baseline's rows.
        batches = stored_rows(f"sqlite:///{folder}/batch50.sqlite3")
        events = sum(len(batch) for batch in batches)
        result["events"] = events
        raw = {"sqlite": raw_sqlite(f"{folder}/raw.sqlite3", batches)}
        raw_pg = raw_postgres(batches)
        if raw_pg is not None:
            raw["postgresql"] = raw_pg
    result["settle_events_per_s"] = round(events / baseline)
    rows = []
    for engine_name, seconds in raw.items():
        result[f"{engine_name}_raw_executemany_events_per_s"] = round(events / seconds)
    for engine_name in ("sqlite", "postgresql"):
        for batch in (1, 50):
            key = f"{engine_name}_batch{batch}"
            if f"{key}_games_per_s" not in result:
                continue
            # the same games, so the exact event count over the import's time
            per_s = round(result[f"{key}_games_per_s"] * events / count)
            result[f"{key}_events_per_s"] = per_s
            if engine_name in raw:
                ceiling = result[f"{engine_name}_raw_executemany_events_per_s"]
                result[f"{key}_fraction_of_raw"] = round(per_s / ceiling, 3)
                rows.append(
                    {
                        "benchmark": f"import events/s, {engine_name}, {batch} game(s) per "
                        "transaction (vs raw executemany of the same rows)",
                        "figure": per_s,
                        "baseline": ceiling,
                        "baseline_is": f"raw DB-API executemany, {engine_name}, same run",
                        "ratio": result[f"{key}_fraction_of_raw"],
                    }
                )
            result[f"{key}_fraction_of_settle"] = round(per_s / result["settle_events_per_s"], 3)
            rows.append(
                {
                    "benchmark": f"import events/s, {engine_name}, {batch} game(s) per "
                    "transaction (vs settle, nothing stored)",
                    "figure": per_s,
                    "baseline": result["settle_events_per_s"],
                    "baseline_is": "rummy-ledger settle on the same records, same run",
                    "ratio": result[f"{key}_fraction_of_settle"],
                }
            )
    rows += whole_import(lines, events, result)
    result["load_average"] = {
        "start": [round(x, 2) for x in load],
        "end": [round(x, 2) for x in os.getloadavg()],
    }
    result["rows"] = rows
    return result


WHOLE_ROUNDS = 3  # one process and --jobs 2 alternate, each engine; medians are reported


def whole_import(lines: list[str], events: int, result: dict[str, Any]) -> list[dict]:
    """``rummy-ledger import`` as a user runs it (stored, sealed and projected), one process
    against ``--jobs 2``, each engine, alternating, :data:`WHOLE_ROUNDS` rounds on the same
    records; the medians, each round's figures and load average beside them.

    Wall-clock scaling is the median one-process time over the median two-worker time. On
    a shared machine it says as much about the other sessions as about the import (the
    kernel shares the CPU per session), so the CPU-bound scaling is given beside it: the
    one-process CPU over the busiest share of the two-worker import's. On PostgreSQL the
    server's CPU for the import's own connections (read from ``/proc``, :class:`ServerCPU`)
    is counted on both sides, since it runs on the same two cores."""
    rows = []
    settle_rate = result["settle_events_per_s"]
    for engine_name in ("sqlite", "postgresql"):
        one, two, cpu, split, rounds = [], [], [], [], []
        for _ in range(WHOLE_ROUNDS):
            for jobs in (1, 2):
                with tempfile.TemporaryDirectory() as folder:
                    if engine_name == "sqlite":
                        url, drop = f"sqlite:///{folder}/whole.sqlite3", None
                    else:
                        made = _postgres_schema()
                        if made is None:
                            return rows
                        url, drop = made
                    load = os.getloadavg()[0]
                    server = ServerCPU() if engine_name == "postgresql" else None
                    try:
                        if jobs == 1:
                            seconds, _, used = stored_timed(url, lines, follow=True)
                            one.append(seconds)
                            cpu.append((used, server.stop() if server else 0.0))
                        else:
                            seconds, parent, workers = stored_jobs_timed(url, lines, jobs)
                            two.append(seconds)
                            split.append((parent, workers, server.stop() if server else 0.0))
                    finally:
                        if server is not None:
                            server.stop()
                        if drop is not None:
                            drop()
                    rounds.append(
                        {"jobs": jobs, "seconds": round(seconds, 3), "load_1min": round(load, 2)}
                    )
        key = f"{engine_name}_whole_import"
        one_s, two_s = statistics.median(one), statistics.median(two)
        used = statistics.median(c for c, _ in cpu)
        server_one = statistics.median(s for _, s in cpu)
        parent = statistics.median(p for p, _, _ in split)
        workers = statistics.median(w for _, w, _ in split)
        server_two = statistics.median(s for _, _, s in split)
        rate_one, rate_two = round(events / one_s), round(events / two_s)
        result[f"{key}_rounds"] = rounds
        result[f"{key}_events_per_s"] = rate_one
        result[f"{key}_cpu_seconds"] = round(used, 2)
        result[f"{key}_cpu_events_per_s"] = round(events / used)
        result[f"{key}_jobs2_events_per_s"] = rate_two
        result[f"{key}_jobs2_scaling"] = round(one_s / two_s, 3)
        result[f"{key}_jobs2_scaling_by_round"] = [
            round(a / b, 3) for a, b in zip(one, two, strict=True)
        ]
        result[f"{key}_jobs2_parent_cpu_seconds"] = round(parent, 2)
        result[f"{key}_jobs2_workers_cpu_seconds"] = round(workers, 2)
        # What two cores could give: the one-process CPU over the busiest share of the
        # two-worker import's (the workers' CPU split evenly, or the parent's if larger).
        result[f"{key}_jobs2_cpu_bound_scaling"] = round(
            used / max(workers / 2, parent, (parent + workers) / 2), 3
        )
        if engine_name == "postgresql":
            result[f"{key}_server_cpu_seconds"] = round(server_one, 2)
            result[f"{key}_jobs2_server_cpu_seconds"] = round(server_two, 2)
            result[f"{key}_jobs2_cpu_bound_scaling_with_server"] = round(
                (used + server_one) / max(workers / 2, parent, (parent + workers + server_two) / 2),
                3,
            )
        raw = result.get(f"{engine_name}_raw_executemany_events_per_s")
        label = "SQLite" if engine_name == "sqlite" else "PostgreSQL"
        rows.append(
            {
                "benchmark": f"rummy-ledger import, {label}: stored, sealed and projected, "
                "one process (events/s, vs settle)",
                "figure": rate_one,
                "baseline": settle_rate,
                "baseline_is": "rummy-ledger settle on the same records, same run",
                "ratio": round(rate_one / settle_rate, 3),
            }
        )
        if raw:
            rows.append(
                {
                    "benchmark": f"rummy-ledger import, {label}: stored, sealed and projected, "
                    "one process (events/s, vs raw executemany)",
                    "figure": rate_one,
                    "baseline": raw,
                    "baseline_is": f"raw DB-API executemany, {engine_name}, same run",
                    "ratio": round(rate_one / raw, 3),
                }
            )
        rows.append(
            {
                "benchmark": f"rummy-ledger import --jobs 2, {label} (events/s, vs one process)",
                "figure": rate_two,
                "baseline": rate_one,
                "baseline_is": "the same import in one process, same run",
                "ratio": result[f"{key}_jobs2_scaling"],
            }
        )
    return rows


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    for key, value in run(quick=quick).items():
        print(f"{key:40} {value}")
