"""Cards, hands, piles and whole tables drawn as SVG text on the server.

Every drawing is a plain string, the same for the same input, so it can be inlined in a
page, served as an image, or compared in a test. Each card carries its rank and suit as
words (``<title>`` and ``aria-label``) so a screen reader reads ``7 of diamonds, joker``
where a sighted player sees the red 7 with the joker star; colour is never the only signal
(suits differ by symbol, jokers by a star and the word, loose cards by a dashed frame and
the word "loose").

>>> from domain.cards import Card
>>> print(card(Card.parse("AS")))  # doctest: +ELLIPSIS
<svg xmlns="http://www.w3.org/2000/svg" ... aria-label="ace of spades">...
>>> "printed joker" in card(Card.parse("JK"))
True

The markup is written as text rather than through an XML tree: a replay page draws a few
hundred cards per request, and a card's face is the same every time it is drawn, so it is
built once and kept (:func:`_face_body`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from html import escape

from domain.cards import Card

CARD_W = 56
CARD_H = 80
FAN_STEP = 22  # how much of each overlapped card stays visible: its rank and suit corner
GROUP_STEP = 24
GROUP_GAP = 16
LABEL_H = 18
SVG_NS = "http://www.w3.org/2000/svg"

RED = "#b3261e"
BLACK = "#1b1b1b"
JOKER_INK = "#5b2a86"
LOOSE_INK = "#b3261e"
FELT = "#1f5f3f"
WHITE = "#ffffff"

GROUP_NAMES = {
    "pure": "pure sequence",
    "impure": "impure sequence",
    "set": "set",
    None: "not a group",
}


def _attr(value) -> str:
    # Floats print without a trailing ".0" so the text stays short and stable.
    return f"{value:g}" if isinstance(value, float) else str(value)


def element(tag: str, attrs: dict | None = None, text: str | None = None, *children: str) -> str:
    """One element as text; attribute values and text are escaped, ``children`` are markup.

    >>> element("text", {"x": 1.0, "fill": None}, "a < b")
    '<text x="1">a &lt; b</text>'
    """
    head = tag + "".join(
        f' {name}="{escape(_attr(value))}"'
        for name, value in (attrs or {}).items()
        if value is not None
    )
    inner = (escape(text, quote=False) if text is not None else "") + "".join(
        child for child in children if child
    )
    return f"<{head}>{inner}</{tag}>" if inner else f"<{head} />"


def svg_document(width: int, height: int, label: str, *children: str, cls: str) -> str:
    return element(
        "svg",
        {
            "xmlns": SVG_NS,
            "viewBox": f"0 0 {width} {height}",
            "width": width,
            "height": height,
            "class": cls,
            "role": "img",
            "aria-label": label,
        },
        None,
        element("title", None, label),
        *children,
    )


def _translate(x: float, y: float) -> str:
    return f"translate({x:g},{y:g})"


# -- one card ------------------------------------------------------------------------------


def card_label(card: Card, wild: Card | None = None, *, loose: bool = False) -> str:
    """Words for one card: ``7 of diamonds, joker``; ``printed joker``; ``2 of clubs, loose``."""
    words = card.spoken
    if not card.is_printed_joker and wild is not None and card.is_joker(wild):
        words += ", joker"
    if loose:
        words += ", loose"
    return words


@lru_cache(maxsize=4096)
def _face_body(card: Card, is_joker: bool, loose: bool, marked: bool, label: str) -> str:
    """Everything inside a face-up card's group; the same card always looks the same."""
    if card.is_printed_joker:
        ink, rank, pip = JOKER_INK, "JK", "★"
    else:
        ink = RED if card.suit in "HD" else BLACK
        rank = card.symbol[:-1]
        pip = card.symbol[-1]
    wide = len(rank) > 1
    parts = [
        element("title", None, label),
        element(
            "rect",
            {
                "x": 0.5,
                "y": 0.5,
                "width": CARD_W - 1,
                "height": CARD_H - 1,
                "rx": 5,
                "fill": "#fffdf8",
                "stroke": LOOSE_INK if loose else ("#f2a900" if marked else "#6b6b6b"),
                "stroke-width": 2 if (loose or marked) else 1,
                "stroke-dasharray": "5 3" if loose else None,
            },
        ),
        element(
            "text",
            {
                "x": 3 if wide else 5,
                "y": 18,
                "font-family": "Georgia, 'DejaVu Serif', serif",
                "font-size": 16,
                "font-weight": "bold",
                "fill": ink,
                "aria-hidden": "true",
                # "10" and "JK" are squeezed to stay readable where fanned cards overlap.
                "textLength": 18 if wide else None,
                "lengthAdjust": "spacingAndGlyphs" if wide else None,
            },
            rank,
        ),
        element(
            "text",
            {"x": 5, "y": 34, "font-size": 14, "fill": ink, "aria-hidden": "true"},
            pip,
        ),
        element(
            "text",
            {
                "x": CARD_W / 2 + 3,
                "y": CARD_H / 2 + 16,
                "text-anchor": "middle",
                "font-size": 30,
                "fill": ink,
                "aria-hidden": "true",
            },
            pip,
        ),
    ]
    if is_joker:
        # The star and the word both say "joker": colour alone would not.
        parts.append(
            element(
                "text",
                {
                    "x": CARD_W / 2 + 3,
                    "y": CARD_H - 5,
                    "text-anchor": "middle",
                    "font-size": 9,
                    "font-family": "sans-serif",
                    "fill": JOKER_INK,
                    "aria-hidden": "true",
                },
                "★ JOKER" if not card.is_printed_joker else "JOKER",
            )
        )
    return "".join(parts)


