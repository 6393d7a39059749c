"""Where simulated games go: a JSON Lines file of records, or the ledger itself.

Storing uses the ledger's import use case, the same path an operator's records take, so a
simulated game is validated move by move by the game aggregate and stored in one save.
Afterwards the read models and integrity seals are brought up to date, when the project
has them, so the site shows the new games at once.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field

import orjson

from replays.simulation.tally import Tally


def write_records(records: Iterable[dict], out: str, *, tally: Tally | None = None) -> int:
    """Write ``records`` to ``out`` (``-``: stdout) as JSON Lines; return how many."""
    count = 0
    target = sys.stdout.buffer if out == "-" else open(out, "wb")  # noqa: SIM115
    with nullcontext(target) if out == "-" else target as stream:
        for record in records:
            stream.write(orjson.dumps(record) + b"\n")
            count += 1
            if tally is not None:
                tally.add(record)
    return count


@dataclass
class StoreSummary:
    stored: int = 0
    already: int = 0
    rejected: list[str] = field(default_factory=list)
    projected: int | None = None
    sealed: int | None = None

    def lines(self) -> list[str]:
        out = [f"stored {self.stored} games ({self.already} already recorded)"]
        out += [f"rejected {reason}" for reason in self.rejected]
        if self.projected is not None:
            out.append(f"read models: {self.projected} events projected")
        if self.sealed is not None:
            out.append(f"integrity: {self.sealed} events sealed")
        return out


def store_games(
    records: Iterable[dict], url: str | None = None, *, tally: Tally | None = None
) -> StoreSummary:
    """Store ``records`` in the ledger at ``url``, then bring read models and seals up to date.

    A game already stored (same id) counts as already recorded; the run is resumable.
    """
    from replays.application import GameExists, Ledger, RuleViolation
    from replays.records import RecordError, parse_record

    ledger = Ledger(url)
    summary = StoreSummary()
    for record in records:
        if tally is not None:
            tally.add(record)
        try:
            parsed = parse_record(record)
            ledger.record_game(
                parsed.config,
                parsed.deal,
                parsed.move_dicts(),
                reported=None if parsed.reported is None else parsed.reported.to_dict(),
            )
        except GameExists:
            summary.already += 1
        except (RecordError, RuleViolation) as error:
            summary.rejected.append(f"{record.get('game_id')}: {error}")
        else:
            summary.stored += 1
    summary.projected, summary.sealed = catch_up(ledger.url)
    return summary


def catch_up(url: str) -> tuple[int | None, int | None]:
    """Project new events into the read models and seal them, where the project can."""
    projected = sealed = None
    try:
        from replays.projections import catch_up as project
    except ImportError:
        project = None
    if project is not None:
        projected = project(url)
    try:
        from replays.integrity import seal_new_events
    except ImportError:
        seal_new_events = None
    if seal_new_events is not None:
        sealed = seal_new_events(url)
    return projected, sealed
