"""The production web server: the Flask app under gunicorn, configured in code.

gunicorn's application API (:class:`LedgerServer`) takes its settings from
``rummy-ledger serve``'s options, so no gunicorn configuration file exists to drift from them.
The app is built once in the master and the workers are forked from it (gunicorn's
``preload_app``): a worker starts in milliseconds and a SIGHUP (new workers, old ones finish
their requests) costs no import. A forked worker must not use the master's pooled database
connections; the engine cache and the applications already drop theirs in a forked child
(``os.register_at_fork`` in replays/store/db.py and replays/store/application.py).

Signals (gunicorn's): HUP replaces the workers gracefully, TERM lets requests in flight
finish (up to the timeout) and exits 0, INT/QUIT stop at once; TTIN/TTOU add or remove a
worker.

The access log is JSON lines (:class:`JsonAccessLog`): one object per request, so that a log
shipper reads it without a pattern.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from gunicorn.app.base import BaseApplication
from gunicorn.glogging import Logger

# The page type (Flask endpoint) web/ops.py leaves in the WSGI environ: it groups the log's
# requests better than their URLs.
from web.ops import ENDPOINT_KEY


class JsonAccessLog(Logger):
    """gunicorn's logger with the access lines written as JSON objects."""

    def access(self, resp, req, environ, request_time):
        if not self.access_log_enabled:
            return
        status = resp.status.split(None, 1)[0] if isinstance(resp.status, str) else resp.status
        record = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds"),
            # After ProxyFix (RUMMY_LEDGER_TRUSTED_PROXIES) this is the client, not the proxy.
            "remote_addr": environ.get("REMOTE_ADDR"),
            "method": environ.get("REQUEST_METHOD"),
            "path": environ.get("PATH_INFO"),
            "query": environ.get("QUERY_STRING") or None,
            "status": int(status),
            "bytes": getattr(resp, "sent", None),
            "duration_ms": round(request_time.seconds * 1000 + request_time.microseconds / 1000, 2),
            "endpoint": environ.get(ENDPOINT_KEY),
            "user_agent": environ.get("HTTP_USER_AGENT"),
            "pid": os.getpid(),
        }
        try:
            self.access_log.info(json.dumps(record, separators=(",", ":")))
        except Exception:  # a log line must never fail a request
            self.exception("access log line not written")


def _forget_dead_worker(server, worker) -> None:
    """gunicorn's ``child_exit`` hook: a dead worker's gauges leave /metrics (its counters
    stay counted; prometheus_client's multiprocess mode)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(worker.pid)


def _ready(server) -> None:
    server.log.info("rummy-ledger serving, %s workers", server.num_workers)


# Settings newer gunicorns have; left out on older ones.
OPTIONAL_SETTINGS = frozenset({"control_socket_disable"})


class LedgerServer(BaseApplication):
    """A gunicorn application serving an already-built WSGI app with these settings."""

    def __init__(self, app, options: dict):
        self.application = app
        self.options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            if key in OPTIONAL_SETTINGS and key not in self.cfg.settings:
                continue  # an older gunicorn without it
            self.cfg.set(key, value)

    def load(self):
        return self.application


def gunicorn_options(
    *,
    host: str,
    port: int,
    workers: int,
    threads: int,
    access_log: str,
    timeout: int,
) -> dict:
    bind = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return {
        "bind": [bind],
        "workers": workers,
        "threads": threads,
        # Threads need gunicorn's threaded worker; one thread is its plain sync worker.
        "worker_class": "gthread" if threads > 1 else "sync",
        "timeout": timeout,
        "graceful_timeout": timeout,
        "keepalive": 5,
        "preload_app": True,
        "accesslog": access_log or None,
        "errorlog": "-",
        "loglevel": "info",
        "logger_class": JsonAccessLog,
        "proc_name": "rummy-ledger",
        # Which proxy to believe is the app's single setting (RUMMY_LEDGER_TRUSTED_PROXIES,
        # web/auth.py); gunicorn's own reading of X-Forwarded-* headers is turned off.
        "forwarded_allow_ips": "",
        "secure_scheme_headers": {},
        # gunicorn 24+'s control socket sits at one path per user (~/.gunicorn): two
        # servers would fight over it, and signals already do what it offers.
        "control_socket_disable": True,
        "child_exit": _forget_dead_worker,
        "when_ready": _ready,
    }


def serve(app, *, remove_metrics_dir: bool = False, **settings) -> None:
    """Run ``app`` under gunicorn until it is stopped (returns after SIGTERM/SIGINT)."""
    options = gunicorn_options(**settings)
    if remove_metrics_dir:
        directory = os.environ["PROMETHEUS_MULTIPROC_DIR"]
        options["on_exit"] = lambda server: shutil.rmtree(directory, ignore_errors=True)
    LedgerServer(app, options).run()


def prepare_metrics_dir() -> bool:
    """Give prometheus_client's multiprocess files an empty directory: the one in
    ``PROMETHEUS_MULTIPROC_DIR`` (e.g. systemd's RuntimeDirectory), emptied of a previous
    run's files, which would be added to this run's counts; else a private temporary one,
    set in the environment (True: the server removes it when it exits)."""
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if not directory:
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="rummy-ledger-metrics-")
        return True
    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    for stale in path.glob("*.db"):
        stale.unlink()
    return False
