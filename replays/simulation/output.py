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
    projected: int | None = None  # events the read-model projections took in

    def lines(self) -> list[str]:
        out = [f"stored {self.stored} games ({self.already} already recorded)"]
        out += [f"rejected {reason}" for reason in self.rejected]
        if self.projected is not None:
            out.append(f"read models: {self.projected} events projected")
        return out


def store_games(
    records: Iterable[dict],
    url: str | None = None,
    *,
    tally: Tally | None = None,
    warn=None,
) -> StoreSummary:
    """Store ``records`` in the ledger at ``url`` through the importer (each save seals its
    events), then bring the read models up to date.

    A game already stored (same id, same record) counts as already recorded, so an
    interrupted run can simply be repeated.
    """
    from domain.records import RecordError
    from replays.records.codec import parse_record
    from replays.records.importer import Importer, Outcome
    from replays.store.application import Ledger
    from replays.store.followers import catch_up_followers

    ledger = Ledger(url)
    importer = Importer(ledger)
    summary = StoreSummary()

    def count(outcomes: list[Outcome]) -> None:
        for outcome in outcomes:
            if outcome.failed:
                summary.rejected.append(outcome.message)
            elif outcome.status == "imported":
                summary.stored += 1
            else:
                summary.already += 1

    for record in records:
        if tally is not None:
            tally.add(record)
        try:
            parsed = parse_record(record)
        except RecordError as error:
            summary.rejected.append(str(error))
            continue
        count(importer.add(parsed))
    count(importer.flush())
    if summary.stored:
        followers = catch_up_followers(ledger.url, warn)
        summary.projected = followers.get("projected")
    return summary
