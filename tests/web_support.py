"""A ledger database filled with the sample records, for the page and browser tests.

The games go through the real path: ``migrate`` builds the schema, the importer stores each
record through the aggregate, the projection fills the read models. One extra record is the
docs/record-format.md example with the operator's reported gross changed, so the audit has a
discrepancy to find.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
MISREPORTED = "T7-000124"


def sample_records() -> list[dict]:
    with open(DATA / "games.jsonl", encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines if line.strip()]
    example = next(r for r in records if r["game_id"] == "T7-000123")
    wrong = copy.deepcopy(example)
    wrong["game_id"] = MISREPORTED
    wrong["started_at"] = "2025-03-02T20:00:00Z"
    wrong["reported"] = dict(wrong["reported"], gross="52.70", net_to_winner="47.73")
    return [*records, wrong]


def load_games(url: str, records: list[dict] | None = None) -> dict[str, dict]:
    """Migrate ``url``, import ``records`` (default: the samples) and project them."""
    from replays.readmodels.projections import catch_up
    from replays.records.importer import import_lines
    from replays.store.application import Ledger
    from replays.store.schema import migrate

    records = sample_records() if records is None else records
    migrate(url)
    ledger = Ledger(url)
    summary = import_lines(ledger, [json.dumps(r) for r in records])
    assert summary.ok, summary.line()
    catch_up(url)
    return {r["game_id"]: r for r in records}
