"""A player's history: every settled game with result and net amount, and the running total."""

from __future__ import annotations

from flask import Blueprint, abort, render_template

from domain import variants
from web import charts, queries
from web.hand_views import history_chances
from web.ledger import read_session
from web.replay_page import load_game

# Each game's line walks its events and asks the solver about every discard (cached once
# per game), so only the latest games get one.
MISSED_CHANCE_GAMES = 20

bp = Blueprint("players", __name__)


@bp.get("/players/<player_id>")
def player(player_id: str):
    with read_session() as session:
        history = queries.player_history(session, player_id)
        known = (
            bool(history)
            or queries.list_games(session, queries.GameFilters(player=player_id), per_page=1).total
        )
        if not known:
            abort(404, f"No games recorded for player {player_id!r}.")
        if not history:
            return render_template("players/player.html", player_id=player_id, history=[])
        missed = {}
        for line in history[-MISSED_CHANCE_GAMES:]:
            game = load_game(session, line.game.game_id)
            if game is not None:
                missed[game.game_id] = history_chances(game, player_id, line.result.points)
    chart = charts.running_total_chart(
        [(line.game.game_id, line.running_total) for line in history]
    )
    won = sum(1 for line in history if line.result.result == "won")
    # A variant without hand analysis (its scoring is not a grouping of the hand) says so in
    # its cells rather than leave them looking like games without a missed chance.
    not_analysed = {
        line.game.variant: variants.get(line.game.variant).no_analysis_words
        for line in history
        if not variants.get(line.game.variant).analyses_hands
    }
    return render_template(
        "players/player.html",
        player_id=player_id,
        history=list(reversed(history)),  # newest first in the table; the chart runs forward
        chart=chart,
        won=won,
        total=history[-1].running_total,
        # A game without stakes (Red 3) has no currency: it adds nothing to the total.
        currencies=sorted({line.game.currency for line in history if line.game.currency}),
        missed=missed,
        not_analysed=not_analysed,
        missed_games=MISSED_CHANCE_GAMES,
    )
