"""``canonical_json`` (the bytes every settlement hash is taken of) is, byte for byte, what
``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()``
gives, or fails as that fails: orjson writes it only where the two agree.

The battery below holds the awkward values: each test runs the real function and the json
one side by side. ``test_the_battery_bites`` shows that orjson alone would get many of them
wrong, so a guard that let them through would fail here.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import random
import uuid
from collections import OrderedDict
from datetime import UTC, date, datetime
from decimal import Decimal

import orjson
import pytest

from domain import variants  # noqa: F401 (first: domain.pooldeals.rows alone is a cycle)
from domain.pooldeals import rows as pool_rows
from domain.rummy13 import settlement as settlement13
from domain.rummy13.settlement import canonical_json, canonical_settlement, settlement_hash


def _json(value) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def _outcome(make, value):
    """What ``make(value)`` gives: its bytes, or the type of what it raised."""
    try:
        return make(value)
    except Exception as error:  # the two must fail alike
        return type(error)


class Text(str):
    def __str__(self) -> str:
        return "other"


class Number(int):
    def __repr__(self) -> str:
        return "99"


class Ordered(dict):
    def items(self):
        return reversed(list(super().items()))


class Listed(list):
    pass


class Suit(enum.Enum):
    SPADES = "S"


class Rank(enum.IntEnum):
    ACE = 1


class Colour(enum.StrEnum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int = 1


class Keyed(str):
    """Text that sorts backwards (json sorts keys by ``<``)."""

    def __lt__(self, other):
        return str.__gt__(self, other)


def _circular() -> list:
    looped: list = [1]
    looped.append(looped)
    return looped


def _deep(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


ALL_TEXT = "".join(chr(c) for c in range(0x800)) + "\u2028\u2029\ufeff\uffff\U0001f600\U0010ffff"

BATTERY = [
    # plain values, which orjson writes
    {},
    [],
    "",
    0,
    -1,
    True,
    False,
    None,
    {"b": 1, "a": [1, 2, {"d": None, "c": True}], "": "x"},
    ALL_TEXT,
    {ALL_TEXT: ALL_TEXT},
    {k: i for i, k in enumerate(["", "a", "B", "é", "\uffff", "\U0001f600", "\ue000", "a\x00"])},
    2**63 - 1,
    2**63,
    2**64 - 1,
    -(2**63),
    # integers orjson cannot write
    2**64,
    -(2**63) - 1,
    2**200,
    {"n": [2**70]},
    # floats, written differently
    1.0,
    0.1,
    -0.0,
    1e16,
    1e-7,
    1.5e300,
    float("nan"),
    float("inf"),
    -float("inf"),
    {"points": 66.0},
    [1, 2.5],
    [[1e-7]],
    {"groups": [["AS", 1e-7]], "loose": [float("nan")]},
    # keys that are not text, mixed keys
    {1: "a"},
    {True: "a", None: "b"},
    {1.5: "a"},
    {"a": 1, 2: "b"},
    {(1, 2): "a"},
    # lone surrogates
    "\ud800",
    {"\udfff": 1},
    # tuples (json writes them as lists)
    (1, 2),
    {"groups": [("AS", "2S")]},
    # subclasses
    Text("x"),
    {"k": Text("v")},
    {Text("k"): 1},
    Number(5),
    [Number(5)],
    Ordered(b=1, a=2),
    {"o": OrderedDict(b=1, a=2)},
    Listed([1, 2]),
    {Keyed("a"): 1, Keyed("b"): 2},
    # values json refuses and orjson writes
    datetime(2026, 1, 1, tzinfo=UTC),
    date(2026, 1, 1),
    uuid.UUID(int=1),
    Suit.SPADES,
    Rank.ACE,
    Colour.RED,
    {"e": Suit.SPADES},
    Point(),
    Decimal("1.00"),
    {"amount": Decimal("1.00")},
    b"bytes",
    {1, 2},
    object(),
    # too deep, circular
    _deep(100),
    _deep(300),
    _circular(),
]


@pytest.mark.parametrize("value", BATTERY, ids=lambda v: type(v).__name__)
def test_same_bytes_or_same_failure_as_json_dumps(value) -> None:
    assert _outcome(canonical_json, value) == _outcome(_json, value)


def test_the_battery_bites() -> None:
    """orjson alone differs from json.dumps on many of the values above (a guard that let
    them through would fail the test above): floats, big integers, other keys, surrogates,
    subclasses, what json refuses."""

    def raw(value) -> bytes:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)

    differing = [v for v in BATTERY if _outcome(raw, v) != _outcome(_json, v)]
    assert len(differing) >= 20
    awkward = (
        1e-7,
        float("nan"),
        2**64,
        {1: "a"},
        "\ud800",
        Suit.SPADES,
        {Keyed("b"): 1, Keyed("a"): 2},
    )
    for value in awkward:
        assert _outcome(raw, value) != _outcome(_json, value)


def test_random_bodies() -> None:
    """Random nests of the plain values (the fast path) and a sprinkle of floats and
    tuples (json.dumps): always json's bytes."""
    rng = random.Random(33)
    pieces = ["AS", "10", "é", "\x1f", '"', "\\", "\U0001f600", 0, -7, 2**63, True, None]

    def make(depth: int):
        roll = rng.random()
        if depth > 3 or roll < 0.4:
            return rng.choice(pieces + ([0.5, 1e20] if rng.random() < 0.1 else []))
        if roll < 0.7:
            items = [make(depth + 1) for _ in range(rng.randrange(5))]
            return tuple(items) if rng.random() < 0.05 else items
        return {str(rng.choice(pieces)) + str(i): make(depth + 1) for i in range(rng.randrange(5))}

    for _ in range(2000):
        value = make(0)
        assert _outcome(canonical_json, value) == _outcome(_json, value)


