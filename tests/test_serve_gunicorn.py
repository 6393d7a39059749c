"""`rummy-ledger serve` under gunicorn, as a real process on a real port: signed-in pages,
request metrics added up across workers, SIGHUP replaces the workers without dropping the
site or its sessions, SIGTERM exits 0, and the access log is JSON lines."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from auth_support import http_opener
from test_web_serve import fetch, free_port
from web_support import load_games

ROOT = Path(__file__).resolve().parent.parent
GAME = "T7-000123"


def children(pid: int) -> set[int]:
    """The live child processes of ``pid`` (gunicorn's workers)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: the fields after its last ')'.
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(entry.name))
    return found


def wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"not within {timeout} s: {what}")


def sample_count(metrics: str, name: str, **labels: str) -> float:
    """The value of one sample in Prometheus text, 0 when absent."""
    total = 0.0
    for line in metrics.splitlines():
        match = re.match(rf"{name}\{{(.*)\}} (\S+)$", line)
        if not match:
            continue
        found = dict(re.findall(r'(\w+)="([^"]*)"', match.group(1)))
        if all(found.get(key) == value for key, value in labels.items()):
            total += float(match.group(2))
    return total


@pytest.fixture(scope="module")
def filled_url(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('gunicorn') / 'ledger.sqlite3'}"
    load_games(url)
    return url


def test_gunicorn_serves_reloads_and_stops(filled_url, tmp_path):
    port = free_port()
    metrics_dir = tmp_path / "metrics"
    command = [sys.executable, "-c", "from web.cli import main; main()", "serve"]
    command += ["--port", str(port), "--workers", "2", "--threads", "2", "--timeout", "10"]
    command += ["--access-log", "-"]  # stdout: nothing but the access log
    env = dict(
        os.environ,
        RUMMY_LEDGER_DATABASE_URL=filled_url,
        PROMETHEUS_MULTIPROC_DIR=str(metrics_dir),
    )
    env.pop("SECRET_KEY", None)  # the master's random key must outlive the workers (HUP)
    server = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        assert fetch(base + "/healthz")[0] == 200
        assert fetch(base + "/readyz")[0] == 200
        wait_for(lambda: len(children(server.pid)) == 2, 20, "two workers")
        workers = children(server.pid)
        auditor = http_opener(base, filled_url)

        # Every request is counted, whichever worker answered it.
        pages = 8
        for number in range(pages):
            move = 1 + number % 3
            status, page = fetch(f"{base}/games/{GAME}/replay?move={move}", opener=auditor)
            assert status == 200 and GAME in page
        status, _ = fetch(base + "/metrics")  # anonymous, and no address allowed
        assert status == 403
        status, metrics = fetch(base + "/metrics", opener=auditor)
        assert status == 200
        assert (
            sample_count(
                metrics,
                "rummy_ledger_http_requests_total",
                endpoint="replays.replay",
                status="200",
            )
            == pages
        )
        assert (
            sample_count(
                metrics,
                "rummy_ledger_http_request_duration_seconds_count",
                endpoint="replays.replay",
            )
            == pages
        )
        assert "/games/" not in metrics  # page types, never URLs
        assert sample_count(metrics, "rummy_ledger_projection_lag_events") == 0

        # HUP: new workers replace the old ones; the site and the session go on.
        server.send_signal(signal.SIGHUP)
        wait_for(
            lambda: (now := children(server.pid)) and not (now & workers) and len(now) == 2,
            30,
            "the workers replaced after SIGHUP",
        )
        status, page = fetch(f"{base}/games/{GAME}/replay?move=2", opener=auditor)
        assert status == 200 and GAME in page

        # TERM: requests in flight finish, the master exits 0, well inside its grace time.
        stopping = time.monotonic()
        server.send_signal(signal.SIGTERM)
        access_log, output = server.communicate(timeout=30)
        assert server.returncode == 0, output
        assert time.monotonic() - stopping < 15
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate()

    assert f"Rummy Ledger on http://127.0.0.1:{port}/" in output
    assert "Booting worker" in output and "Shutting down" in output
    records = [json.loads(line) for line in access_log.splitlines()]  # each line is JSON
    assert len(records) >= pages + 5
    replay = [r for r in records if r["endpoint"] == "replays.replay"]
    assert len(replay) == pages + 1
    first = replay[0]
    assert first["method"] == "GET" and first["status"] == 200 and first["query"] == "move=1"
    assert first["path"] == f"/games/{GAME}/replay" and first["duration_ms"] > 0
    assert first["remote_addr"] == "127.0.0.1" and first["bytes"] > 0
    assert {r["pid"] for r in records} - workers, "no request answered by the new workers"


def test_workers_and_threads_from_flags_or_environment(monkeypatch, filled_url, tmp_path):
    from click.testing import CliRunner

    from web.cli import main
    from web.server import gunicorn_options

    started = []
    monkeypatch.setattr("web.server.serve", lambda app, **options: started.append(options))
    monkeypatch.setenv("RUMMY_LEDGER_DATABASE_URL", filled_url)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path / "metrics"))
    for name in ("RUMMY_LEDGER_WORKERS", "RUMMY_LEDGER_THREADS", "RUMMY_LEDGER_PORT"):
        monkeypatch.delenv(name, raising=False)

    assert CliRunner().invoke(main, ["serve"]).exit_code == 0
    monkeypatch.setenv("RUMMY_LEDGER_WORKERS", "3")
    monkeypatch.setenv("RUMMY_LEDGER_THREADS", "1")
    monkeypatch.setenv("RUMMY_LEDGER_PORT", "8123")
    assert CliRunner().invoke(main, ["serve"]).exit_code == 0
    assert CliRunner().invoke(main, ["serve", "--workers", "5", "--threads", "2"]).exit_code == 0
    bad = CliRunner().invoke(main, ["serve", "--workers", "0"])
    assert bad.exit_code == 2 and "--workers" in bad.output

    default, from_env, from_flags = started
    assert (default["workers"], default["threads"]) == (os.cpu_count() or 1, 1)
    assert (from_env["workers"], from_env["threads"], from_env["port"]) == (3, 1, 8123)
    assert (from_flags["workers"], from_flags["threads"]) == (5, 2)
    options = {key: from_env[key] for key in ("host", "port", "workers", "threads")}
    gunicorn = gunicorn_options(**options, access_log="-", timeout=30)
    assert gunicorn["worker_class"] == "sync" and gunicorn["bind"] == ["127.0.0.1:8123"]
    assert (
        gunicorn_options(**{**options, "threads": 4}, access_log="", timeout=30)["worker_class"]
        == "gthread"
    )
