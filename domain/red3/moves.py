"""Red 3 Rummy's move vocabulary onto the match's commands: the one place that maps them.

Records, ``rummy-ledger settle``, the simulator and tests all play moves through
:func:`apply_move`, so a move means the same thing wherever it comes from
(docs/red3-format.md lists the vocabulary).

>>> from domain.red3.game import Red3Config, Red3Match
>>> match = Red3Match.start(Red3Config(game_id="R3-moves", players=("p1", "p2"), rounds=1))
>>> apply_move(match, {"player": "p1", "type": "declare"})
Traceback (most recent call last):
...
domain.errors.BadMove: p1 cannot declare: unknown move type (known: pick, lay_down, discard)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from domain.cards import Card, CardError
from domain.errors import BadMove, RuleViolation
from domain.red3.game import PICK_SOURCES, Red3Match
from domain.red3.table import Red3Config, Red3Deal

MOVE_TYPES = ("pick", "lay_down", "discard")
_FIELDS = {
    "pick": {"player", "type", "from", "card", "cards", "at"},
    "lay_down": {"player", "type", "books", "add", "at"},
    "discard": {"player", "type", "card", "at"},
}


def _bad(reason: str, move: Mapping, match: Red3Match) -> BadMove:
    player = move.get("player")
    return BadMove(
        reason,
        player=player if isinstance(player, str) else None,
        move_type=str(move.get("type")),
        game_id=match.game_id,
    )


def _card(value: Any, what: str, move: Mapping, match: Red3Match) -> Card:
    try:
        return Card.parse(value)
    except CardError as error:
        raise _bad(f"{what}: {error}", move, match) from None


def _cards(value: Any, what: str, move: Mapping, match: Red3Match) -> list[Card]:
    if isinstance(value, str) or not isinstance(value, list | tuple):
        raise _bad(f"{what} must be a list of cards", move, match)
    return [_card(item, f"{what}[{i}]", move, match) for i, item in enumerate(value)]


def apply_move(match: Red3Match, move: Mapping[str, Any]) -> None:
    """Apply one record move (``{"player": "p1", "type": "pick", "from": "stock"}``).

    Raises a :class:`~domain.errors.RuleViolation` (nothing recorded) when the move is
    malformed or illegal.
    """
    if not isinstance(move, Mapping):
        raise BadMove("a move must be an object", game_id=match.game_id)
    move_type = move.get("type")
    if move_type not in _FIELDS:
        raise _bad(f"unknown move type (known: {', '.join(MOVE_TYPES)})", move, match)
    unknown = sorted(set(move) - _FIELDS[move_type])
    if unknown:
        raise _bad(f"unknown field {unknown[0]!r}", move, match)
    player = move.get("player")
    if not isinstance(player, str):
        raise _bad("the move has no 'player'", move, match)
    at = move.get("at")
    if move_type == "pick":
        source = move.get("from")
        if source not in PICK_SOURCES:
            raise _bad(f"'from' must be 'stock' or 'pile', not {source!r}", move, match)
        card = move.get("card")
        if card is not None:
            card = _card(card, "card", move, match)
        cards = move.get("cards")
        if cards is not None:
            cards = _cards(cards, "cards", move, match)
        match.pick(player, source, card, cards=cards, at=at)
    elif move_type == "lay_down":
        books = move.get("books") or []
        if not isinstance(books, list):
            raise _bad("books must be a list of books (lists of cards)", move, match)
        books = [_cards(book, f"books[{i}]", move, match) for i, book in enumerate(books)]
        additions = []
        for i, added in enumerate(move.get("add") or []):
            if not isinstance(added, Mapping) or set(added) != {"book", "cards"}:
                raise _bad(f"add[{i}] must be {{'book': index, 'cards': [...]}}", move, match)
            additions.append((added["book"], _cards(added["cards"], f"add[{i}]", move, match)))
        match.lay_down(player, books, additions, at=at)
    else:
        if move.get("card") is None:
            raise _bad("the move has no 'card'", move, match)
        match.discard(player, _card(move["card"], "card", move, match), at=at)


def play_match(
    config: Red3Config | Mapping[str, Any],
    rounds: Iterable[Mapping[str, Any]],
    *,
    reported: Mapping[str, Any] | None = None,
    at: Any = None,
) -> Red3Match:
    """Build a whole match in memory (no database): start, then each round's deal and moves.

    ``rounds`` holds ``{"deal": Red3Deal or its dict, "moves": [...], "at": optional}``.
    The first illegal deal or move raises its :class:`~domain.errors.RuleViolation` with
    ``round_number`` set and, for a move, ``move_index`` (0-based within the round).
    """
    if not isinstance(config, Red3Config):
        config = Red3Config.from_dict(config)
    match = Red3Match.start(config, reported=reported, at=at)
    for number, played in enumerate(rounds, start=1):
        try:
            match.deal(Red3Deal.from_dict(played["deal"]), at=played.get("at"))
        except RuleViolation as error:
            error.game_id = match.game_id
            error.round_number = number
            raise
        for index, move in enumerate(played.get("moves") or ()):
            try:
                apply_move(match, move)
            except RuleViolation as error:
                error.game_id = match.game_id
                error.round_number = number
                error.at_move(index, dict(move) if isinstance(move, Mapping) else None)
                raise
    return match


def where(error: RuleViolation) -> str:
    """``round 2 move 5 (p1 discard JS)``: where in a match record a violation happened."""
    number = getattr(error, "round_number", None)
    place = error.where()
    if number is None:
        return place
    if not place:
        return f"round {number} deal" if error.move_type == "deal" else f"round {number}"
    return f"round {number} {place}"
