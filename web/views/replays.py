"""The replay viewer: the table after any move, in full or as one seat saw it.

``/games/<id>/replay?move=17&seat=p2`` is the permalink; ``move`` counts the moves applied
(0 is the table just after the deal). The table itself comes from the application's
``Ledger.state_at`` (snapshots make any move cheap to reach); the header and the move list
come from the read models, so the page never replays the game itself.
"""

from __future__ import annotations

from urllib.parse import quote

from flask import Blueprint, Response, abort, render_template, request, url_for

from domain import variants
from web import svg
from web.auth import access_line_ready
from web.hand_views import chance_moments
from web.ledger import read_session
from web.queries import game_header
from web.replay_page import (
    final_hands,
    load_game,
    move_items,
    move_list_html,
    outcomes_of,
    point_value_chart,
    seat_views,
    state_after,
)
from web.variant_pages import pages_for

bp = Blueprint("replays", __name__)

PHASE_WORDS = {
    "dealing": "Dealing",
    "playing": "In play",
    "showing": "Declared: losers show their hands",
    "settled": "Settled",
}


def _args_problem(game_id: str, total: int, players: list[str]) -> str | None:
    """What is wrong with the request's ``move`` and ``seat`` for a game of ``total`` moves
    and these ``players`` (a 400's message), or None."""
    text = request.args.get("move", "0").strip()
    if not text.lstrip("-").isdecimal():
        return f"Game {game_id}: move must be a whole number from 0 to {total}, not {text!r}."
    move = int(text)
    if not 0 <= move <= total:
        return (
            f"Game {game_id} has {total} moves: there is no move {move} "
            f"(0 is the deal, {total} the last move)."
        )
    seat = request.args.get("seat", "").strip() or None
    if seat is not None and seat not in players:
        return f"Game {game_id} has no player {seat!r} (players: {', '.join(players)})."
    return None


def _send_line_once_the_header_agrees(game_id: str, header) -> None:
    """Send the page's access-log line as soon as the game's header row is read, before its
    moves and results are, when the header alone shows the arguments are right (a move
    within its ``moves_count``, a seat among its players): the line's commit then overlaps
    two more reads and the drawing. Anything the header cannot vouch for (a value of the
    wrong kind, an argument it rejects) sends nothing here: the checks against the loaded
    game below decide, and send the line once they pass. The header and the moves agree in
    any store the ledger wrote; where they disagree, a line may precede a refused page (the
    log may say more than was shown, never less)."""
    total = header.moves_count
    if not isinstance(total, int) or isinstance(total, bool):
        return
    if _args_problem(game_id, total, header.players) is None:
        access_line_ready()


def _table_context(game_id: str):
    with read_session() as session:
        header = game_header(session, game_id)
        if header is not None:
            _send_line_once_the_header_agrees(game_id, header)
        game = load_game(session, game_id)
    if game is None:
        abort(404, f"No game {game_id!r} in the ledger.")
    problem = _args_problem(game_id, game.total, game.players)
    if problem is not None:
        abort(400, problem)
    move = int(request.args.get("move", "0").strip())
    seat = request.args.get("seat", "").strip() or None
    access_line_ready()
    state = state_after(game, move)
    shown = variants.get(game.header.variant).seat_view(state, seat)
    at_end = move == game.total
    base = url_for("replays.replay", game_id=game_id)
    seat_suffix = f"&seat={quote(seat, safe='')}" if seat else ""
    context = {
        "game": game.header,
        "variant": game.header.variant,
        "players": game.players,
        "move": move,
        "total": game.total,
        "seat": seat,
        "state": shown,
        "caption": game.caption(move, seat),
        "phase_words": PHASE_WORDS,
        "seat_views": seat_views(shown, seat, game, move),
        # Hands are laid open only once the game is settled, and in a seat view only those the
        # table revealed (a dropped player's cards stay face down).
        "final_hands": final_hands(shown, game) if at_end and state.phase == "settled" else None,
        # Built once, not per link: a long game's move list has a link per move.
        "url": lambda n: f"{base}?move={n}{seat_suffix}",
    }
    return game, context


def marked_move_list(game, context) -> str:
    """The move list with the move shown marked. The list itself is the same for every move
    of a game and view, so it is rendered once (a long game has a line per move)."""
    seat = context["seat"]
    html = game.remember(
        ("move_list", seat),
        lambda: move_list_html(move_items(game.timeline, seat), context["url"]),
    )
    anchor = f' data-move="{context["move"]}"'
    return html.replace(anchor, anchor + ' aria-current="step"', 1)


@bp.get("/games/<game_id>/replay")
def replay(game_id: str):
    if (pages := pages_for(game_id)) is not None:
        return pages.replay_page(game_id)
    game, context = _table_context(game_id)
    return render_template(
        "replays/replay.html",
        move_list=marked_move_list(game, context),
        moments=sorted(
            (
                game.remember("moments", lambda: game.moments(outcomes_of(game)))
                if game.results
                else game.moments(outcomes_of(game))
            )
            + chance_moments(game, context["seat"]),
            key=lambda moment: moment.move,
        ),
        point_value_chart=point_value_chart(game),
        timed=any(row.at for row in game.timeline),
        **context,
    )


@bp.get("/games/<game_id>/replay/table")
def table_fragment(game_id: str):
    """The table panel alone, for replay.js to swap in without reloading the page."""
    if (pages := pages_for(game_id)) is not None:
        return pages.table_fragment(game_id)
    _game, context = _table_context(game_id)
    return render_template("replays/_table.html", **context)


@bp.get("/games/<game_id>/replay/table.svg")
def table_image(game_id: str):
    """The table after a move as one standalone SVG image (same ``move`` and ``seat``)."""
    if (pages := pages_for(game_id)) is not None:
        return pages.table_image(game_id)
    _game, context = _table_context(game_id)
    return Response(svg.table(context["state"]), mimetype="image/svg+xml")
