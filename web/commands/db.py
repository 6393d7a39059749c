"""`rummy-ledger db`: build or inspect the database schema (Alembic, see migrations/)."""

from __future__ import annotations

import click

from replays.store.settings import database_url


@click.group("db")
def command() -> None:
    """Database schema: every table, the event store's included, comes from migrations."""


@command.command("upgrade")
@click.option("--revision", default="head", show_default=True, help="Target revision.")
@click.option("--url", help="Database URL (default: RUMMY_LEDGER_DATABASE_URL).")
def upgrade(revision: str, url: str | None) -> None:
    """Apply the migrations up to REVISION (alembic upgrade head)."""
    from replays.store.schema import current_revision, migrate

    try:
        migrate(url, revision)
    except Exception as error:  # a bad URL or an unreachable server: say so, no traceback
        raise click.ClickException(f"cannot migrate {_safe(url)}: {error}") from error
    click.echo(f"{_safe(url)} is at revision {current_revision(url)}")


@command.command("current")
@click.option("--url", help="Database URL (default: RUMMY_LEDGER_DATABASE_URL).")
def current(url: str | None) -> None:
    """Show the database's revision and the newest one the code knows."""
    from replays.store.schema import current_revision, head_revision

    try:
        revision = current_revision(url)
    except Exception as error:
        raise click.ClickException(f"cannot read {_safe(url)}: {error}") from error
    head = head_revision()
    state = "up to date" if revision == head else f"behind (head is {head})"
    click.echo(f"{_safe(url)}: revision {revision or 'none'}, {state}")


def _safe(url: str | None) -> str:
    """The URL without its password, fit for messages."""
    from sqlalchemy.engine import make_url

    return make_url(database_url(url)).render_as_string(hide_password=True)