def _card_face(
    card: Card,
    x: float,
    y: float,
    *,
    wild: Card | None = None,
    loose: bool = False,
    marked: str | None = None,
    role: str = "img",
) -> str:
    """One face-up card as an SVG group at (x, y)."""
    is_joker = card.is_joker(wild) if wild is not None else card.is_printed_joker
    return _placed_face(card, x, y, is_joker, loose, marked, role)


@lru_cache(maxsize=16384)
def _placed_face(
    card: Card, x: float, y: float, is_joker: bool, loose: bool, marked: str | None, role: str
) -> str:
    # Hands are laid out on a fixed grid, so the same card lands on the same spot again and
    # again: the whole placed card is kept, not only its face.
    label = card.spoken
    if is_joker and not card.is_printed_joker:
        label += ", joker"
    if loose:
        label += ", loose"
    if marked:
        label += f", {marked}"
    classes = ["card", "printed-joker" if card.is_printed_joker else f"suit-{card.suit.lower()}"]
    if is_joker:
        classes.append("joker")
    if loose:
        classes.append("loose")
    if marked:
        classes.append("marked")
    attrs = {
        "class": " ".join(classes),
        "transform": _translate(x, y),
        "role": role,
        "aria-label": label,
        "data-card": str(card),
    }
    return element("g", attrs, None, _face_body(card, is_joker, loose, bool(marked), label))


@lru_cache(maxsize=64)
def _back_body(label: str) -> str:
    return "".join(
        (
            element("title", None, label),
            element(
                "rect",
                {
                    "x": 0.5,
                    "y": 0.5,
                    "width": CARD_W - 1,
                    "height": CARD_H - 1,
                    "rx": 5,
                    "fill": "#2c4a7a",
                    "stroke": "#12233f",
                },
            ),
            element(
                "rect",
                {
                    "x": 6,
                    "y": 6,
                    "width": CARD_W - 12,
                    "height": CARD_H - 12,
                    "rx": 3,
                    "fill": "none",
                    "stroke": "#9fb6dd",
                    "stroke-dasharray": "2 3",
                },
            ),
        )
    )


def _card_back(x: float, y: float, label: str = "face-down card") -> str:
    attrs = {
        "class": "card back",
        "transform": _translate(x, y),
        "role": "img",
        "aria-label": label,
    }
    return element("g", attrs, None, _back_body(label))


