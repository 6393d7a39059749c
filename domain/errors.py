"""Named rule violations: every illegal command says who, what and why, and records nothing.

>>> error = CardNotHeld("not in hand", player="p3", move_type="discard", card="9C")
>>> str(error)
'p3 cannot discard 9C: not in hand'
>>> error.player, error.move_type, error.card
('p3', 'discard', '9C')

An importer that replays a whole record attaches the move's place with :meth:`at_move`:

>>> str(error.at_move(17, {"player": "p3", "type": "discard", "card": "9C"}))
'p3 cannot discard 9C: not in hand'
>>> error.where()
'move 17 (p3 discard 9C)'
"""

from __future__ import annotations

from typing import Any


class RuleViolation(Exception):
    """A command the rules do not allow (or a table that cannot exist).

    ``player``, ``move_type`` and ``card`` name the culprit when there is one;
    ``move_index`` and ``move`` are set by whoever replays a list of moves
    (:func:`domain.rummy13.moves.play_game`), ``game_id`` by the aggregate.
    """

    def __init__(
        self,
        reason: str,
        *,
        player: str | None = None,
        move_type: str | None = None,
        card: Any = None,
        game_id: str | None = None,
    ) -> None:
        self.reason = reason
        self.player = player
        self.move_type = move_type
        self.card = None if card is None else str(card)
        self.game_id = game_id
        self.move_index: int | None = None
        self.move: dict | None = None
        super().__init__(self.message)

    @property
    def message(self) -> str:
        if self.player and self.move_type:
            subject = f"{self.player} cannot {self.move_type}"
            if self.card:
                subject += f" {self.card}"
            return f"{subject}: {self.reason}"
        if self.move_type:
            return f"cannot {self.move_type}: {self.reason}"
        return self.reason

    def __str__(self) -> str:
        return self.message

    def at_move(self, index: int, move: dict | None = None) -> RuleViolation:
        """Remember which move of a record broke the rule; returns ``self`` for ``raise``."""
        self.move_index = index
        self.move = move
        return self

    def where(self) -> str:
        """``move 17 (p3 discard 9C)``, or ``''`` when the move is not known."""
        if self.move_index is None:
            return ""
        move = self.move or {}
        described = " ".join(
            value
            for value in (move.get("player"), move.get("type"), move.get("card"))
            if isinstance(value, str) and value
        )
        return f"move {self.move_index} ({described})" if described else f"move {self.move_index}"


class BadConfig(RuleViolation):
    """The table configuration cannot describe a game (players, stakes, dealer, toss)."""


class BadDeal(RuleViolation):
    """Hands, open card, wild indicator and stock are not a deal from the table's decks."""


class BadMove(RuleViolation):
    """A move dict that is not in the record format's vocabulary (unknown type, missing field)."""


class NotDealt(RuleViolation):
    """A move before the cards were dealt, or a second deal."""


class GameOver(RuleViolation):
    """A move after the game ended (or a second settlement)."""


class GameNotOver(RuleViolation):
    """Settling (or reporting figures for) a game that is still being played."""


class UnknownPlayer(RuleViolation):
    """A player id that is not seated at this table."""


class NotYourTurn(RuleViolation):
    """A move by a player whose turn it is not, or a move at the wrong point of a turn."""


class PlayerOut(NotYourTurn):
    """A move by a player who has dropped, been auto-dropped or made a wrong show."""


class CardNotHeld(RuleViolation):
    """Discarding, finishing, declaring or showing a card the player does not hold."""


class IllegalPick(RuleViolation):
    """A pick of a card that is not on top of the chosen pile, or from an empty pile."""


class JokerPickForbidden(IllegalPick):
    """Picking from the open pile a joker that another player discarded."""


class StockMismatch(IllegalPick):
    """A closed pick that does not match the known stock order or the cards left in it."""


class IllegalDrop(RuleViolation):
    """A drop after picking (a drop is only allowed at the start of one's own turn)."""


class IllegalMiss(RuleViolation):
    """A missed turn recorded after the player had already picked."""


class DeclarationMismatch(RuleViolation):
    """Declared groups that are not exactly the 13 cards left after the finish card."""


class IllegalShow(RuleViolation):
    """A show before a valid declaration, by the winner or an eliminated player, or twice."""


class IllegalReshuffle(RuleViolation):
    """A reshuffle while the stock still has cards, or not made of the open pile's cards."""


class UnknownProfile(ValueError):
    """A rule profile name that no family knows (each family keeps its own profiles)."""
