"""Two small server-drawn charts: Raise Rummy's point value over the moves with each player's
exit marked, and a player's running total over their games.

Both are SVG text like :mod:`web.svg`: deterministic, readable without colour (exits are
labelled, points carry their figures in ``<title>``), and scaled by the page's CSS.

>>> from decimal import Decimal
>>> svg = point_value_chart([Decimal("1.00"), Decimal("1.00"), Decimal("1.10")],
...                         [Exit(2, "p2", "first drop", Decimal("1.00"))])
>>> "p2: first drop at 1.00" in svg
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from web.svg import element, svg_document

WIDTH = 720
HEIGHT = 260
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 16, 40
INK = "#1b1b1b"
GRID = "#d6d2c4"
LINE = "#1f5f3f"
MARK = "#b3261e"


@dataclass(frozen=True)
class Exit:
    """Where a player's game ended: after move ``move`` (1-based), how, and at what value."""

    move: int
    player: str
    how: str
    point_value: Decimal


def _scale(lo: Decimal, hi: Decimal, top: float, bottom: float):
    span = (hi - lo) or Decimal(1)

    def y(value: Decimal) -> float:
        return round(bottom - float((value - lo) / span) * (bottom - top), 1)

    return y


def _ticks(lo: Decimal, hi: Decimal, count: int = 4) -> list[Decimal]:
    if hi == lo:
        return [lo]
    step = (hi - lo) / count
    return [(lo + step * i).quantize(Decimal("0.01")) for i in range(count + 1)]


