"""Replay-page speed: server time of ``/games/<id>/replay?move=N`` for a 100-move game with
10,000 games in the database, under concurrent load on loopback.

Setup: simulated records (a few hundred distinct games, cloned under new ids up to the
wanted count) are imported and projected into a fresh database; the site runs as
``rummy-ledger serve`` in its own process. A load generator in this process then keeps
``CONCURRENCY`` connections busy, each asking for a random move of the chosen game (full
table or one seat's view), and collects the server's own ``Server-Timing`` figure of every
response (the time Flask spent building it) beside the client-side latency.

Baselines, measured in the same run: ``/healthz`` under the same load, the cheapest response
the same server gives (routing, the WSGI stack, the loopback round trip), for the client-side
ratio; and ``Ledger.state_at`` alone for the same moves (the storage floor every frame stands
on) for the server-side ratio. Figures are milliseconds and ratios to those baselines. The
goal (server p50 under 30 ms, p95 under 100 ms) is reported, never asserted.

The site keeps the table states and move lists it has built (a game's past never changes);
the load runs as an auditor (full table or any seat; each view is written to the access log,
as in production) and as a player stepping through their own seat (nothing to log). The run
measures that configuration and then the same server with those caches off
(``RUMMY_LEDGER_REPLAY_CACHE=0``, every frame read from the store).

Run: ``python -m bench replay_page`` (or ``python -m bench.replay_page [--quick]``);
``RUMMY_LEDGER_BENCH_POSTGRES=1`` also measures on PostgreSQL.
"""

from __future__ import annotations

