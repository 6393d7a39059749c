"""`rummy-ledger settle FILE.jsonl [--json]`: settle records in memory, store nothing."""

from __future__ import annotations

import json
import sys

import click

from replays.importer import progress_wanted
from replays.settle import settle_outcomes


@click.command("settle")
@click.argument("file", type=click.File("r", encoding="utf-8"))
@click.option("--json", "as_json", is_flag=True, help="One JSON object per game, per line.")
def command(file, as_json: bool) -> None:
    """Replay each record of FILE (JSON Lines, `-` for stdin) and print its settlement.

    A record that breaks a rule or the format prints its error on its own line; the other
    records are still settled, and the exit status is 1.
    """
    failed = False
    outcomes = settle_outcomes(file)
    # A bar on the terminal while the results go to a file or a pipe.
    if progress_wanted() and not sys.stdout.isatty():
        from tqdm import tqdm

        outcomes = tqdm(outcomes, unit="game", desc="settle", leave=False)
    for outcome in outcomes:
        failed = failed or "error" in outcome
        click.echo(json.dumps(outcome) if as_json else _for_people(outcome))
    if failed:
        raise SystemExit(1)


def _for_people(outcome: dict) -> str:
    if "error" in outcome:
        return f"{outcome['game_id'] or '?'}: REJECTED {outcome['error']}"
    if outcome.get("variant") == "red3":
        from replays.red3_records import describe_settlement

        return describe_settlement(outcome)
    lines = [
        f"{outcome['game_id']}: {outcome['winner']} wins {outcome['net_to_winner']} "
        f"(gross {outcome['gross']}, fee {outcome['fee']})"
    ]
    for player, line in outcome["players"].items():
        lines.append(
            f"  {player:<12} {line['result']:<12} {line['points']:>3} pts "
            f"x {line['point_value']:>6} = {line['amount']:>9}"
        )
    return "\n".join(lines)
