"""`rummy-ledger report`: games, gross, fees and net paid over a period, reconciled.

rummy-ledger report --from 2025-03-01 --to 2025-03-31 --table T7 --format csv
"""

from __future__ import annotations

import json
import sys

import click

DAY = click.DateTime(formats=["%Y-%m-%d"])


@click.command("report")
@click.option("--from", "date_from", type=DAY, required=True, help="First day (YYYY-MM-DD, UTC).")
@click.option("--to", "date_to", type=DAY, required=True, help="Last day, inclusive.")
@click.option("--table", help="Only games at this table id.")
@click.option("--player", help="Only games this player took part in.")
@click.option(
    "--format",
    "output",
    type=click.Choice(["table", "csv", "json"]),
    default="table",
    show_default=True,
)
@click.option("--strict", is_flag=True, help="Exit with status 3 when there is any discrepancy.")
@click.option(
    "--verify/--no-verify",
    default=True,
    show_default=True,
    help="Check the period's games: events against their seals and the latest checkpoint, "
    "read rows against the events.",
)
@click.option(
    "--url",
    help="Database URL (default: RUMMY_LEDGER_READ_DATABASE_URL, the read replicas, when "
    "set; else RUMMY_LEDGER_DATABASE_URL).",
)
def command(date_from, date_to, table, player, output, strict, verify, url) -> None:
    """Period report: totals per table, per day and per player; every game whose ledger
    does not balance or whose settlement differs from a recomputation is listed, and
    whether the period's games verify."""
    from dataclasses import replace

    from replays.readmodels.models import READ_MODEL_TABLES
    from replays.readmodels.period_verify import period_verified_ids
    from replays.readmodels.reports import PeriodFilter, ReportError, period_report
    from replays.store.db import StoredBytes, engine_for, undecodable
    from replays.store.decoding import without_unreadable
    from replays.store.settings import reading_database_url

    url = reading_database_url(url)
    try:
        period = PeriodFilter(date_from.date(), date_to.date(), table, player)
    except ReportError as error:
        raise click.UsageError(str(error)) from None
    unreadable = []
    try:
        engine = engine_for(url)
        try:
            with engine.connect() as connection:
                report = period_report(connection, period)
                game_ids = period_verified_ids(connection, period) if verify else None
        except Exception as error:
            if not (undecodable(error) or isinstance(error, StoredBytes)):
                raise
            # A stored text that is not UTF-8 (SQLite keeps whatever bytes it is given)
            # fails the whole read, and a BLOB in a text column fails its read (StoredText): name
            # it, and report the period without its row.
            with (
                engine.connect() as connection,
                without_unreadable(connection, READ_MODEL_TABLES) as unreadable,
            ):
                report = period_report(connection, period)
                game_ids = period_verified_ids(connection, period) if verify else None
        lag = _lag(engine)
        if game_ids is not None:
            from replays.readmodels.period_verify import verify_period

            checked = verify_period(url, game_ids, progress=output == "table")
            report = replace(report, verification=checked)
    except Exception as error:  # unreachable or unmigrated database: say so, no traceback
        raise click.ClickException(
            f"cannot read the read models ({error.__class__.__name__}: {error}); "
            "is the database migrated (rummy-ledger db upgrade)?"
        ) from error
    if lag:
        click.echo(
            f"note: the read models are {lag} events behind the store; "
            "run `rummy-ledger projections run` for up-to-date figures",
            err=True,
        )
    for finding in unreadable:
        click.echo(f"unreadable: {finding} (its row is left out of this report)", err=True)
    {"table": _print_table, "csv": _print_csv, "json": _print_json}[output](report)
    failed = report.verification is not None and not report.verification.verified
    failed = failed or bool(unreadable)  # the figures above leave rows out
    if strict and (report.discrepancies or not report.reconciliation.balanced or failed):
        sys.exit(3)


def _lag(engine) -> int:
    from replays.readmodels.projections import projection_status

    return projection_status(engine=engine).lag


def _print_json(report) -> None:
    click.echo(json.dumps(report.to_dict(), indent=2))


