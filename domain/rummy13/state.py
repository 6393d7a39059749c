"""Read-only views of a table, for replays, seat views and the API.

A :class:`TableState` is what anyone looking at the table after a given move could be shown;
:meth:`TableState.for_seat` cuts it down to what one player could see at that moment: their
own hand, the public piles, and opponents' cards only once revealed at the end (the
declaration, shows, wrong shows, and the hands charged at settlement).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from domain.cards import Card
from domain.rummy13.melds import HandEvaluation
from domain.rummy13.settlement import Settlement, rate_text
from domain.seat_view import move_seen_by

SEAT_STATUSES = ("waiting", "playing", "dropped", "auto_dropped", "wrong_show", "won", "lost")
PHASES = ("dealing", "playing", "showing", "settled")


def _texts(cards: tuple[Card, ...] | None) -> list[str] | None:
    return None if cards is None else [str(card) for card in cards]


@dataclass(frozen=True)
class SeatState:
    """One seat. ``status``: ``waiting`` = still in but has not had a first turn yet (a valid
    declaration now would be a deal show for this player); ``playing`` = still in after at
    least one turn; then ``dropped``, ``auto_dropped``, ``wrong_show``, ``won``, ``lost``."""

    player: str
    seat: int
    hand: tuple[Card, ...]
    status: str
    drop_kind: str | None
    turns_taken: int
    consecutive_misses: int
    shown_groups: tuple[tuple[Card, ...], ...] | None
    hand_size: int = 0
    hand_hidden: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "player": self.player,
            "seat": self.seat,
            "hand": None if self.hand_hidden else _texts(self.hand),
            "hand_size": self.hand_size,
            "status": self.status,
            "drop_kind": self.drop_kind,
            "turns_taken": self.turns_taken,
            "consecutive_misses": self.consecutive_misses,
            "shown_groups": None
            if self.shown_groups is None
            else [_texts(group) for group in self.shown_groups],
        }


@dataclass(frozen=True)
class TableState:
    """The table as it stood after ``move_index`` moves (aggregate ``version``)."""

    game_id: str
    variant: str
    rules: str
    version: int
    move_index: int
    seats: tuple[SeatState, ...]
    open_pile: tuple[Card, ...]  # bottom → top
    stock_count: int
    stock_known: bool
    wild: Card | None
    finish: Card | None
    current_player: str | None
    round: int
    point_value: Decimal
    next_point_value: Decimal
    phase: str
    winner: str | None
    declaration: HandEvaluation | None
    last_move: dict | None
    settlement: Settlement | None
    dealer: str | None = None
    turn_step: str | None = None  # "pick" (or drop/miss) or "discard" (or declare)
    currency: str = "INR"
    revealed: tuple[str, ...] = ()  # players whose cards everyone may now see
    viewer: str | None = None  # set by for_seat

    @property
    def open_top(self) -> Card | None:
        return self.open_pile[-1] if self.open_pile else None

    def seat_of(self, player: str) -> SeatState:
        for seat in self.seats:
            if seat.player == player:
                return seat
        raise KeyError(f"{player} is not seated at game {self.game_id}")

    def for_seat(self, player: str | None) -> TableState:
        """What ``player`` could see at this moment (``None``: a spectator's public view)."""
        if player is not None:
            self.seat_of(player)  # unknown players are an error, not an empty view
        seats = tuple(
            seat
            if seat.player == player or seat.player in self.revealed
            else replace(seat, hand=(), hand_hidden=True)
            for seat in self.seats
        )
        last_move = self.last_move
        if last_move is not None:
            last_move = move_seen_by(last_move, player)
        return replace(self, seats=seats, last_move=last_move, viewer=player)

    def to_dict(self) -> dict[str, Any]:
        return {
            "game_id": self.game_id,
            "variant": self.variant,
            "rules": self.rules,
            "version": self.version,
            "move_index": self.move_index,
            "phase": self.phase,
            "dealer": self.dealer,
            "current_player": self.current_player,
            "turn_step": self.turn_step,
            "round": self.round,
            "currency": self.currency,
            "point_value": rate_text(self.point_value),
            "next_point_value": rate_text(self.next_point_value),
            "wild": None if self.wild is None else str(self.wild),
            "open_pile": _texts(self.open_pile),
            "stock_count": self.stock_count,
            "stock_known": self.stock_known,
            "finish": None if self.finish is None else str(self.finish),
            "seats": [seat.to_dict() for seat in self.seats],
            "winner": self.winner,
            "declaration": None if self.declaration is None else self.declaration.to_json(),
            "last_move": self.last_move,
            "settlement": None if self.settlement is None else self.settlement.to_dict(),
            "viewer": self.viewer,
        }
