"""Which games the simulator can play: one entry per variant, so a new game plugs in here.

A variant brings two functions: ``setup_table(floor, number, rng)`` fixes a table's seats,
packs and stakes, and ``play(rng, floor, table, game_id)`` plays one game at it and returns
the game's record (a FORMAT.md object, or the variant's own record shape).

>>> sorted(name for name in VARIANTS if name in ("points", "raise"))
['points', 'raise']
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from replays.simulation import red3, rummy13
from replays.simulation.tables import Floor, Table


class UnknownVariant(ValueError):
    """A variant the simulator has no bots for."""


@dataclass(frozen=True)
class Variant:
    name: str
    setup_table: Callable[[Floor, int, random.Random], Table]
    play: Callable[[random.Random, Floor, Table, str], dict]


VARIANTS: dict[str, Variant] = {}


def register(variant: Variant) -> Variant:
    VARIANTS[variant.name] = variant
    return variant


def variant(name: str) -> Variant:
    try:
        return VARIANTS[name]
    except KeyError:
        known = ", ".join(sorted(VARIANTS))
        raise UnknownVariant(f"no simulated play for variant {name!r} (known: {known})") from None


for _name in ("points", "raise"):
    register(
        Variant(
            name=_name,
            setup_table=partial(rummy13.setup_table, variant=_name),
            play=rummy13.play,
        )
    )


register(Variant(name="red3", setup_table=red3.setup_table, play=red3.play))


def check_variants(names) -> None:
    """Raise :class:`UnknownVariant` for any of ``names`` the simulator cannot play."""
    for name in names or ():
        variant(name)