def test_plain_walk_refuses_what_it_must() -> None:
    plain = settlement13._plain_json
    assert plain({"a": [1, "b", None, True, {"c": []}, [["d", [2]]]]})
    for value in (
        {"a": 1.0},
        [(1,)],
        {"a": Text("b")},
        [Number(1)],
        Listed(),
        {"a": Ordered()},
        [[1.0]],  # a list's lists are walked in place
        [["a", [1.0]]],
        [[{"a": 1.0}]],
        [[Listed()]],
    ):
        assert not plain(value), value


def test_orjson_refuses_keys_other_than_exact_text() -> None:
    """What lets :func:`_plain_json` leave the keys alone: orjson (run first) refuses them."""
    for value in ({1: 1}, {None: 1}, {Text("k"): 1}, {"a": {Keyed("b"): 1}}, [{(1,): 1}]):
        with pytest.raises(orjson.JSONEncodeError):
            orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


SETTLED = {
    "game_id": "G1",
    "winner": "p1",
    "gross": "120.00",
    "fee": "12.00",
    "net_to_winner": "108.00",
    "players": {
        "p2": {
            "result": "lost",
            "points": 40,
            "point_value": "2.00",
            "amount": "80.00",
            "hand_score": 40,
            "min_score": 40,
            "case": "no_pure_sequence",
            "met_objective": False,
            "ended_at_round": 2,
            "groups": [["QH", "KH", "AH"], ["2S", "3S", "4S"]],
            "kinds": ["pure", "pure"],
            "loose": ["9D", "JK"],
        }
    },
    "currency": "INR",
    "fee_percent": "10",
    "ledger_entries": [{"account": "player:p2", "debit": "80.00", "credit": "0.00"}],
}


def test_settlement_hash_is_the_stored_one() -> None:
    """The digest of a body, as every settlement hash stored so far was made."""
    expected = hashlib.sha256(_json(canonical_settlement(SETTLED))).hexdigest()
    assert settlement_hash(SETTLED) == expected
    assert settlement13.canonical_hash(canonical_settlement(SETTLED)) == expected
    # A tampered body with a float where the integer was: json's bytes, so another digest.
    changed = {**SETTLED, "players": {"p2": {**SETTLED["players"]["p2"], "points": 40.0}}}
    assert (
        settlement_hash(changed) == hashlib.sha256(_json(canonical_settlement(changed))).hexdigest()
    )
    assert settlement_hash(changed) != expected


def test_pool_settlement_hash_is_json_dumps() -> None:
    settled = {"payouts": {"p1": "10.00"}, "prize_pool": "10.00", "fee": "0.00", "n": 1.0}
    assert pool_rows.settlement_hash(settled) == hashlib.sha256(_json(settled)).hexdigest()
