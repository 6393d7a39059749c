"""The reports page's chart: gross and fees per day of the period, as paired bars.

Server-drawn SVG like :mod:`web.charts`: every bar carries its day and figure in a
``<title>``, the two series are told apart by a legend in words as well as colour, and the
y axis has round ticks (1, 2, 2.5 or 5 × 10ⁿ, :func:`web.charts.nice_ticks`, the same as
the other charts') from zero up to the first tick at or above the highest bar, so every bar
stands inside the plot and no tick reads 427.88. The legend sits in the top margin, above
the highest tick.

>>> from datetime import date
>>> from decimal import Decimal
>>> svg = gross_and_fees_chart([(date(2025, 3, 1), Decimal("120.00"), Decimal("6.00"))])
>>> "2025-03-01: gross 120.00, fees 6.00" in svg
True
>>> [str(t) for t in axis_ticks(Decimal("5579.90"))]
['0', '1000', '2000', '3000', '4000', '5000', '6000']
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from decimal import Decimal

from web.charts import nice_ticks
from web.svg import element, svg_document

WIDTH, HEIGHT = 720, 260
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 28, 44
INK, GRID = "#1b1b1b", "#d6d2c4"
GROSS, FEES = "#1f5f3f", "#b3261e"
MOST_TICKS = 6  # intervals on the y axis at most
LEGEND_Y = 6  # the legend's squares: from here to LEGEND_Y + 12, inside the top margin


def axis_ticks(top: Decimal) -> list[Decimal]:
    """The y axis's ticks: round values from 0 to the first at or above ``top``."""
    if top <= 0:
        return [Decimal(0), Decimal(1)]
    return nice_ticks(Decimal(0), top, most=MOST_TICKS)


def gross_and_fees_chart(days: Sequence[tuple[date, Decimal, Decimal]]) -> str:
    """``(day, gross, fees)`` per day, in order, as two bars a day."""
    # The axis is scaled to the highest bar of either series (the fees never pass the gross
    # on a real day, but a chart must not clip when they do).
    top = max([max(gross, fees) for _, gross, fees in days] + [Decimal(0)])
    ticks = axis_ticks(top)
    ceiling = ticks[-1]
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = inner_w / max(len(days), 1)
    bar = max(min(slot * 0.38, 24), 1.5)

    def y_of(value: Decimal) -> float:
        return round(TOP + inner_h - float(value / ceiling) * inner_h, 1)

    parts = []
    for value in ticks:
        y = y_of(value)
        parts.append(
            element("line", {"x1": LEFT, "x2": WIDTH - RIGHT, "y1": y, "y2": y, "stroke": GRID})
        )
        parts.append(
            element(
                "text",
                {"x": LEFT - 6, "y": y + 4, "text-anchor": "end", "font-size": 11, "fill": INK},
                f"{value:,.2f}",
            )
        )
    label_every = max(1, len(days) // 8)
    for index, (day, gross, fees) in enumerate(days):
        x = LEFT + slot * index + slot / 2
        for offset, value, colour, name in ((-bar, gross, GROSS, "gross"), (0, fees, FEES, "fees")):
            y = y_of(value)
            parts.append(
                element(
                    "rect",
                    {
                        "x": round(x + offset, 1),
                        "y": y,
                        "width": round(bar, 1),
                        "height": round(TOP + inner_h - y, 1),
                        "fill": colour,
                        "class": f"bar-{name}",
                    },
                    None,
                    element("title", None, f"{day.isoformat()}: {name} {value:.2f}"),
                )
            )
        parts.append(
            element(
                "g",
                {"class": "day"},
                None,
                element("title", None, f"{day.isoformat()}: gross {gross:.2f}, fees {fees:.2f}"),
            )
        )
        if index % label_every == 0:
            parts.append(
                element(
                    "text",
                    {
                        "x": round(x, 1),
                        "y": HEIGHT - BOTTOM + 16,
                        "text-anchor": "middle",
                        "font-size": 11,
                        "fill": INK,
                    },
                    day.strftime("%d %b"),
                )
            )
    for i, (colour, name) in enumerate(((GROSS, "gross"), (FEES, "fees"))):
        x = LEFT + i * 90
        parts.append(
            element(
                "rect",
                {
                    "x": x,
                    "y": LEGEND_Y,
                    "width": 12,
                    "height": 12,
                    "fill": colour,
                    "class": "legend",
                },
            )
        )
        parts.append(
            element(
                "text",
                {"x": x + 16, "y": LEGEND_Y + 10, "font-size": 12, "fill": INK, "class": "legend"},
                name,
            )
        )
    total_gross = sum((gross for _, gross, _ in days), Decimal("0.00"))
    total_fees = sum((fees for _, _, fees in days), Decimal("0.00"))
    label = (
        f"Gross and fees per day over {len(days)} days: gross {total_gross:.2f}, "
        f"fees {total_fees:.2f}"
    )
    return svg_document(WIDTH, HEIGHT, label, *parts, cls="chart-svg period-chart")
