"""`rummy-ledger audit GAME_ID [--json]`: check one game's payout against its events."""

from __future__ import annotations

import json

import click

from replays.store.decoding import unreadable_summary
from web.commands.store import open_ledger

DISCREPANCIES_EXIT = 2


@click.command("audit")
@click.argument("game_id")
@click.option("--json", "as_json", is_flag=True, help="The settle shape plus discrepancies.")
def command(game_id: str, as_json: bool) -> None:
    """Recompute GAME_ID's settlement from its stored events and compare it with the
    recorded settlement and the operator's reported figures.

    Exit status: 0 when everything agrees, 2 when any discrepancy is listed, 1 for an
    unknown game, a game without a winner yet or one whose stored events cannot be read.
    """
    from replays.records.audit import NothingToAudit, audit
    from replays.store.application import GameNotFound

    ledger = open_ledger(migrate=False)
    try:
        report = audit(ledger, game_id)
    except (GameNotFound, NothingToAudit) as error:
        raise click.ClickException(str(error)) from None
    except Exception as error:  # its stored events cannot be read or replayed: say which
        raise click.ClickException(
            f"game {game_id} cannot be rebuilt from its stored events: {unreadable_summary(error)}; "
            f"`rummy-ledger verify --game {game_id}` says more"
        ) from None
    finally:
        # Now, not when the failed replay's traceback is collected: on SQLite its open
        # read would hold off the next writer ("database is locked").
        ledger.close()
    click.echo(json.dumps(report.to_dict()) if as_json else report.for_people())
    if not report.clean:
        raise SystemExit(DISCREPANCIES_EXIT)
