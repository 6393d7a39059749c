"""`rummy-ledger fairplay`: flagged players and pairs of a period, with their evidence moves.

rummy-ledger fairplay --from 2025-03-01 --to 2025-03-31 [--table T7] [--json | --csv]
rummy-ledger fairplay --records month.jsonl --from 2025-03-01 --to 2025-03-31

What each signal means and what it cannot prove: docs/dispute-officer-guide.md.
"""

from __future__ import annotations

import csv
import json
import sys

import click
import sqlalchemy as sa

DAY = click.DateTime(formats=["%Y-%m-%d"])


@click.command("fairplay")
@click.option("--from", "date_from", type=DAY, required=True, help="First day (YYYY-MM-DD, UTC).")
@click.option("--to", "date_to", type=DAY, required=True, help="Last day, inclusive.")
@click.option("--table", help="Only games at this table id.")
@click.option("--json", "as_json", is_flag=True, help="The review as JSON.")
@click.option("--csv", "as_csv", is_flag=True, help="One line per flag as CSV.")
@click.option(
    "--fdr",
    type=click.FloatRange(0.0001, 0.5),
    default=0.05,
    show_default=True,
    help="False-discovery rate (Benjamini-Hochberg) across everything tested.",
)
@click.option(
    "--records",
    type=click.Path(exists=True, dir_okay=False, allow_dash=True),
    help="Review these records (JSON Lines) instead of the ledger's games.",
)
@click.option("--rebuild", is_flag=True, help="Count every stored game again first.")
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Worker processes rebuilding and walking the games counted (0: one per core).",
)
@click.option("--url", help="Database URL (default: RUMMY_LEDGER_DATABASE_URL).")
def command(date_from, date_to, table, as_json, as_csv, fdr, records, rebuild, jobs, url) -> None:
    """Fair-play review of a period: colluding pairs, hidden-card knowledge, chip dumping
    and bot-like play, with evidence moves."""
    from replays.fairplay.signals import review

    if as_json and as_csv:
        raise click.UsageError("give --json or --csv, not both")
    start, end = date_from.date().isoformat(), date_to.date().isoformat()
    if end < start:
        raise click.UsageError(f"--to {end} is before --from {start}")
    doubts: list[str] = []
    if records:
        result = review(_summarise_file(records), start, end, table=table, fdr=fdr)
    else:
        result = _kept(url, start, end, table, rebuild, fdr, jobs, doubts)
    if as_json:
        data = result.to_dict()
        if doubts:
            data["doubts"] = doubts
        click.echo(json.dumps(data, indent=1))
    elif as_csv:
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(["signal", "players", "p", "q", "games", "statistic", "evidence"])
        for flag in result.flags:
            data = flag.to_dict()
            writer.writerow(
                [
                    data["label"],
                    " ".join(data["players"]),
                    f"{data['p']:.3g}",
                    f"{data['q']:.3g}",
                    data["games"],
                    data["statistic"],
                    " ".join(e["url"] for e in data["evidence"]),
                ]
            )
    else:
        for line in text_lines(result):
            click.echo(line)
        for doubt in doubts:
            click.echo(f"! figures may be wrong: {doubt}")


def text_lines(result) -> list[str]:
    lines = [
        f"fair-play review {result.start} .. {result.end}"
        + (f", table {result.table}" if result.table else "")
        + f": {result.games} games, {result.players} players, {result.tested} tests, "
        f"{len(result.flags)} flagged at FDR {result.fdr:g}"
    ]
    for flag in result.flags:
        data = flag.to_dict()
        lines.append(
            f"- {data['label']}: {' + '.join(data['players'])} (p {data['p']:.2g}, "
            f"q {data['q']:.2g}, {data['games']} games)"
        )
        lines.append(f"    {data['statistic']}")
        for evidence in data["evidence"]:
            lines.append(f"    {evidence['url']}  {evidence['note']}")
    return lines


