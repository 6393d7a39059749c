"""The games list (filters and pagination) and one game's summary page."""

from __future__ import annotations

from flask import Blueprint, abort, current_app, render_template, request

from domain import variants
from replays.readmodels.nets import game_nets
from web import queries
from web.auth import viewer_seat
from web.ledger import read_session
from web.replay_page import final_hands, load_game, outcomes_of, point_value_chart, state_after
from web.variant_pages import pages_for

bp = Blueprint("games", __name__)


@bp.get("/")
@bp.get("/games")
def index():
    try:
        filters = queries.GameFilters.from_args(request.args)
    except queries.FilterError as error:
        abort(400, f"Games list: {error}.")
    with read_session() as session:
        page = queries.list_games(session, filters, current_app.config["GAMES_PER_PAGE"])
        tables = queries.table_ids(session)
    return render_template(
        "games/list.html",
        filters=filters,
        page=page,
        tables=tables,
        variants=queries.VARIANTS,
        results=queries.RESULTS,
    )


@bp.get("/games/<game_id>")
def game(game_id: str):
    """One game at a glance: how it ended, everyone's final hand, the money."""
    if (pages := pages_for(game_id)) is not None:
        return pages.summary_redirect(game_id)
    with read_session() as session:
        view = load_game(session, game_id)
        nets = game_nets(session, game_id)
    if view is None:
        abort(404, f"No game {game_id!r} in the ledger.")
    final_state = state_after(view, view.total)
    # A player sees the end as their seat did: others' cards only as the table revealed them.
    seat = viewer_seat()
    shown = variants.get(view.header.variant).seat_view(final_state, seat)
    return render_template(
        "games/game.html",
        game=view.header,
        view=view,
        final_hands=final_hands(shown, view),
        moments=view.moments(outcomes_of(view, final_state)),
        point_value_chart=point_value_chart(view),
        state=shown,
        nets=nets,
        # Players whose cards this viewer never saw: their minimum possible score stays hidden.
        hidden_hands={s.player for s in shown.seats if s.hand_hidden},
    )
