"""`rummy-ledger seal`: seal stored events that no writer has sealed yet."""

from __future__ import annotations

import click
import sqlalchemy as sa

from replays import integrity


@click.command("seal")
def command() -> None:
    """Seal every stored event not yet sealed (writers normally do this themselves)."""
    try:
        count = integrity.seal_new_events(progress=True)
    except integrity.IntegrityError as error:
        raise click.ClickException(str(error)) from None
    except sa.exc.DBAPIError as error:
        raise click.ClickException(f"cannot read the ledger database: {error.orig}") from None
    click.echo(f"sealed {count} event(s)")
