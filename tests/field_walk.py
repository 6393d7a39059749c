"""Walking every field of a JSON record or API body, and the hostile values put there.

The field-walking fuzz tests (``test_fuzz_fields.py``, ``test_fuzz_api_fields.py``) take a
valid record, list every place in it (``moves[7].cards[0]``, ``rounds[1].moves[3].card``,
``stakes.raise.schedule[2]``...) and put something hostile at each: a wrong type, a string
no one expects, a value at or just past the field's bound, nothing at all (the field
removed) or an extra field beside it. The checks are about what a user sees, so they hold
whatever validates the record underneath.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

Path = tuple[str | int, ...]
UNKNOWN_KEY = "zz_unknown"
REMOVE = object()  # the mutation "this field is gone"


def field_paths(value: Any, prefix: Path = ()) -> Iterator[Path]:
    """Every place below ``value`` (not ``value`` itself), parents before children."""
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for key, item in items:
        path = (*prefix, key)
        yield path
        yield from field_paths(item, path)


def path_text(path: Path) -> str:
    """``('moves', 7, 'cards', 0)`` as ``moves[7].cards[0]``, the way errors name fields."""
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else str(step))
    return text


def field_name(path: Path) -> str | None:
    """The last named key on the path: ``schedule`` for ``stakes.raise.schedule[2]``."""
    return next((step for step in reversed(path) if isinstance(step, str)), None)


def mutate(record: Any, path: Path, value: Any) -> Any:
    """A deep copy of ``record`` with ``value`` at ``path`` (or the field removed)."""
    out = copy.deepcopy(record)
    parent = out
    for step in path[:-1]:
        parent = parent[step]
    if value is REMOVE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return out


def add_unknown(record: Any, path: Path, key: str = UNKNOWN_KEY, value: Any = 1) -> Any:
    """A deep copy of ``record`` with an unknown ``key`` added to the object at ``path``."""
    out = copy.deepcopy(record)
    target = out
    for step in path:
        target = target[step]
    target[key] = value
    return out


def dict_paths(record: Any) -> list[Path]:
    """The root and every object inside it: the places an unknown field can be added."""
    found: list[Path] = [()] if isinstance(record, dict) else []
    node_at = {(): record}
    for path in field_paths(record):
        parent = node_at[path[:-1]]
        node_at[path] = parent[path[-1]]
        if isinstance(node_at[path], dict):
            found.append(path)
    return found


# -- hostile values --------------------------------------------------------------------------

LONG_TEXT = "x" * 10_000
# Wrong types, and strings of every awkward kind. JSON has no NaN or Infinity: they come as
# strings or as the bare tokens Python accepts; "1e400" is a number no float holds.
GENERIC: list[Any] = [
    None,
    True,
    False,
    [],
    ["p1"],
    {},
    {"p1": 1},
    1.5,
    0,
    -1,
    10**30,
    -(10**30),
    "NaN",
    "Infinity",
    "-Infinity",
    "1e400",
    # Python's json writes these as the bare tokens NaN, Infinity and -Infinity, which
    # Python's json also reads: a hostile line can carry them.
    math.nan,
    math.inf,
    -math.inf,
    "",
    LONG_TEXT,
    "\u200fp1\u202e",  # right-to-left marks around an id
    "p\x001",  # NUL
    "\ud83c",  # a lone surrogate: valid escaped JSON ("\\ud83c"), not encodable as UTF-8
    "\U0001f0cf",  # 🃏
    "e\u0301",  # a combining accent
    "\uff11",  # fullwidth digit one
    "\uff11.\uff10\uff10",  # fullwidth "1.00"
]

RATE_BOUND = [
    "0.000001",
    "0.0000001",
    "1.000000",
    "1.0000001",
    "100000",
    "100000.000001",
    "100001",
    "0",
    "-1.00",
    100000,
    100001,
]
MONEY_BOUND = ["0", "0.01", "0.001", "1000000000.00", "1000000000.01", "-0.01", 10**9 + 1]
TIME_BOUND = [
    "1970-01-01T00:00:00Z",
    "1969-12-31T23:59:59Z",
    "2099-12-31T23:59:59Z",
    "2100-01-01T00:00:00Z",
    "2025-13-01T00:00:00Z",
]
ID_BOUND = ["A" * 64, "A" * 65, "-x", ".", "..", "a/b", "a b"]
# Values at and just past each declared bound (docs/record-format.md and docs/red3-format.md,
# "Bounds"), by the field's name.
BOUNDS: dict[str, list[Any]] = {
    "decks": [0, 1, 4, 5, 2**31],
    "jokers_per_deck": [-1, 0, 2, 3],
    "point_value": RATE_BOUND,
    "step": RATE_BOUND,
    "max": RATE_BOUND,
    "schedule": RATE_BOUND,
    "fee_percent": ["0", "100", "100.00", "100.01", "10.001", "-0.01", 100, 101],
    "gross": MONEY_BOUND,
    "fee": MONEY_BOUND,
    "net_to_winner": MONEY_BOUND,
    "currency": ["usd", "USDX", "USD", "EUR", "US", "RUPEESRUPEES"],
    "game_id": ID_BOUND,
    "id": ID_BOUND,
    "seat": [0, 1, 99, 100],
    "round_count": [0, 1, 20, 21, 10**9],
    "round": [0, 1, 2, 21],
    "points": [0, 80, 100_000, 100_001, -1],
    "totals": [-100_000, 100_000, 100_001, -100_001],
    "rounds": [[], [{}], [{"p1": 100_001}]],
    "started_at": TIME_BOUND,
    "at": TIME_BOUND,
    "commitment": ["sha256:" + "ab" * 32, "sha256:" + "a" * 249, "sha256:" + "a" * 250, ""],
    "seed": ["ab" * 128, "ab" * 129, "zz"],
    "book": [-1, 0, 1, 99, 10**30],
}


def bound_values(path: Path) -> list[Any]:
    """The at-and-around-the-bound values for the field at ``path`` (none when unbounded)."""
    return BOUNDS.get(field_name(path) or "", [])


def hostile_values(path: Path) -> st.SearchStrategy[Any]:
    """Anything hostile for ``path``: generic junk, bound values, drawn text and numbers."""
    from fuzz_support import json_values

    drawn = st.one_of(
        st.text(max_size=20),
        st.text(st.characters(codec="utf-8"), min_size=1, max_size=8),
        st.integers(min_value=-(10**40), max_value=10**40),
        st.floats(allow_nan=False, allow_infinity=False),
        json_values,
    )
    choices = [st.sampled_from(GENERIC), drawn, st.just(REMOVE)]
    if bound_values(path):
        choices.insert(0, st.sampled_from(bound_values(path)))
    return st.one_of(*choices)


def sweep_values(path: Path, number: int, *, bounds: bool = True) -> list[Any]:
    """The deterministic sweep's values for the ``number``-th path: one generic value in
    turn (so each appears at many kinds of field), the bound values, and removal."""
    return [GENERIC[number % len(GENERIC)], *(bound_values(path) if bounds else ()), REMOVE]


def shape_of(path: Path) -> tuple:
    """The path with list indexes blurred: ``moves[3].at`` and ``moves[9].at`` share one."""
    return tuple("*" if isinstance(step, int) else step for step in path)


def as_line(record: Any) -> str:
    """A JSON Lines line. ASCII-escaped so lone surrogates travel as JSON allows."""
    return json.dumps(record, ensure_ascii=True)


def describe(value: Any) -> str:
    """A short label for a hostile value in a failure message."""
    if value is REMOVE:
        return "<removed>"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
