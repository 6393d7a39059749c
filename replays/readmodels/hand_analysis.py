"""Hand analysis for stored games, with the solver's answers cached.

The rules live in :mod:`domain.rummy13.analysis`; this module feeds it from the event store and
keeps what it costs. Two caches, both safe to keep for the life of the process because
what they hold never changes:

- solver answers (best grouping, least score), keyed by the hand's cards in a fixed order,
  the wild card and the rule profile: a replay frame asks about the same few hands again
  and again, and a 14-card hand asks about each of its 13-card subsets;
- a game's turns and missed chances, keyed by database, game and the read-model stamp
  (version, status, moves) so that a game that moved on is walked again.

A game of 13-card deals in another family (a match: ``Variant.thirteen_card_deals``) has
its missed chances read deal by deal from its record (:func:`deal_chances`), each deal
against its own wild card, at the positions its own replay counts.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from functools import lru_cache

from domain.cards import Card
from domain.rummy13.analysis import (
    HandAnalysis,
    MissedChance,
    Solver,
    Turn,
    analyse_hand,
    best_keep,
    deal_turns,
    missed_chances,
)
from domain.rummy13.melds import HandEvaluation
from domain.rummy13.profiles import RuleProfile, get_profile
from domain.rummy13.solver import best_grouping, min_hand_score

SOLVER_ANSWERS = 1 << 15
GAMES = 512


def _key(cards: Sequence[Card]) -> tuple[str, ...]:
    return tuple(sorted(str(card) for card in cards))


@lru_cache(maxsize=SOLVER_ANSWERS)
def _best(key: tuple[str, ...], wild: str, profile: RuleProfile) -> HandEvaluation:
    return best_grouping(key, wild, profile)


@lru_cache(maxsize=SOLVER_ANSWERS)
def _score(key: tuple[str, ...], wild: str, profile: RuleProfile) -> int:
    return min_hand_score(key, wild, profile)


@lru_cache(maxsize=64)
def cached_solver(wild: str, profile: RuleProfile) -> Solver:
    """A :class:`domain.rummy13.analysis.Solver` whose answers are kept per hand, wild and profile
    (the table's own profile: a 3-deck table's hands are checked against 3 decks)."""
    return Solver(
        best=lambda cards: _best(_key(cards), wild, profile),
        score=lambda cards: _score(_key(cards), wild, profile),
    )


def analyse(cards: Sequence[Card], wild: Card, profile: RuleProfile) -> HandAnalysis:
    """:func:`domain.rummy13.analysis.analyse_hand` through the cached solver."""
    return analyse_hand(cards, wild, profile, cached_solver(str(wild), profile))


def clear_caches() -> None:
    _best.cache_clear()
    _score.cache_clear()
    with _lock:
        _games.clear()


# -- whole games ----------------------------------------------------------------------------


class GameChances:
    """A game's discards and what they missed: one 13-card game, or every deal of a match
    (``whole_game`` False: each deal's chances are its own, and no single hand was charged
    what the match's points add up to)."""

    def __init__(
        self,
        turns: list[Turn],
        chances: list[MissedChance],
        solver: Solver,
        profile: RuleProfile,
        *,
        whole_game: bool = True,
    ):
        self.turns = turns
        self.chances = chances
        self.profile = profile
        self.whole_game = whole_game
        self._solver = solver

    def of(self, player: str | None, *, staff: bool) -> list[MissedChance]:
        """The chances a viewer may see: staff every one; a player only their own, and none
        read from another player's hand (``fed_next`` reads the next player's cards)."""
        if staff:
            return list(self.chances)
        return [c for c in self.chances if c.player == player and c.kind != "fed_next"]

    def lowest(self, player: str) -> tuple[int, int] | None:
        """``(move, score)``: the least score the player's hand could have had at a discard,
        the first such move on a tie."""
        best = None
        for turn in self.turns:
            if turn.player != player:
                continue
            _, score = best_keep(turn.held, self._solver)
            if best is None or score < best[1]:
                best = (turn.move, score)
        return best


def walk_turns(ledger, game_id: str, timeline) -> tuple[list[Turn], Card | None, RuleProfile]:
    """Every discard of a stored 13-card game with the hand held before it.

    The hands come from the game's own events, applied one at a time (the aggregate keeps
    the rules); the move rows of the read model say which move was a discard.
    """
    events = ledger.events.get(ledger.aggregate_id(game_id))
    game = None
    held: dict[str, tuple[Card, ...]] = {}
    before: list[tuple[Card, ...] | None] = []
    for event in events:
        moves_before = game.move_count if game is not None else 0
        game = event.mutate(game)
        if game.dealt is not None and not held:
            held = {player: game.hand(player) for player in game.config.players}
        if game.move_count > moves_before:
            if moves_before >= len(timeline):
                break  # the read model has not caught up with this move yet
            row = timeline[moves_before]
            player = row.player
            before.append(held.get(player))
            if player in held:
                held[player] = game.hand(player)
    if game is None or game.wild is None:
        return [], None, get_profile(None) if game is None else game.config.profile
    turns = []
    for index, row in enumerate(timeline):
        if row.move_type != "discard" or index >= len(before) or before[index] is None:
            continue
        previous = timeline[index - 1] if index else None
        picked = None
        if (
            previous is not None
            and previous.player == row.player
            and previous.move_type == "pick"
            and previous.source == "open"
            and previous.card
        ):
            picked = Card.parse(previous.card)
        turns.append(
            Turn(
                index + 1, row.player, before[index], Card.parse(row.card), picked_from_open=picked
            )
        )
    return turns, game.wild, game.config.profile


_games: OrderedDict[tuple, GameChances] = OrderedDict()
_lock = threading.Lock()


def game_chances(ledger, game_id: str, timeline, stamp) -> GameChances:
    """The game's turns and missed chances, walked once per game and stamp."""
    key = (ledger.url, game_id, stamp)
    with _lock:
        found = _games.get(key)
        if found is not None:
            _games.move_to_end(key)
            return found
    turns, wild, profile = walk_turns(ledger, game_id, timeline)
    if wild is None:
        solver = Solver(best=best_grouping, score=min_hand_score)
        found = GameChances([], [], solver, profile)
    else:
        solver = cached_solver(str(wild), profile)
        found = GameChances(turns, missed_chances(turns, solver), solver, profile)
    with _lock:
        _games[key] = found
        while len(_games) > GAMES:
            _games.popitem(last=False)
    return found


def deal_chances(
    ledger, game_id: str, variant, version, game=None, *, player: str | None = None
) -> GameChances | None:
    """The missed chances of every 13-card deal of a stored game that is not a 13-card game
    itself (a match), from its record: ``variant.thirteen_card_deals`` says where each deal
    starts among the game's replay steps. Kept per database, game and ``version`` (the
    game's latest), as :func:`game_chances` keeps a game's. ``game`` is the aggregate when
    the caller holds it already; None when the game has no 13-card deal.

    With ``player``, only that player's own discards are read: their declarations missed and
    costliest discards are the same as in the whole list (each reads the player's own hand),
    at a fraction of the solver's work (a long match has hundreds of discards), and no
    ``fed_next`` is found (it reads the next player's hand, which a player never sees)."""
    key = (ledger.url, game_id, "by deal", version, player)
    with _lock:
        if key in _games:
            _games.move_to_end(key)
            return _games[key]
    if game is None:
        game = ledger.get_game(game_id)
    record = variant.record_of(game).to_dict()
    parts = variant.thirteen_card_deals(record)
    found = None
    if parts:
        rules = get_profile(record.get("rules"))
        profiles = variant.deal_profiles(game) or [rules] * len(parts)
        found = _chances_of_deals(parts, profiles, player)
    with _lock:
        _games[key] = found
        while len(_games) > GAMES:
            _games.popitem(last=False)
    return found


def _chances_of_deals(
    parts: list[tuple[int, Mapping]], profiles: list[RuleProfile], player: str | None
) -> GameChances:
    turns: list[Turn] = []
    chances: list[MissedChance] = []
    solver = None
    profile = profiles[0]
    for (step, part), profile in zip(parts, profiles, strict=True):
        deal = part["deal"]
        solver = cached_solver(str(Card.parse(deal["wild"])), profile)
        # Each deal on its own: a player's costliest discard is that deal's.
        found = deal_turns(deal["hands"], part["moves"], step)
        if player is not None:
            found = [turn for turn in found if turn.player == player]
        turns += found
        chances += missed_chances(found, solver)
    solver = solver or Solver(best=best_grouping, score=min_hand_score)
    return GameChances(turns, chances, solver, profile, whole_game=False)