def _print_csv(report) -> None:
    from replays.readmodels.period_views import write_csv

    write_csv(report, sys.stdout)


def _print_table(report) -> None:
    data = report.to_dict()
    period = data["period"]
    scope = "".join(
        f", {name} {period[name]}" for name in ("table", "player") if period[name] is not None
    )
    click.echo(f"Period {period['from']} to {period['to']}{scope}")
    money = ["games", "gross", "fees", "net_paid"]
    click.echo(_grid(["", *money], [["total", *(data["totals"][k] for k in money)]]))
    if data["by_table"]:
        rows = [[t["table"] or "-", *(t[k] for k in money)] for t in data["by_table"]]
        click.echo("\nPer table\n" + _grid(["table", *money], rows))
    if data["by_day"]:
        rows = [[d["day"], *(d[k] for k in money)] for d in data["by_day"]]
        click.echo("\nPer day\n" + _grid(["day", *money], rows))
    if data["by_player"]:
        keys = ["games", "wins", "points", "paid", "received", "net"]
        rows = [[p["player"], *(p[k] for k in keys)] for p in data["by_player"]]
        click.echo("\nPer player\n" + _grid(["player", *keys], rows))
    if data["points_only"]:
        rows = [
            [line["variant"], line["games"], player, points]
            for line in data["points_only"]
            for player, points in line["points"].items()
        ]
        click.echo(
            "\nGames without stakes (points only)\n"
            + _grid(["variant", "games", "player", "points"], rows)
        )
    if len(data["by_kind"]) > 1:  # only settlements: the totals above say it all
        rows = [[k["kind"], k["games"], k["debits"], k["credits"]] for k in data["by_kind"]]
        click.echo(
            "\nLedger entries by kind\n" + _grid(["kind", "games", "debits", "credits"], rows)
        )
    if data["adjustments"]:
        rows = [
            [
                a["dispute_id"],
                a["game_id"],
                a["posted_on"] or "-",
                a["amount"],
                a["debited"],
                a["credited"],
            ]
            for a in data["adjustments"]
        ]
        click.echo(
            "\nDispute adjustments\n"
            + _grid(["case", "game", "posted_on", "amount", "debited", "credited"], rows)
        )
    r = data["reconciliation"]
    verdict = "balanced" if r["balanced"] else "NOT BALANCED"
    click.echo(
        f"\nReconciliation: debits {r['debits']}, credits {r['credits']}, "
        f"{r['games_checked']} games, {r['unbalanced_games']} unbalanced: {verdict}"
    )
    if data["discrepancies"]:
        rows = [
            [d["game_id"], d["ended_on"] or "-", d["table"] or "-", d["kind"], d["detail"]]
            for d in data["discrepancies"]
        ]
        click.echo(
            f"\nDiscrepancies ({len(rows)})\n"
            + _grid(["game", "ended_on", "table", "kind", "detail"], rows)
        )
    else:
        click.echo("No discrepancies.")
    v = data["verification"]
    if v is None:
        click.echo("\nVerification: not run (--no-verify).")
        return
    word = "verified" if v["verified"] else "NOT VERIFIED"
    from replays.readmodels.period_views import verification_words

    click.echo(f"\nVerification: {word}: {verification_words(v)}")
    if v["failed"]:
        rows = [[f["game_id"], f["finding"]] for f in v["failed"]]
        click.echo(
            f"\nGames that fail verification ({len(rows)})\n" + _grid(["game", "finding"], rows)
        )


def _grid(header: list[str], rows: list[list]) -> str:
    """Left-align text, right-align numbers, like a ledger page."""
    cells = [[str(c) for c in header]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]

    def numeric(text: str) -> bool:
        return text.replace(".", "", 1).replace("-", "", 1).isdigit()

    lines = []
    for n, row in enumerate(cells):
        parts = [
            c.rjust(w) if n and numeric(c) else c.ljust(w) for c, w in zip(row, widths, strict=True)
        ]
        lines.append("  ".join(parts).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)
