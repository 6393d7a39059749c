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
