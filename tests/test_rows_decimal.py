"""The settlement rows' money (domain/rummy13/rows.py ``_decimal``): kept by its text, and
always exactly what ``Decimal(text)`` gives, whatever came before it."""

from __future__ import annotations

import decimal
from decimal import Decimal, InvalidOperation

import pytest

from domain.rummy13 import rows as rows13


def _same(got, want) -> bool:
    """The same Decimal: value, sign, exponent (its text), or both None."""
    if want is None:
        return got is None
    return type(got) is Decimal and str(got) == str(want) and got.as_tuple() == want.as_tuple()


@pytest.mark.parametrize(
    "value",
    ["39.60", "39.6", "0.00", "0", "-0", "-0.00", "1E+3", "1.5e3", "00012.50", " 7.00 ", "1_000"],
)
def test_kept_text_is_decimal_of_the_text(value) -> None:
    first, again = rows13._decimal(value), rows13._decimal(value)
    assert _same(first, Decimal(value)) and _same(again, Decimal(value))


def test_other_values_are_decimal_of_them() -> None:
    for value in (None, 66, -0.0, 0.0, 1.5, True, Decimal("2.50")):
        assert _same(rows13._decimal(value), None if value is None else Decimal(value)), value
    # Text of another value that compares equal is its own key.
    assert str(rows13._decimal("1.0")) == "1.0" and str(rows13._decimal("1")) == "1"


def test_not_numbers_are_made_each_time() -> None:
    """What a context decides (text that is no number: an error, or NaN where the context
    does not trap it) is never kept for the next call."""
    with decimal.localcontext() as context:
        context.traps[InvalidOperation] = False
        assert rows13._decimal("no number").is_nan()
    with pytest.raises(InvalidOperation):
        rows13._decimal("no number")
    assert rows13._decimal("NaN").is_nan() and rows13._decimal("-Infinity").is_infinite()
    assert "NaN" not in rows13._DECIMALS and "no number" not in rows13._DECIMALS


def test_kept_texts_stay_few(monkeypatch) -> None:
    monkeypatch.setattr(rows13, "_DECIMALS", {})
    for cents in range(rows13._DECIMALS_KEPT * 2 + 5):
        text = f"{cents / 100:.2f}"
        assert _same(rows13._decimal(text), Decimal(text))
    assert len(rows13._DECIMALS) <= rows13._DECIMALS_KEPT
