"""`rummy-ledger hand`: evaluate a 13-card hand (placeholder until the solver lands)."""

import click


@click.command("hand")
def command() -> None:
    """Evaluate a hand: best grouping, score and whether it can declare."""
    raise click.ClickException("the hand evaluator is being built (issue 2)")
