"""Export stored games as docs/record-format.md records, one JSON line each.

The record is rebuilt from the game's events by its variant (``Variant.export``), so
importing an export into a fresh store gives the same events and the same settlement.
On export the ledger adds ``settlement``: the ``Settled`` event's body exactly as recorded
(absent while a game runs). Import ignores it, because the ledger recomputes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from domain import variants
from domain.records import dump_record
from replays.store.application import Ledger


def export_record(ledger: Ledger, game_id: str) -> str:
    """One game as a JSON line (raises GameNotFound for an unknown id)."""
    game = ledger.get_game(game_id)
    return dump_record(variants.for_game(game).export(game))


def export_lines(ledger: Ledger, game_ids: Iterable[str] | None = None) -> Iterator[str]:
    """Every requested game (all of them, in the order they were started, when None)."""
    for game_id in ledger.iter_game_ids() if game_ids is None else game_ids:
        yield export_record(ledger, game_id)
