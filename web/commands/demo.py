"""`rummy-ledger demo`: what `make run` does — a database full of games, then the site."""

from __future__ import annotations

import click


@click.command("demo")
@click.option(
    "--games",
    "-n",
    type=click.IntRange(min=1),
    default=None,
    help="Games to simulate into an empty database (default 300).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=5000, show_default=True, type=click.IntRange(1, 65535))
@click.option("--no-serve", is_flag=True, help="Prepare the database and stop.")
@click.pass_context
def command(ctx: click.Context, games: int | None, host: str, port: int, no_serve: bool) -> None:
    """Migrate the database, fill it with simulated games if it has none, and serve the site.

    Uses RUMMY_LEDGER_DATABASE_URL (default: rummy-ledger.sqlite3 here). A second run reuses
    the database.
    """
    from sqlalchemy.exc import SQLAlchemyError

    from replays.demo import (
        DEMO_GAMES,
        checkpoint_demo,
        create_demo_accounts,
        prepare_demo,
        seed_deccan_example,
        seed_dispute_cases,
    )

    setup = prepare_demo(games=games or DEMO_GAMES, echo=click.echo)
    for line in setup.stored:
        click.echo(f"  {line}")
    if seed_deccan_example(setup.url):
        setup.games_after += 1  # a new game: the checkpoint is signed again
        click.echo("  stored a deccan game whose loser met the objective (the 2-point rule)")
    cases = seed_dispute_cases(setup.url)
    if cases:
        click.echo(f"  opened {len(cases)} dispute cases for the dispute pages")
    signed = checkpoint_demo(setup)
    if signed:
        click.echo(signed)
    try:
        accounts = create_demo_accounts(setup.url)
    except SQLAlchemyError as error:  # e.g. the accounts tables are not migrated yet
        click.echo(f"Demo accounts not created: {str(error).splitlines()[0]}", err=True)
        accounts = []
    if accounts:
        click.echo("Demo accounts (role, user, password):")
        for account in accounts:
            click.echo(f"  {account.role:<16} {account.username:<20} {account.password}")
    if no_serve:
        return
    from web.commands.serve import command as serve

    # The demo keeps Werkzeug's development server (serve --dev): one process, quick to stop.
    ctx.invoke(serve, host=host, port=port, dev=True)
