"""`rummy-ledger export GAME_ID... | --all`: write stored games as docs/record-format.md records."""

from __future__ import annotations

import click

from replays.records.importer import progress_wanted
from replays.store.decoding import unreadable_summary
from web.commands.store import open_ledger


@click.command("export")
@click.argument("game_ids", nargs=-1)
@click.option("--all", "everything", is_flag=True, help="Every stored game, oldest first.")
@click.option(
    "-o",
    "--output",
    type=click.File("w", encoding="utf-8"),
    default="-",
    help="Write to this file instead of standard output.",
)
def command(game_ids: tuple[str, ...], everything: bool, output) -> None:
    """Write the records of GAME_IDS (or --all) as JSON Lines, one game a line.

    Each record is rebuilt from the stored events and carries the recorded `settlement`.
    """
    from replays.records.exporter import export_record
    from replays.store.application import GameNotFound

    if everything == bool(game_ids):
        raise click.UsageError("give GAME_IDS or --all")
    ledger = open_ledger(migrate=False)
    try:
        ids = list(ledger.iter_game_ids()) if everything else list(game_ids)
    except Exception as error:  # a stored event no reading takes: say which, no traceback
        raise click.ClickException(
            f"cannot list the stored games: {unreadable_summary(error)}; `rummy-ledger verify` "
            "names every altered or unreadable row"
        ) from None
    if progress_wanted() and output.name != "<stdout>":
        from tqdm import tqdm

        ids = tqdm(ids, unit="game", desc="export", leave=False)
    missing = []
    for game_id in ids:
        try:
            output.write(export_record(ledger, game_id) + "\n")
        except GameNotFound as error:
            missing.append(str(error))
        except Exception as error:  # its stored events cannot be read or replayed
            missing.append(
                f"game {game_id} cannot be rebuilt from its stored events: "
                f"{unreadable_summary(error)}; `rummy-ledger verify --game {game_id}` says more"
            )
    for message in missing:
        click.echo(f"error: {message}", err=True)
    if missing:
        raise SystemExit(1)
