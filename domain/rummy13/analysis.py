"""What a hand could have been: its best grouping now, and the chances a player missed.

The rules engine (:mod:`domain.rummy13.solver`) answers for one 13-card hand. A player between the
pick and the discard holds 14 cards; that hand is read as the best 13 it can keep (the
discard that leaves the least score), since that is the choice in front of the player.

>>> from domain.cards import parse_cards
>>> now = analyse_hand(parse_cards("AS 2S 3S 4H 5H 6H 9C 9D 9H KS KD KC 5D"), "7D")
>>> now.hand_score, now.could_declare, now.kinds
(5, False, ['pure', 'pure', 'set', 'set'])
>>> kept = analyse_hand(parse_cards("AS 2S 3S 4H 5H 6H 9C 9D 9H KS KD KC 5D 7C"), "7D")
>>> str(kept.best_discard), kept.hand_score, kept.could_declare
('5D', 0, True)

Missed chances (:func:`missed_chances`) read a game's turns, each with the hand held before
the discard. Nothing here looks at a hand other than the one named: a caller showing a
player only their own chances passes only that player's turns, and the one kind of chance
that reads another player's hand (``fed_next``) is built only from turns the caller passes
in as the next player's.

The solver calls go through a :class:`Solver`, so that a caller may cache its answers
(``replays`` keeps them per hand, wild card and profile); the default asks the solver afresh.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from domain.cards import Card
from domain.rummy13.melds import HandEvaluation
from domain.rummy13.profiles import RuleProfile, get_profile
from domain.rummy13.solver import best_grouping, min_hand_score


@dataclass(frozen=True)
class Solver:
    """The two questions the analysis asks of the rules engine, for one wild card and profile.

    ``best(cards)`` is :func:`domain.rummy13.solver.best_grouping`, ``score(cards)`` is
    :func:`domain.rummy13.solver.min_hand_score`; both take the cards in any order.
    """

    best: Callable[[tuple[Card, ...]], HandEvaluation]
    score: Callable[[tuple[Card, ...]], int]

    @classmethod
    def plain(cls, wild: Card, profile: RuleProfile | str | None = None) -> Solver:
        profile = get_profile(profile)
        return cls(
            best=lambda cards: best_grouping(cards, wild, profile),
            score=lambda cards: min_hand_score(cards, wild, profile),
        )


@dataclass(frozen=True)
class HandAnalysis:
    """A hand in its best grouping: the score it would be charged now, before the 80 cap,
    and whether it could declare. For a 14-card hand, ``best_discard`` is the card whose
    discard leaves ``grouping`` (the best 13 to keep)."""

    grouping: HandEvaluation
    hand_score: int
    could_declare: bool
    best_discard: Card | None = None

    @property
    def kinds(self) -> list[str | None]:
        return self.grouping.kinds


def _without(cards: Sequence[Card], card: Card) -> tuple[Card, ...]:
    rest = list(cards)
    rest.remove(card)
    return tuple(rest)


def best_keep(cards: Sequence[Card], solver: Solver) -> tuple[Card, int]:
    """The discard from a 14-card hand that leaves the least hand score, and that score.
    Ties go to the card first in the hand's own order, so the answer does not depend on
    set iteration."""
    best: tuple[Card, int] | None = None
    for card in dict.fromkeys(cards):
        score = solver.score(_without(cards, card))
        if best is None or score < best[1]:
            best = (card, score)
    assert best is not None
    return best


def analyse_hand(
    cards: Sequence[Card],
    wild: Card,
    profile: RuleProfile | str | None = None,
    solver: Solver | None = None,
) -> HandAnalysis:
    """The best grouping of a 13-card hand, or of the best 13 of a 14-card hand."""
    profile = get_profile(profile)
    solver = solver or Solver.plain(wild, profile)
    cards = tuple(cards)
    discard = None
    if len(cards) == profile.hand_size + 1:
        discard, _ = best_keep(cards, solver)
        cards = _without(cards, discard)
    grouping = solver.best(cards)
    # best_grouping returns a valid declaration whenever the hand has one.
    return HandAnalysis(grouping, grouping.hand_score, grouping.valid_declaration, discard)


@dataclass(frozen=True)
class Turn:
    """One discard: ``held`` is the 14-card hand just before it (the pick included).

    ``move`` is the table position after the discard (1-based, as the replay counts).
    ``picked_from_open`` is the card this turn took from the open pile, if it did.
    """

    move: int
    player: str
    held: tuple[Card, ...]
    discarded: Card
    picked_from_open: Card | None = None


@dataclass(frozen=True)
class MissedChance:
    """A move a player could have played better.

    ``kind``: ``could_declare`` (held a valid declaration and discarded instead),
    ``costly_discard`` (the player's discard that cost the most against the best discard
    then), ``fed_next`` (a discard the next player picked from the open pile and that
    lowered their best score). ``score`` is what the hand scored after the move played,
    ``best`` what it could have scored (0 for a declaration).
    """

    move: int
    player: str
    kind: str
    card: Card
    score: int
    best: int
    better_card: Card | None = None
    helped: str | None = None

    @property
    def cost(self) -> int:
        return self.score - self.best

    def words(self) -> str:
        card = self.card.symbol
        if self.kind == "could_declare":
            finish = self.better_card.symbol if self.better_card else card
            if finish == card:
                return f"{self.player} could have declared, finishing with {card}, but discarded it"
            return (
                f"{self.player} could have declared, finishing with {finish}, but discarded {card}"
            )
        if self.kind == "costly_discard":
            better = self.better_card.symbol if self.better_card else "another card"
            return (
                f"{self.player} discarded {card}: hand score {self.score} where discarding "
                f"{better} left {self.best}"
            )
        return (
            f"{self.player} discarded {card}, which {self.helped} picked up: their best score "
            f"fell from {self.score} to {self.best}"
        )


def _chances_of_turn(turn: Turn, solver: Solver) -> tuple[MissedChance | None, MissedChance]:
    """The declaration missed at this turn (if any), and the turn's discard against the best."""
    better, best = best_keep(turn.held, solver)
    played = solver.score(_without(turn.held, turn.discarded))
    declared = None
    # Holding a declaration and discarding is the miss, even when the discard was the card
    # that would have finished it: the game went on instead of ending at 0.
    if best == 0:
        kept = solver.best(_without(turn.held, better))
        if kept.valid_declaration:
            declared = MissedChance(
                turn.move, turn.player, "could_declare", turn.discarded, played, 0, better
            )
    discard = MissedChance(
        turn.move, turn.player, "costly_discard", turn.discarded, played, best, better
    )
    return declared, discard


