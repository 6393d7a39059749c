"""The constrained values every record field is built from, each bound declared once.

A record the ledger accepts must be one it can store, project, render and export again, so
each bound here is what the read models (``replays/readmodels/models.py``), the pages or the rules can
hold, never more (docs/record-format.md, "Bounds"). The same declaration does three jobs:
pydantic enforces it, the published JSON Schema is generated from it, and
:func:`problems` turns a refusal into ``(field path, what was expected)``.

Values are strict: a JSON string is never read as a number nor a number as a string, and a
fraction written as a JSON number is refused (money never passes through a float).

>>> from pydantic import TypeAdapter, ValidationError
>>> TypeAdapter(PointValue).validate_python("1.50")
Decimal('1.50')
>>> try:
...     TypeAdapter(PointValue).validate_python("1.0000001")
... except ValidationError as error:
...     print(problems(error, "1.0000001")[0].reason)
'1.0000001' is not a decimal string with at most 6 decimal places, above 0 and at most 100000
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from functools import cached_property
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    StringConstraints,
    ValidationError,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

from domain.cards import DECKS_MAX, JOKERS_PER_DECK_MAX, Card
from domain.timestamps import parse_time, utc_text


class Block(BaseModel):
    """A JSON object of a record: strict values, no unknown fields, never changed once read."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, populate_by_name=True)


# A table names its dealer or draws for it by a toss, never both nor neither (the readers'
# "give the dealer (or a toss)"): said in the schema too, so that a body it calls valid
# is not refused for it.
DEALER_OR_TOSS: dict[str, Any] = {
    "oneOf": [
        {"required": ["dealer"], "properties": {"dealer": {"type": "string"}}},
        {"required": ["toss"], "properties": {"toss": {"type": "object"}}},
    ]
}


class Seated(Block):
    """A block that names players, who must be seated. The players are known only outside
    the block: a whole record asks :meth:`unseated` of each of its blocks once it has read
    its own ``players``, and a block read alone (the ingest API's move, a ``reported``
    block) is asked by its reader right after it is validated. (A validator here ran once
    a move for every move of every record, with no players to check against.)"""

    def unseated(self, players: tuple[str, ...]) -> tuple[str, str] | None:
        """``(field, reason)`` for the first player named who is not in ``players``."""
        return None


def refuse(reason: str, field: str | None = None) -> PydanticCustomError:
    """A refusal in the records' own words; ``field`` places it below the failing value."""
    context = {"reason": reason} if field is None else {"reason": reason, "field": field}
    return PydanticCustomError("record", "{reason}", context)


