"""Serving at scale: the site under gunicorn against the development server, and (stages
added by the cluster work) read replicas and failover.

Each stage is a function in :data:`STAGES`, run in order, that returns its figures and its
table rows; ``python -m bench.cluster [--quick] [stage ...]`` runs some of them.

Stage ``gunicorn`` (issue 31): `wrk -t2 -c8 --latency`, 15 s a server, on a Points replay
page (``/games/<id>/replay?move=20``) signed in as the demo auditor, over the 300-game demo
in SQLite: today's development server (``rummy-ledger serve --dev``, Werkzeug, threaded),
the baseline, and ``rummy-ledger serve`` (gunicorn) with its defaults, both up at once and
measured in three alternating 5-second slices (on a shared machine the others' load drifts
over minutes: back-to-back runs would compare the drift); then gunicorn with other
worker/thread counts, one 15-second run each. Every server is first warmed up at the same
load (the first request of each worker builds its caches). The
target (at least 1.8x the baseline's requests/s, p99 under 100 ms) is reported, never
asserted. Beside wrk's figures each measure reports the servers' CPU time per request
(user + system, from /proc): on a machine shared with other work the requests/s follow the
CPU the others leave, the CPU a request costs does not; cores (Werkzeug: one, its threads
share a GIL) divided by it is the ceiling on an idle machine. Needs `wrk` (Debian package
`wrk`).
"""

from __future__ import annotations

import http.client
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DEMO_GAMES = 300
MOVE = 20
CONNECTIONS = 8
WRK_THREADS = 2
SECONDS = 15
WARM_UP_SECONDS = 3
SLICES = 3  # the headline pair's alternating wrk runs, seconds // SLICES each


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-c", "from web.cli import main; main()", *args]


def demo_database(folder: str, games: int) -> tuple[str, str, str]:
    """The demo's database with ``games`` games: (url, auditor's username, password)."""
    url = f"sqlite:///{folder}/demo.sqlite3"
    env = dict(os.environ, RUMMY_LEDGER_DATABASE_URL=url, RUMMY_LEDGER_KEY_DIR=f"{folder}/keys")
    output = subprocess.run(
        _cli("demo", "--games", str(games), "--no-serve"),
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    match = re.search(r"^\s*auditor\s+(\S+)\s+(\S+)\s*$", output, re.M)
    if match is None:
        raise RuntimeError(f"the demo printed no auditor account:\n{output}")
    return url, match.group(1), match.group(2)


def points_game(url: str, moves: int) -> str:
    import sqlalchemy as sa

    from replays.store.db import engine_for

    with engine_for(url).connect() as connection:
        game = connection.execute(
            sa.text(
                "SELECT game_id FROM games WHERE variant = 'points' AND moves_count >= :moves "
                "ORDER BY game_id LIMIT 1"
            ),
            {"moves": moves},
        ).scalar()
    if game is None:
        raise RuntimeError(f"no Points game of {moves}+ moves in the demo")
    return game


def process_cpu_seconds(pid: int | None) -> float:
    """CPU time (user + system) so far of process ``pid`` and its live children (a server's
    workers; a postmaster's backends, WAL sender or receiver and startup process), from
    ``/proc``."""
    if pid is None:
        return 0.0
    total = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(entry.name) == pid or int(fields[1]) == pid:
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


class Server:
    """``rummy-ledger serve`` (with ``options``) in its own process on a free port."""

    def __init__(self, url: str, *options: str):
        self.port = _free_port()
        env = dict(os.environ, RUMMY_LEDGER_DATABASE_URL=url)
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        self.process = subprocess.Popen(
            _cli("serve", "--port", str(self.port), *options),
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if self.get("/healthz")[0] == 200:
                    return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"serve {' '.join(options)} did not start")

    def get(self, path: str, headers: dict | None = None) -> tuple[int, str, dict]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            connection.request("GET", path, headers=headers or {})
            response = connection.getresponse()
            return response.status, response.read().decode(), dict(response.getheaders())
        finally:
            connection.close()

    def sign_in(self, username: str, password: str) -> str:
        """The session cookie of ``username``."""
        from urllib.parse import urlencode

        _, form, headers = self.get("/login")
        cookie = headers.get("Set-Cookie", "").split(";")[0]
        token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', form).group(1)
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            body = urlencode({"csrf_token": token, "username": username, "password": password})
            connection.request(
                "POST",
                "/login",
                body=body,
                headers={"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie},
            )
            response = connection.getresponse()
            response.read()
            if response.status != 302:
                raise RuntimeError(f"signing in as {username} failed: {response.status}")
            return response.getheader("Set-Cookie", "").split(";")[0]
        finally:
            connection.close()

    def cpu_seconds(self) -> float:
        """CPU time (user + system) used so far by the server and its live workers."""
        return process_cpu_seconds(self.process.pid)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0}


def _ms(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", text).groups()
    return float(number) * _UNITS[unit]


def wrk(port: int, path: str, cookie: str, seconds: int) -> dict[str, float]:
    """One wrk run: requests/s, latency p50/p90/p99 (ms), errors and non-2xx answers."""
    command = ["wrk", f"-t{WRK_THREADS}", f"-c{CONNECTIONS}", f"-d{seconds}s", "--latency"]
    command += ["-H", f"Cookie: {cookie}", f"http://127.0.0.1:{port}{path}"]
    output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    figures: dict[str, float] = {
        "requests_per_second": float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1)),
    }
    for pct in (50, 90, 99):
        figures[f"p{pct}_ms"] = round(_ms(re.search(rf"^\s+{pct}%\s+(\S+)", output, re.M)[1]), 2)
    non_2xx = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", output)
    figures["non_2xx"] = int(non_2xx.group(1)) if non_2xx else 0
    errors = re.search(
        r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", output
    )
    figures["socket_errors"] = sum(int(n) for n in errors.groups()) if errors else 0
    return figures