def _slot(x: float, y: float, label: str, caption: str) -> str:
    """An empty place on the table (no open card, empty finish slot)."""
    return element(
        "g",
        {"class": "slot", "transform": _translate(x, y), "role": "img", "aria-label": label},
        None,
        element("title", None, label),
        element(
            "rect",
            {
                "x": 1,
                "y": 1,
                "width": CARD_W - 2,
                "height": CARD_H - 2,
                "rx": 5,
                "fill": "none",
                "stroke": "#8a8a8a",
                "stroke-dasharray": "4 3",
            },
        ),
        element(
            "text",
            {
                "x": CARD_W / 2,
                "y": CARD_H / 2 + 4,
                "text-anchor": "middle",
                "font-size": 10,
                "font-family": "sans-serif",
                "fill": "#5f5f5f",
                "aria-hidden": "true",
            },
            caption,
        ),
    )


def card(card: Card, *, wild: Card | None = None, loose: bool = False) -> str:
    """One card as a standalone SVG.

    >>> from domain.cards import Card
    >>> "7 of diamonds, joker" in card(Card.parse("7D"), wild=Card.parse("7S"))
    True
    """
    label = card_label(card, wild, loose=loose)
    return svg_document(
        CARD_W, CARD_H, label, _card_face(card, 0, 0, wild=wild, loose=loose), cls="card-svg"
    )


def card_back(label: str = "face-down card") -> str:
    return svg_document(CARD_W, CARD_H, label, _card_back(0, 0, label), cls="card-svg")


# -- hands ---------------------------------------------------------------------------------


def count_of(count: int, noun: str) -> str:
    """``1 card``, ``2 cards``: a count with its noun in the right number."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def sort_for_display(cards: Iterable[Card], wild: Card | None = None) -> list[Card]:
    """Suits together, ranks ascending, jokers at the right: the way players hold a hand."""
    order = "SHCD"  # alternate black and red suits so neighbouring suits are easy to tell apart

    def key(c: Card) -> tuple[int, int, int]:
        if c.is_joker(wild) if wild is not None else c.is_printed_joker:
            # Wild-rank jokers first, printed jokers at the very end.
            return (1, int(c.is_printed_joker), order.index(c.suit) if c.suit else 4)
        return (0, order.index(c.suit), c.rank)

    return sorted(cards, key=key)


def _fan(
    cards: Sequence[Card],
    x: float,
    y: float,
    *,
    wild: Card | None,
    step: int = FAN_STEP,
    loose: bool = False,
    marked: dict[int, str] | None = None,
    label: str | None = None,
) -> tuple[str, float]:
    """Cards overlapped left to right; returns the group and its width."""
    marked = marked or {}
    items = [
        _card_face(
            c, x + i * step, y, wild=wild, loose=loose, marked=marked.get(i), role="listitem"
        )
        for i, c in enumerate(cards)
    ]
    width = (len(cards) - 1) * step + CARD_W if cards else 0
    return element("g", {"class": "fan", "role": "list", "aria-label": label}, None, *items), width


def hand(
    cards: Sequence[Card],
    *,
    wild: Card | None = None,
    label: str | None = None,
    sort: bool = True,
    marked: dict[Card, str] | None = None,
) -> str:
    """A hand fanned left to right (sorted as a player holds it unless ``sort=False``).

    ``marked`` flags cards worth pointing out (``{Card: "just picked"}``); the mark is part
    of the card's label and drawn as a gold frame.

    >>> from domain.cards import parse_cards
    >>> svg = hand(parse_cards("2C AS JK"))
    >>> svg.index("ace of spades") < svg.index("2 of clubs") < svg.index("printed joker")
    True
    """
    shown = sort_for_display(cards, wild) if sort else list(cards)
    marks = {}
    for card_, note in (marked or {}).items():
        if card_ in shown:
            marks[shown.index(card_)] = note
    fan, width = _fan(shown, 2, 2, wild=wild, marked=marks)
    label = label or f"hand of {count_of(len(shown), 'card')}: " + ", ".join(
        c.spoken for c in shown
    )
    return svg_document(int(width) + 4 if shown else CARD_W, CARD_H + 4, label, fan, cls="hand-svg")


def hidden_hand(count: int, *, label: str | None = None) -> str:
    """``count`` face-down cards: an opponent's hand in a seat view."""
    label = label or f"{count_of(count, 'hidden card')}"
    group = element(
        "g",
        {"class": "fan hidden"},
        None,
        *(_card_back(2 + i * 10, 2, "hidden card") for i in range(count)),
    )
    width = (count - 1) * 10 + CARD_W + 4 if count else CARD_W
    return svg_document(width, CARD_H + 4, label, group, cls="hand-svg hidden")


