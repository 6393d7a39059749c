"""`rummy-ledger keys`: the ledger's Ed25519 signing key for checkpoints."""

from __future__ import annotations

import click

from replays.integrity import signing


@click.group("keys")
def command() -> None:
    """The Ed25519 key that signs checkpoints (RUMMY_LEDGER_KEY_DIR, default ./keys)."""


@command.command("init")
@click.option("--dir", "directory", type=click.Path(file_okay=False), help="Key directory.")
@click.option(
    "--force",
    is_flag=True,
    help="Replace an existing key (old checkpoints stay checkable only with the old public key).",
)
def init(directory: str | None, force: bool) -> None:
    """Make a new signing key: a private key (mode 0600) and its public key."""
    try:
        where = signing.init_keys(directory, force=force)
    except (signing.SigningError, OSError) as error:
        raise click.ClickException(str(error)) from None
    public_key = signing.load_public_key(where)
    click.echo(f"private key: {where / signing.PRIVATE_KEY_FILE} (keep it secret)")
    click.echo(f"public key:  {where / signing.PUBLIC_KEY_FILE} (give it to auditors)")
    click.echo(
        f"memo key:    {where / signing.MEMO_KEY_FILE} (signs the pages' remembered replays)"
    )
    click.echo(f"key id:      {signing.key_id(public_key)}")


@command.command("show")
@click.option("--dir", "directory", type=click.Path(file_okay=False), help="Key directory.")
def show(directory: str | None) -> None:
    """Print the public key (PEM), its raw hex form and its key id."""
    try:
        public_key = signing.load_public_key(signing.key_dir(directory))
    except signing.SigningError as error:
        raise click.ClickException(str(error)) from None
    path = signing.key_dir(directory) / signing.PUBLIC_KEY_FILE
    click.echo(path.read_text().rstrip())
    click.echo(f"raw:    {signing.raw_public_bytes(public_key).hex()}")
    click.echo(f"key id: {signing.key_id(public_key)}")
