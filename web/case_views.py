"""What a dispute case page shows of its game around the contested move, asked of the game's
own pages.

Every case page has the same sections for every game type: the table at a move, the moves
around the contested one and, once that part of the game was scored, the hands as scored.
Which moves those are, how each is worded and how a hand was scored are the family's: each
family's page module (``Variant.web_pages``, found by :func:`web.variant_pages.pages_for`)
answers ``case_view(game_id, contested, seat)`` with a :class:`CaseView`, from the same
game and move range its replay viewer reads (``Variant.last_move_number``); the 13-card
pages, the views' own, answer here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from flask import render_template
from markupsafe import Markup

from web.ledger import read_session
from web.moves import describe
from web.variant_pages import pages_for

# How many moves either side of the contested one a case page lists.
MOVES_AROUND = 4


@dataclass(frozen=True)
class AroundMove:
    """One move of the list around the contested move: ``number`` is the replay's move (the
    table after it), ``part`` the deal or round it belongs to where the game has them."""

    number: int
    words: str
    part: str | None = None


@dataclass(frozen=True)
class CaseView:
    """A game as a case page shows it around the contested move.

    ``last``: the replay's last move (the page steps from 0 to it); ``moves``: the moves
    around the contested one; ``hands``: the hands as scored, drawn by the family's own
    template (None until that part of the game is scored), with ``hands_words`` saying what
    they show; ``table_words``: said in place of the table image when there is no table yet;
    ``stylesheet``: the family's own, for its drawings."""

    last: int
    moves: list[AroundMove] = field(default_factory=list)
    hands: Markup | None = None
    hands_words: str = ""
    table_words: str | None = None
    stylesheet: str | None = None


def case_view(game_id: str, contested: int, seat: str | None) -> CaseView | None:
    """The game ``game_id`` around move ``contested``, in full (``seat`` None) or as that
    seat saw it; None for a game the ledger does not hold."""
    pages = pages_for(game_id)
    if pages is not None:
        return pages.case_view(game_id, contested, seat)
    return _thirteen_card_view(game_id, contested, seat)


def around(contested: int, first: int, last: int) -> range:
    """The move numbers listed around ``contested``, within ``first`` to ``last``."""
    return range(max(first, contested - MOVES_AROUND), min(last, contested + MOVES_AROUND) + 1)


# -- the 13-card pages' own ---------------------------------------------------------------


HANDS_WORDS = (
    "Each hand in the groups it was charged (a wrong show as it was declared), with the "
    "reason under any group that is not one and the points it cost."
)


def _thirteen_card_view(game_id: str, contested: int, seat: str | None) -> CaseView | None:
    from domain.seat_view import table_for_view
    from web.replay_page import final_hands, load_game, state_after

    with read_session() as session:
        game = load_game(session, game_id)
    if game is None:
        return None
    moves = [
        AroundMove(number, describe(game.timeline[number - 1], seat))
        for number in around(contested, 1, game.total)
    ]
    hands = None
    if game.results:
        # The game's hands once it is settled; a player sees them as their seat saw the end.
        final = state_after(game, game.total)
        if final.phase == "settled":
            hands = Markup(
                render_template(
                    "replays/_final_hands.html",
                    final_hands=final_hands(table_for_view(final, seat), game),
                )
            )
    return CaseView(game.total, moves, hands, HANDS_WORDS)
