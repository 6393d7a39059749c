"""`rummy-ledger import FILE.jsonl` (`-` for stdin): store records as games' events."""

from __future__ import annotations

import os

import click

from replays.records.importer import import_lines, progress_wanted
from web.commands.store import open_ledger


@click.command("import")
@click.argument("file", type=click.File("r", encoding="utf-8"))
@click.option(
    "--batch",
    type=click.IntRange(min=1),
    default=50,
    show_default=True,
    help="Games stored per transaction.",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Worker processes checking and storing records (0: one per core).",
)
def command(file, batch: int, jobs: int) -> None:
    """Import the game records of FILE (JSON Lines, docs/record-format.md) into the ledger.

    Every move is checked against the rules; a record that breaks a rule or the format is
    reported as `GAME_ID: move N (player type card): reason` and stores nothing, while the
    other records still import. Records already in the ledger are skipped; a different
    record under a stored game id is a conflict. Exit status 1 when any record was rejected.
    With --jobs N, N processes share the records (all of one game id go to the same one);
    every save still seals its events in one tree, in one order. The database is RUMMY_LEDGER_DATABASE_URL (default: the SQLite file).
    """
    ledger = open_ledger()
    bar = None
    if progress_wanted():
        from tqdm import tqdm

        total = _count_lines(file)
        bar = tqdm(total=total, unit="game", desc="import", leave=False)

    def on_outcome(outcome) -> None:
        if bar is not None:
            bar.update(1)
        if outcome.failed:
            (bar.write if bar is not None else click.echo)(outcome.message)

    options = {
        "batch": batch,
        "on_outcome": on_outcome,
        "warn": lambda m: click.echo(m, err=True),
        "progress": bar is not None,
    }
    jobs = jobs or os.cpu_count() or 1
    try:
        if jobs > 1:
            from replays.records.parallel import import_lines_parallel

            summary = import_lines_parallel(ledger.url, file, jobs=jobs, **options)
        else:
            summary = import_lines(ledger, file, **options)
    finally:
        if bar is not None:
            bar.close()
    click.echo(summary.line())
    if not summary.ok:
        raise SystemExit(1)


def _count_lines(file) -> int | None:
    """Lines in a seekable file (for the bar's total); None for a pipe."""
    try:
        if not file.seekable():
            return None
        start = file.tell()
        # In pieces: one hostile line may be gigabytes long.
        total = sum(chunk.count("\n") for chunk in iter(lambda: file.read(1 << 16), ""))
        file.seek(start)
        return total
    except (OSError, ValueError):
        return None