def _summarise_file(path: str):
    from replays.fairplay.summary import summarise

    stream = sys.stdin if path == "-" else open(path, encoding="utf-8")  # noqa: SIM115
    with stream:

        def records():
            for number, line in enumerate(stream, 1):
                if not line.strip():
                    continue
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as error:
                    raise click.ClickException(
                        f"{path}, line {number}: not JSON ({error.msg})"
                    ) from None

        try:
            return summarise(records())
        except (KeyError, ValueError, TypeError) as error:
            raise click.ClickException(
                f"{path}: a record the review cannot read ({error})"
            ) from None


def _kept(url, start, end, table, rebuild, fdr, jobs, doubts):
    """The review of the period from the kept statistics, counted up first. A game of the
    period counted before whose ``fairplay_games`` row is gone (``CountedBefore``) goes into
    ``doubts`` (a list): the period's figures may not be what its games add up to."""
    import os

    from sqlalchemy.orm import Session

    from replays.fairplay import projection
    from replays.fairplay.tracking import CountedBefore
    from replays.store.db import engine_for
    from web.commands.store import open_ledger

    ledger = open_ledger(url)
    bar = None
    if sys.stderr.isatty():
        from tqdm import tqdm

        bar = tqdm(unit="game", desc="counting games")
    step = bar.update if bar is not None else None
    jobs = jobs or os.cpu_count() or 1

    def skipped(finding) -> None:
        click.echo(f"fairplay: skipped {finding} (not counted)", err=True)
        if isinstance(finding, CountedBefore) and start <= finding.day <= end:
            doubts.append(str(finding))

    if rebuild:
        projection.rebuild(ledger, url, progress=step, jobs=jobs, skipped=skipped)
    else:
        projection.catch_up(ledger, url, progress=step, jobs=jobs, skipped=skipped)
    if bar is not None:
        bar.close()
    with Session(engine_for(url)) as session:
        # A calendar month's review is kept by the catch-up: read back while it still counts
        # every game of the month; any other period is worked out from the period's sums.
        kept = projection.kept_review(session, start, end, table, fdr)
        if kept is not None:
            return kept[0]
        try:
            return projection.work_out(session, start, end, table, fdr)
        except sa.exc.DBAPIError:
            raise
        except Exception as error:
            session.rollback()
            return _around_unreadable(url, start, end, table, fdr, doubts, error)


# Unreadable values named one by one, at most (an insider's blanked column may hold thousands).
NAMED_AT_MOST = 20


def _around_unreadable(url, start, end, table, fdr, doubts, error: Exception):
    """The review drawn around the stored values of the wrong kind that stopped it, as the
    page is (web/unreadable.py): each is named (stderr, and in the figures' doubts), the rows
    holding them are hidden from a connection, and the period is worked out again through
    it. None found: the error was not the data's, and it stands."""
    from sqlalchemy.orm import Session

    from replays.fairplay import projection
    from replays.store.db import engine_for
    from replays.store.decoding import find_corrupt
    from web.unreadable import rows_read_by

    with engine_for(url).connect() as connection:
        corruption = find_corrupt(connection, where=rows_read_by({}))
        if not corruption:
            raise error
        findings = corruption.named()
        for finding in findings[:NAMED_AT_MOST]:
            click.echo(f"fairplay: left out, cannot be read: {finding}", err=True)
            doubts.append(f"a stored value cannot be read and its row is left out: {finding}")
        if len(findings) > NAMED_AT_MOST:
            more = f"{len(findings) - NAMED_AT_MOST} more rows cannot be read and are left out"
            click.echo(f"fairplay: {more} (rummy-ledger verify names every one)", err=True)
            doubts.append(more)
        corruption.mask(connection)
        try:
            with Session(bind=connection) as session:
                return projection.work_out(session, start, end, table, fdr)
        finally:
            connection.rollback()
            corruption.unmask(connection)
