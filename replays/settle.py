"""Settle records in memory: replay each through the aggregate, store nothing.

What ``rummy-ledger settle`` runs. Each record gives one outcome, the settlement's summary
(the ``settle`` JSON shape) or ``{"game_id", "error"}``; a bad record never stops the rest.

>>> settle_lines(['{"game_id": "G1", "format": "rummy-ledger/game@2"}'])
[{'game_id': 'G1', 'error': "field 'format': 'rummy-ledger/game@2' is not supported (expected 'rummy-ledger/game@1')"}]
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from domain.errors import RuleViolation
from domain.game import Game
from domain.moves import play_game
from replays.records import GameRecord, RecordError, explain, read_records


class NotOver(RuleViolation):
    """A record that stops before the game has a winner: nothing to settle yet."""


def play_record(record: GameRecord, *, settle: bool = True) -> Game:
    """The record's game built in memory (``settle``: settle it if it is over)."""
    return play_game(record.config, record.deal, record.move_dicts(), settle=settle)


def settle_record(record: GameRecord) -> dict[str, Any]:
    """The settlement summary of one whole record; raises if a rule is broken or the game
    is not over."""
    if getattr(record, "variant", None) == "red3":
        return record.settle()  # per-round scores and totals, also for a running match
    game = play_record(record)
    if game.settlement is None:
        waiting = f", {game.current_player} to move" if game.current_player else ""
        raise NotOver(
            f"the record ends before the game is over ({game.phase}{waiting}): nothing to settle"
        )
    return game.settlement.summary()


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