@dataclass(frozen=True)
class DrawnGroup:
    """A group as it is drawn: its cards and what kind of group it is (None: not a group)."""

    cards: tuple[Card, ...]
    kind: str | None
    reason: str | None = None


def grouped_hand(
    groups: Sequence[DrawnGroup],
    loose: Sequence[Card] = (),
    *,
    wild: Card | None = None,
    label: str | None = None,
) -> str:
    """A hand laid out in its groups, each named under it, loose cards last and marked.

    >>> from domain.cards import parse_cards
    >>> svg = grouped_hand([DrawnGroup(tuple(parse_cards("AS 2S 3S")), "pure")],
    ...                    parse_cards("9C"))
    >>> "pure sequence" in svg and "9 of clubs, loose" in svg
    True
    """
    x = 2.0
    parts: list[str] = []
    words: list[str] = []
    for group in groups:
        fan, width = _fan(group.cards, x, 2, wild=wild, step=GROUP_STEP)
        name = GROUP_NAMES.get(group.kind, str(group.kind))
        # The caption stays short enough to sit under its cards; the reason a group is not
        # one goes into its title (a tooltip, and what a screen reader announces).
        full = name if group.reason is None else f"{name}: {group.reason}"
        holder = element(
            "g",
            {"class": f"group kind-{group.kind or 'invalid'}", "aria-label": full},
            None,
            element("title", None, full),
            fan,
            element(
                "text",
                {
                    "class": "caption",
                    "x": f"{x:g}",
                    "y": CARD_H + 15,
                    "font-size": 11,
                    "font-family": "sans-serif",
                    "fill": BLACK,
                },
                name,
            ),
        )
        parts.append(holder)
        words.append(f"{full}: " + ", ".join(c.spoken for c in group.cards))
        x += max(width, 7 * len(name)) + GROUP_GAP
    if loose:
        fan, width = _fan(list(loose), x, 2, wild=wild, step=GROUP_STEP, loose=True)
        parts.append(
            element(
                "g",
                {"class": "group loose", "aria-label": "loose cards"},
                None,
                fan,
                element(
                    "text",
                    {
                        "class": "caption loose-caption",
                        "x": f"{x:g}",
                        "y": CARD_H + 15,
                        "font-size": 11,
                        "font-family": "sans-serif",
                        "font-style": "italic",
                        "fill": LOOSE_INK,
                    },
                    f"loose ({len(loose)})",
                ),
            )
        )
        words.append("loose: " + ", ".join(c.spoken for c in loose))
        x += width + GROUP_GAP
    width = int(x - GROUP_GAP + 2) if parts else CARD_W
    label = label or "; ".join(words) or "no cards"
    return svg_document(width, CARD_H + LABEL_H + 4, label, *parts, cls="hand-svg grouped")


# -- the centre of the table ---------------------------------------------------------------


def open_pile(pile: Sequence[Card], *, wild: Card | None = None) -> str:
    """The open pile: its top card face up (with the count of cards under it), or an empty slot.

    >>> from domain.cards import parse_cards
    >>> "open pile, 2 cards, top: king of clubs" in open_pile(parse_cards("4H KC"))
    True
    """
    if not pile:
        label = "open pile, empty"
        return svg_document(
            CARD_W, CARD_H + LABEL_H, label, _slot(0, 0, label, "empty"), cls="pile-svg"
        )
    top = pile[-1]
    label = (
        f"open pile, {len(pile)} card{'s' if len(pile) != 1 else ''}, top: {card_label(top, wild)}"
    )
    parts = []
    if len(pile) > 1:
        parts.append(_card_back(3, 0, "cards under the top"))
    parts.append(_card_face(top, 0, 0, wild=wild))
    parts.append(_caption(f"open ({len(pile)})", CARD_H + 14))
    return svg_document(CARD_W + 3, CARD_H + LABEL_H, label, *parts, cls="pile-svg")


