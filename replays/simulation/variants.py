"""Which games the simulator can play: every registered variant that brings a bot.

A variant's bot (``Variant.bot``, see :mod:`domain.variants`) is three functions:
``setup_table(floor, number, rng)`` fixes a table's seats, packs and stakes;
``play(rng, floor, table, game_id)`` plays one game at it and returns the game's record (a
docs/record-format.md object, or the variant's own record shape); and
``report(record, rng, discrepancy_rate)`` gives the operator's ``reported`` block for it.
Nothing here names a variant: a new one plugs in by registering.

>>> sorted(name for name in VARIANTS if name in ("points", "raise"))
['points', 'raise']
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from domain import variants as registry
from domain.simulation.floor import Floor, Table


class UnknownVariant(ValueError):
    """A variant the simulator has no bots for."""


@dataclass(frozen=True)
class Variant:
    name: str
    setup_table: Callable[[Floor, int, random.Random], Table]
    play: Callable[[random.Random, Floor, Table, str], dict]
    report: Callable[[dict, random.Random, float], dict | None]


class _Playable(Mapping[str, Variant]):
    """The registered variants that have a bot, looked up when asked (a variant registered
    later, such as a test's, is seen too)."""

    def __getitem__(self, name: str) -> Variant:
        try:
            bot = registry.get(name).bot
        except registry.UnknownVariant:
            bot = None
        if bot is None:
            raise KeyError(name)
        return Variant(name, bot.setup_table, bot.play, bot.report)

    def __iter__(self) -> Iterator[str]:
        return (v.name for v in registry.all_variants() if v.bot is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


VARIANTS: Mapping[str, Variant] = _Playable()


def variant(name: str) -> Variant:
    try:
        return VARIANTS[name]
    except KeyError:
        known = ", ".join(VARIANTS)
        raise UnknownVariant(f"no simulated play for variant {name!r} (known: {known})") from None


def table_at(floor: Floor, number: int) -> Table:
    """Table ``T<number>`` of ``floor``: its variant by rotation over the floor's variants,
    the rest from the table's own seed, set up by that variant's bot.

    >>> table_at(Floor(seed=5), 7) == table_at(Floor(seed=5), 7), table_at(Floor(seed=5), 7).id
    (True, 'T7')
    """
    rng = random.Random(f"table:{floor.seed}:{number}")
    name = floor.variants[number % len(floor.variants)]
    return variant(name).setup_table(floor, number, rng)


def check_variants(names) -> None:
    """Raise :class:`UnknownVariant` for any of ``names`` the simulator cannot play."""
    for name in names or ():
        variant(name)
