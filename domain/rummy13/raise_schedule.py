"""The point value in force in each round (docs/rules.md §1.7).

Points Rummy has one value. Raise Rummy starts at ``point_value`` and rises by ``raise_step``
each round up to ``raise_max``, or follows an explicit schedule whose last value holds after.
A round is one turn for each player still in, starting with the seat after the dealer; the
value goes up when play passes the dealer's seat (see ``docs/rules-choices.md``).

>>> from domain.rummy13.table import TableConfig
>>> config = TableConfig(game_id="G", variant="raise", players=("p1", "p2"),
...                      point_value="1.00", raise_step="0.10", raise_max="1.25")
>>> [str(point_value_for_round(config, r)) for r in range(4)]
['1.00', '1.10', '1.20', '1.25']
"""

from __future__ import annotations

from decimal import Decimal

from domain.rummy13.table import TableConfig


def point_value_for_round(config: TableConfig, round_number: int) -> Decimal:
    """The point value of round ``round_number`` (0 = the first round)."""
    global _LAST
    last = _LAST
    if last[0] is config and last[1] == round_number and type(round_number) is int:
        return last[2]
    value = _point_value(config, round_number)
    _LAST = (config, round_number, value)
    return value


# The last answer, with the table and round it was for: a game's moves ask for the same
# round's value one after another (each move's row, then the settlement). The same Decimal
# object comes back each time, so a raise game's value is not worked out again for every
# move, and the read rows' money memo hashes it once (a Decimal keeps its hash) instead of
# once a move. A table's settings never change (a frozen TableConfig).
_LAST: tuple = (None, None, None)


def _point_value(config: TableConfig, round_number: int) -> Decimal:
    if round_number < 0:
        raise ValueError(f"round {round_number} is before the game started")
    if config.variant == "points":
        return config.point_value
    if config.raise_schedule is not None:
        return config.raise_schedule[min(round_number, len(config.raise_schedule) - 1)]
    value = config.point_value + round_number * config.raise_step
    if config.raise_max is not None and value > config.raise_max:
        return config.raise_max
    return value
