"""Pool types and deal counts as values: every number docs/rules.md §3 and §4 fix per format.

>>> POOL_TYPES[101].rejoin_threshold, POOL_TYPES[201].first_drop, POOL_TYPES[61].cap
(79, 25, 60)
>>> pool_type(150)
Traceback (most recent call last):
...
domain.errors.BadConfig: a pool is 61, 101 or 201, not 150
"""

from __future__ import annotations

from dataclasses import dataclass

from domain.errors import BadConfig

DEALS_COUNTS = (2, 3, 6)
CHIPS_PER_DEAL = 80  # a deals player starts with 80 x N chips (docs/rules.md §4)


@dataclass(frozen=True)
class PoolType:
    """One pool type's scores (docs/rules.md §3's table).

    ``limit``: a score at or above it eliminates. ``rejoin_threshold``: a rejoin is refused
    while any remaining score is above it. ``auto_split_at``: with the auto split on, 2 or 3
    remaining players whose scores are all at least this share the net pool equally.
    """

    limit: int
    first_drop: int
    middle_drop: int
    wrong_show: int
    cap: int
    rejoin_threshold: int
    auto_split_at: int

    @property
    def scoring(self) -> dict[str, int]:
        """The 13-card profile values a deal of this pool plays with (TableConfig.scoring);
        an auto-drop (three missed turns) scores as a middle drop."""
        return {
            "first_drop": self.first_drop,
            "middle_drop": self.middle_drop,
            "auto_drop": self.middle_drop,
            "wrong_show": self.wrong_show,
            "max_points": self.cap,
        }

    def drops(self, score: int) -> int:
        """How many first drops a player can still make without reaching the limit."""
        return max(0, (self.limit - 1 - score) // self.first_drop)


# The auto split's 61 value is the project's reading (docs/rules.md §3): 80 and 175 are
# the scores with at most one drop left (limit - first drop - 1), and so is 45 at 61.
POOL_TYPES: dict[int, PoolType] = {
    101: PoolType(101, 20, 40, 80, 80, rejoin_threshold=79, auto_split_at=80),
    201: PoolType(201, 25, 50, 80, 80, rejoin_threshold=174, auto_split_at=175),
    61: PoolType(61, 15, 30, 60, 60, rejoin_threshold=44, auto_split_at=45),
}


def pool_type(limit: int) -> PoolType:
    try:
        return POOL_TYPES[limit]
    except (KeyError, TypeError):
        raise BadConfig(f"a pool is 61, 101 or 201, not {limit!r}") from None


def deals_chips(count: int) -> int:
    """The chips each player starts a best-of-``count`` match with."""
    if count not in DEALS_COUNTS:
        raise BadConfig(f"a deals match is best of 2, 3 or 6 deals, not {count!r}")
    return CHIPS_PER_DEAL * count
