"""A 13-card game folded down to what its read-model rows read, without moving a card.

The projection (``replays.readmodels.projections``) used to apply every stored event to a
whole :class:`~domain.rummy13.game.Game` (hands, piles, stock, the move log, through the
library's ``mutate``) only so that the row builders of :mod:`domain.rummy13.rows` could read
a dozen fields: move count, round, phase, winner, version, config, start time and the
``Settled``/``Reported`` bodies. :class:`GameFold` keeps just those, plus the seats still in
play, the dealer and whose turn it is (which decide when the round goes up and who is
left standing), and :func:`apply` moves them on exactly as the aggregate's event bodies
do. The row builders read the same attribute names from either, so the rows are the same
(tests/test_fold.py compares them game by game with the aggregate's).

What an event must be to fold, as for the aggregate: the game's next version of the same
game, its first event ``Started`` and no other, a seated player, known card texts. The
aggregate's replay also failed on some impossible card movements (a discard of a card not
in hand, a pick from an empty pile); the fold does not track cards, so it does not see
those. It need not: every stored event was produced by a command that checked the rules
first, the events are sealed, and ``verify`` replays every game through the aggregate and
checks the read models against it (docs/read-models.md).

>>> from domain.rummy13.game import Game, TableConfig
>>> config = TableConfig(game_id="fold-1", variant="points", players=("p1", "p2"),
...                      point_value="1", dealer="p2")
>>> game = Game(config)
>>> state = replay(game.collect_events())
>>> state.game_id, state.phase, state.version, state.move_count
('fold-1', 'dealing', 1, 0)
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from domain.cards import ALL_CARDS
from domain.errors import RuleViolation
from domain.rummy13.table import TableConfig, config_of_started

CARD_TEXTS = frozenset(str(card) for card in ALL_CARDS)
SETTLED = "settled"


class FoldError(RuleViolation):
    """A stored event that cannot follow the game as folded so far (wrong game or
    version, unknown player or card): the projection sets the game aside."""


class GameFold:
    """The fields of a 13-card game its read-model rows read, under the aggregate's names
    (``game_id``, ``config``, ``phase``, ``round``, ``move_count``, ``version``, ...)."""

    __slots__ = (
        "computed_hash",
        "config",
        "created_on",
        "current",
        "dealer",
        "game_id",
        "id",
        "move_count",
        "out",
        "phase",
        "players",
        "reported_body",
        "round",
        "settled_body",
        "settled_hash",
        "started_at",
        "version",
        "winner",
    )

    def __init__(self, originator_id: Any, config: TableConfig, at: str | None, when: datetime):
        self.id = originator_id
        self.version = 1
        self.config = config
        self.game_id = config.game_id
        self.players = config.players
        self.dealer = config.players.index(config.dealer_player)
        self.current: int | None = None
        self.out: set[str] = set()
        self.round = 0
        self.move_count = 0
        self.phase = "dealing"
        self.winner: str | None = None
        self.started_at = at
        self.created_on = when
        self.settled_body: dict | None = None
        self.settled_hash: str | None = None  # settlement_hash(settled_body), once worked out
        self.computed_hash: str | None = None
        self.reported_body: dict | None = None

    def __repr__(self) -> str:
        return f"<GameFold {self.game_id} v{self.version} {self.phase}>"

    # -- the aggregate's event bodies, without the cards -----------------------------------
    def _seated(self, player: Any, event: Any) -> str:
        if player not in self.players:
            raise FoldError(f"{_name(event)}: {player!r} is not seated at this table")
        return player

    def _end_turn(self) -> None:
        """As ``Game._end_turn``: the last player standing wins; else the turn passes on,
        and the round goes up on leaving the dealer's seat."""
        players = self.players
        out = self.out
        if len(players) - len(out) == 1:
            self.winner = next(p for p in players if p not in out)
            self.phase = "showing"
            self.current = None
            return
        dealer = self.dealer
        position = self.current
        if position is None:
            raise FoldError("a turn ends while nobody is to move")
        count = len(players)
        while True:
            if position == dealer:
                self.round += 1
            position = (position + 1) % count
            if players[position] not in out:
                break
        self.current = position


def _name(event: Any) -> str:
    return type(event).__name__


