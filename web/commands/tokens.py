"""`rummy-ledger tokens`: issue, list and revoke operator API tokens."""

from __future__ import annotations

import sys

import click
import sqlalchemy as sa

from replays.access import tokens


@click.group("tokens")
def command() -> None:
    """Operator API tokens (the live ingest API needs one per request)."""


def _storage_errors(work):
    try:
        return work()
    except tokens.TokenError as error:
        raise click.ClickException(str(error)) from None
    except sa.exc.DBAPIError as error:
        raise click.ClickException(
            f"cannot use the token table ({error.orig}); run `rummy-ledger db upgrade` first"
        ) from None


@command.command("create")
@click.argument("operator")
def create(operator: str) -> None:
    """Issue a token for OPERATOR and print it (the only time it is shown)."""
    issued = _storage_errors(lambda: tokens.create_token(operator))
    click.echo(
        f"token {issued.token_id} for {issued.operator}; keep it now, it is not stored:", err=True
    )
    click.echo(issued.token)


@command.command("revoke")
@click.argument("token_id", required=False)
@click.option("--operator", help="Revoke every active token of this operator instead.")
def revoke(token_id: str | None, operator: str | None) -> None:
    """Revoke TOKEN_ID (or all tokens of --operator); requests with it get 401.

    A token whose stored row holds a value of the wrong kind is revoked all the same, and
    the value is named on standard error."""
    if (token_id is None) == (operator is None):
        raise click.UsageError("give a TOKEN_ID or --operator, not both and not neither")
    if operator is not None:
        revoked = _storage_errors(lambda: tokens.revoke_operator(operator))
        for finding in revoked.unreadable:
            click.echo(f"unreadable: {finding} (the token is revoked all the same)", err=True)
        click.echo(f"revoked {revoked.count} token(s) of {operator}")
        return
    revoked = _storage_errors(lambda: tokens.revoke_token(token_id))
    for finding in revoked.unreadable:
        click.echo(f"unreadable: {finding} (the token is revoked all the same)", err=True)
    of = f" of {revoked.operator}" if revoked.operator is not None else ""
    click.echo(f"revoked token {revoked.token_id}{of}")


@command.command("list")
@click.option("--operator", help="Only this operator's tokens.")
def list_(operator: str | None) -> None:
    """List tokens: id, operator, created, revoked.

    A token whose stored row holds a value of the wrong kind is named on standard error
    and left out; the exit status is then 1."""
    listing = _storage_errors(lambda: tokens.list_tokens(operator=operator))
    for info in listing:
        state = f"revoked {info.revoked_at:%Y-%m-%d %H:%M}" if info.revoked_at else "active"
        click.echo(
            f"{info.token_id}  {info.operator:<20} created {info.created_at:%Y-%m-%d %H:%M}  {state}"
        )
    for finding in listing.unreadable:
        click.echo(f"unreadable: {finding} (its row is left out of this list)", err=True)
    if listing.unreadable:
        sys.exit(1)


@command.command("owner")
@click.argument("game_id")
@click.option("--operator", help="Hand the game to this operator (its tokens then reach it).")
def owner(game_id: str, operator: str | None) -> None:
    """Show which operator owns GAME_ID through the API, or hand it to --operator.

    Games created through the API belong to the operator whose token created it; imported
    games belong to no operator (no token reaches them) until handed to one."""
    from replays.access.ownership import UnreadableOwner, hand_over, owner_of
    from replays.store.application import GameNotFound

    if operator is None:
        try:
            found = _storage_errors(lambda: owner_of(game_id))
        except UnreadableOwner as error:
            raise click.ClickException(str(error)) from None
        click.echo(f"{game_id}: {found or 'no operator (not reachable through the API)'}")
        return
    try:
        previous = _storage_errors(lambda: hand_over(game_id, operator))
    except GameNotFound as error:
        raise click.ClickException(str(error)) from None
    click.echo(f"{game_id}: now {operator}'s" + (f" (was {previous}'s)" if previous else ""))
