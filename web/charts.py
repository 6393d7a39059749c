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
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 28, 40
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


NICE_STEPS = (Decimal(1), Decimal(2), Decimal("2.5"), Decimal(5))


def nice_ticks(lo: Decimal, hi: Decimal, most: int = 6) -> list[Decimal]:
    """Evenly spaced round values (1, 2, 2.5 or 5 × a power of ten) covering ``lo``..``hi``
    with at most ``most`` intervals: every step of the way is labelled, none skipped.

    >>> [str(t) for t in nice_ticks(Decimal("0.05"), Decimal("0.10"))]
    ['0.05', '0.06', '0.07', '0.08', '0.09', '0.10']
    >>> [str(t) for t in nice_ticks(Decimal("-855.76"), Decimal("0"))]
    ['-1000', '-800', '-600', '-400', '-200', '0']
    """
    if hi == lo:
        return [lo]
    span = hi - lo
    power = Decimal(1).scaleb(span.adjusted() - 1)
    while True:
        for base in NICE_STEPS:
            step = base * power
            first = (lo / step).to_integral_value(rounding="ROUND_FLOOR")
            last = (hi / step).to_integral_value(rounding="ROUND_CEILING")
            if last - first <= most:
                # Every label with the same places: whole steps as whole numbers, steps
                # below 1 to at least 0.01 (money's places), so 2.00 sits with 1.80.
                places = Decimal(1) if step >= 1 else min(Decimal("0.01"), step.normalize())
                return [(step * k).quantize(places) for k in range(int(first), int(last) + 1)]
        power *= 10


def _tick_text(tick: Decimal) -> str:
    text = f"{abs(tick):,}"
    return f"−{text}" if tick < 0 else text


def _axes(x_max: int, ticks: list[Decimal], x_label: str, y_label: str, x_of, y_of) -> list[str]:
    parts: list[str] = []
    for tick in ticks:
        y = y_of(tick)
        parts.append(
            element("line", {"x1": LEFT, "x2": WIDTH - RIGHT, "y1": y, "y2": y, "stroke": GRID})
        )
        parts.append(
            element(
                "text",
                {
                    "x": LEFT - 6,
                    "y": y + 4,
                    "text-anchor": "end",
                    "font-size": 11,
                    "fill": INK,
                    "class": "y-tick",
                },
                _tick_text(tick),
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
    # The y-axis title sits above the axis, clear of tick labels however wide they are.
    parts.append(
        element(
            "text",
            {
                "x": 4,
                "y": TOP - 8,
                "text-anchor": "start",
                "font-size": 12,
                "fill": INK,
                "class": "y-title",
            },
            y_label,
        )
    )
    return parts


LABEL_HEIGHT = 13
CHAR_WIDTH = 6.4  # of 11 px text, generously: a label never touches its neighbour


def _free_line(placed: list, x: float, y: float, anchor: str, text: str) -> float:
    """The baseline of an exit label near the mark at (x, y) that overlaps no label placed
    before it: above the mark first, then below, one line further each time. Several
    players leaving in the same round (close marks, near the right edge) stack instead of
    overprinting. The box found is added to ``placed``."""
    width = CHAR_WIDTH * len(text)
    left = {"end": x - width, "start": x, "middle": x - width / 2}[anchor]
    candidates = []
    for k in range(12):
        candidates.append(y - 10 - LABEL_HEIGHT * k)
        candidates.append(y + 19 + LABEL_HEIGHT * k)
    for base in candidates:
        top = base - LABEL_HEIGHT + 2
        if top < 2 or base > HEIGHT - BOTTOM - 2:
            continue
        box = (left, top, left + width, base + 2)
        if not any(
            box[0] < other[2] and other[0] < box[2] and box[1] < other[3] and other[1] < box[3]
            for other in placed
        ):
            placed.append(box)
            return base
    placed.append((left, y - 12, left + width, y))
    return y - 10


def point_value_chart(values: Sequence[Decimal], exits: Sequence[Exit]) -> str:
    """The point value in force after each move (``values[i]`` after move i+1, 0 = the deal
    value in ``values[0]`` too) as a step line, with a labelled mark for each player's exit."""
    values = list(values) or [Decimal(0)]
    ticks = nice_ticks(
        min(values + [e.point_value for e in exits]), max(values + [e.point_value for e in exits])
    )
    lo, hi = ticks[0], ticks[-1]
    count = len(values)
    x_max = max(count - 1, 1)

    def x_of(move: int) -> float:
        return round(LEFT + (WIDTH - LEFT - RIGHT) * move / x_max, 1)

    y_of = _scale(lo, hi, TOP + 8, HEIGHT - BOTTOM - 8)
    path = [f"M{x_of(0):g},{y_of(values[0]):g}"]
    for move in range(1, count):
        path.append(f"H{x_of(move):g}V{y_of(values[move]):g}")
    parts = _axes(x_max, ticks, "move", "point value", x_of, y_of)
    parts.append(
        element("path", {"d": "".join(path), "fill": "none", "stroke": LINE, "stroke-width": 2.5})
    )
    # Exits at the same move and value (everyone charged at the declaration) share one mark
    # and stack their labels, above the mark when there is room, else below it.
    clusters: dict[tuple[int, Decimal], list[Exit]] = {}
    for exit_ in exits:
        clusters.setdefault((min(exit_.move, x_max), exit_.point_value), []).append(exit_)
    placed: list[tuple[float, float, float, float]] = []
    for (move, value), members in clusters.items():
        x, y = x_of(move), y_of(value)
        parts.append(
            element(
                "circle",
                {"cx": x, "cy": y, "r": 5, "fill": "#fff", "stroke": MARK, "stroke-width": 2},
            )
        )
        for exit_ in members:
            words = (
                f"{exit_.player}: {exit_.how} at {exit_.point_value:.2f} after move {exit_.move}"
            )
            text = f"{exit_.player} {exit_.how}"
            anchor = "end" if x > WIDTH - RIGHT - 40 else ("start" if x < LEFT + 40 else "middle")
            line_y = _free_line(placed, x, y, anchor, text)
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
                        text,
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
    ticks = nice_ticks(min([*totals, Decimal(0)]), max([*totals, Decimal(0)]))
    lo, hi = ticks[0], ticks[-1]
    x_max = max(len(points), 1)

    def x_of(index: int) -> float:
        return round(LEFT + (WIDTH - LEFT - RIGHT) * index / x_max, 1)

    y_of = _scale(lo, hi, TOP + 8, HEIGHT - BOTTOM - 8)
    parts = _axes(x_max, ticks, "games played", "running total", x_of, y_of)
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
