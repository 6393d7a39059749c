"""Deals Rummy's rules, pure (docs/rules.md §4): chips move from each loser to the deal's
winner, never below 0; the most chips after N deals wins, ties play on.

>>> chips, moved, short = move_chips({"a": 160, "b": 10, "c": 160}, "a", {"b": 40, "c": 25})
>>> chips, moved, short
({'a': 195, 'b': 0, 'c': 135}, {'b': 10, 'c': 25}, {'b': 30})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def move_chips(
    chips: Mapping[str, int], winner: str, points: Mapping[str, int]
) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """Chips after a deal, the chips each loser gave and each loser's shortfall (points
    owed beyond the chips they had)."""
    after = dict(chips)
    moved: dict[str, int] = {}
    short: dict[str, int] = {}
    for player, owed in points.items():
        given = min(owed, after[player])
        after[player] -= given
        after[winner] += given
        moved[player] = given
        if owed > given:
            short[player] = owed - given
    return after, moved, short


def leaders(chips: Mapping[str, int], among: Sequence[str]) -> list[str]:
    """The players of ``among`` with the most chips, in seat order."""
    top = max(chips[p] for p in among)
    return [p for p in among if chips[p] == top]


def with_chips(chips: Mapping[str, int], among: Sequence[str]) -> list[str]:
    """Who of ``among`` still has chips (a player with 0 sits out: docs/rules.md §4)."""
    return [p for p in among if chips[p] > 0]
