"""The figures of a match's audit as a table: each figure recomputed, as the ledger recorded
it and as the operator reported it, with a "differs" mark on every cell a discrepancy names.

A family's audit page (its ``web_pages`` module) hands over its flat figures; this module
only lays them out, so every audit marks its discrepancies the same way: each mark carries
the discrepancy's field name (``data-field``), and a discrepancy no row of the page answers
to gets a row of its own, so none is listed without a mark (the page contract,
tests/test_page_contract.py).

>>> figure_text(-30), figure_text(["p1", "p2"]), figure_text(None)
('−30', 'p1, p2', '—')
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from domain.variant_base import RECORDED, REPORTED, Discrepancy

MINUS = "−"  # the site writes a negative figure with U+2212, never a hyphen


def figure_text(value: Any) -> str:
    """A figure as the pages write it: ``−30``, ``p1, p2``, ``—`` for none."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) and value < 0:
        return f"{MINUS}{-value}"
    if isinstance(value, str) and value.startswith("-"):
        return MINUS + value[1:]
    if isinstance(value, list | tuple):
        return ", ".join(figure_text(v) for v in value) or "none"
    if isinstance(value, Mapping):
        return ", ".join(f"{k} {figure_text(v)}" for k, v in value.items()) or "none"
    return str(value)


@dataclass
class FigureRow:
    """One figure: its label, and per source its text and the discrepancy fields marking it."""

    label: str
    computed: str
    recorded: str | None = None
    reported: str | None = None
    recorded_marks: list[str] = field(default_factory=list)
    reported_marks: list[str] = field(default_factory=list)
    # A money figure's kind and player for the page's ``data-money`` marks (the page contract).
    money: tuple[str, str | None] | None = None

    @property
    def differs(self) -> bool:
        return bool(self.recorded_marks or self.reported_marks)


def flatten(figures: Mapping[str, Any] | None, names: Iterable[str]) -> dict[str, Any]:
    """``{"payouts": {"p1": "9.00"}}`` as ``{"payouts.p1": "9.00"}``, for ``names`` only."""
    flat: dict[str, Any] = {}
    for name in names:
        value = (figures or {}).get(name)
        if isinstance(value, Mapping):
            for key, inner in value.items():
                flat[f"{name}.{key}"] = inner
        elif name in (figures or {}):
            flat[name] = value
    return flat


def figure_rows(
    computed: Mapping[str, Any],
    recorded: Mapping[str, Any] | None,
    reported: Mapping[str, Any] | None,
    found: Iterable[Discrepancy],
    *,
    placed: Callable[[Discrepancy], bool] = lambda d: False,
    money: Callable[[str], tuple[str, str | None] | None] = lambda name: None,
) -> list[FigureRow]:
    """A row per flat figure (``computed``'s keys first, then any only reported), each cell
    marked with the discrepancies of its field: a recorded discrepancy on the whole of a
    figure (``payouts``) marks each of its rows. A discrepancy the page marks elsewhere
    (``placed``) is left out; any other that no row answers to gets a row of its own.
    ``money`` names a money figure's kind and player by its name (None: not money)."""
    found = list(found)
    rows: dict[str, FigureRow] = {}
    for name in [*computed, *(k for k in (reported or {}) if k not in computed)]:
        rows[name] = FigureRow(
            label=name,
            computed=figure_text(computed.get(name)),
            recorded=None if recorded is None else figure_text(recorded.get(name)),
            reported=None
            if reported is None or name not in reported
            else figure_text(reported[name]),
        )
    for d in found:
        if placed(d):
            continue
        targets = [r for n, r in rows.items() if n == d.field or n.startswith(d.field + ".")]
        if not targets:
            row = FigureRow(label=d.field, computed=figure_text(d.computed))
            if d.source == RECORDED:
                row.recorded = figure_text(d.reported)
            else:
                row.reported = figure_text(d.reported)
            rows[d.field] = row
            targets = [row]
        for row in targets:
            (row.recorded_marks if d.source == RECORDED else row.reported_marks).append(d.field)
            if d.source == REPORTED and row.reported is None:
                row.reported = figure_text(d.reported)
    for name, row in rows.items():
        row.money = money(name)
    return list(rows.values())
