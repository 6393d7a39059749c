"""Which games the simulator can play: one entry per variant, so a new game plugs in here.

A variant brings three functions: ``setup_table(floor, number, rng)`` fixes a table's
seats, packs and stakes; ``play(rng, floor, table, game_id)`` plays one game at it and
returns the game's record (a docs/record-format.md object, or the variant's own record shape); and
``report(record, rng, discrepancy_rate)`` gives the operator's ``reported`` block for it.

>>> sorted(name for name in VARIANTS if name in ("points", "raise"))
['points', 'raise']
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from replays.simulation import red3, reported, rummy13
from replays.simulation.tables import Floor, Table


class UnknownVariant(ValueError):
    """A variant the simulator has no bots for."""


@dataclass(frozen=True)
class Variant:
    name: str
    setup_table: Callable[[Floor, int, random.Random], Table]
    play: Callable[[random.Random, Floor, Table, str], dict]
    report: Callable[[dict, random.Random, float], dict | None]


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
            report=reported.reported_block,
        )
    )


register(
    Variant(name="red3", setup_table=red3.setup_table, play=red3.play, report=red3.reported_block)
)


def check_variants(names) -> None:
    """Raise :class:`UnknownVariant` for any of ``names`` the simulator cannot play."""
    for name in names or ():
        variant(name)
