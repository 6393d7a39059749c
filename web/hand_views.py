"""The replay's hand analysis and missed chances, as the pages show them.

What a viewer may see decides what is analysed: a hand is analysed only when the table
shown to this viewer has it face up (a seat view hides the others' cards before anything
here runs), and in a seat view only the seat's own hand is analysed. Missed chances
follow the same line: a player (or any seat view) gets their own, and none of the kind
read from another player's hand.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache

from domain.rummy13.analysis import HandAnalysis, MissedChance
from replays.readmodels.hand_analysis import GameChances, analyse, deal_chances, game_chances
from web import svg
from web.moves import Moment

log = logging.getLogger(__name__)

ANALYSED_STATUSES = ("waiting", "playing")
CHANCE_WORDS = {
    "could_declare": "could have declared",
    "costly_discard": "costly discard",
    "fed_next": "discard that fed the next player",
}


@dataclass(frozen=True)
class SeatAnalysis:
    """One seat's hand as the solver would group it, drawn, with its score now."""

    player: str
    analysis: HandAnalysis
    drawing: str

    @property
    def hand_score(self) -> int:
        return self.analysis.hand_score

    @property
    def could_declare(self) -> bool:
        return self.analysis.could_declare

    @property
    def best_discard(self):
        return self.analysis.best_discard


def chances_of(game, player: str | None = None) -> GameChances | None:
    """The game's walked turns and missed chances, cached per stamp: a 13-card game's from
    its events, a match's deal by deal (``Variant.thirteen_card_deals``; with ``player``
    only that player's own, see :func:`deal_chances`); None for a variant that does not
    analyse hands."""
    from domain import variants
    from web.ledger import get_ledger

    variant = variants.get(game.header.variant)
    if not variant.analyses_hands:
        return None
    try:
        if variant.web_pages is not None:
            # A game of 13-card deals with pages of its own (a match): each deal's chances,
            # at the steps its replay counts.
            return deal_chances(
                get_ledger(), game.game_id, variant, game.header.version, player=player
            )
        return game_chances(get_ledger(), game.game_id, game.timeline, game.derived.get("stamp"))
    except Exception:
        # An event that cannot be read (verify names it on the page's badge) must not take
        # the replay down with it: the page shows what it can, without the analysis.
        log.warning("no hand analysis for %s: its events cannot be read", game.game_id)
        return None


def deal_chance_moments(variant, game_id: str, game, seat: str | None) -> list[Moment]:
    """The missed-chance moments of a match's deals (``game`` its aggregate, as its replay
    holds it), for the view ``seat`` (None: the full view): the same list
    :func:`chance_moments` gives a 13-card game, and the player history's cell."""
    from web.ledger import get_ledger

    try:
        # A seat view lists only the seat's own chances: only the seat's discards are read.
        chances = deal_chances(get_ledger(), game_id, variant, game.version, game, player=seat)
    except Exception:
        log.warning("no hand analysis for %s: its events cannot be read", game_id)
        return []
    if chances is None:
        return []
    return [
        Moment(chance.move, f"missed_{chance.kind}", chance.words())
        for chance in chances.of(seat, staff=seat is None)
    ]


def seat_analyses(state, seat: str | None, game) -> dict[str, SeatAnalysis]:
    """Every hand this view shows face up in play, in its best grouping; a seat view only
    the seat's own."""
    if state.phase != "playing" or state.wild is None:
        return {}
    chances = chances_of(game)
    if chances is None:
        return {}
    return table_analyses(state, seat, chances.profile)


def table_analyses(state, seat: str | None, profile) -> dict[str, SeatAnalysis]:
    """Every hand a 13-card table shows face up in play, in its best grouping under
    ``profile``; a seat view only the seat's own. Any game whose table is a 13-card table (a
    game, or a deal of a match) is analysed so."""
    if state.phase != "playing" or state.wild is None:
        return {}
    found = {}
    for s in state.seats:
        if s.hand_hidden or s.status not in ANALYSED_STATUSES:
            continue
        if seat is not None and s.player != seat:
            continue
        if len(s.hand) not in (profile.hand_size, profile.hand_size + 1):
            continue
        found[s.player] = _seat_analysis(
            s.player, tuple(sorted(s.hand, key=str)), state.wild, profile
        )
    return found


@lru_cache(maxsize=4096)
def _seat_analysis(player: str, hand: tuple, wild, profile) -> SeatAnalysis:
    """Kept per player, hand, wild card and profile: the drawing costs about what the
    analysis does, and a replay shows the same hands again and again."""
    analysis = analyse(hand, wild, profile)
    grouping = analysis.grouping
    groups = [
        svg.DrawnGroup(tuple(v.cards), v.kind.value if v.kind else None, v.reason)
        for v in grouping.groups
    ]
    words = f"{player}'s best grouping, hand score {analysis.hand_score}"
    if analysis.best_discard is not None:
        words += f" after discarding {analysis.best_discard.symbol}"
    if analysis.could_declare:
        words += ", could declare"
    # The same cards drawn a second time: marked apart from the table's own cards
    # (``data-card``), so the table still holds each card once for anything counting them.
    drawing = svg.grouped_hand(groups, grouping.loose, wild=wild, label=words).replace(
        ' data-card="', ' data-analysed-card="'
    )
    return SeatAnalysis(player, analysis, drawing)


def visible_chances(game, seat: str | None) -> list[MissedChance]:
    """The missed chances this view may list: all of them in the staff's full view, a
    seat's own otherwise."""
    chances = chances_of(game)
    if chances is None:
        return []
    return chances.of(seat, staff=seat is None)


def chance_moments(game, seat: str | None) -> list[Moment]:
    return [
        Moment(chance.move, f"missed_{chance.kind}", chance.words())
        for chance in visible_chances(game, seat)
    ]


def history_chances(game, player: str, points: int | None) -> list[dict]:
    """The player-history cell for one settled game: the player's own missed chances, the
    same list the replay shows them as moments (``chance_moments`` for their seat), each
    with its move; then what the hand was charged against the least its cards could have
    scored at a discard ("charged 62, could have had 6 at move 41"). Read only from the
    player's own hands."""
    chances = chances_of(game, player)
    if chances is None:
        return []
    own = chances.of(player, staff=False)
    lines = [
        {"move": c.move, "words": CHANCE_WORDS.get(c.kind, c.kind), "title": c.words()} for c in own
    ]
    if any(c.kind == "could_declare" for c in own) or not chances.whole_game:
        return lines
    lowest = chances.lowest(player)
    if lowest is not None and points is not None and lowest[1] < points:
        lines.append(
            {
                "move": lowest[0],
                "words": f"charged {points}, could have had {lowest[1]}",
                "title": None,
            }
        )
    return lines
