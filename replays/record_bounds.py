"""The bounds every record field is held to, declared once (docs/record-format.md, "Bounds").

A record the ledger accepts must be one it can store, project, render and export again: so
each bound below is what the read models (``replays/models.py``), the pages or the rules can
hold, never more. Records (:mod:`replays.records`, :mod:`replays.red3_records`) and the
ingest API read their fields through these, so a number too large to deal, a rate finer than
its column or a currency the ``games`` table cannot hold is refused before anything is built.

>>> decimal_in("1.0000001", POINT_VALUE)
Traceback (most recent call last):
...
replays.record_bounds.OutOfBounds: '1.0000001' is not a decimal string with at most 6 decimal places, above 0 and at most 100000
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any


class OutOfBounds(ValueError):
    """A value outside its declared bound; the caller names the field."""


@dataclass(frozen=True)
class DecimalBound:
    """A decimal string (or a whole JSON number) with ``places`` digits after the point."""

    places: int
    maximum: Decimal
    positive: bool = True  # above 0; otherwise at least 0

    def expected(self) -> str:
        floor = "above 0" if self.positive else "at least 0"
        return (
            f"a decimal string with at most {self.places} decimal places, {floor} "
            f"and at most {self.maximum}"
        )


@dataclass(frozen=True)
class CountBound:
    minimum: int
    maximum: int

    def expected(self) -> str:
        return f"a whole number from {self.minimum} to {self.maximum}"


# Rates (point values, raise steps and schedules) are kept in millionths (``Rate``, migration
# 0004: a raise step of 0.005 exists); a finer rate could not be projected at all.
POINT_VALUE = DecimalBound(places=6, maximum=Decimal(100_000))
RAISE_STEP = DecimalBound(places=6, maximum=Decimal(100_000), positive=False)
# Fees are percentages of gross winnings: 0 to 100, to the hundredth of a percent.
FEE_PERCENT = DecimalBound(places=2, maximum=Decimal(100), positive=False)
# Reported money is in the currency's minor unit (``Money``, hundredths); the largest game
# (6 players x 80 points x the largest point value) stays far below the maximum.
REPORTED_MONEY = DecimalBound(places=2, maximum=Decimal(1_000_000_000), positive=False)
# A 13-card table: 1 to 4 packs (a 6-player table uses 2-3), 0 to 2 printed jokers a pack.
DECKS = CountBound(1, 4)
JOKERS_PER_DECK = CountBound(0, 2)
SEAT = CountBound(1, 99)
# A loser's points are capped at 80 by every profile; the bound leaves room for others.
REPORTED_POINTS = CountBound(0, 100_000)
# Red 3 Rummy: a pack per player, so 8 players already deal 432 cards; 60 simulated matches
# never passed 314 moves in a round (2,000 leaves over 6x headroom) nor 4 rounds.
RED3_PLAYERS_MAX = 8
RED3_ROUNDS = CountBound(1, 20)
RED3_ROUND_MOVES_MAX = 2_000
RED3_CARDS_MAX = RED3_PLAYERS_MAX * 54
# Red 3 scores are per round (a hand of 500+ points is possible with many red threes).
RED3_SCORE = CountBound(-100_000, 100_000)
# The simulator's longest 13-card game is under 300 moves; 2,000 leaves room for long
# reshuffling games while keeping a record far below 1 MiB.
MOVES_MAX = 2_000
RAISE_SCHEDULE_MAX = 200
# The largest deck (4 packs, 2 jokers each) holds 216 cards: no card list can be longer.
CARDS_MAX = 216
GROUPS_MAX = 14
# Ids travel in URLs and file names and fill ``String(64)`` columns; the first character is a
# letter or digit so that no id reads as a path (``.``, ``..``) or an option (``-x``).
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$")
ID_EXPECTED = "1-64 letters, digits, '_', '.', ':' or '-'"
# ISO 4217 alpha-3 (the ``currency`` columns are ``String(8)``).
CURRENCY_PATTERN = re.compile(r"^[A-Z]{3}$")
CURRENCY_EXPECTED = "an ISO 4217 currency code, three capital letters such as 'INR'"
# Times: after the epoch and before 2100, the span the pages and reports are built for.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(2100, 1, 1, tzinfo=UTC)
# The shuffle block: a ``sha256:<hex>`` commitment and a hex seed, each at most 256 chars;
# with the players' client seeds the block stays under 4 KiB of JSON.
SHUFFLE_TEXT_MAX = 256
SHUFFLE_BYTES_MAX = 4096
# One record line, one API body: far above any real game (a 2,000-move game is ~100 KiB).
LINE_BYTES_MAX = 1 << 20
LINE_LIMIT_TEXT = "1 MiB"


def decimal_in(value: Any, bound: DecimalBound) -> Decimal:
    """``value`` as an exact Decimal within ``bound``; :class:`OutOfBounds` says why not."""
    if isinstance(value, bool | float):
        raise OutOfBounds(f'{value!r}: write money as a decimal string such as "1.00"')
    if isinstance(value, int):
        if abs(value) > bound.maximum:
            raise OutOfBounds(f"{value!r} is not {bound.expected()}")
        text = str(value)
    elif isinstance(value, str):
        text = value.strip()
        # Long digit strings cost Decimal nothing but say nothing a ledger can hold.
        if len(text) > 40:
            raise OutOfBounds(f"{value[:20]!r}... is not {bound.expected()}")
    else:
        raise OutOfBounds(f"{_short(value)} is not a decimal string")
    try:
        number = Decimal(text)
    except InvalidOperation:
        raise OutOfBounds(f"{value!r} is not a decimal number") from None
    if not number.is_finite() or number < 0 or (bound.positive and number == 0):
        raise OutOfBounds(f"{value!r} must be {'above' if bound.positive else 'at least'} zero")
    exponent = number.as_tuple().exponent
    if -exponent > bound.places or number > bound.maximum:
        raise OutOfBounds(f"{value!r} is not {bound.expected()}")
    return number


def count_in(value: Any, bound: CountBound) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise OutOfBounds(f"{_short(value)} is not {bound.expected()}")
    if not bound.minimum <= value <= bound.maximum:
        raise OutOfBounds(f"{_short(value)} is not {bound.expected()}")
    return value


def is_id(value: Any) -> bool:
    return isinstance(value, str) and ID_PATTERN.match(value) is not None


def time_in(moment: datetime) -> datetime:
    if not EARLIEST <= moment < LATEST:
        raise OutOfBounds(f"{moment.isoformat()} is not between 1970 and 2100")
    return moment


def length_at_most(value: list, maximum: int, what: str) -> list:
    if len(value) > maximum:
        raise OutOfBounds(f"{len(value)} {what}: at most {maximum} are allowed")
    return value


def _short(value: Any) -> str:
    """A value for an error message, cut short: a hostile value may be megabytes long."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
