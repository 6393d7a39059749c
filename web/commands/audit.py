"""`rummy-ledger audit GAME_ID [--json]`: check one game's payout against its events."""

from __future__ import annotations

import json

import click

from web.commands.store import open_ledger

DISCREPANCIES_EXIT = 2


@click.command("audit")
@click.argument("game_id")
@click.option("--json", "as_json", is_flag=True, help="The settle shape plus discrepancies.")
def command(game_id: str, as_json: bool) -> None:
    """Recompute GAME_ID's settlement from its stored events and compare it with the
    recorded settlement and the operator's reported figures.

    Exit status: 0 when everything agrees, 2 when any discrepancy is listed, 1 for an
    unknown game or a game without a winner yet.
    """
    from replays.application import GameNotFound
    from replays.audit import NothingToAudit, audit

    ledger = open_ledger(migrate=False)
    try:
        report = audit(ledger, game_id)
    except (GameNotFound, NothingToAudit) as error:
        raise click.ClickException(str(error)) from None
    click.echo(json.dumps(report.to_dict()) if as_json else _for_people(report))
    if not report.clean:
        raise SystemExit(DISCREPANCIES_EXIT)


def _for_people(report) -> str:
    if hasattr(report, "for_people"):  # a Red 3 match's audit
        return report.for_people()
    computed = report.computed.summary()
    lines = [
        f"Audit of {report.game_id}: winner {computed['winner']}",
        "",
        f"  {'player':<10} {'result':<12} {'charged':>7} {'minimum':>7}  {'scoring case':<34}"
        f" {'points':>6} x {'value':>6} {'(round)':>7} = {'amount':>9}",
    ]
    for line in report.losers:
        charged = "-" if line.hand_score is None else str(line.hand_score)
        minimum = "-" if line.min_score is None else str(line.min_score)
        lines.append(
            f"  {line.player:<10} {line.result:<12} {charged:>7} {minimum:>7}  "
            f"{line.case or '-':<34} {line.points:>6} x {line.point_value:>6} "
            f"{'(' + str(line.ended_at_round) + ')':>7} = {line.amount:>9}"
        )
    lines += [
        "",
        f"  gross {computed['gross']}  fee {computed['fee']} "
        f"({report.computed.fee_percent}%)  net to winner {computed['net_to_winner']}",
        f"  recorded settlement: {'present' if report.recorded is not None else 'none'}; "
        f"operator's report: {'present' if report.reported else 'none'}",
        "",
    ]
    if report.clean:
        lines.append("No discrepancies: recomputation, recorded settlement and report agree.")
    else:
        lines.append(f"{len(report.discrepancies)} discrepancy(ies):")
        for found in report.discrepancies:
            lines.append(
                f"  {found.source:<9} {found.field:<28} says {found.reported!s:<10} "
                f"recomputed {found.computed}"
            )
    return "\n".join(lines)
