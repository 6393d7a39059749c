"""The ledger for a CLI command: the database of RUMMY_LEDGER_DATABASE_URL, migrated."""

from __future__ import annotations

import click


def open_ledger(url: str | None = None, *, migrate: bool = True):
    """A :class:`~replays.store.application.Ledger` on ``url`` (default: the project setting).

    ``migrate`` brings the schema up to date first (idempotent), so a command that writes
    also builds the read-model and integrity tables its followers need. A database that
    cannot be reached is a one-line error, not a traceback.
    """
    from replays.store.application import Ledger
    from replays.store.settings import database_url

    url = database_url(url)
    try:
        if migrate:
            from replays.store.schema import migrate as run_migrations

            run_migrations(url)
        return Ledger(url, env={"CREATE_TABLE": "no"} if migrate else None)
    except Exception as error:  # an unreachable server or a bad URL
        from sqlalchemy.engine import make_url

        safe = make_url(url).render_as_string(hide_password=True)
        raise click.ClickException(f"cannot open the ledger at {safe}: {error}") from None
