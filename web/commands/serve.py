"""`rummy-ledger serve`: the website and API under gunicorn (``--dev``: Werkzeug's server)."""

from __future__ import annotations

import os

import click

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


def default_workers() -> int:
    """One worker process per core: a replay page is CPU-bound Python, so processes (not
    threads) are what use a second core; bench/cluster.py measured more workers than cores
    only adding memory (docs/deploying.md)."""
    return max(1, os.cpu_count() or 1)


@click.command("serve")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    envvar="RUMMY_LEDGER_HOST",
    help="Address to listen on (RUMMY_LEDGER_HOST).",
)
@click.option(
    "--port",
    default=5000,
    show_default=True,
    type=click.IntRange(1, 65535),
    envvar="RUMMY_LEDGER_PORT",
    help="Port (RUMMY_LEDGER_PORT).",
)
@click.option(
    "--workers",
    type=click.IntRange(1),
    envvar="RUMMY_LEDGER_WORKERS",
    help="Worker processes (RUMMY_LEDGER_WORKERS; default: one per core).",
)
@click.option(
    "--threads",
    default=1,
    show_default=True,
    type=click.IntRange(1),
    envvar="RUMMY_LEDGER_THREADS",
    # One thread a worker (gunicorn's sync worker, behind nginx, which buffers slow
    # clients): on two quiet cores 2.4 times the development server and p99 33 ms, where
    # four threads a worker gave 1.7 times and p99 130 ms (the GIL; bench/cluster.py).
    help="Threads per worker (RUMMY_LEDGER_THREADS); more than 1 uses gthread workers.",
)
@click.option(
    "--access-log",
    default="-",
    show_default=True,
    envvar="RUMMY_LEDGER_ACCESS_LOG",
    help="Where the JSON-lines access log goes: a file, '-' for stdout, '' for none.",
)
@click.option(
    "--timeout",
    default=30,
    show_default=True,
    type=click.IntRange(1),
    help="Seconds a request may take before its worker is replaced; also the grace given to "
    "requests in flight on SIGTERM/SIGHUP.",
)
@click.option("--dev", is_flag=True, help="Werkzeug's development server (the demo's).")
@click.option("--debug", is_flag=True, help="With --dev: reload on code changes, the debugger.")
def command(
    host: str,
    port: int,
    workers: int | None,
    threads: int,
    access_log: str,
    timeout: int,
    dev: bool,
    debug: bool,
) -> None:
    """Serve the website (games, replays, audits, player histories) and the ingest API.

    gunicorn runs the site: SIGHUP replaces the workers gracefully, SIGTERM finishes the
    requests in flight and exits. The database is RUMMY_LEDGER_DATABASE_URL (default:
    rummy-ledger.sqlite3 here); docs/deploying.md lists every setting.
    """
    if dev or debug:
        _serve_dev(host, port, debug)
        return
    from web.server import prepare_metrics_dir, serve

    # Before the app (and prometheus_client) is imported, so that every worker writes its
    # counters where /metrics, in whichever worker, adds them up.
    own_metrics_dir = prepare_metrics_dir()
    # The banner on stderr, with gunicorn's own messages: stdout is the JSON access log.
    app = _app(host, port, err=True)
    serve(
        app,
        host=host,
        port=port,
        workers=workers or default_workers(),
        threads=threads,
        access_log=access_log,
        timeout=timeout,
        remove_metrics_dir=own_metrics_dir,
    )


def _app(host: str, port: int, *, err: bool = False):
    from sqlalchemy.engine import make_url

    from web import create_app

    # Plain HTTP on the loopback address (the demo, a developer's machine): session cookies
    # cannot be Secure; anywhere else the site sits behind an HTTPS proxy and they stay
    # Secure (RUMMY_LEDGER_SECURE_COOKIES, web/auth.py).
    loopback = host in LOOPBACK_HOSTS
    app = create_app(
        {"SESSION_COOKIE_SECURE": False, "REMEMBER_COOKIE_SECURE": False} if loopback else None
    )
    if not loopback and app.config["SESSION_COOKIE_SECURE"]:
        click.echo(
            "Session cookies are Secure: serve this site to browsers through HTTPS.", err=err
        )
    database = make_url(app.config["DATABASE_URL"]).render_as_string(hide_password=True)
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"Rummy Ledger on http://{shown}:{port}/ (database {database})", err=err)
    return app


def _serve_dev(host: str, port: int, debug: bool) -> None:
    from werkzeug.serving import run_simple

    app = _app(host, port)
    run_simple(host, port, app, use_reloader=debug, use_debugger=debug, threaded=True)
