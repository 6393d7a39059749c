"""`rummy-ledger proof`: inclusion proofs of a game's events, consistency proofs between
checkpoints, written as files that `verify-proof` checks offline."""

from __future__ import annotations

import json

import click
import sqlalchemy as sa

from replays.integrity import evidence as integrity
from replays.integrity import signing
from replays.store.db import undecodable
from replays.store.decoding import owned_tables, unreadable_summary


@click.group("proof")
def command() -> None:
    """Write proofs for auditors (checked offline with `rummy-ledger verify-proof`)."""


def _write(document: dict, out: str | None, summary: str) -> None:
    # Inside _run: a stored value read back as bytes (a BLOB in a text column on SQLite)
    # reaches the document without failing the read, and is named here.
    text = _run(lambda: json.dumps(document, indent=2)) + "\n"
    if out:
        with open(out, "w") as handle:
            handle.write(text)
        click.echo(f"{summary} -> {out}", err=True)
    else:
        click.echo(text, nl=False)


def _run(work):
    try:
        return work()
    except (integrity.IntegrityError, signing.SigningError) as error:
        raise click.ClickException(str(error)) from None
    except sa.exc.DBAPIError as error:
        if not undecodable(error):
            raise click.ClickException(f"cannot read the ledger database: {error.orig}") from None
        raise _cannot_prove(error) from None
    except Exception as error:  # a stored value of the wrong kind in the tree or the events
        raise _cannot_prove(error) from None


def _cannot_prove(error: Exception) -> click.ClickException:
    tree = tuple(t.name for t in owned_tables() if t.name.startswith("integrity_"))
    reason = unreadable_summary(error, tree)
    return click.ClickException(
        f"cannot prove: {reason}; `rummy-ledger verify` names every altered or unreadable row"
    )


@command.command("inclusion")
@click.argument("game_id")
@click.option(
    "--checkpoint",
    "checkpoint_file",
    type=click.Path(dir_okay=False),
    help="Prove against this checkpoint (default: the latest one issued).",
)
@click.option(
    "--out", type=click.Path(dir_okay=False, writable=True), help="Output file (default: stdout)."
)
def inclusion(game_id: str, checkpoint_file: str | None, out: str | None) -> None:
    """Prove that GAME_ID's stored events are in a checkpoint's tree."""
    checkpoint = _run(lambda: signing.Checkpoint.load(checkpoint_file)) if checkpoint_file else None
    document = _run(lambda: integrity.inclusion_proof(None, game_id, checkpoint))
    size = document["checkpoint"]["size"]
    _write(
        document,
        out,
        f"inclusion proof: game {game_id}, {len(document['events'])} event(s), checkpoint of {size}",
    )


@command.command("consistency")
@click.argument("old_checkpoint", type=click.Path(dir_okay=False))
@click.argument("new_checkpoint", type=click.Path(dir_okay=False), required=False)
@click.option(
    "--out", type=click.Path(dir_okay=False, writable=True), help="Output file (default: stdout)."
)
def consistency(old_checkpoint: str, new_checkpoint: str | None, out: str | None) -> None:
    """Prove that the tree of NEW_CHECKPOINT (default: the latest) only appends to OLD's."""
    old = _run(lambda: signing.Checkpoint.load(old_checkpoint))
    new = _run(lambda: signing.Checkpoint.load(new_checkpoint)) if new_checkpoint else None
    document = _run(lambda: integrity.consistency_proof(None, old, new))
    _write(
        document,
        out,
        f"consistency proof: {document['old']['size']} -> {document['new']['size']} events",
    )
