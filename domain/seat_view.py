"""What one seat may know of a game, for every variant: the single seat filter.

A table state's ``for_seat`` hides other players' hands; a move can tell more than the table
shows, so moves go through :func:`move_seen_by` too: the card another player drew from the
face-down stock (13-card records call that source ``closed``, Red 3 records ``stock``) and
the new order of a reshuffled stock stay hidden, as they were at the table. A card taken
from the open pile (or Red 3's whole discard pile) was face up and stays visible.

The replay pages, their move lists and the table fragment all go through
:func:`move_for_view` and :func:`table_for_view`, so a seat view cannot leak in one of them
and not the others.

>>> pick = {"player": "p1", "type": "pick", "from": "stock", "card": "3C"}
>>> move_for_view(pick, "p2")
{'player': 'p1', 'type': 'pick', 'from': 'stock'}
>>> move_for_view(pick, "p1")["card"], move_for_view(pick, None)["card"]
('3C', '3C')
"""

from __future__ import annotations

from collections.abc import Mapping

# Where a pick comes from when nobody else sees the card: the 13-card stock and Red 3's.
FACE_DOWN_SOURCES = frozenset({"closed", "stock"})


def move_seen_by(move: Mapping, viewer: str | None) -> dict:
    """``move`` as ``viewer`` saw it at the table (``None``: a spectator without a seat)."""
    kind = move.get("type")
    if (
        kind == "pick"
        and move.get("from") in FACE_DOWN_SOURCES
        and (viewer is None or move.get("player") != viewer)
    ):
        return {k: v for k, v in move.items() if k != "card"}
    if kind == "reshuffle":
        return {k: v for k, v in move.items() if k != "stock"}
    return dict(move)


def move_for_view(move: Mapping, seat: str | None) -> dict:
    """A replay's rule: no seat is the full (staff) view and shows everything the ledger
    holds; a seat view shows what that seat saw."""
    return dict(move) if seat is None else move_seen_by(move, seat)


def table_for_view(state, seat: str | None):
    """The table state for a replay view: the full state, or ``state.for_seat(seat)``, whose
    last move goes through :func:`move_seen_by` in every variant."""
    return state if seat is None else state.for_seat(seat)
