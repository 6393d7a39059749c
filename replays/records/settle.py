"""Settle records in memory: replay each through the aggregate, store nothing.

What ``rummy-ledger settle`` runs. Each record gives one outcome, the settlement's summary
(the ``settle`` JSON shape) or ``{"game_id", "error"}``; a bad record never stops the rest.

>>> settle_lines(['{"game_id": "G1", "format": "rummy-ledger/game@2"}'])
[{'game_id': 'G1', 'error': "field 'format': 'rummy-ledger/game@2' is not supported (expected 'rummy-ledger/game@1')"}]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from domain import variants
from domain.errors import RuleViolation
from domain.records import RecordError
from domain.rummy13.game import Game
from domain.rummy13.moves import play_game
from domain.rummy13.records import GameRecord
from domain.rummy13.variant import NotOver
from replays.records.codec import explain, read_records


def play_record(record: GameRecord, *, settle: bool = True) -> Game:
    """The record's 13-card game built in memory (``settle``: settle it if it is over)."""
    return play_game(record.config, record.deal, record.moves, settle=settle)


def settle_record(record: Any) -> dict[str, Any]:
    """The settlement outcome of one whole record, from its variant; raises if a rule is
    broken or (13-card) the game is not over."""
    return variants.for_parsed(record).settle(record)


def settle_outcomes(lines: Iterable[str | bytes]) -> Iterator[dict[str, Any]]:
    """One outcome per record in JSON Lines: a settlement summary or an error line."""
    for _number, parsed in read_records(lines):
        if isinstance(parsed, RecordError):
            yield {"game_id": parsed.game_id, "error": parsed.detail}
            continue
        try:
            yield settle_record(parsed)
        except RuleViolation as error:
            yield {"game_id": parsed.game_id, "error": explain(error, parsed)}


def settle_lines(lines: Iterable[str | bytes]) -> list[dict[str, Any]]:
    return list(settle_outcomes(lines))


__all__ = ["NotOver", "play_record", "settle_lines", "settle_outcomes", "settle_record"]