def _processes(options: tuple[str, ...], cores: int) -> int:
    """Processes answering requests: Werkzeug's one (threads share its GIL), or the workers."""
    if "--dev" in options:
        return 1
    if "--workers" in options:
        return int(options[options.index("--workers") + 1])
    return cores


def _load_average() -> list[float]:
    return [round(value, 2) for value in os.getloadavg()]


def _measure(server: Server, path: str, cookie: str, seconds: int, cores: int, options):
    """One wrk run against ``server``, with the CPU its processes spent meanwhile."""
    load_before = _load_average()
    cpu_before = server.cpu_seconds()
    figures: dict[str, Any] = wrk(server.port, path, cookie, seconds)
    served = figures["requests_per_second"] * seconds
    figures["cpu_seconds"] = server.cpu_seconds() - cpu_before
    figures["served"] = served
    figures["processes"] = min(cores, _processes(options, cores))
    figures["load_average_before"] = load_before
    figures["load_average_after"] = _load_average()
    return figures


def _summary(runs: list[dict[str, Any]], seconds: int) -> dict[str, Any]:
    """Requests/s over all the runs; the latency percentiles' medians (wrk gives no merged
    histogram); CPU per request over all of them, and the ceiling it gives on idle cores:
    CPU per request does not depend on how much of the machine others take."""
    served = sum(run["served"] for run in runs)
    cpu_ms = sum(run["cpu_seconds"] for run in runs) * 1000 / max(served, 1)
    return {
        "requests_per_second": round(served / (seconds * len(runs)), 2),
        **{
            key: statistics.median(run[key] for run in runs)
            for key in ("p50_ms", "p90_ms", "p99_ms")
        },
        "non_2xx": sum(run["non_2xx"] for run in runs),
        "socket_errors": sum(run["socket_errors"] for run in runs),
        "server_cpu_ms_per_request": round(cpu_ms, 2),
        "ceiling_requests_per_second_on_idle_cores": round(runs[0]["processes"] * 1000 / cpu_ms, 1),
        "load_average_before": runs[0]["load_average_before"],
        "load_average_after": runs[-1]["load_average_after"],
        "slices_requests_per_second": [run["requests_per_second"] for run in runs],
    }


