"""Red 3 Rummy scores: each round's, the running totals, and the match winner (docs/rules.md §2).

A player's round score is the value of the books they laid down minus the cards they still
hold in both hands (a red three held costs 30, any other card its value in a kind). The
player who went out holds nothing. Red 3 Rummy has no stakes in docs/rules.md, so a match settles
in points only: the highest running total after the last round wins; a tie shares the win.

>>> from domain.cards import parse_cards
>>> from domain.red3.rules import make_book
>>> books = {"p1": [make_book(parse_cards("5C 6C 7C 8C")), make_book(parse_cards("KS KH KD"))],
...          "p2": [make_book(parse_cards("9S 9H 9D"))]}
>>> held = {"p1": [], "p2": parse_cards("3H AS 2C")}
>>> score = score_round(1, "p1", ("p1", "p2"), books, held)
>>> [(s.player, s.books, s.held, s.score) for s in score.players]
[('p1', 90, 0, 90), ('p2', 15, 60, -45)]
>>> settle_match("M1", ("p1", "p2"), [score], rounds_planned=1).winners
('p1',)
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from domain.cards import Card
from domain.red3.profile import Red3Rules, get_red3_rules
from domain.red3.rules import Book, held_penalty, is_red_three


@dataclass(frozen=True)
class PlayerRoundScore:
    player: str
    books: int  # value of the books this player laid down this round
    held: int  # what the cards still held cost (a positive number, subtracted)
    red_threes: int  # red threes among the held cards
    score: int  # books - held

    def to_dict(self) -> dict:
        return {
            "books": self.books,
            "held": self.held,
            "red_threes": self.red_threes,
            "score": self.score,
        }


@dataclass(frozen=True)
class RoundScore:
    round: int  # 1-based
    out: str | None  # the player who went out
    players: tuple[PlayerRoundScore, ...]  # seat order

    def score_of(self, player: str) -> int:
        return next(s.score for s in self.players if s.player == player)

    def to_dict(self) -> dict:
        return {
            "round": self.round,
            "out": self.out,
            "scores": {s.player: s.to_dict() for s in self.players},
        }

    @classmethod
    def from_dict(cls, data: Mapping) -> RoundScore:
        return cls(
            round=data["round"],
            out=data.get("out"),
            players=tuple(
                PlayerRoundScore(player=player, **dict(values))
                for player, values in data["scores"].items()
            ),
        )


def score_round(
    round_number: int,
    out: str | None,
    players: Sequence[str],
    books: Mapping[str, Iterable[Book]],
    held: Mapping[str, Iterable[Card]],
    rules: Red3Rules | None = None,
) -> RoundScore:
    """Score a finished round from the books on the table and the cards still held."""
    rules = rules or get_red3_rules()
    scores = []
    for player in players:
        laid = sum(book.value(rules) for book in books.get(player, ()))
        cards = list(held.get(player, ()))
        cost = sum(held_penalty(card, rules) for card in cards)
        scores.append(
            PlayerRoundScore(
                player=player,
                books=laid,
                held=cost,
                red_threes=sum(1 for card in cards if is_red_three(card)),
                score=laid - cost,
            )
        )
    return RoundScore(round=round_number, out=out, players=tuple(scores))


def running_totals(players: Sequence[str], rounds: Iterable[RoundScore]) -> list[dict[str, int]]:
    """The totals after each round, in round order.

    >>> r1 = RoundScore(1, "a", (PlayerRoundScore("a", 90, 0, 0, 90),
    ...                          PlayerRoundScore("b", 0, 40, 1, -40)))
    >>> running_totals(["a", "b"], [r1, r1])
    [{'a': 90, 'b': -40}, {'a': 180, 'b': -80}]
    """
    totals = dict.fromkeys(players, 0)
    after = []
    for score in rounds:
        for entry in score.players:
            totals[entry.player] += entry.score
        after.append(dict(totals))
    return after


def leaders(totals: Mapping[str, int]) -> tuple[str, ...]:
    """Everyone with the highest total, in the order given (seat order)."""
    if not totals:
        return ()
    best = max(totals.values())
    return tuple(player for player, total in totals.items() if total == best)


@dataclass(frozen=True)
class Red3Settlement:
    """A match's result: every round's scores, running totals, and the winner(s)."""

    game_id: str
    players: tuple[str, ...]
    rounds_planned: int
    rounds: tuple[RoundScore, ...]
    totals: dict[str, int]
    winners: tuple[str, ...]  # empty until the last round is scored

    @property
    def complete(self) -> bool:
        return len(self.rounds) == self.rounds_planned

    @property
    def winner(self) -> str | None:
        return self.winners[0] if len(self.winners) == 1 else None

    def to_dict(self) -> dict:
        """The ``settle`` JSON shape for a Red 3 match (see docs/red3-format.md)."""
        after = running_totals(self.players, self.rounds)
        return {
            "game_id": self.game_id,
            "variant": "red3",
            "rounds_planned": self.rounds_planned,
            "complete": self.complete,
            "winner": self.winner,
            "winners": list(self.winners),
            "totals": dict(self.totals),
            "rounds": [
                {**score.to_dict(), "totals": totals}
                for score, totals in zip(self.rounds, after, strict=True)
            ],
        }


def settle_match(
    game_id: str, players: Sequence[str], rounds: Sequence[RoundScore], *, rounds_planned: int
) -> Red3Settlement:
    """Totals and winners over the scored rounds; winners only once every round is played."""
    players = tuple(players)
    totals = running_totals(players, rounds)[-1] if rounds else dict.fromkeys(players, 0)
    complete = len(rounds) == rounds_planned
    return Red3Settlement(
        game_id=game_id,
        players=players,
        rounds_planned=rounds_planned,
        rounds=tuple(rounds),
        totals=totals,
        winners=leaders(totals) if complete else (),
    )


def scores_hash(round_scores: Sequence[RoundScore], winners: Sequence[str]) -> str:
    """The sha256 of a match's round scores and winners in canonical JSON (sorted keys):
    every figure its audit compares with a recomputation."""
    body = {"rounds": [score.to_dict() for score in round_scores], "winners": list(winners)}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()
