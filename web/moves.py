"""Moves in words for the move list, and the moments of a game worth jumping to.

A move here is a row of the move timeline (:class:`replays.readmodels.models.MoveRow`) or a docs/record-format.md
move dict; both name the same things (player, type, card, source).

>>> describe({"player": "p1", "type": "pick", "from": "closed", "card": "4H"})
'p1 picks 4♥ from the stock'
>>> describe({"player": "p2", "type": "drop"})
'p2 drops'
"""

from __future__ import annotations

from dataclasses import dataclass

from domain.cards import Card, CardError
from domain.seat_view import move_for_view


def _field(move, name: str, row_name: str | None = None):
    if isinstance(move, dict):
        return move.get(name)
    return getattr(move, row_name or name, None)


def card_text(text: str | None) -> str:
    if not text:
        return "?"
    try:
        return Card.parse(text).symbol
    except CardError:
        return text


def move_type(move) -> str:
    return _field(move, "type", "move_type")


def as_move(move) -> dict:
    """A timeline row (or a move dict) as a docs/record-format.md move dict."""
    if isinstance(move, dict):
        return move
    found = {
        "player": move.player,
        "type": move.move_type,
        "card": move.card,
        "from": move.source,
    }
    return {k: v for k, v in found.items() if v is not None}


def describe(move, viewer: str | None = None) -> str:
    """One line for a move: who did what with which card.

    With ``viewer`` (a seat view) the move first goes through the seat filter
    (:func:`domain.seat_view.move_for_view`), so another player's card picked from the
    closed stock stays hidden, as it was at the table:

    >>> describe({"player": "p1", "type": "pick", "from": "closed", "card": "4H"}, viewer="p2")
    'p1 picks from the stock'
    """
    move = move_for_view(as_move(move), viewer)
    player = move.get("player") or "the dealer"
    kind = move.get("type")
    card = move.get("card")
    if kind == "pick":
        source = move.get("from")
        where = "the open pile" if source == "open" else "the stock"
        if card is None:
            return f"{player} picks from {where}"
        return f"{player} picks {card_text(card)} from {where}"
    if kind == "discard":
        return f"{player} discards {card_text(card)}"
    if kind == "drop":
        return f"{player} drops"
    if kind == "miss":
        return f"{player} misses the turn"
    if kind == "declare":
        finish = _field(move, "finish") or card
        return f"{player} declares, finishing with {card_text(finish)}"
    if kind == "show":
        return f"{player} shows"
    if kind == "reshuffle":
        return "the open pile is reshuffled into a new stock"
    return f"{player} {kind}"


@dataclass(frozen=True)
class Moment:
    """A move worth jumping to: ``move`` is the table position after it (1-based count)."""

    move: int
    kind: str  # drop, miss, auto_drop, wrong_show, reshuffle, declaration
    text: str


MOMENT_WORDS = {
    "drop": "drop",
    "miss": "missed turn",
    "auto_drop": "auto-drop",
    "wrong_show": "wrong show",
    "reshuffle": "reshuffle",
    "declaration": "declaration",
}


def moments(timeline, outcomes: dict[str, str]) -> list[Moment]:
    """The moments that matter, in play order.

    ``outcomes`` maps each player to how their game ended (``auto_drop``, ``wrong_show``,
    ``won`` ...), from the settlement or, while the game runs, from the table's seat
    statuses. A player's last miss is their auto-drop when they were auto-dropped; a
    declaration by a player who went out on a wrong show is that wrong show: a player
    declares at most once wrongly, because the wrong show takes them out.

    >>> rows = [{"player": "p2", "type": "drop"}, {"player": "p1", "type": "declare"}]
    >>> [(m.move, m.kind) for m in moments(rows, {"p1": "won"})]
    [(1, 'drop'), (2, 'declaration')]
    """
    rows = list(timeline)
    last_miss: dict[str, int] = {}
    for index, row in enumerate(rows):
        if move_type(row) == "miss":
            last_miss[_field(row, "player")] = index
    found = []
    for index, row in enumerate(rows):
        kind = move_type(row)
        player = _field(row, "player")
        outcome = outcomes.get(player)
        if kind == "drop":
            moment = "drop"
        elif kind == "miss":
            moment = (
                "auto_drop"
                if outcome in ("auto_drop", "auto_dropped") and last_miss.get(player) == index
                else "miss"
            )
        elif kind == "declare":
            moment = "wrong_show" if outcome == "wrong_show" else "declaration"
        elif kind == "reshuffle":
            moment = "reshuffle"
        else:
            continue
        who = f"{player}: " if player and kind != "reshuffle" else ""
        found.append(Moment(index + 1, moment, f"{who}{MOMENT_WORDS[moment]}"))
    return found