def stock(count: int, *, known: bool = True) -> str:
    """The closed stock, face down, with how many cards it holds.

    >>> "stock, 52 cards" in stock(52)
    True
    """
    order = "" if known else ", order not recorded"
    label = f"stock, {count} card{'s' if count != 1 else ''}{order}"
    parts = []
    if count:
        if count > 1:
            parts.append(_card_back(3, 0, "stock"))
        parts.append(_card_back(0, 0, "stock"))
    else:
        parts.append(_slot(0, 0, label, "empty"))
    parts.append(_caption(f"stock ({count})", CARD_H + 14))
    return svg_document(CARD_W + 3, CARD_H + LABEL_H, label, *parts, cls="pile-svg")


def wild_indicator(wild: Card | None) -> str:
    """The wild indicator, turned sideways under the stock in real play; here upright and named.

    >>> "wild indicator: 7 of diamonds (7s are jokers)" in wild_indicator(Card.parse("7D"))
    True
    """
    if wild is None:
        label = "wild indicator not turned up yet"
        return svg_document(
            CARD_W, CARD_H + LABEL_H, label, _slot(0, 0, label, "wild"), cls="pile-svg"
        )
    if wild.is_printed_joker:
        meaning = "printed joker: aces are jokers"
    else:
        rank = wild.symbol[:-1]
        meaning = f"{rank}s are jokers"
    label = f"wild indicator: {wild.spoken} ({meaning})"
    return svg_document(
        CARD_W,
        CARD_H + LABEL_H,
        label,
        _card_face(wild, 0, 0),
        _caption("wild", CARD_H + 14),
        cls="pile-svg",
    )


def finish_slot(finish: Card | None, *, wild: Card | None = None) -> str:
    """The finish slot: the card a declarer put face down to finish, or an empty place."""
    if finish is None:
        label = "finish slot, empty"
        return svg_document(
            CARD_W, CARD_H + LABEL_H, label, _slot(0, 0, label, "finish"), cls="pile-svg"
        )
    label = f"finish slot: {card_label(finish, wild)}"
    return svg_document(
        CARD_W,
        CARD_H + LABEL_H,
        label,
        _card_face(finish, 0, 0, wild=wild),
        _caption("finish", CARD_H + 14),
        cls="pile-svg",
    )


def _caption(text: str, y: float, x: float = CARD_W / 2, *, fill: str = BLACK) -> str:
    return element(
        "text",
        {
            "class": "caption",
            "x": f"{x:g}",
            "y": f"{y:g}",
            "text-anchor": "middle",
            "font-size": 11,
            "font-family": "sans-serif",
            "fill": fill,
            "aria-hidden": "true",
        },
        text,
    )


# -- a whole table -------------------------------------------------------------------------


STATUS_WORDS = {
    "waiting": "waiting for a first turn",
    "playing": "in play",
    "dropped": "dropped",
    "auto_dropped": "auto-dropped",
    "wrong_show": "out: wrong show",
    "won": "won",
    "lost": "lost",
}


def status_words(seat, *, to_play: bool = False) -> str:
    """A seat's status tag: ``dropped (first drop)``. A seat counts its first turn once it
    ends (docs/rules.md §1.5-1.6), so a player who
    has picked and not yet discarded is still ``waiting`` (§1.6, the deal show): they are
    in their first turn."""
    if seat.status == "waiting" and to_play:
        return "in their first turn"
    status = STATUS_WORDS.get(seat.status, seat.status)
    drop_kind = getattr(seat, "drop_kind", None)
    if drop_kind and seat.status in ("dropped", "auto_dropped"):
        status += f" ({str(drop_kind).replace('_', ' ')})"
    return status


def seat_caption(seat, *, to_play: bool = False) -> str:
    """``Seat 2 · p2 · dropped (first drop)``; ``to play`` added for the player whose turn it is."""
    words = f"Seat {seat.seat} · {seat.player} · {status_words(seat, to_play=to_play)}"
    return words + (" · to play" if to_play else "")