def stage_gunicorn(quick: bool) -> dict[str, Any]:
    if shutil.which("wrk") is None:
        raise RuntimeError("bench cluster needs wrk (apt-get install wrk)")
    seconds = 5 if quick else SECONDS
    # The headline pair is measured in alternating slices, both servers up: on a shared
    # machine the others' load drifts over minutes, and back-to-back runs compare drifts.
    rounds = 1 if quick else SLICES
    cores = os.cpu_count() or 1
    pair: list[tuple[str, tuple[str, ...]]] = [("dev", ("--dev",)), ("gunicorn_default", ())]
    # The alternatives the defaults were chosen over (docs/deploying.md), one run each.
    alternatives: list[tuple[str, tuple[str, ...]]] = [
        (f"gunicorn_w{cores}_t4", ("--workers", str(cores), "--threads", "4")),
        (f"gunicorn_w{2 * cores}_t1", ("--workers", str(2 * cores), "--threads", "1")),
    ]
    if not quick:
        alternatives.append(("gunicorn_w1_t8", ("--workers", "1", "--threads", "8")))
    result: dict[str, Any] = {
        "cores": cores,
        "seconds_per_measure": seconds,
        "headline_slices": rounds,
    }
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        url, username, password = demo_database(folder, DEMO_GAMES)
        result["demo_seconds"] = round(time.perf_counter() - started, 1)
        game = points_game(url, MOVE)
        path = f"/games/{game}/replay?move={MOVE}"
        result.update(game=game, path=path, demo_games=DEMO_GAMES)

        def ready(server: Server, name: str) -> str:
            cookie = server.sign_in(username, password)
            status, page, _ = server.get(path, {"Cookie": cookie})
            if status != 200 or game not in page:
                raise RuntimeError(f"{name}: {path} answered {status}")
            wrk(server.port, path, cookie, WARM_UP_SECONDS)
            return cookie

        servers = {name: Server(url, *options, "--access-log", "") for name, options in pair}
        try:
            cookies = {name: ready(servers[name], name) for name, _ in pair}
            runs: dict[str, list] = {name: [] for name, _ in pair}
            for number in range(rounds):
                order = pair if number % 2 == 0 else pair[::-1]
                for name, options in order:
                    runs[name].append(
                        _measure(
                            servers[name], path, cookies[name], seconds // rounds, cores, options
                        )
                    )
        finally:
            for server in servers.values():
                server.stop()
        measured = {name: _summary(runs[name], seconds // rounds) for name, _ in pair}
        for name, options in alternatives:
            server = Server(url, *options, "--access-log", "")
            try:
                cookie = ready(server, name)
                run = _measure(server, path, cookie, seconds, cores, options)
            finally:
                server.stop()
            measured[name] = _summary([run], seconds)
        for name, figures in measured.items():
            for key, value in figures.items():
                result[f"{name}_{key}"] = value
            print(f"  {name}: {figures}", file=sys.stderr, flush=True)
    configurations = pair + alternatives
    base = result["dev_requests_per_second"]
    for name, _ in configurations[1:]:
        result[f"{name}_ratio"] = round(result[f"{name}_requests_per_second"] / base, 2)
    result["ceiling_ratio"] = round(
        result["gunicorn_default_ceiling_requests_per_second_on_idle_cores"]
        / result["dev_ceiling_requests_per_second_on_idle_cores"],
        2,
    )
    result["target_1_8x_met"] = result["gunicorn_default_ratio"] >= 1.8
    result["target_p99_under_100ms_met"] = result["gunicorn_default_p99_ms"] < 100
    where = f"{path.split('/')[-1]}, {DEMO_GAMES}-game demo, SQLite, wrk -c{CONNECTIONS}"
    result["rows"] = [
        {
            "benchmark": f"replay page requests/s, serve (gunicorn, defaults) ({where})",
            "figure": result["gunicorn_default_requests_per_second"],
            "baseline": base,
            "baseline_is": "serve --dev (Werkzeug), same page and load",
            "ratio": result["gunicorn_default_ratio"],
        },
        {
            "benchmark": f"replay page server CPU ms a request, serve (gunicorn) ({where})",
            "figure": result["gunicorn_default_server_cpu_ms_per_request"],
            "baseline": result["dev_server_cpu_ms_per_request"],
            "baseline_is": "serve --dev (Werkzeug), same page and load",
            "ratio": round(
                result["gunicorn_default_server_cpu_ms_per_request"]
                / result["dev_server_cpu_ms_per_request"],
                2,
            ),
        },
        {
            "benchmark": f"replay page p99 ms, serve (gunicorn, defaults) ({where})",
            "figure": result["gunicorn_default_p99_ms"],
            "baseline": result["dev_p99_ms"],
            "baseline_is": "serve --dev (Werkzeug), same page and load",
            "ratio": round(result["gunicorn_default_p99_ms"] / result["dev_p99_ms"], 2),
        },
    ]
    return result


def stage_notify(quick: bool) -> dict[str, Any]:
    """What the projection worker's wake-up costs the writers: importing the same games into
    PostgreSQL with migration 0012's NOTIFY trigger and with it dropped, alternately."""
    import json

    import sqlalchemy as sa

    from bench.replay_page import _postgres_schema, simulated_records
    from replays.records.importer import import_lines
    from replays.store.application import Ledger
    from replays.store.db import engine_for
    from replays.store.schema import migrate

    distinct, total, rounds = (20, 60, 1) if quick else (60, 300, 2)
    records = simulated_records(distinct)
    lines = []
    for index in range(total):
        record = dict(records[index % distinct])
        record["game_id"] = f"{record['game_id']}-n{index}"
        lines.append(json.dumps(record))
    timings: dict[str, list[float]] = {"with_notify": [], "without_notify": []}
    events = 0
    for _ in range(rounds):
        for kind in ("with_notify", "without_notify"):
            url, drop = _postgres_schema()
            try:
                migrate(url)
                if kind == "without_notify":
                    with engine_for(url).begin() as connection:
                        connection.execute(
                            sa.text("DROP TRIGGER ledger_events_notify ON ledger_events")
                        )
                started = time.perf_counter()
                summary = import_lines(Ledger(url, env={"CREATE_TABLE": "no"}), lines)
                timings[kind].append(time.perf_counter() - started)
                if summary.rejected:
                    raise RuntimeError(f"import failed: {summary.line()}")
                with engine_for(url).connect() as connection:
                    events = connection.execute(
                        sa.text("SELECT count(*) FROM ledger_events")
                    ).scalar()
            finally:
                engine_for(url).dispose()
                drop()
    best = {kind: min(values) for kind, values in timings.items()}
    result: dict[str, Any] = {
        "games": total,
        "events": events,
        "load_average_after": _load_average(),
        **{f"{kind}_seconds": [round(v, 2) for v in values] for kind, values in timings.items()},
        **{f"{kind}_events_per_second": round(events / best[kind], 1) for kind in best},
    }
    result["ratio"] = round(best["without_notify"] / best["with_notify"], 3)
    result["rows"] = [
        {
            "benchmark": f"import events/s with the worker's NOTIFY trigger ({total} games, "
            "PostgreSQL)",
            "figure": result["with_notify_events_per_second"],
            "baseline": result["without_notify_events_per_second"],
            "baseline_is": "the same import with the trigger dropped",
            "ratio": result["ratio"],
        }
    ]
    return result


# Named stages, run in this order; the cluster work adds its own (replica, failover).
STAGES: dict[str, Callable[[bool], dict[str, Any]]] = {
    "gunicorn": stage_gunicorn,
    "notify": stage_notify,
}


def run(quick: bool = False, stages: list[str] | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {"stages": list(stages or STAGES)}
    rows: list[dict[str, Any]] = []
    for name in result["stages"]:
        figures = STAGES[name](quick)
        rows.extend(figures.pop("rows", []))
        result.update({f"{name}.{key}": value for key, value in figures.items()})
    result["rows"] = rows
    return result


if __name__ == "__main__":
    chosen = [arg for arg in sys.argv[1:] if not arg.startswith("--")]
    for key, value in run(quick="--quick" in sys.argv, stages=chosen or None).items():
        if key != "rows":
            print(f"{key:55} {value}")
