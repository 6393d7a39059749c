"""The simulated casino floor: tables with fixed stakes, a pool of pseudonymous players, a month.

A table keeps its variant, rule profile, seat count, packs and stakes for every game played
at it, as real tables do, so a month of simulated play reads like an operator's month: the
same players return, a table's point value never changes, two-player tables use one pack.

Everything is derived from the run's seed: table ``T7`` of seed 5 is the same table in every
run, and game ``i`` draws its table, players and start time from its own generator, so a
game does not depend on how many others are simulated with it.

Which variant and setup a table gets is the variant's bot's (``setup_table``);
``replays.simulation`` seats the tables through the variant registry.

>>> floor = Floor(seed=5)
>>> floor.player_id(7)
'p0007'
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from domain.simulation.cheats import Cheats, Role

PAISA = Decimal("0.01")
POINT_VALUES = tuple(Decimal(v) for v in ("0.05", "0.10", "0.25", "0.50", "1.00", "2.00", "5.00"))
FEE_PERCENTS = tuple(Decimal(v) for v in ("10", "12.5", "15"))
# Two-player tables mostly play with one pack, as operators do; it is also what makes
# two-player games run through the stock and reshuffle.
ONE_PACK_SHARE_FOR_TWO = 0.8
SEAT_COUNT_WEIGHTS = {2: 30, 3: 10, 4: 12, 5: 13, 6: 35}
PROFILE_WEIGHTS = {"rummycircle": 85, "deccan": 15}
THIRTEEN_CARD_VARIANTS = ("points", "raise")
# Beginners: this share of the player pool, most of the seats at beginners' tables (every
# micro-stakes table and a share of the two-seat ones).
NOVICE_SHARE = 0.3
MICRO_STAKES = Decimal("0.10")
TWO_SEAT_BEGINNER_SHARE = 0.4
BEGINNER_TABLE_NOVICES = 0.8
NOVICES_ELSEWHERE = 0.15


@dataclass(frozen=True)
class Table:
    """One table's fixed setup; every game at it uses these."""

    id: str
    variant: str
    rules: str
    seats: int
    decks: int
    jokers_per_deck: int
    currency: str
    point_value: Decimal
    fee_percent: Decimal
    raise_step: Decimal | None = None
    raise_max: Decimal | None = None
    beginners: bool = False  # most seats go to novices (slow, careless play)

    def stakes(self) -> dict:
        """The record's ``stakes`` block (docs/record-format.md)."""
        stakes = {
            "currency": self.currency,
            "point_value": str(self.point_value),
            "fee_percent": str(self.fee_percent),
        }
        if self.variant == "raise":
            stakes["raise"] = {"step": str(self.raise_step), "max": str(self.raise_max)}
        return stakes


def month_start(month: str) -> datetime:
    """``"2025-03"`` as the first second of that month, UTC."""
    try:
        year, number = (int(part) for part in month.split("-"))
        return datetime(year, number, 1, tzinfo=UTC)
    except ValueError:
        raise ValueError(f"month must look like 2025-03, got {month!r}") from None


def month_length(start: datetime) -> timedelta:
    following = datetime(start.year + start.month // 12, start.month % 12 + 1, 1, tzinfo=UTC)
    return following - start


@dataclass(frozen=True)
class Floor:
    """The tables, the player pool and the month a simulation runs through.

    ``variants`` and ``seats`` restrict every table (``--variant``, ``--players``); when a
    variant is given but no seat count, tables still vary in size.
    """

    seed: int
    variants: tuple[str, ...] = THIRTEEN_CARD_VARIANTS
    seats: tuple[int, ...] = tuple(SEAT_COUNT_WEIGHTS)
    tables: int = 24
    players: int = 500
    month: str = "2025-03"
    currency: str = "INR"
    cheats: Cheats | None = None  # cheating players among the honest (fair-play review)
    _start: datetime = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_start", month_start(self.month))
        if not self.variants:
            raise ValueError("at least one variant is needed")
        if any(not 2 <= seats <= 6 for seats in self.seats):
            raise ValueError(f"a 13-card table seats 2 to 6 players, got {self.seats}")
        if self.players < max(self.seats):
            raise ValueError(f"{self.players} players cannot fill a {max(self.seats)}-seat table")

    def player_ids(self, rng: random.Random, table: Table) -> list[str]:
        """Distinct pseudonymous ids for ``table``'s seats, in seat order.

        The first :data:`NOVICE_SHARE` of the pool are beginners; they crowd the beginners'
        tables, where their slow two-player games are the ones that run through the stock.
        """
        novices = max(1, round(self.players * NOVICE_SHARE))
        share = BEGINNER_TABLE_NOVICES if table.beginners else NOVICES_ELSEWHERE
        chosen: list[int] = []
        while len(chosen) < table.seats:
            if rng.random() < share:
                number = rng.randint(1, novices)
            else:
                number = rng.randint(novices + 1, self.players)
            if number not in chosen:
                chosen.append(number)
        seated = [self.player_id(number) for number in chosen]
        if self.cheats is not None:
            seated = self._seat_partners(rng, seated)
        return seated

    def role(self, player: str) -> Role | None:
        """``player``'s cheating role, None for an honest player (and on an honest floor)."""
        if self.cheats is None:
            return None
        roles = self.cheats.known_roles(self.seed, self.players)
        if roles is None:
            roles = self.cheats.roles(self.seed, self.all_players())
        return roles.get(player)

    def all_players(self) -> list[str]:
        return [self.player_id(number) for number in range(1, self.players + 1)]

    def _seat_partners(self, rng: random.Random, seated: list[str]) -> list[str]:
        """Partners who cheat together arrange to sit together, the giver just before the
        taker in turn order, as often as the cheat's strength says."""
        together = 0.5 + 0.5 * self.cheats.strength
        for player in list(seated):
            role = self.role(player)
            if role is None or role.partner is None or role.partner in seated:
                continue
            if len(seated) < 2 or rng.random() >= together:
                continue
            # The partner takes a seat from an honest player (never from another cheat).
            honest = [p for p in seated if self.role(p) is None]
            if not honest:
                continue
            seated.remove(honest[-1])
            place = seated.index(player)
            seated.insert(place + 1 if role.gives else place, role.partner)
        return seated

    def player_id(self, number: int) -> str:
        return f"p{number:0{max(4, len(str(self.players)))}d}"

    def is_novice(self, player: str) -> bool:
        return int(player[1:]) <= max(1, round(self.players * NOVICE_SHARE))

    def start_time(self, rng: random.Random) -> datetime:
        """A start in the month, busier in the evening (India), to the second."""
        day = rng.randrange(month_length(self._start).days)
        # Evenings IST (UTC+5:30) are the peak: centre on 15:00 UTC ≈ 20:30 IST.
        seconds = int(rng.gauss(15 * 3600, 4 * 3600)) % 86400
        return self._start + timedelta(days=day, seconds=seconds)


def timestamp(moment: datetime) -> str:
    """the record format's ISO-8601 UTC form: ``2025-03-01T18:04:05Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
