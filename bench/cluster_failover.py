"""Read replicas and failover on a real pg_auto_failover formation (a monitor, a primary, a
synchronous standby; tests/cluster_support.py builds it in temporary directories, as root).

One core stands for one host. A deployment puts the standby on a host of its own; on this
two-core machine the bench pins each "host" to a CPU (``taskset``; children inherit it):

- **CPU 0, the primary's host**: the primary's postmaster and backends, its keeper, the
  importer, the monitor (a third host in a deployment; it wakes once a second) and the lag
  sampler (the operator's monitoring, polling both servers every 100 ms);
- **CPU 1, the standby's host**: the standby's postmaster, backends and WAL replay, its
  keeper, and the process serving the pages (this one, the Flask app in-process).

The importer, the lag sampler and the spin loop below each run in a session of their own,
as a service does: with the kernel's autogroups on (``autogroups`` in the result), a
session is one scheduling group whose weight is shared out among its CPUs by their load,
so an importer in this process's session took its part of the page process's weight on the
standby's core (about half while both were busy).

Stages, in one run:

- **replica page**: server time (``Server-Timing``) of ``/games/<id>/replay?move=20`` (an
  auditor; the replay cache off, so every request reads the store) served by the standby
  while the primary imports ``IMPORT_GAMES`` games in another process, against the same
  page on an idle single server: one plain PostgreSQL (no replication) and this process,
  both on CPU 1 with nothing else of the bench running, measured before the formation is
  built and again after it is gone (the two slices pooled; each is reported, so a drift in
  the machine's other load shows). p50/p95 and the p95 ratio (the issue's goal: at most
  1.5x), and the statements each page sent to each server, with their time. Per request,
  where each page's time went (``bench/_request_parts.py``). The after slice takes turns
  with as many pages drawn while a spin loop holds CPU 0: the ratios against those too,
  since on this machine a busy core slows the work of its neighbour.
- **replica lag**: ``replica_lag_seconds`` sampled every 100 ms during that import (from
  CPU 0): p50, p99, max.
- **failover**: ``kill -9`` of the primary (postmaster and keeper) during a second import:
  seconds from the kill to the first write the new primary accepts (a one-row insert tried
  every 100 ms on the app's multi-host URL); games acknowledged before the kill and not
  stored after it (lost, must be 0); games stored twice or with a gap (duplicates, must
  be 0). The importing process (this one) is not pinned in this stage; the nodes stay
  where they were.

Run: ``python -m bench cluster_failover`` (the issue's 2,000 games; ``--quick``: 300 games and
fewer requests); ``python -m bench.cluster_failover [--quick] [--netns]`` prints the result,
and ``--netns`` makes each node a host in a network namespace, so replication and the
pages' queries cross veth links and a bridge instead of loopback; ``--nice-import=N`` runs
the importer at that niceness (an operator's batch job below the primary's own processes on
its host); ``--import-policy=idle`` (or ``batch``) runs it under that scheduling policy
(``chrt``; ``CPUSchedulingPolicy=`` in deploy/systemd/rummy-ledger-import@.service);
``--wal-writer-delay=10ms`` sets both nodes' ``wal_writer_delay`` (and
``wal_writer_flush_after`` 0: docs/deploying.md, "The formation's settings");
``--import-batch=N`` has the importer store N games a transaction rather than its default
(``rummy-ledger import --batch``); ``--access-log-commit=remote_write`` commits the access
log's lines on the standby's receipt rather than its flush (``RUMMY_LEDGER_ACCESS_LOG_COMMIT``,
on both sides of the comparison; docs/deploying.md says what it trades). Needs root and
pg_auto_failover (.ci/run installs it). With fewer than two CPUs nothing is pinned, and the
result says so.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from bench._request_parts import RequestParts, backends_for, client_ports, processes_of
from bench._request_parts import summary as parts_summary

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

IMPORT_GAMES = 2000
QUICK_IMPORT_GAMES = 300
BASE_GAMES = 60
REQUESTS = 300  # a baseline slice (two slices: before and after)
QUICK_REQUESTS = 60
WARM_UP = 10  # requests first drawn on a new app (templates, connections), not counted
PRIMARY_CPU, STANDBY_CPU = "0", "1"
LAG_EVERY = 0.1


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _summary(values: list[float]) -> dict:
    return {
        "p50": round(statistics.median(values), 2),
        "p95": round(_percentile(values, 0.95), 2),
        "p99": round(_percentile(values, 0.99), 2),
        "n": len(values),
    }


def _records(count: int, seed: int) -> list[dict]:
    from domain.simulation.floor import Floor
    from replays.simulation.batch import Simulation

    return list(Simulation(Floor(seed=seed, variants=("points",))).games(count))


# What the access log's lines commit under (RUMMY_LEDGER_ACCESS_LOG_COMMIT): run() sets it.
ACCESS_LOG_COMMIT = {"level": "on"}


def _app(primary_url: str, read_url: str | None = None):
    from web import create_app

    # As `serve` runs it (not TESTING, which reads the projection status on every request),
    # but with the replay cache off so that every request reads the store.
    config = {
        "DATABASE_URL": primary_url,
        "REPLAY_CACHE": False,
        "SESSION_COOKIE_SECURE": False,
        "ACCESS_LOG_COMMIT": ACCESS_LOG_COMMIT["level"],
    }
    if read_url:
        config["READ_DATABASE_URL"] = read_url
    return create_app(config)


class _Queries:
    """Statements each page sent to each server, and their time (SQLAlchemy's cursor events,
    on every engine: the app's and the event store's)."""

    def __init__(self):
        import sqlalchemy as sa

        self.start({})
        self.on = False
        sa.event.listen(sa.engine.Engine, "before_cursor_execute", self._before)
        sa.event.listen(sa.engine.Engine, "after_cursor_execute", self._after)

    def start(self, names: dict[str, str]) -> None:
        """Count from now on, afresh; ``names``: a URL's host list -> the server's name."""
        self.names = names
        self.counts: dict[str, int] = {}
        self.seconds: dict[str, float] = {}
        self.statements: dict[tuple[str, str], list[float]] = {}
        self.on = True

    def _server(self, connection) -> str:
        return self.names.get(_servers(connection.engine.url), "other")

    def _before(self, connection, *_):
        if self.on:
            connection.info["bench_started"] = time.perf_counter()

    def _after(self, connection, _cursor, statement, *_):
        started = connection.info.pop("bench_started", None)
        if started is None:
            return
        server = self._server(connection)
        took = time.perf_counter() - started
        self.counts[server] = self.counts.get(server, 0) + 1
        self.seconds[server] = self.seconds.get(server, 0.0) + took
        kept = self.statements.setdefault((server, " ".join(statement.split())[:70]), [0, 0.0])
        kept[0] += 1
        kept[1] += took

    def heaviest(self, pages: int, count: int = 8) -> list[str]:
        """The statements that took the most time a page, with the server that ran them."""
        ranked = sorted(self.statements.items(), key=lambda item: -item[1][1])[:count]
        return [
            f"{server}: {n / pages:.2f} a page, {1000 * took / pages:.2f} ms a page: {text}"
            for (server, text), (n, took) in ranked
        ]

    def per_page(self, pages: int) -> dict:
        return {
            server: {
                "statements": round(self.counts[server] / pages, 2),
                "ms": round(1000 * self.seconds[server] / pages, 2),
            }
            for server in sorted(self.counts)
        }


def _servers(url) -> str:
    """The host:port list a URL names (a multi-host URL keeps them as ``host`` parameters)."""
    hosts = url.query.get("host")
    return str(hosts) if hosts else f"{url.host}:{url.port}"


def _hosts(url: str) -> str:
    from sqlalchemy.engine import make_url

    from replays.store.settings import read_database_url

    return _servers(make_url(read_database_url(url)))


def _page_times(client, path: str, requests: int, want: str, parts=None) -> list[float]:
    times = []
    for _ in range(requests):
        response = parts.get(client, path) if parts is not None else client.get(path)
        assert response.status_code == 200, response.status_code
        assert response.headers["X-Rummy-Ledger-Read"] == want
        timing = response.headers["Server-Timing"]
        times.append(float(timing.split("dur=")[1]))
    return times


def _cpu_seconds(pid: int | None) -> float:
    from bench.cluster import process_cpu_seconds

    return process_cpu_seconds(pid)


def _pin(cpus: str | None) -> None:
    """Hold this process (and what it starts from now on) to ``cpus``; None: every CPU."""
    wanted = {int(cpus)} if cpus else set(range(os.cpu_count() or 1))
    os.sched_setaffinity(0, wanted)


def _pinned(command: list[str], cpus: str | None) -> list[str]:
    return ["taskset", "-c", cpus, *command] if cpus else command


def _import_process(
    url: str,
    lines: list[str],
    directory: Path,
    cpus: str | None,
    nice: int = 0,
    policy: str = "other",
    batch: int | None = None,
):
    path = directory / f"import-{time.monotonic_ns()}.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    env = dict(os.environ, RUMMY_LEDGER_DATABASE_URL=url)
    command = [str(Path(sys.executable).parent / "rummy-ledger"), "import", str(path)]
    if batch:
        command += ["--batch", str(batch)]
    if nice:
        command = ["nice", "-n", str(nice), *command]
    if policy != "other":  # as systemd's CPUSchedulingPolicy= (deploy/systemd)
        command = ["chrt", f"--{policy}", "0", *command]
    # A session of its own, as a service or an operator's shell has: with the kernel's
    # autogroups on, each session is a scheduling group, and in this process's group the
    # importer's load on the primary's core would take half of the page process's weight
    # on the standby's (a group's weight is shared out among its CPUs by their load).
    importing = subprocess.Popen(
        _pinned(command, cpus),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    if policy == "idle":
        # The group's weight too, as CPUWeight=idle gives the unit's cgroup: the nearest an
        # autogroup has is nice 19 (weight 15 against 1024).
        _autogroup_nice(importing.pid, 19)
    return importing


def _autogroup_nice(pid: int, nice: int) -> None:
    try:
        with open(f"/proc/{pid}/autogroup", "w") as group:
            group.write(str(nice))
    except OSError:  # no autogroups (or already ended): the policy alone
        pass


def autogroups() -> str:
    """Whether the kernel's autogroups are on (each session a scheduling group)."""
    try:
        with open("/proc/sys/kernel/sched_autogroup_enabled") as enabled:
            return "on" if enabled.read().strip() == "1" else "off"
    except OSError:
        return "absent"