def _axes(
    x_max: int, lo: Decimal, hi: Decimal, x_label: str, y_label: str, x_of, y_of
) -> list[str]:
    parts: list[str] = []
    for tick in _ticks(lo, hi):
        y = y_of(tick)
        parts.append(
            element("line", {"x1": LEFT, "x2": WIDTH - RIGHT, "y1": y, "y2": y, "stroke": GRID})
        )
        parts.append(
            element(
                "text",
                {"x": LEFT - 6, "y": y + 4, "text-anchor": "end", "font-size": 11, "fill": INK},
                f"{tick:.2f}",
            )
        )
    for tick in sorted({0, x_max // 2, x_max}):
        x = x_of(tick)
        parts.append(
            element(
                "text",
                {
                    "x": x,
                    "y": HEIGHT - BOTTOM + 16,
                    "text-anchor": "middle",
                    "font-size": 11,
                    "fill": INK,
                },
                str(tick),
            )
        )
    parts.append(
        element(
            "line",
            {
                "x1": LEFT,
                "x2": WIDTH - RIGHT,
                "y1": HEIGHT - BOTTOM,
                "y2": HEIGHT - BOTTOM,
                "stroke": INK,
            },
        )
    )
    parts.append(
        element(
            "text",
            {
                "x": (LEFT + WIDTH - RIGHT) / 2,
                "y": HEIGHT - 6,
                "text-anchor": "middle",
                "font-size": 12,
                "fill": INK,
            },
            x_label,
        )
    )
    parts.append(
        element(
            "text",
            {
                "x": 14,
                "y": (TOP + HEIGHT - BOTTOM) / 2,
                "text-anchor": "middle",
                "font-size": 12,
                "fill": INK,
                "transform": f"rotate(-90 14 {(TOP + HEIGHT - BOTTOM) / 2:g})",
            },
            y_label,
        )
    )
    return parts


def point_value_chart(values: Sequence[Decimal], exits: Sequence[Exit]) -> str:
    """The point value in force after each move (``values[i]`` after move i+1, 0 = the deal
    value in ``values[0]`` too) as a step line, with a labelled mark for each player's exit."""
    values = list(values) or [Decimal(0)]
    lo = min(values + [e.point_value for e in exits])
    hi = max(values + [e.point_value for e in exits])
    count = len(values)
    x_max = max(count - 1, 1)

    def x_of(move: int) -> float:
        return round(LEFT + (WIDTH - LEFT - RIGHT) * move / x_max, 1)

    y_of = _scale(lo, hi, TOP + 8, HEIGHT - BOTTOM - 8)
    path = [f"M{x_of(0):g},{y_of(values[0]):g}"]
    for move in range(1, count):
        path.append(f"H{x_of(move):g}V{y_of(values[move]):g}")
    parts = _axes(x_max, lo, hi, "move", "point value", x_of, y_of)
    parts.append(
        element("path", {"d": "".join(path), "fill": "none", "stroke": LINE, "stroke-width": 2.5})
    )
    # Exits at the same move and value (everyone charged at the declaration) share one mark
    # and stack their labels, above the mark when there is room, else below it.
    clusters: dict[tuple[int, Decimal], list[Exit]] = {}
    for exit_ in exits:
        clusters.setdefault((min(exit_.move, x_max), exit_.point_value), []).append(exit_)
    for (move, value), members in clusters.items():
        x, y = x_of(move), y_of(value)
        parts.append(
            element(
                "circle",
                {"cx": x, "cy": y, "r": 5, "fill": "#fff", "stroke": MARK, "stroke-width": 2},
            )
        )
        above = y - 10 - 13 * (len(members) - 1) >= 11
        for k, exit_ in enumerate(members):
            words = (
                f"{exit_.player}: {exit_.how} at {exit_.point_value:.2f} after move {exit_.move}"
            )
            line_y = y - 10 - 13 * (len(members) - 1 - k) if above else y + 19 + 13 * k
            anchor = "end" if x > WIDTH - RIGHT - 40 else ("start" if x < LEFT + 40 else "middle")
            parts.append(
                element(
                    "g",
                    {"class": "exit", "role": "img", "aria-label": words},
                    None,
                    element("title", None, words),
                    element(
                        "text",
                        {
                            "x": x,
                            "y": line_y,
                            "text-anchor": anchor,
                            "font-size": 11,
                            "fill": MARK,
                        },
                        f"{exit_.player} {exit_.how}",
                    ),
                )
            )
    label = (
        f"Point value over {count - 1} moves, from {values[0]:.2f} to {values[-1]:.2f}; exits: "
        + ("; ".join(f"{e.player} {e.how} at {e.point_value:.2f}" for e in exits) or "none")
    )
    return svg_document(WIDTH, HEIGHT, label, *parts, cls="chart-svg point-values")


def running_total_chart(points: Sequence[tuple[str, Decimal]]) -> str:
    """A player's running total after each game (``(game_id, total)`` in order), with zero marked."""
    totals = [Decimal("0.00")] + [total for _, total in points]
    lo, hi = min([*totals, Decimal(0)]), max([*totals, Decimal(0)])
    x_max = max(len(points), 1)

    def x_of(index: int) -> float:
        return round(LEFT + (WIDTH - LEFT - RIGHT) * index / x_max, 1)

    y_of = _scale(lo, hi, TOP + 8, HEIGHT - BOTTOM - 8)
    parts = _axes(x_max, lo, hi, "games played", "running total", x_of, y_of)
    zero = y_of(Decimal(0))
    parts.append(
        element(
            "line",
            {
                "x1": LEFT,
                "x2": WIDTH - RIGHT,
                "y1": zero,
                "y2": zero,
                "stroke": INK,
                "stroke-dasharray": "4 3",
            },
        )
    )
    line = " ".join(f"{x_of(i):g},{y_of(total):g}" for i, total in enumerate(totals))
    parts.append(
        element("polyline", {"points": line, "fill": "none", "stroke": LINE, "stroke-width": 2.5})
    )
    for i, (game_id, total) in enumerate(points, start=1):
        words = f"after {game_id}: {total:.2f}"
        parts.append(
            element(
                "circle",
                {"cx": x_of(i), "cy": y_of(total), "r": 3.5, "fill": LINE},
                None,
                element("title", None, words),
            )
        )
    final = totals[-1]
    label = f"Running total over {len(points)} games, ending at {final:.2f}"
    return svg_document(WIDTH, HEIGHT, label, *parts, cls="chart-svg running-total")