def short(value: Any) -> str:
    """A value for an error message, cut short: a hostile value may be megabytes long."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# -- text ----------------------------------------------------------------------------------

# Ids travel in URLs and file names and fill ``String(64)`` columns; the first character is a
# letter or digit so that no id reads as a path (``.``, ``..``) or an option (``-x``).
ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$"
ID_EXPECTED = "an id: 1-64 letters, digits, '_', '.', ':' or '-', starting with a letter or digit"
# ISO 4217 alpha-3 (the ``currency`` columns are ``String(8)``).
CURRENCY_PATTERN = r"^[A-Z]{3}$"
CURRENCY_EXPECTED = "an ISO 4217 currency code, three capital letters such as 'INR'"
# Card text as Card.parse reads it (``10`` and lower case accepted, written back as ``TH``).
CARD_PATTERN = r"^(?:[AaTtJjQqKk2-9]|10)[SHDCshdc]$|^[Jj][Kk]$"
CARD_EXPECTED = "a card (rank A,2-9,T,J,Q,K then suit S,H,D,C, or JK)"
# What a refused pattern meant, in words, for :func:`problems`.
PATTERN_EXPECTED = {
    ID_PATTERN: ID_EXPECTED,
    CURRENCY_PATTERN: CURRENCY_EXPECTED,
    CARD_PATTERN: CARD_EXPECTED,
}

Id = Annotated[str, StringConstraints(pattern=ID_PATTERN)]
Currency = Annotated[str, StringConstraints(pattern=CURRENCY_PATTERN)]
# Every spelling the pattern admits, read once: a card in a record is then one look-up.
CARD_SPELLINGS = {
    rank + suit: Card.parse(rank + suit)
    for rank in [*"AaTtJjQqKk23456789", "10"]
    for suit in "SHDCshdc"
} | {joker: Card.parse(joker) for joker in ("JK", "Jk", "jK", "jk")}
CardText = Annotated[
    str, StringConstraints(pattern=CARD_PATTERN), AfterValidator(CARD_SPELLINGS.__getitem__)
]

# The largest 13-card deck (4 packs, 2 jokers each) holds 216 cards: no card list is longer.
CARDS_MAX = 216
Cards = Annotated[list[CardText], Field(max_length=CARDS_MAX)]
# 13 cards (14 with the finish) cannot make more groups.
GROUPS_MAX = 14

# -- numbers -------------------------------------------------------------------------------


def count(minimum: int | None, maximum: int) -> Any:
    """A whole JSON number within ``minimum``..``maximum`` (never a bool, a float or text)."""
    return Annotated[int, Field(strict=True, ge=minimum, le=maximum)]


Decks = count(1, DECKS_MAX)
JokersPerDeck = count(0, JOKERS_PER_DECK_MAX)
Seat = count(1, 99)
# A loser's points are capped at 80 by every profile; the bound leaves room for others.
ReportedPoints = count(0, 100_000)
# The simulator's longest 13-card game is under 300 moves; 2,000 leaves room for long
# reshuffling games while keeping a record far below 1 MiB.
MOVES_MAX = 2_000
RAISE_SCHEDULE_MAX = 200
# Every rule profile seats 2 to 6 (domain/rummy13/profiles.py checks its own, the same or narrower).
PLAYERS_MIN = 2
PLAYERS_MAX = 6


@dataclass(frozen=True)
class DecimalBound:
    """A decimal string (or a whole JSON number) with at most ``places`` digits after the
    point, at most ``10**digits``, and above 0 when ``positive`` (otherwise at least 0).

    The JSON Schema pattern says exactly what :meth:`read` accepts, the maximum included, so
    the published schema and the reader cannot disagree.
    """

    places: int
    digits: int
    positive: bool = True

    @property
    def maximum(self) -> int:
        return 10**self.digits

    @property
    def pattern(self) -> str:
        fraction, zeros = rf"(?:\.[0-9]{{1,{self.places}}})?", rf"(?:\.0{{1,{self.places}}})?"
        return rf"^(?:[0-9]{{1,{self.digits}}}{fraction}|{self.maximum}{zeros})$"

    def expected(self) -> str:
        floor = "above 0" if self.positive else "at least 0"
        return (
            f"a decimal string with at most {self.places} decimal places, {floor} "
            f"and at most {self.maximum}"
        )

    def read(self, value: Any) -> Decimal:
        if isinstance(value, bool | float):
            raise refuse(f'{short(value)}: write money as a decimal string such as "1.00"')
        if isinstance(value, int):
            if not (1 if self.positive else 0) <= value <= self.maximum:
                raise refuse(f"{short(value)} is not {self.expected()}")
            return Decimal(value)
        if not isinstance(value, str):
            raise refuse(f"{short(value)} is not a decimal string")
        if not self._regex.match(value):
            raise refuse(f"{short(value)} is not {self.expected()}")
        number = Decimal(value)
        if self.positive and number == 0:
            raise refuse(f"{value!r} must be above zero")
        return number

    def json_schema(self) -> dict:
        text: dict[str, Any] = {"type": "string", "pattern": self.pattern}
        if self.positive:
            text["not"] = {"pattern": ZERO_TEXT}
        whole = {"type": "integer", "minimum": 1 if self.positive else 0, "maximum": self.maximum}
        return {"anyOf": [text, whole], "description": self.expected()}

    @cached_property
    def _regex(self) -> re.Pattern:
        # Compiled once per bound: every decimal string of every record passes through here.
        return re.compile(self.pattern)

    def type(self) -> Any:
        return Annotated[Decimal, PlainValidator(self.read), WithJsonSchema(self.json_schema())]


ZERO_TEXT = r"^[0.]*$"

# Rates (point values, raise steps and schedules) are kept in millionths (``Rate``, migration
# 0004: a raise step of 0.005 exists); a finer rate could not be projected at all.
POINT_VALUE = DecimalBound(places=6, digits=5)
RAISE_STEP = DecimalBound(places=6, digits=5, positive=False)
# Fees are percentages of gross winnings: 0 to 100, to the hundredth of a percent.
FEE_PERCENT = DecimalBound(places=2, digits=2, positive=False)
# Reported money is in the currency's minor unit (``Money``, hundredths); the largest game
# (6 players x 80 points x the largest point value) stays far below the maximum.
REPORTED_MONEY = DecimalBound(places=2, digits=9, positive=False)

PointValue = POINT_VALUE.type()
RaiseStep = RAISE_STEP.type()
FeePercent = FEE_PERCENT.type()
Money = REPORTED_MONEY.type()

# -- times ---------------------------------------------------------------------------------

# After the epoch and before 2100, the span the pages and reports are built for.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(2100, 1, 1, tzinfo=UTC)
# The year as the schema can check it; an offset at the span's very edges is the reader's.
TIME_PATTERN = r"^(?:19[7-9][0-9]|20[0-9][0-9])-"


def _read_time(value: Any) -> datetime:
    if not isinstance(value, str):
        raise refuse(f"{short(value)} is not an ISO-8601 time (text)")
    try:
        moment = utc_text(value, keep=True) or parse_time(value)
    except ValueError:
        raise refuse(f"{short(value)} is not an ISO-8601 time") from None
    if not EARLIEST <= moment < LATEST:
        raise refuse(f"{moment.isoformat()} is not between 1970 and 2100")
    return moment


Timestamp = Annotated[
    datetime,
    PlainValidator(_read_time),
    WithJsonSchema(
        {
            "type": "string",
            "format": "date-time",
            "pattern": TIME_PATTERN,
            "description": "ISO-8601, read as UTC without an offset; 1970 to before 2100.",
        }
    ),
]

# -- the shuffle block ---------------------------------------------------------------------

# A ``sha256:<hex>`` commitment and a hex seed, each at most 256 characters; with the players'
# client seeds the block stays under 4 KiB of JSON (it is kept verbatim in the first event).
SHUFFLE_TEXT_MAX = 256
SHUFFLE_BYTES_MAX = 4096
# Red 3 Rummy seats up to 8 (domain/red3/record_schema.py); a client seed each at most.
SEEDED_PLAYERS_MAX = 8
ShuffleText = Annotated[str, StringConstraints(max_length=SHUFFLE_TEXT_MAX)]


class Shuffle(Block):
    """The verifiable-shuffle block (docs/integrity.md section 7), checked by domain.shuffle."""

    commitment: ShuffleText | None = None
    seed: ShuffleText | None = None
    client_seeds: Annotated[dict[Id, ShuffleText], Field(max_length=SEEDED_PLAYERS_MAX)] | None = (
        None
    )

    @model_validator(mode="after")
    def _small(self) -> Shuffle:
        size = len(json.dumps(self.verbatim()))
        if size > SHUFFLE_BYTES_MAX:
            raise refuse(f"{size} characters of JSON: at most {SHUFFLE_BYTES_MAX}")
        return self

    def verbatim(self) -> dict:
        """The block as it was given (keys sorted), to keep in the first event."""
        return dict(sorted(self.model_dump(exclude_unset=True).items()))


# -- lines ---------------------------------------------------------------------------------

# One record line, one API body: far above any real game (a 2,000-move game is ~100 KiB).
LINE_BYTES_MAX = 1 << 20
LINE_LIMIT_TEXT = "1 MiB"

# -- refusals as (path, reason) ------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """One refused value: ``path`` like ``stakes.point_value`` or ``moves[3].groups[0][1]``
    (empty for the object as a whole) and ``reason``, what was wrong and what was expected."""

    path: str
    reason: str


def problems(error: ValidationError, data: Any, what: str = "this object") -> list[Problem]:
    """The refusals of ``error`` (raised validating ``data``) in the records' words.

    ``what`` names the top-level object for an unknown field ("not a field of a game record").
    """
    return [_problem(detail, data, what) for detail in error.errors(include_url=False)]


def _problem(detail: Mapping, data: Any, what: str) -> Problem:
    path, owner, parent = _path(detail["loc"], data)
    kind, value = detail["type"], detail.get("input")
    context = detail.get("ctx") or {}
    if kind == "record":
        extra = context.get("field")
        if extra:
            path = f"{path}.{extra}" if path and not extra.startswith("[") else path + extra
        return Problem(path, context["reason"])
    if kind.startswith("union_tag"):
        path = f"{path}.type" if path else "type"
        tags = context.get("expected_tags", "")
        if kind == "union_tag_not_found":
            return Problem(path, f"missing (expected one of {tags})")
        return Problem(path, f"{short(context.get('tag'))} is not a move type (expected {tags})")
    reason = _reason(kind, value, context, parent, owner, what)
    return Problem(path, reason or detail["msg"])


def _path(loc: tuple, data: Any) -> tuple[str, str, Any]:
    """``loc`` as a dotted path, walking ``data`` alongside so that the tags pydantic puts in a
    location (a union member's name, ``[key]``) are left out. Returns the path, the parent's
    path and the parent value (for "not a field of ..." messages)."""
    path, parent_path, parent, current = "", "", data, data
    for position, step in enumerate(loc):
        last = position == len(loc) - 1
        if isinstance(step, int) and isinstance(current, list) and 0 <= step < len(current):
            parent_path, parent, current, path = path, current, current[step], f"{path}[{step}]"
        elif isinstance(step, str) and isinstance(current, Mapping) and step in current:
            parent_path, parent = path, current
            current, path = current[step], f"{path}.{step}" if path else step
        elif last and isinstance(step, str) and step != "[key]" and not _is_tag(step, current):
            parent_path, parent = path, current
            path = f"{path}.{step}" if path else step
    return path, parent_path, parent


def _is_tag(step: str, value: Any) -> bool:
    """Whether ``step`` is the union member pydantic named after the value's ``type`` (a
    move's model validator reports at ``('drop',)``), not a field."""
    return isinstance(value, Mapping) and value.get("type") == step


_NOUNS = {
    "string_type": "text",
    "int_type": "a whole number",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "bool_type": "true or false",
}


def _reason(
    kind: str, value: Any, context: Mapping, parent: Any, owner: str, what: str
) -> str | None:
    if kind == "missing":
        return "missing"
    if kind == "extra_forbidden":
        if isinstance(parent, Mapping) and isinstance(parent.get("type"), str):
            return f"not a field of a {parent['type']} move"
        return f"not a field of {what}" if not owner else f"not a field of '{owner}'"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"must be an object, not {short(value)}"
    if kind in _NOUNS:
        return f"{short(value)} is not {_NOUNS[kind]}"
    if kind == "string_pattern_mismatch":
        expected = PATTERN_EXPECTED.get(context.get("pattern"), "the expected form")
        return f"{short(value)} is not {expected}"
    if kind == "string_too_long":
        return f"{len(value)} characters: at most {context['max_length']}"
    if kind == "too_long":
        return f"too long: at most {context['max_length']} items"
    if kind == "too_short":
        return f"{context.get('actual_length')} given: at least {context['min_length']} needed"
    if kind in ("greater_than_equal", "less_than_equal"):
        limit = context.get("ge", context.get("le"))
        side = "at least" if kind == "greater_than_equal" else "at most"
        return f"{short(value)} is not a whole number {side} {limit}"
    if kind == "literal_error":
        return f"{short(value)} is not {context.get('expected')}"
    return None  # pydantic's own message says it
