"""`rummy-ledger serve`: the website and API on a local address."""

from __future__ import annotations

import click

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=5000, show_default=True, type=click.IntRange(1, 65535))
@click.option("--debug", is_flag=True, help="Reload on code changes and show the debugger.")
@click.option(
    "--threads/--no-threads", default=True, show_default=True, help="Serve requests in threads."
)
def command(host: str, port: int, debug: bool, threads: bool) -> None:
    """Serve the website (games, replays, audits, player histories) and the ingest API.

    The database is RUMMY_LEDGER_DATABASE_URL (default: rummy-ledger.sqlite3 here).
    """
    from sqlalchemy.engine import make_url
    from werkzeug.serving import run_simple

    from web import create_app

    # This server speaks plain HTTP: on the loopback address (the demo, a developer's machine)
    # session cookies cannot be Secure; anywhere else it must sit behind an HTTPS proxy and
    # they stay Secure (RUMMY_LEDGER_SECURE_COOKIES, web/auth.py).
    loopback = host in LOOPBACK_HOSTS
    app = create_app(
        {"SESSION_COOKIE_SECURE": False, "REMEMBER_COOKIE_SECURE": False} if loopback else None
    )
    if not loopback and app.config["SESSION_COOKIE_SECURE"]:
        click.echo("Session cookies are Secure: serve this site to browsers through HTTPS.")
    database = make_url(app.config["DATABASE_URL"]).render_as_string(hide_password=True)
    click.echo(f"Rummy Ledger on http://{host}:{port}/ (database {database})")
    run_simple(host, port, app, use_reloader=debug, use_debugger=debug, threaded=threads)
