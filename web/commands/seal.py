"""`rummy-ledger seal`: the backfill for a store written before saves sealed their events."""

from __future__ import annotations

import click
import sqlalchemy as sa

from replays.integrity import evidence as integrity


@click.command("seal")
@click.option(
    "--force",
    is_flag=True,
    help="Also seal unsealed events at the end of a store that saves already seal "
    "(only after `verify` showed them and you checked they are genuine).",
)
def command(force: bool) -> None:
    """Seal stored events that no save sealed.

    Every save seals its own events in the transaction that stores them, so this is for a
    store written by an older version: run it once after `rummy-ledger db upgrade`. On a
    store that saves already seal, an unsealed event was inserted directly: the command
    names it and refuses, unless --force.
    """
    try:
        count = integrity.seal_new_events(progress=True, force=force)
    except integrity.IntegrityError as error:
        raise click.ClickException(str(error)) from None
    except sa.exc.DBAPIError as error:
        raise click.ClickException(f"cannot read the ledger database: {error.orig}") from None
    click.echo(f"sealed {count} event(s)")
