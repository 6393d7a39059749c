"""`rummy-ledger users`: add, list, disable and enable the site's accounts, set passwords."""

from __future__ import annotations

import json
import sys

import click
import sqlalchemy as sa

from replays.access import accounts


@click.group("users")
def command() -> None:
    """Site accounts: players (one player id each), auditors, dispute officers, admins."""


def _storage_errors(work):
    try:
        return work()
    except accounts.AccountError as error:
        raise click.ClickException(str(error)) from None
    except sa.exc.DBAPIError as error:
        raise click.ClickException(
            f"cannot use the accounts table ({error.orig}); run `rummy-ledger db upgrade` first"
        ) from None


def _read_password(from_stdin: bool, username: str) -> str:
    if from_stdin:
        # One line: the password; the line break that ends it is not part of it.
        line = sys.stdin.readline()
        password = line[:-1] if line.endswith("\n") else line
        if password.endswith("\r"):
            password = password[:-1]
        if not password:
            raise click.ClickException("--password-stdin: no password on standard input")
        return password
    return click.prompt(
        f"Password for {username}", hide_input=True, confirmation_prompt=True, err=True
    )


@command.command("add")
@click.argument("name")
@click.option(
    "--role",
    required=True,
    type=click.Choice(accounts.ROLES),
    help="What the account may see and do.",
)
@click.option("--player", "player_id", help="The player id a player account is linked to.")
@click.option(
    "--password-stdin",
    is_flag=True,
    help="Read the password from the first line of standard input instead of a prompt.",
)
def add(name: str, role: str, player_id: str | None, password_stdin: bool) -> None:
    """Add the account NAME with --role (a player also needs --player PLAYER_ID)."""
    # Checked before asking for a password, so a typo does not cost a prompt.
    _storage_errors(lambda: accounts.normalise_username(name))
    if role == accounts.PLAYER and not player_id:
        raise click.UsageError("a player account needs --player PLAYER_ID")
    if role != accounts.PLAYER and player_id:
        raise click.UsageError(f"--player is only for player accounts, not {role}")
    password = _read_password(password_stdin, name)
    account = _storage_errors(lambda: accounts.add_user(name, role, password, player=player_id))
    linked = f", player {account.player_id}" if account.player_id else ""
    click.echo(f"added {account.username} ({account.role_words}{linked})")


@command.command("list")
@click.option("--role", type=click.Choice(accounts.ROLES), help="Only accounts of this role.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
def list_(role: str | None, as_json: bool) -> None:
    """List accounts: name, role, player, created, active or disabled.

    An account whose stored row holds a value of the wrong kind is named on standard error
    and left out; the exit status is then 1."""
    listing = _storage_errors(lambda: accounts.list_users(role=role))
    for account in listing:
        if as_json:
            click.echo(
                json.dumps(
                    {
                        "username": account.username,
                        "role": account.role,
                        "player": account.player_id,
                        "active": account.active,
                        "created_at": account.created_at.isoformat(),
                    }
                )
            )
            continue
        state = "active" if account.active else f"disabled {account.disabled_at:%Y-%m-%d %H:%M}"
        click.echo(
            f"{account.username:<24} {account.role:<16} {account.player_id or '-':<12} "
            f"created {account.created_at:%Y-%m-%d %H:%M}  {state}"
        )
    for finding in listing.unreadable:
        click.echo(f"unreadable: {finding} (its row is left out of this list)", err=True)
    if listing.unreadable:
        sys.exit(1)


@command.command("disable")
@click.argument("name")
def disable(name: str) -> None:
    """Disable NAME: it cannot sign in, and its open sessions end at once."""
    account = _storage_errors(lambda: accounts.disable_user(name))
    click.echo(f"disabled {account.username}")


@command.command("enable")
@click.argument("name")
def enable(name: str) -> None:
    """Enable NAME again."""
    account = _storage_errors(lambda: accounts.enable_user(name))
    click.echo(f"enabled {account.username}")


@command.command("password")
@click.argument("name")
@click.option("--password-stdin", is_flag=True, help="Read the new password from stdin.")
def password(name: str, password_stdin: bool) -> None:
    """Set a new password for NAME (its open sessions end)."""
    _storage_errors(lambda: accounts.normalise_username(name))
    new = _read_password(password_stdin, name)
    account = _storage_errors(lambda: accounts.set_password(name, new))
    click.echo(f"password changed for {account.username}")