import copy
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GAMES = 10_000
DISTINCT = 400  # simulated games; the rest are clones under new ids (same size and shape)
TARGET_MOVES = 100
CONCURRENCY = 8
SECONDS = 20.0
POSTGRES_URL = os.environ.get(
    "RUMMY_LEDGER_BENCH_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def simulated_records(count: int, seed: int = 23) -> list[dict]:
    from domain.simulation.floor import Floor
    from replays.simulation.batch import Simulation

    simulation = Simulation(Floor(seed=seed, variants=("points", "raise")))
    return list(simulation.games(count, jobs=2, progress=True))


def pick_long_game(records: list[dict], moves: int = TARGET_MOVES) -> dict:
    """The record whose move count is closest to ``moves`` (at least ``moves`` if any is)."""
    long_enough = [r for r in records if len(r["moves"]) >= moves]
    pool = long_enough or records
    return min(pool, key=lambda r: (abs(len(r["moves"]) - moves), r["game_id"]))


def fill_database(url: str, records: list[dict], total: int) -> int:
    """Import ``total`` games (the records, then clones of them under new ids) and project."""
    from replays.readmodels.projections import catch_up
    from replays.records.importer import import_lines
    from replays.store.application import Ledger
    from replays.store.schema import migrate

    migrate(url)
    ledger = Ledger(url, env={"CREATE_TABLE": "no"})

    def lines():
        for index in range(total):
            record = records[index % len(records)]
            if index >= len(records):
                record = copy.deepcopy(record)
                record["game_id"] = f"{record['game_id']}-c{index}"
            yield json.dumps(record)

    summary = import_lines(ledger, lines(), follow=False)
    if summary.rejected:
        raise RuntimeError(f"import failed: {summary.line()} {summary.failures[:3]}")
    catch_up(url, progress=sys.stderr.isatty())
    return summary.imported + summary.already


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Server:
    """``rummy-ledger serve`` in a child process, on a free loopback port."""

    def __init__(self, url: str, *, cache: bool = True):
        self.port = _free_port()
        env = dict(
            os.environ, RUMMY_LEDGER_DATABASE_URL=url, RUMMY_LEDGER_REPLAY_CACHE=str(int(cache))
        )
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from web.cli import main; main()",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                status, _, _ = request(self.port, "/healthz")
                if status == 200:
                    _sign_in(self.port, url)
                    return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError("the server did not start")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


# Pages need a signed-in user. The load runs as an auditor (whose views of a game are
# written to the access log, as in production) and, separately, as a player looking at
# their own seat (not logged): the session cookie of each, per server port.
_SESSIONS: dict[tuple[int, str], str] = {}
BENCH_PASSWORD = "bench-password-1"


def _sign_in(port: int, url: str, role: str = "auditor", player: str | None = None) -> str:
    import re

    from replays.access import accounts

    username = f"bench-{role}" + (f"-{player}" if player else "")
    if accounts.find_user(username, url=url) is None:
        accounts.add_user(username, role, BENCH_PASSWORD, player=player, url=url)
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request("GET", "/login")
        response = connection.getresponse()
        form = response.read().decode()
        cookie = response.getheader("Set-Cookie", "").split(";")[0]
        token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', form).group(1)
        body = f"csrf_token={token}&username={username}&password={BENCH_PASSWORD}"
        connection.request(
            "POST",
            "/login",
            body=body,
            headers={"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie},
        )
        response = connection.getresponse()
        response.read()
        if response.status != 302:
            raise RuntimeError(f"signing in to the benchmark server failed: {response.status}")
        session = response.getheader("Set-Cookie", "").split(";")[0]
        _SESSIONS[(port, role)] = session
        return session
    finally:
        connection.close()


def request(port: int, path: str, role: str = "auditor") -> tuple[int, float, float]:
    """GET ``path`` as ``role``: (status, server ms from Server-Timing, client ms)."""
    started = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        cookie = _SESSIONS.get((port, role))
        connection.request("GET", path, headers={"Cookie": cookie} if cookie else {})
        response = connection.getresponse()
        response.read()
        client_ms = (time.perf_counter() - started) * 1000
        timing = response.getheader("Server-Timing") or "app;dur=nan"
        server_ms = float(timing.split("dur=")[1])
        return response.status, server_ms, client_ms
    finally:
        connection.close()


def load(
    port: int, paths, seconds: float, concurrency: int, role: str = "auditor"
) -> dict[str, Any]:
    """Keep ``concurrency`` clients busy for ``seconds``, each picking paths from ``paths()``."""
    server_ms: list[float] = []
    client_ms: list[float] = []
    errors: list[int] = []
    lock = threading.Lock()
    stop_at = time.perf_counter() + seconds

    def client(seed: int) -> None:
        rng = random.Random(seed)
        while time.perf_counter() < stop_at:
            status, server, latency = request(port, paths(rng), role)
            with lock:
                if status != 200:
                    errors.append(status)
                server_ms.append(server)
                client_ms.append(latency)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(concurrency)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    if errors:
        # Timings of refused or failed requests say nothing about the page: stop here.
        raise RuntimeError(
            f"{len(errors)} of {len(server_ms)} requests failed (statuses {sorted(set(errors))})"
        )
    return {
        "requests": len(server_ms),
        "errors": len(errors),
        "requests_per_s": round(len(server_ms) / elapsed, 1),
        "server_p50_ms": _percentile(server_ms, 50),
        "server_p95_ms": _percentile(server_ms, 95),
        "client_p50_ms": _percentile(client_ms, 50),
        "client_p95_ms": _percentile(client_ms, 95),
    }


def _percentile(values: list[float], pct: int) -> float:
    if not values:
        return float("nan")
    if len(values) == 1:
        return round(values[0], 2)
    return round(statistics.quantiles(values, n=100, method="inclusive")[pct - 1], 2)


def measure(
    url: str, game: dict, seconds: float, concurrency: int, *, cache: bool = True
) -> dict[str, Any]:
    game_id = game["game_id"]
    moves = len(game["moves"])
    players = [p["id"] for p in game["players"]]

    def replay(rng: random.Random) -> str:
        path = f"/games/{game_id}/replay?move={rng.randint(0, moves)}"
        return path + (f"&seat={rng.choice(players)}" if rng.random() < 0.5 else "")

    def fragment(rng: random.Random) -> str:
        return replay(rng).replace("/replay?", "/replay/table?")

    server = Server(url, cache=cache)
    try:
        for _ in range(3):  # warm the app's caches and the database's pages
            request(server.port, replay(random.Random(0)))
        baseline = load(server.port, lambda rng: "/healthz", seconds / 2, concurrency)
        page = load(server.port, replay, seconds, concurrency)
        table = load(server.port, fragment, seconds / 2, concurrency)
        idle = load(server.port, replay, seconds / 4, 1)
        # A player stepping through their own seat: the same frames, nothing to log.
        own = players[0]
        _sign_in(server.port, url, "player", own)
        mine = load(
            server.port,
            lambda rng: f"/games/{game_id}/replay?move={rng.randint(0, moves)}&seat={own}",
            seconds / 2,
            concurrency,
            role="player",
        )
    finally:
        server.stop()
    result = {f"baseline_healthz_{k}": v for k, v in baseline.items()}
    result.update({f"replay_{k}": v for k, v in page.items()})
    result.update({f"fragment_{k}": v for k, v in table.items()})
    result.update({f"replay_one_client_{k}": v for k, v in idle.items()})
    result.update({f"replay_as_player_{k}": v for k, v in mine.items()})
    # Over the HTTP floor: how much longer a replay frame takes than the cheapest response
    # under the same load, as the client sees it.
    for name in ("replay", "fragment"):
        for pct in ("p50", "p95"):
            result[f"{name}_client_{pct}_ratio_to_healthz"] = round(
                result[f"{name}_client_{pct}_ms"]
                / max(result[f"baseline_healthz_client_{pct}_ms"], 0.01),
                2,
            )
    # Over the storage floor: the page against the ledger's own state_at for the same moves.
    floor = state_at_ms(url, game_id, moves)
    result["state_at_alone_p50_ms"] = floor
    result["replay_one_client_server_p50_ratio_to_state_at"] = round(
        result["replay_one_client_server_p50_ms"] / max(floor, 0.01), 2
    )
    result["goal_p50_under_30ms_met"] = result["replay_server_p50_ms"] < 30
    result["goal_p95_under_100ms_met"] = result["replay_server_p95_ms"] < 100
    result["goal_as_player_p50_under_30ms_met"] = result["replay_as_player_server_p50_ms"] < 30
    result["goal_as_player_p95_under_100ms_met"] = result["replay_as_player_server_p95_ms"] < 100
    return result


def state_at_ms(url: str, game_id: str, moves: int, count: int = 60) -> float:
    """Median time of ``Ledger.state_at`` alone for random moves of the game, in this process."""
    from replays.store.application import Ledger

    ledger = Ledger(url, env={"CREATE_TABLE": "no"})
    rng = random.Random(1)
    times = []
    for _ in range(count):
        started = time.perf_counter()
        ledger.state_at(game_id, rng.randint(0, moves))
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 2)


def _postgres_schema():
    import sqlalchemy as sa

    schema = "bench_" + uuid.uuid4().hex[:12]
    engine = sa.create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sa.text(f'CREATE SCHEMA "{schema}"'))

    def drop() -> None:
        with engine.connect() as conn:
            conn.execute(sa.text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        engine.dispose()

    return f"{POSTGRES_URL}?options=-csearch_path%3D{schema}", drop


def run(quick: bool = False) -> dict[str, Any]:
    games = 300 if quick else GAMES
    distinct = 60 if quick else DISTINCT
    seconds = 3.0 if quick else SECONDS
    records = simulated_records(distinct)
    game = pick_long_game(records)
    result: dict[str, Any] = {
        "games_in_database": games,
        "distinct_simulated_games": distinct,
        "game": game["game_id"],
        "game_moves": len(game["moves"]),
        "concurrency": CONCURRENCY,
        "seconds_per_measure": seconds,
    }
    engines = ["sqlite"]
    if os.environ.get("RUMMY_LEDGER_BENCH_POSTGRES"):
        engines.append("postgresql")
    with tempfile.TemporaryDirectory() as folder:
        for engine in engines:
            drop = None
            if engine == "sqlite":
                url = f"sqlite:///{folder}/ledger.sqlite3"
            else:
                url, drop = _postgres_schema()
            try:
                started = time.perf_counter()
                fill_database(url, records, games)
                result[f"{engine}_fill_seconds"] = round(time.perf_counter() - started, 1)
                for key, value in measure(url, game, seconds, CONCURRENCY).items():
                    result[f"{engine}_{key}"] = value
                # The same with the replay caches off: every frame read from the store.
                cold = measure(url, game, seconds / 2, CONCURRENCY, cache=False)
                for key in (
                    "replay_server_p50_ms",
                    "replay_server_p95_ms",
                    "replay_one_client_server_p50_ms",
                    "goal_p50_under_30ms_met",
                    "goal_p95_under_100ms_met",
                ):
                    result[f"{engine}_uncached_{key}"] = cold[key]
            finally:
                if drop is not None:
                    drop()
    result["rows"] = _rows(result, engines)
    return result


def _rows(result: dict[str, Any], engines: list[str]) -> list[dict[str, Any]]:
    """The headline figures for docs/benchmarks.md."""
    where = (
        f"{result['game_moves']}-move game, {result['games_in_database']:,} games, "
        f"{result['concurrency']} clients"
    )
    rows = []
    for engine in engines:
        floor = result[f"{engine}_state_at_alone_p50_ms"]
        floor_is = "Ledger.state_at alone, p50, same moves"
        for label, key in (
            ("replay page server ms p50", "replay_server_p50_ms"),
            ("replay page server ms p95", "replay_server_p95_ms"),
            ("replay page server ms p50, caches off", "uncached_replay_server_p50_ms"),
            ("replay page server ms p95, caches off", "uncached_replay_server_p95_ms"),
            ("replay table fragment server ms p50", "fragment_server_p50_ms"),
            ("replay page server ms p50, a player's own seat", "replay_as_player_server_p50_ms"),
            ("replay page server ms p95, a player's own seat", "replay_as_player_server_p95_ms"),
        ):
            figure = result[f"{engine}_{key}"]
            rows.append(
                {
                    "benchmark": f"{label} ({where}, {engine})",
                    "figure": figure,
                    "baseline": floor,
                    "baseline_is": floor_is,
                    "ratio": round(figure / max(floor, 0.01), 2),
                }
            )
        rows.append(
            {
                "benchmark": f"replay page client ms p50 ({where}, {engine})",
                "figure": result[f"{engine}_replay_client_p50_ms"],
                "baseline": result[f"{engine}_baseline_healthz_client_p50_ms"],
                "baseline_is": "/healthz under the same load, client p50",
                "ratio": result[f"{engine}_replay_client_p50_ratio_to_healthz"],
            }
        )
    return rows


if __name__ == "__main__":
    for key, value in run(quick="--quick" in sys.argv).items():
        if key != "rows":
            print(f"{key:55} {value}")
