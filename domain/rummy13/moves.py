"""the record format's move vocabulary onto the game's commands: the one place that maps them.

The importer, ``rummy-ledger settle``, the ingest API and the ledger application all play
moves through :func:`apply_move`, so a move means the same thing wherever it comes from.

>>> from domain.rummy13.table import TableConfig
>>> config = TableConfig(game_id="doc-moves", variant="points", players=("p1", "p2"),
...                      point_value="1")
>>> apply_move(Game(config), {"type": "jump", "player": "p1"})
Traceback (most recent call last):
...
domain.errors.BadMove: p1 cannot jump: unknown move type (known: pick, discard, drop, miss, declare, show, reshuffle)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from domain.errors import BadMove, RuleViolation
from domain.rummy13.game import Game
from domain.rummy13.table import Deal, TableConfig

MOVE_TYPES = ("pick", "discard", "drop", "miss", "declare", "show", "reshuffle")
_REQUIRED = {
    "pick": ("player", "from", "card"),
    "discard": ("player", "card"),
    "drop": ("player",),
    "miss": ("player",),
    "declare": ("player", "finish", "groups"),
    "show": ("player", "groups"),
    "reshuffle": (),
}


def apply_move(game: Game, move: Mapping[str, Any]) -> None:
    """Apply one docs/record-format.md move dict (``{"player": "p1", "type": "pick", ...}``) to ``game``.

    Raises a :class:`~domain.errors.RuleViolation` (nothing recorded) when the move is
    malformed or illegal.
    """
    if not isinstance(move, Mapping):
        raise BadMove("a move must be an object", game_id=game.game_id)
    move_type = move.get("type")
    player = move.get("player")
    if move_type not in _REQUIRED:
        raise BadMove(
            f"unknown move type (known: {', '.join(MOVE_TYPES)})",
            player=player if isinstance(player, str) else None,
            move_type=str(move_type),
            game_id=game.game_id,
        )
    for name in _REQUIRED[move_type]:
        if move.get(name) is None:
            raise BadMove(
                f"the move has no {name!r}",
                move_type=move_type,
                game_id=game.game_id,
                player=player if isinstance(player, str) else None,
            )
    if player is not None and not isinstance(player, str):
        raise BadMove(
            f"player must be an id, not {player!r}", move_type=move_type, game_id=game.game_id
        )
    at = move.get("at")
    if move_type == "pick":
        game.pick(player, move["from"], move["card"], at=at)
    elif move_type == "discard":
        game.discard(player, move["card"], at=at)
    elif move_type == "drop":
        game.drop(player, at=at)
    elif move_type == "miss":
        game.miss(player, at=at)
    elif move_type == "declare":
        game.declare(player, move["finish"], move["groups"], at=at)
    elif move_type == "show":
        game.show(player, move["groups"], at=at)
    else:
        game.reshuffle(move.get("stock"), at=at)


def apply_record_move(game: Game, move: Any) -> None:
    """Apply one move of a parsed record (:class:`domain.rummy13.records.Move`: cards already
    :class:`~domain.cards.Card`, ``at`` a datetime) to ``game``: the same commands, and so
    the same checks and events, as :func:`apply_move` on the move's dict, without writing
    the dict out and reading it back (the record's schema already gave its shape)."""
    move_type = move.type
    player = move.player
    required = _REQUIRED_TYPED.get(move_type)
    if required is None:
        raise BadMove(
            f"unknown move type (known: {', '.join(MOVE_TYPES)})",
            player=player,
            move_type=str(move_type),
            game_id=game.game_id,
        )
    for name, attribute in required:
        if getattr(move, attribute) is None:
            raise BadMove(
                f"the move has no {name!r}",
                move_type=move_type,
                game_id=game.game_id,
                player=player,
            )
    at = move.at
    if move_type == "pick":
        game.pick(player, move.source, move.card, at=at)
    elif move_type == "discard":
        game.discard(player, move.card, at=at)
    elif move_type == "drop":
        game.drop(player, at=at)
    elif move_type == "miss":
        game.miss(player, at=at)
    elif move_type == "declare":
        game.declare(player, move.finish, move.groups, at=at)
    elif move_type == "show":
        game.show(player, move.groups, at=at)
    else:
        game.reshuffle(move.stock, at=at)


_TYPED_FIELD = {"from": "source"}  # the record's ``from`` is the typed move's ``source``
# Each move type's required fields with the typed move's attribute that holds each.
_REQUIRED_TYPED = {
    move_type: tuple((name, _TYPED_FIELD.get(name, name)) for name in names)
    for move_type, names in _REQUIRED.items()
}


def as_deal(value: Any) -> Deal:
    """A :class:`Deal` from a Deal, a docs/record-format.md ``deal`` block, or any object with
    ``hands``, ``wild``, ``open``/``open_card`` and ``stock`` attributes."""
    if isinstance(value, Deal):
        return value
    if isinstance(value, Mapping):
        return Deal.from_dict(value)
    open_card = getattr(value, "open_card", None) or getattr(value, "open", None)
    return Deal(
        hands=value.hands, wild=value.wild, open_card=open_card, stock=getattr(value, "stock", None)
    )


def play_game(
    config: TableConfig | Mapping[str, Any],
    deal: Any,
    moves: Iterable[Mapping[str, Any]],
    *,
    settle: bool = False,
    reported: Mapping[str, Any] | None = None,
    at: Any = None,
) -> Game:
    """Build a whole game in memory (no database): start, deal, every move in order.

    ``moves`` are docs/record-format.md move dicts or a parsed record's moves
    (:func:`apply_record_move`).

    ``settle=True`` settles a game that is over but not yet settled (a running game is left
    as it is). The first illegal move raises its :class:`~domain.errors.RuleViolation`
    with ``move_index`` (0-based, like the API's ``seq``) and the move attached.
    """
    game = Game(config, at=at)
    dealt = as_deal(deal)
    game.deal_cards(dealt)
    for index, move in enumerate(moves):
        try:
            if isinstance(move, Mapping):
                apply_move(game, move)
            else:
                apply_record_move(game, move)
        except RuleViolation as error:
            error.game_id = game.game_id
            given = dict(move) if isinstance(move, Mapping) else _move_dict(move)
            raise error.at_move(index, given) from None
    if settle and game.phase == "showing":
        game.settle()
    if reported is not None and game.phase == "settled":
        game.report(reported)
    return game


def _move_dict(move: Any) -> dict | None:
    to_dict = getattr(move, "to_dict", None)
    return None if to_dict is None else to_dict()
