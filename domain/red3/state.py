"""What a Red 3 table looks like at one moment: the read-only view the replay viewer draws.

``table_state(match)`` gives the full view (an auditor's: every card the ledger knows, the
second hands marked face down until picked up); ``state.for_seat(player)`` keeps only what
that player could see then: their own first hand, everyone's books, the pile, counts.

>>> from domain.red3.game import Red3Config, Red3Match, deal_from_order, deck_order
>>> match = Red3Match.start(Red3Config(game_id="R3-view", players=("p1", "p2"), rounds=2))
>>> match.deal(deal_from_order(deck_order(2, 2), ("p1", "p2"), first="p1"))
>>> state = table_state(match)
>>> state.round, state.pile_size, str(state.pile_top), state.stock_count, state.current_player
(1, 2, '4D', 78, 'p1')
>>> seat = state.for_seat("p2").seats[0]
>>> seat.hand, seat.hand_count, seat.second_hand, seat.second_hand_count
(None, 7, None, 7)
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from domain.cards import Card
from domain.red3.rules import Book, held_penalty
from domain.red3.scoring import RoundScore
from domain.seat_view import move_seen_by


def _texts(cards) -> list[str] | None:
    return None if cards is None else [str(card) for card in cards]


@dataclass(frozen=True)
class Red3SeatState:
    player: str
    seat: int
    hand: tuple[Card, ...] | None  # the hand in play; None when hidden from the viewer
    hand_count: int
    second_hand: tuple[Card, ...] | None  # face down: None when hidden or already picked up
    second_hand_count: int  # 7 while it lies face down, 0 once picked up
    second_hand_taken: bool
    books: tuple[Book, ...]
    book_points: int
    opened: bool  # the 70-point first lay-down of this round is made
    opening_points: int | None
    held_points: int | None  # what the held cards would cost if the round ended now
    total: int  # running total over the rounds scored so far
    round_score: int | None  # this round's score, once the round is scored

    def to_dict(self) -> dict:
        return {
            "player": self.player,
            "seat": self.seat,
            "hand": _texts(self.hand),
            "hand_count": self.hand_count,
            "second_hand": _texts(self.second_hand),
            "second_hand_count": self.second_hand_count,
            "second_hand_taken": self.second_hand_taken,
            "books": [book.to_json() for book in self.books],
            "book_points": self.book_points,
            "opened": self.opened,
            "opening_points": self.opening_points,
            "held_points": self.held_points,
            "total": self.total,
            "round_score": self.round_score,
        }


@dataclass(frozen=True)
class Red3TableState:
    game_id: str
    rules: str
    round: int  # 1-based; 0 before the first deal
    rounds_planned: int
    step: int  # deals and moves applied so far
    phase: str  # dealing | pick | play | round_over | finished
    seats: tuple[Red3SeatState, ...]
    pile: tuple[Card, ...] | None  # bottom to top; None when hidden (only the top is public)
    pile_size: int
    pile_top: Card | None
    stock_count: int
    stock_known: bool
    current_player: str | None
    opening_minimum: int
    totals: dict[str, int]
    round_scores: tuple[RoundScore, ...]
    winners: tuple[str, ...]
    last_move: dict | None
    variant: str = "red3"
    viewer: str | None = None  # the seat this view is for; None for the full view

    def seat(self, player: str) -> Red3SeatState:
        return next(seat for seat in self.seats if seat.player == player)

    def for_seat(self, player: str) -> Red3TableState:
        """Only what ``player`` could see: own hand, everyone's books, the pile's top, counts.

        Every second hand still face down stays hidden, the player's own included. The pile
        is public card by card in play, but a viewer shows its size and top only.
        """
        seats = []
        for seat in self.seats:
            hidden = replace(seat, second_hand=None)
            if seat.player != player:
                hidden = replace(hidden, hand=None, held_points=None)
            seats.append(hidden)
        last_move = None if self.last_move is None else move_seen_by(self.last_move, player)
        return replace(self, seats=tuple(seats), pile=None, last_move=last_move, viewer=player)

    def to_dict(self) -> dict:
        return {
            "game_id": self.game_id,
            "variant": self.variant,
            "rules": self.rules,
            "round": self.round,
            "rounds_planned": self.rounds_planned,
            "step": self.step,
            "phase": self.phase,
            "viewer": self.viewer,
            "seats": [seat.to_dict() for seat in self.seats],
            "pile": _texts(self.pile),
            "pile_size": self.pile_size,
            "pile_top": None if self.pile_top is None else str(self.pile_top),
            "stock_count": self.stock_count,
            "stock_known": self.stock_known,
            "current_player": self.current_player,
            "opening_minimum": self.opening_minimum,
            "totals": dict(self.totals),
            "round_scores": [score.to_dict() for score in self.round_scores],
            "winners": list(self.winners),
            "last_move": self.last_move,
        }


def table_state(match) -> Red3TableState:
    """The full view of ``match`` (a :class:`~domain.red3.game.Red3Match`) as it stands."""
    rules = match.rules
    scored = match.round_scores[-1] if match.phase in ("round_over", "finished") else None
    seats = []
    for player in match.players:
        hand = tuple(match.hands[player])
        second = match.second_hands[player]
        books = tuple(match.books[player])
        opening = match.opening[player]
        seats.append(
            Red3SeatState(
                player=player,
                seat=match.config.seat_of(player),
                hand=hand,
                hand_count=len(hand),
                second_hand=None if second is None else tuple(second),
                second_hand_count=0 if second is None else len(second),
                second_hand_taken=second is None and match.round > 0,
                books=books,
                book_points=sum(book.value(rules) for book in books),
                opened=opening is not None,
                opening_points=opening,
                held_points=sum(held_penalty(card, rules) for card in match.held(player)),
                total=match.totals[player],
                round_score=None if scored is None else scored.score_of(player),
            )
        )
    pile = tuple(match.pile)
    return Red3TableState(
        game_id=match.game_id,
        rules=match.config.rules,
        round=match.round,
        rounds_planned=match.config.rounds,
        step=len(match.steps),
        phase=match.phase,
        seats=tuple(seats),
        pile=pile,
        pile_size=len(pile),
        pile_top=pile[-1] if pile else None,
        stock_count=match.stock_count,
        stock_known=match.stock is not None,
        current_player=match.current_player,
        opening_minimum=rules.opening_minimum,
        totals=dict(match.totals),
        round_scores=tuple(match.round_scores),
        winners=tuple(match.winners),
        last_move=match.steps[-1] if match.steps else None,
    )
