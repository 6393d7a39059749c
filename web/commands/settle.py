"""`rummy-ledger settle FILE.jsonl [--json]`: settle records in memory, store nothing."""

from __future__ import annotations

import json
import sys

import click

from domain import variants
from domain.rummy13.records import FORMAT_TAG
from replays.records.importer import progress_wanted
from replays.records.settle import settle_outcomes


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
    # An outcome names its variant unless it is the record format's default (13-card).
    if "variant" in outcome:
        variant = variants.get(outcome["variant"])
    else:
        variant = variants.for_record({"format": FORMAT_TAG})
    return variant.describe_settlement(outcome)