def _lag_process(primary_url: str, read_url: str, cpus: str | None) -> subprocess.Popen:
    """``replica_lag_seconds`` every :data:`LAG_EVERY` s, one line each, until stdin closes:
    the operator's monitoring, on the primary's host, not in the process serving pages."""
    command = [sys.executable, "-m", "bench.cluster_failover", "--sample-lag", primary_url,
               read_url]  # fmt: skip
    return subprocess.Popen(
        _pinned(command, cpus),
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,  # the primary host's process, not the page's group
    )


def sample_lag(primary_url: str, read_url: str) -> None:
    import select

    from sqlalchemy import text

    from replays.store import replicas
    from replays.store.db import engine_for
    from replays.store.settings import database_url

    # What the primary itself says of its standby (PostgreSQL's own timing of each WAL
    # position: sent until written, flushed, replayed there, and the answer back).
    # And the WAL a commit made now would wait for: bytes inserted but not yet flushed on
    # the primary, and not yet flushed by the standby (a page's line commits behind them).
    reported = text(
        "SELECT extract(epoch FROM write_lag), extract(epoch FROM flush_lag),"
        " extract(epoch FROM replay_lag),"
        " pg_wal_lsn_diff(pg_current_wal_insert_lsn(), pg_current_wal_flush_lsn()),"
        " pg_wal_lsn_diff(pg_current_wal_insert_lsn(), flush_lsn) FROM pg_stat_replication"
    )
    while True:
        lag = replicas.replica_lag_seconds(primary_url, read_url, fresh=True)
        with engine_for(database_url(primary_url)).connect() as connection:
            row = connection.execute(reported).first()
        if lag is not None:
            print(json.dumps([lag, *(float(x) if x is not None else None for x in row or ())]),
                  flush=True)  # fmt: skip
        ready, _, _ = select.select([sys.stdin], [], [], LAG_EVERY)
        if ready and not sys.stdin.read(1):
            return


