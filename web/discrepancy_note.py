"""A game's discrepancy note as one viewer may read it.

The projection keeps one note per game, ``"reported points.p0004: 62 != computed 52; ..."``
(``replays.readmodels.projections``). Staff read it whole; a player reads only the parts about the
table's totals and their own figures: another player's reported or computed points tell of
cards that player never showed.

>>> note = "reported points.p4: 62 != computed 52; reported gross: 9.00 != computed 8.00"
>>> for_viewer(note, ["p1", "p4"], "p1")
'reported gross: 9.00 != computed 8.00; 1 more about other players'
>>> for_viewer(note, ["p1", "p4"], None) == note
True
"""

from __future__ import annotations

import re


def _player_ids(players) -> list[str]:
    return [str(p.get("id") or p.get("player")) if isinstance(p, dict) else str(p) for p in players]


def for_viewer(note: str | None, players, seat: str | None) -> str:
    """``note`` without the parts naming players other than ``seat`` (no seat: all of it)."""
    if not note or seat is None:
        return note or ""
    others = set(_player_ids(players or ())) - {seat}
    kept, withheld = [], 0
    for part in note.split("; "):
        field = part.split(":", 1)[0]
        if others & set(re.findall(r"[\w-]+", field)):
            withheld += 1
        else:
            kept.append(part)
    if withheld:
        kept.append(f"{withheld} more about other players")
    return "; ".join(kept)