def _cards(texts: Iterable[Any], event: Any) -> None:
    for text in texts:
        if text not in CARD_TEXTS:
            raise FoldError(f"{_name(event)}: {text!r} is not a card")


def _started(state: GameFold | None, event: Any) -> GameFold:
    if state is not None:
        raise FoldError("Started: the game has started already")
    config = config_of_started(event.config)
    return GameFold(event.originator_id, config, event.at, event.timestamp)


def _dealt(state: GameFold, event: Any) -> None:
    hands = event.hands
    for player in state.players:
        _cards(hands[player], event)
    _cards((event.wild, event.open_card), event)
    if event.stock is not None:
        _cards(event.stock, event)
    state.phase = "playing"
    state.current = state.players.index(state.config.first_mover)


def _picked(state: GameFold, event: Any) -> None:
    state._seated(event.player, event)
    _cards((event.card,), event)
    state.move_count += 1


def _discarded(state: GameFold, event: Any) -> None:
    state._seated(event.player, event)
    _cards((event.card,), event)
    state.move_count += 1
    state._end_turn()


def _dropped(state: GameFold, event: Any) -> None:
    state.out.add(state._seated(event.player, event))
    state.move_count += 1
    state._end_turn()


def _missed(state: GameFold, event: Any) -> None:
    player = state._seated(event.player, event)
    if event.auto_drop:
        state.out.add(player)
    state.move_count += 1
    state._end_turn()


def _declared(state: GameFold, event: Any) -> None:
    player = state._seated(event.player, event)
    _cards((event.finish,), event)
    for group in event.groups:
        _cards(group, event)
    state.move_count += 1
    if event.valid:
        state.winner = player
        state.phase = "showing"
        state.current = None
        return
    state.out.add(player)  # a wrong show: out, and play goes on
    state._end_turn()


def _shown(state: GameFold, event: Any) -> None:
    state._seated(event.player, event)
    for group in event.groups:
        _cards(group, event)
    state.move_count += 1


def _reshuffled(state: GameFold, event: Any) -> None:
    if event.stock is not None:
        _cards(event.stock, event)
    state.move_count += 1


def _settled(state: GameFold, event: Any) -> None:
    state.settled_body = event.settlement
    state.settled_hash = None
    state.computed_hash = getattr(event, "computed_hash", None)
    state.phase = SETTLED


def _reported(state: GameFold, event: Any) -> None:
    state.reported_body = event.reported


_STEPS = {
    "Dealt": _dealt,
    "Picked": _picked,
    "Discarded": _discarded,
    "Dropped": _dropped,
    "Missed": _missed,
    "Declared": _declared,
    "Shown": _shown,
    "Reshuffled": _reshuffled,
    "Settled": _settled,
    "Reported": _reported,
}


def apply(state: GameFold | None, event: Any) -> GameFold:
    """``state`` (None before the first event) moved on by one stored ``Game`` event, in
    place; the state after it. Raises :class:`FoldError` for an event that cannot follow."""
    version = event.originator_version
    if state is None:
        if _name(event) != "Started" or version != 1:
            raise FoldError(f"{_name(event)} (version {version}) cannot start a game")
        return _started(None, event)
    step = _STEPS.get(type(event).__name__)
    originator = event.originator_id
    # A game's events share its id object: identity first spares UUID's Python ``__eq__``.
    same = originator is state.id or originator == state.id
    if step is None or version != state.version + 1 or not same:
        raise FoldError(_refusal(state, event, step))
    try:
        step(state, event)
    except (AttributeError, KeyError, TypeError, ValueError) as error:
        raise FoldError(f"{_name(event)}: {type(error).__name__} {error}") from None
    state.version = version
    return state


def _refusal(state: GameFold, event: Any, step: Any) -> str:
    if step is None:
        return f"{_name(event)}: not an event of a 13-card game"
    if event.originator_id != state.id:
        return f"{_name(event)} belongs to another game"
    return f"{_name(event)} is version {event.originator_version}, after version {state.version}"


def replay(events: Iterable[Any]) -> GameFold | None:
    """The fold of ``events`` (a game's, from its first, in order); None when there are none."""
    state = None
    for event in events:
        state = apply(state, event)
    return state


__all__ = ["CARD_TEXTS", "FoldError", "GameFold", "apply", "replay"]