def _watched(postmasters: dict[str, int], importer: int) -> dict[str, list[int]]:
    """The processes whose CPU and run-queue wait each page's parts show: the standby's by
    kind, and on the primary the walsender, the walwriter, the backends of this process (the
    access-log line's) and the rest (the importer's, the sampler's), and the importer."""
    standby = processes_of(postmasters["node2"])
    primary = processes_of(postmasters["node1"])
    ours = backends_for(primary["backends"], client_ports())
    watched = {f"standby_{kind}": pids for kind, pids in standby.items() if kind != "walsender"}
    watched.update(
        primary_walsender=primary["walsender"],
        primary_walwriter=primary["walwriter"],
        primary_line_backends=ours,
        primary_other_backends=[pid for pid in primary["backends"] if pid not in ours],
        primary_importer=[importer],
    )
    return watched


def _perf_sched(postmasters: dict[str, int], importer: int, after: float = 4.0):
    """With ``BENCH_PERF_SCHED=<file>``: ``perf sched record`` of the whole machine for 3 s,
    ``after`` seconds into the import, and the pids of the processes that matter beside it
    (``<file>.pids.json``), for ``perf sched timehist``. Returns a step to call between
    blocks of pages (None once done), or None."""
    path = os.environ.get("BENCH_PERF_SCHED")
    if not path:
        return None
    state: dict = {}

    def step(elapsed: float):
        if "process" not in state and elapsed >= after:
            pids = {**_watched(postmasters, importer), "page_process": [os.getpid()]}
            Path(path + ".pids.json").write_text(json.dumps(pids))
            state["process"] = subprocess.Popen(
                ["perf", "sched", "record", "-a", "-o", path, "--", "sleep", "3"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
        return step

    return step


def _seed_games(url: str, base: list[dict]) -> None:
    from replays.readmodels.projections import catch_up
    from replays.records.importer import import_lines
    from replays.store.application import Ledger
    from replays.store.schema import migrate
    from replays.store.settings import database_url

    url = database_url(url)
    migrate(url)
    ledger = Ledger(url, env={"CREATE_TABLE": "no"})
    assert import_lines(ledger, [json.dumps(r) for r in base]).ok
    catch_up(url)


def _idle_single_server(
    base: list[dict],
    path: str,
    requests: int,
    cpus: str | None,
    queries: _Queries,
    parts,
    neighbour_cpu: str | None = None,
):
    """The page on one plain PostgreSQL server, it and this process on ``cpus``; ``queries``
    counts what the measured pages asked of it, ``parts`` where their time went. Returns
    the pages' times, this process's CPU a page, and (``neighbour_cpu``) the times and
    parts of as many pages again, in blocks of ten taking turns with the others, drawn
    while a spin loop holds that CPU (the primary's "host"), as busy as during the import:
    on this machine a busy core slows its neighbour's work (docs/scaling.md)."""
    from auth_support import signed_in
    from cluster_support import SingleServer

    from replays.store.db import engine_for
    from replays.store.settings import database_url

    single = SingleServer(cpus=cpus).start()
    spinner = None
    try:
        _seed_games(single.url(), base)
        _pin(cpus)
        try:
            client = signed_in(_app(single.url()))
            _page_times(client, path, WARM_UP, "primary")
            if neighbour_cpu is not None:
                spinner = subprocess.Popen(
                    _pinned([sys.executable, "-c", "while True: pass"], neighbour_cpu),
                    start_new_session=True,  # the other host's load, not in the page's group
                )
                os.kill(spinner.pid, signal.SIGSTOP)
            queries.start({_hosts(single.url()): "single server"})
            times, cpu, spun, spun_parts = [], 0.0, [], []
            try:
                for block in range(0, requests, 10):
                    started = time.process_time()
                    times += _page_times(client, path, min(10, requests - block), "primary", parts)
                    cpu += time.process_time() - started
                    if spinner is not None:
                        os.kill(spinner.pid, signal.SIGCONT)
                        time.sleep(0.02)
                        kept = len(parts.rows)
                        spun += _page_times(client, path, min(10, requests - block), "primary",
                                            parts)  # fmt: skip
                        spun_parts += parts.rows[kept:]
                        del parts.rows[kept:]
                        os.kill(spinner.pid, signal.SIGSTOP)
            finally:
                queries.on = False
            return times, cpu / requests, spun, spun_parts
        finally:
            if spinner is not None:
                spinner.kill()
                spinner.wait()
            _pin(None)
            engine_for(database_url(single.url())).dispose()
    finally:
        single.close()


def run(
    quick: bool = False,
    netns: bool = False,
    import_nice: int = 0,
    access_log_commit: str = "on",
    import_policy: str = "other",
    wal_writer: str | None = None,
    import_batch: int | None = None,
) -> dict:
    from cluster_support import Cluster, missing

    reason = missing()
    if reason:
        return {"skipped": reason, "rows": []}
    from auth_support import signed_in

    from replays.records.importer import import_lines
    from replays.store import replicas
    from replays.store.application import Ledger
    from replays.store.db import engine_for
    from replays.store.settings import database_url

    ACCESS_LOG_COMMIT["level"] = access_log_commit
    games = QUICK_IMPORT_GAMES if quick else IMPORT_GAMES
    requests = QUICK_REQUESTS if quick else REQUESTS
    pinning = (os.cpu_count() or 1) >= 2
    primary_cpu, standby_cpu = (PRIMARY_CPU, STANDBY_CPU) if pinning else (None, None)
    load = os.getloadavg()
    directory = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    base = _records(BASE_GAMES, seed=61)
    # The games to import, as JSON lines: text, which Python's collector never walks, so the
    # page process's collections are a server's, not the bench's (as dicts they were 110,000
    # more objects to walk: a full collection took 5 times as long, in the pages' p95).
    imported = [json.dumps(r) for r in _records(games, seed=62)]
    second = [json.dumps(r) for r in _records(games // 2, seed=63)]
    target = max(base, key=lambda r: len(r["moves"]))["game_id"]
    path = f"/games/{target}/replay?move=20"

    # The same page on an idle single server, on the standby's core alone: before...
    queries = _Queries()
    parts = RequestParts(queries)
    idle_before, idle_cpu, _, _ = _idle_single_server(
        base, path, requests, standby_cpu, queries, parts
    )
    idle_queries = queries.per_page(len(idle_before))
    idle_parts, parts.rows = parts.rows, []
    load_idle_before = os.getloadavg()

    cpus = {"monitor": primary_cpu, "node1": primary_cpu, "node2": standby_cpu}
    cluster = Cluster(netns=netns, cpus={k: v for k, v in cpus.items() if v}).start()
    try:
        url = database_url(cluster.url())
        for node in cluster.nodes if wal_writer else ():
            # The WAL writer flushes what the import wrote every wal_writer_delay, so the
            # walsender streams it as it comes instead of in whatever a page's commit finds.
            for name, value in (("wal_writer_delay", wal_writer), ("wal_writer_flush_after", "0")):
                cluster.sql(node, f"ALTER SYSTEM SET {name} = '{value}'")
            cluster.sql(node, "SELECT pg_reload_conf()")
        _seed_games(cluster.url(), base)
        ledger = Ledger(url, env={"CREATE_TABLE": "no"})
        # What the standby's pages and the primary's commits run under (reported).
        settings = {
            f"{node}.{name}": cluster.sql(cluster.node(node), f"SHOW {name}")
            for node, names in (
                (
                    "node1",
                    (
                        "synchronous_commit",
                        "synchronous_standby_names",
                        "wal_writer_delay",
                        "wal_writer_flush_after",
                    ),
                ),
                ("node2", ("max_standby_streaming_delay", "hot_standby_feedback")),
            )
            for name in names
        }

        # The standby serving it while the primary imports, and its lag meanwhile.
        read_url = cluster.url(attrs="prefer-standby", nodes=[cluster.node("node2")])
        app = _app(cluster.url(), read_url)
        replicas.forget()
        _pin(standby_cpu)
        client = signed_in(app)
        _page_times(client, path, WARM_UP, "replica")
        sampler = _lag_process(cluster.url(), app.config["READ_DATABASE_URL"], primary_cpu)
        load_busy_start = os.getloadavg()
        postmasters = {name: cluster.node(name).postmaster_pid() for name in ("node1", "node2")}
        cpu_before = {name: _cpu_seconds(pid) for name, pid in postmasters.items()}
        page_cpu_before = time.process_time()
        importing = _import_process(
            cluster.url(),
            imported,
            directory,
            primary_cpu,
            nice=import_nice,
            policy=import_policy,
            batch=import_batch,
        )
        busy: list[float] = []
        queries.start({_hosts(cluster.url()): "primary", _hosts(read_url): "replica"})
        started = time.monotonic()
        profile = None
        if os.environ.get("BENCH_PROFILE"):
            import cProfile

            profile = cProfile.Profile()
            profile.enable()
        perf = _perf_sched(postmasters, importing.pid)
        while importing.poll() is None:
            parts.watched = _watched(postmasters, importing.pid)
            busy += _page_times(client, path, 10, "replica", parts)
            perf = perf and perf(time.monotonic() - started)
        if profile is not None:
            profile.disable()
            profile.dump_stats(os.environ["BENCH_PROFILE"])
        import_seconds = time.monotonic() - started
        # What each host's CPU did meanwhile: what a deployment must provision beyond it.
        busy_cpu = {
            f"{name}_postgres": round(_cpu_seconds(pid) - cpu_before[name], 1)
            for name, pid in postmasters.items()
        }
        busy_cpu["page_process"] = round(time.process_time() - page_cpu_before, 2)
        queries.on = False
        busy_parts, parts.rows, parts.watched = parts.rows, [], {}
        busy_queries = queries.per_page(len(busy)), queries.heaviest(len(busy))
        load_busy_end = os.getloadavg()
        _pin(None)
        sampler.stdin.close()
        lags = [json.loads(line) for line in sampler.stdout]
        lags, reported_lags = [x[0] for x in lags], [x[1:] for x in lags]
        sampler.wait(timeout=30)
        assert importing.returncode == 0, importing.stderr.read().decode()[-2000:]

        # Failover during a second import, from the kill to the first write accepted.
        with engine_for(url).begin() as connection:
            connection.exec_driver_sql("CREATE TABLE IF NOT EXISTS bench_probe (at float)")
        acknowledged: dict[str, float] = {}
        writer = threading.Thread(
            target=import_lines,
            args=(ledger, second),
            kwargs={
                "batch": 5,
                "on_outcome": lambda o: acknowledged.__setitem__(o.game_id, time.monotonic()),
            },
        )
        writer.start()
        while len(acknowledged) < len(second) // 3:
            time.sleep(0.05)
        killed = time.monotonic()
        old_primary = cluster.node("node1")
        cluster.kill(old_primary)
        before = {game for game, when in acknowledged.items() if when < killed}
        # The first write the new primary accepts: a backend of the killed postmaster can
        # outlive it for a moment and still take a pooled connection's write (seen once:
        # 0.01 s), which is not a failover.
        old_address = (old_primary.host, old_primary.port)
        while True:
            try:
                with engine_for(url).begin() as connection:
                    server = connection.exec_driver_sql(
                        "SELECT host(inet_server_addr()), inet_server_port()"
                    ).one()
                    if (server[0], server[1]) == old_address:
                        raise ConnectionError("still the killed primary's backend")
                    connection.exec_driver_sql(
                        "INSERT INTO bench_probe VALUES (%(at)s)", {"at": time.time()}
                    )
                break
            except Exception:
                time.sleep(0.1)
        failover = time.monotonic() - killed
        writer.join(timeout=300)
        from replays.records.importer import build_game

        stored = ledger.stored_games(json.loads(line)["game_id"] for line in second)
        lost = len(before - stored)
        from sqlalchemy import text

        with engine_for(url).connect() as connection:
            counts = dict(
                connection.execute(
                    text("SELECT originator_id, count(*) FROM ledger_events GROUP BY originator_id")
                ).all()
            )
        from replays.records.codec import read_records

        duplicates = 0
        for _, record in read_records(second):
            found = counts.get(ledger.aggregate_id(record.game_id), 0)
            if found and found != len(build_game(record).pending_events):
                duplicates += 1
    finally:
        cluster.close()

    # ...and after, with the formation gone.
    load_idle_after_start = os.getloadavg()
    # The after slice takes turns with pages whose neighbouring core is held busy.
    idle_after, _, neighboured, neighboured_parts = _idle_single_server(
        base, path, requests, standby_cpu, queries, parts, neighbour_cpu=primary_cpu
    )
    idle_parts += parts.rows
    idle = idle_before + idle_after
    idle_p95, busy_p95 = _percentile(idle, 0.95), _percentile(busy, 0.95)
    idle_p50, busy_p50 = statistics.median(idle), statistics.median(busy)
    figures = {
        "pinning": (
            {
                "primary_host_cpu": primary_cpu,
                "standby_host_cpu": standby_cpu,
                "primary_host": "primary postgres + keeper, importer, monitor, lag sampler",
                "standby_host": "standby postgres + keeper, the page-serving process",
                "idle_single_server": "one plain postgres + the page-serving process",
            }
            if pinning
            else "none (fewer than two CPUs)"
        ),
        "network": "each node a host in a network namespace, veth to a bridge"
        if netns
        else "loopback",
        "load_average_at_start": [round(x, 2) for x in load],
        "load_average_idle_before": [round(x, 2) for x in load_idle_before],
        "load_average_busy": [
            [round(x, 2) for x in load_busy_start],
            [round(x, 2) for x in load_busy_end],
        ],
        "load_average_idle_after": [round(x, 2) for x in load_idle_after_start],
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "import_games": games,
        "import_nice": import_nice,
        "import_policy": import_policy,
        "import_batch": import_batch or "default",
        "autogroups": autogroups(),
        "wal_writer_delay": wal_writer or "default",
        "access_log_commit": access_log_commit,
        "import_seconds": round(import_seconds, 1),
        "cpu_seconds_during_import": busy_cpu,
        "standby_settings": settings,
        "idle_single_server_ms": _summary(idle),
        "idle_single_server_before_ms": _summary(idle_before),
        "idle_single_server_after_ms": _summary(idle_after),
        "standby_during_import_ms": _summary(busy),
        # CPU time of the page-serving process a page (Python: routing, the replay, the
        # template; the driver), which waits add to; a machine's other load shifts it little.
        "page_process_cpu_ms_a_page": {
            "idle_single_server": round(1000 * idle_cpu, 2),
            "standby_during_import": round(1000 * busy_cpu["page_process"] / len(busy), 2),
        },
        "idle_single_server_page_queries": idle_queries,
        "standby_page_queries": busy_queries[0],
        "standby_page_heaviest_statements": busy_queries[1],
        # Per request, mean ms of each part (bench/_request_parts.py says what each is).
        "page_parts_ms": {
            "idle_single_server": parts_summary(idle_parts),
            "standby_during_import": parts_summary(busy_parts),
            "idle_single_server_busy_neighbour": parts_summary(neighboured_parts)
            if neighboured_parts
            else None,
        },
        "p50_ratio": round(busy_p50 / idle_p50, 3),
        "p95_ratio": round(busy_p95 / idle_p95, 3),
        "target_p95_ratio_at_most_1_5_met": busy_p95 / idle_p95 <= 1.5,
        # Against the idle single server with the neighbouring core held busy (taking turns
        # with the after slice): what the standby adds beyond what a busy neighbour costs.
        "idle_single_server_busy_neighbour_ms": _summary(neighboured) if neighboured else None,
        "p50_ratio_busy_neighbour": round(busy_p50 / statistics.median(neighboured), 3)
        if neighboured
        else None,
        "p95_ratio_busy_neighbour": round(busy_p95 / _percentile(neighboured, 0.95), 3)
        if neighboured
        else None,
        "replica_lag_seconds": {
            "p50": _percentile(lags, 0.5) if lags else None,
            "p99": _percentile(lags, 0.99) if lags else None,
            "max": max(lags) if lags else None,
            "samples": len(lags),
        },
        # pg_stat_replication's write, flush and replay lag (the primary's own timing).
        "standby_reported_lag_ms": {
            name: _summary([1000 * r[i] for r in reported_lags if r and r[i] is not None])
            for i, name in enumerate(("write", "flush", "replay"))
            if any(r and r[i] is not None for r in reported_lags)
        },
        "wal_a_commit_waits_for_kb": {
            name: _summary([r[i] / 1024 for r in reported_lags if len(r) > i and r[i] is not None])
            for i, name in ((3, "unflushed_on_primary"), (4, "not_flushed_by_standby"))
            if any(len(r) > i and r[i] is not None for r in reported_lags)
        },
        "failover_seconds": round(failover, 2),
        "acknowledged_before_kill": len(before),
        "acknowledged_lost": lost,
        "duplicates": duplicates,
    }
    where = "one core each for the primary's and the standby's host" if pinning else "unpinned"
    rows = [
        {
            "benchmark": f"replay page p95, standby while the primary imports {games} games "
            f"({where})",
            "figure": f"{busy_p95:.1f} ms",
            "baseline": f"{idle_p95:.1f} ms",
            "baseline_is": "the same page on an idle single server, one core",
            "ratio": round(busy_p95 / idle_p95, 2),
        },
        {
            "benchmark": f"replay page p50, standby while the primary imports {games} games "
            f"({where})",
            "figure": f"{busy_p50:.1f} ms",
            "baseline": f"{idle_p50:.1f} ms",
            "baseline_is": "the same page on an idle single server, one core",
            "ratio": round(busy_p50 / idle_p50, 2),
        },
        {
            "benchmark": "failover: kill -9 of the primary to the first accepted write",
            "figure": f"{failover:.1f} s",
            "baseline": "-",
            "ratio": None,
        },
    ]
    return {**figures, "rows": rows}


if __name__ == "__main__":
    if sys.argv[1:2] == ["--sample-lag"]:
        sample_lag(sys.argv[2], sys.argv[3])
    else:
        nice = next((int(a.split("=")[1]) for a in sys.argv if a.startswith("--nice-import=")), 0)
        commit = next(
            (a.split("=")[1] for a in sys.argv if a.startswith("--access-log-commit=")), "on"
        )
        policy = next(
            (a.split("=")[1] for a in sys.argv if a.startswith("--import-policy=")), "other"
        )
        result = run(
            quick="--quick" in sys.argv,
            netns="--netns" in sys.argv,
            import_nice=nice,
            access_log_commit=commit,
            import_policy=policy,
            wal_writer=next(
                (a.split("=")[1] for a in sys.argv if a.startswith("--wal-writer-delay=")), None
            ),
            import_batch=next(
                (int(a.split("=")[1]) for a in sys.argv if a.startswith("--import-batch=")), None
            ),
        )
        print(json.dumps(result, indent=2, default=str))
