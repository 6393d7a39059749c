"""`rummy-ledger checkpoint`: sign the tree head over every sealed event, for auditors."""

from __future__ import annotations

import click
import sqlalchemy as sa

from replays.integrity import evidence as integrity
from replays.integrity import signing


@click.command("checkpoint")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, writable=True),
    help="Write the signed tree head, with its block hashes, here (default: stdout).",
)
@click.option(
    "--keys",
    "key_directory",
    type=click.Path(file_okay=False),
    help="Key directory (default RUMMY_LEDGER_KEY_DIR or ./keys).",
)
def command(out: str | None, key_directory: str | None) -> None:
    """Sign and store a tree head (size, root, time) over every sealed event.

    Give the file to auditors: they keep it outside the system and later check the
    ledger against it with `verify --checkpoint` or `verify-proof`. The file also carries
    the hashes of the tree's blocks (at most 4,096, bound to the signed root), with which
    `verify --checkpoint` locates an event that was edited and resealed.
    """
    try:
        checkpoint = integrity.make_checkpoint(key_directory=key_directory)
    except (integrity.IntegrityError, signing.SigningError) as error:
        raise click.ClickException(str(error)) from None
    except sa.exc.DBAPIError as error:
        raise click.ClickException(f"cannot read the ledger database: {error.orig}") from None
    text = checkpoint.to_json()
    if out:
        with open(out, "w") as handle:
            handle.write(text)
        click.echo(
            f"checkpoint: {checkpoint.size} events, root {checkpoint.root.hex()}, "
            f"{checkpoint.time}, key {checkpoint.key_id} -> {out}",
            err=True,
        )
    else:
        click.echo(text, nl=False)