def missed_chances(turns: Sequence[Turn], solver: Solver) -> list[MissedChance]:
    """Every declaration missed, each player's costliest discard (when it cost anything),
    and every discard that fed the next player, in play order.

    A discard "fed" the next player when the very next turn picked it from the open pile
    and that turn's best 13 score less than the 13 the player held before picking it.
    """
    found: list[MissedChance] = []
    worst: dict[str, MissedChance] = {}
    for index, turn in enumerate(turns):
        declared, discard = _chances_of_turn(turn, solver)
        if declared is not None:
            found.append(declared)
        elif discard.cost > 0 and (
            turn.player not in worst or discard.cost > worst[turn.player].cost
        ):
            worst[turn.player] = discard
        following = turns[index + 1] if index + 1 < len(turns) else None
        if (
            following is not None
            and following.player != turn.player
            and following.picked_from_open == turn.discarded
        ):
            before = solver.score(_without(following.held, turn.discarded))
            _, after = best_keep(following.held, solver)
            if after < before:
                found.append(
                    MissedChance(
                        turn.move,
                        turn.player,
                        "fed_next",
                        turn.discarded,
                        before,
                        after,
                        helped=following.player,
                    )
                )
    found.extend(worst.values())
    return sorted(found, key=lambda chance: (chance.move, chance.kind))


def deal_turns(
    hands: Mapping[str, Sequence[str | Card]],
    moves: Sequence[Mapping],
    first_move: int = 0,
) -> list[Turn]:
    """Every discard of one 13-card deal, read from its record: the hands dealt, then each
    move in order. A hand is held as the aggregate holds it (:class:`domain.rummy13.game.Game`:
    the dealt order, a pick added at the end, the first copy of a card taken out), so that
    :func:`best_keep` breaks ties as it does for a stored game walked from its events.
    ``first_move`` is the table position before the deal's first move: 0 for a game, the
    steps before it for a deal of a match (its earlier deals, rejoins and the deal itself).

    >>> hands = {"p1": "AS 2S 3S 4H 5H 6H 9C 9D 9H KS KD KC 5D".split(), "p2": ["2C"] * 13}
    >>> moves = [{"player": "p1", "type": "pick", "from": "closed", "card": "7C"},
    ...          {"player": "p1", "type": "discard", "card": "5D"},
    ...          {"player": "p2", "type": "pick", "from": "open", "card": "5D"},
    ...          {"player": "p2", "type": "discard", "card": "2C"}]
    >>> [(t.move, t.player, str(t.discarded), len(t.held), str(t.picked_from_open))
    ...  for t in deal_turns(hands, moves, first_move=3)]
    [(5, 'p1', '5D', 14, 'None'), (7, 'p2', '2C', 14, '5D')]
    """
    held = {
        player: [card if isinstance(card, Card) else Card.parse(card) for card in cards]
        for player, cards in hands.items()
    }
    turns: list[Turn] = []
    picked: tuple[str, Card] | None = None  # the open-pile pick of the turn being played
    for index, move in enumerate(moves):
        player, kind = move.get("player"), move.get("type")
        if kind == "pick" and player in held and move.get("card"):
            card = Card.parse(move["card"])
            held[player].append(card)
            picked = (player, card) if move.get("from") == "open" else None
        elif kind == "discard" and player in held and move.get("card"):
            card = Card.parse(move["card"])
            from_open = picked[1] if picked is not None and picked[0] == player else None
            turns.append(Turn(first_move + index + 1, player, tuple(held[player]), card, from_open))
            held[player].remove(card)
            picked = None
        elif kind == "declare" and player in held:
            # The finishing card leaves the hand; nothing after it is a discard of theirs.
            finish = move.get("finish") or move.get("card")
            if finish and Card.parse(finish) in held[player]:
                held[player].remove(Card.parse(finish))
            picked = None
        else:
            picked = None
    return turns


__all__ = [
    "HandAnalysis",
    "MissedChance",
    "Solver",
    "Turn",
    "analyse_hand",
    "best_keep",
    "deal_turns",
    "missed_chances",
]