def table(state, *, seat: str | None = None) -> str:
    """The whole table after a move as one SVG: the centre (stock, open pile, wild, finish)
    and one row per seat. ``state`` is a :class:`domain.rummy13.game.TableState`; with ``seat`` the
    table is drawn as that player saw it (use ``state.for_seat(seat)`` first, or pass it here).
    """
    if seat is not None and hasattr(state, "for_seat"):
        state = state.for_seat(seat)
    rows: list[str] = []
    header = (
        f"Round {state.round} · point value {state.point_value}"
        + (
            f" (next {state.next_point_value})"
            if getattr(state, "next_point_value", None) not in (None, state.point_value)
            else ""
        )
        + f" · move {state.move_index}"
    )
    rows.append(
        element(
            "text",
            {"x": 12, "y": 22, "font-size": 15, "font-family": "sans-serif", "fill": "#ffffff"},
            header,
        )
    )
    centre_y = 34
    x = 12
    for draw in (
        lambda at: _stock_group(at, state.stock_count),
        lambda at: _open_group(at, state.open_pile, state.wild),
        lambda at: _wild_group(at, state.wild),
        lambda at: _finish_group(at, state.finish, state.wild),
    ):
        rows.append(draw(_translate(x, centre_y)))
        x += CARD_W + 28
    y = centre_y + CARD_H + LABEL_H + 16
    width = x
    for seat_state in state.seats:
        to_play = seat_state.player == state.current_player
        caption = seat_caption(seat_state, to_play=to_play)
        rows.append(
            element(
                "text",
                {
                    "x": 12,
                    "y": y + 14,
                    "font-size": 13,
                    "font-family": "sans-serif",
                    "font-weight": "bold" if to_play else None,
                    "fill": "#ffe08a" if to_play else "#ffffff",
                },
                ("▶ " if to_play else "") + caption,
            )
        )
        y += 20
        cards = tuple(seat_state.hand)
        if cards:
            fan, w = _fan(
                sort_for_display(cards, state.wild), 12, y, wild=state.wild, label=caption
            )
        else:
            count = seat_state.hand_size
            backs = (_card_back(12 + i * 10, y, "hidden card") for i in range(count))
            fan = element("g", {"class": "fan hidden", "aria-label": caption}, None, *backs)
            w = (count - 1) * 10 + CARD_W if count else 0
        rows.append(fan)
        width = max(width, 12 + w + 12)
        y += CARD_H + 14
    label = f"Table of game {state.game_id} after move {state.move_index}: {header}; " + "; ".join(
        seat_caption(s) for s in state.seats
    )
    background = element("rect", {"width": width, "height": y, "rx": 10, "fill": FELT})
    return svg_document(int(width), int(y), label, background, *rows, cls="table-svg")


def empty_table(words: str) -> str:
    """A table with nothing dealt on it, saying so: what a table image shows before the first
    deal (a match's seats taken), so that a page's image is never a broken one.

    >>> "No deal yet" in empty_table("No deal yet: p1, p2 seated")
    True
    """
    width, height = max(320, 8 * len(words) + 24), 48
    background = element("rect", {"width": width, "height": height, "rx": 10, "fill": FELT})
    text = element(
        "text",
        {"x": 12, "y": 29, "font-size": 15, "font-family": "sans-serif", "fill": "#ffffff"},
        words,
    )
    return svg_document(width, height, words, background, text, cls="table-svg")


def _centre_group(cls: str, transform: str, shown: str, caption: str) -> str:
    return element(
        "g",
        {"class": cls, "transform": transform},
        None,
        shown,
        _caption(caption, CARD_H + 14, fill=WHITE),
    )


def _stock_group(transform: str, count: int) -> str:
    shown = (
        _card_back(0, 0, f"stock, {count_of(count, 'card')}")
        if count
        else _slot(0, 0, "stock, empty", "empty")
    )
    return _centre_group("stock", transform, shown, f"stock ({count})")


def _open_group(transform: str, pile: Sequence[Card], wild: Card | None) -> str:
    shown = (
        _card_face(pile[-1], 0, 0, wild=wild) if pile else _slot(0, 0, "open pile, empty", "empty")
    )
    return _centre_group("open-pile", transform, shown, f"open ({len(pile)})")


def _wild_group(transform: str, wild: Card | None) -> str:
    shown = _card_face(wild, 0, 0) if wild else _slot(0, 0, "no wild yet", "wild")
    return _centre_group("wild", transform, shown, "wild")


def _finish_group(transform: str, finish: Card | None, wild: Card | None) -> str:
    shown = (
        _card_face(finish, 0, 0, wild=wild)
        if finish
        else _slot(0, 0, "finish slot, empty", "finish")
    )
    return _centre_group("finish", transform, shown, "finish")
