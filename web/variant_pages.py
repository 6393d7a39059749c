"""Which pages show a stored game, and the generic pages every variant gets for free.

The replay, audit and summary routes (:mod:`web.views`) ask :func:`pages_for` first: a
variant names its own page module (``Variant.web_pages``), or ``None`` when the views' built-in pages are its own (13-card).
A variant that brings no pages of its own gets the ones below, built from the variant
interface alone: its ``timeline`` for the step list, ``table_svg`` for the table and
``audit`` for the audit, so a new game type has a replay page the day it is registered.
"""

from __future__ import annotations

import csv
import io
import json
from importlib import import_module
from types import ModuleType

from flask import Response, abort, redirect, render_template, request, url_for
from markupsafe import Markup

from web.auth import access_line_ready, viewer_seat
from web.ledger import get_ledger


def pages_for(game_id: str) -> ModuleType | None:
    """The page module of the stored game's variant (None: the views' own pages, or no
    such game, which the views answer with their 404)."""
    variant = get_ledger().variant_of(game_id)
    if variant is None or variant.web_pages is None:
        return None
    return import_module(variant.web_pages)


# -- the generic pages ------------------------------------------------------------------------


def _game(game_id: str):
    ledger = get_ledger()
    variant = ledger.variant_of(game_id)
    if variant is None:
        abort(404, f"No game {game_id!r} in the ledger.")
    return ledger, variant, ledger.get_game(game_id)


def _context(game_id: str) -> dict:
    ledger, variant, game = _game(game_id)
    steps = variant.timeline(game)
    total = variant.last_move_number(game)
    text = request.args.get("move", "0").strip()
    if not text.isdecimal() or int(text) > total:
        abort(400, f"Game {game_id} has {total} moves: move must be a whole number 0 to {total}.")
    move = int(text)
    players = variant.players(game)
    seat = viewer_seat() or request.args.get("seat", "").strip() or None
    if seat is not None and seat not in players:
        abort(400, f"Game {game_id} has no player {seat!r} (players: {', '.join(players)}).")
    access_line_ready()
    at_step = ledger.get_game(game_id, version=variant.version_after(game, move))
    return {
        "game_id": game_id,
        "variant": variant,
        "players": players,
        "move": move,
        "total": total,
        "seat": seat,
        "steps": [variant.describe(step) for step in steps],
        "drawing": Markup(variant.table_svg(at_step, seat)),
        "url": lambda n: url_for("replays.replay", game_id=game_id, move=n, seat=seat),
    }


def replay_page(game_id: str) -> str:
    return render_template("replays/variant_replay.html", **_context(game_id))


def table_fragment(game_id: str) -> str:
    return str(_context(game_id)["drawing"])


def table_image(game_id: str) -> Response:
    return Response(str(_context(game_id)["drawing"]), mimetype="image/svg+xml")


def case_view(game_id: str, contested: int, seat: str | None):
    """A dispute case page's view of the game (:mod:`web.case_views`): the moves around the
    contested one in the variant's words. The interface knows no scoring of hands, so there
    are none to show as scored."""
    from web.case_views import AroundMove, CaseView, around

    _ledger, variant, game = _game(game_id)
    steps = variant.timeline(game)
    last = variant.last_move_number(game)
    moves = [
        AroundMove(number, variant.describe(steps[number - 1]))
        for number in around(contested, 1, min(last, len(steps)))
    ]
    return CaseView(last, moves)


def summary_redirect(game_id: str):
    """A game's summary is its replay at the last step."""
    _ledger, variant, game = _game(game_id)
    return redirect(url_for("replays.replay", game_id=game_id, move=variant.last_move_number(game)))


def _audit(game_id: str):
    ledger, variant, game = _game(game_id)
    return variant.audit(game, ledger.events_of(game))


def audit_page(game_id: str) -> str:
    report = _audit(game_id)
    return render_template("audit/variant_audit.html", game_id=game_id, report=report)


def audit_json(game_id: str) -> Response:
    body = json.dumps(_audit(game_id).to_dict(), default=str)
    response = Response(body, mimetype="application/json")
    response.headers["Content-Disposition"] = f'attachment; filename="audit-{game_id}.json"'
    return response


def audit_csv(game_id: str) -> Response:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["source", "field", "reported", "computed"])
    for found in _audit(game_id).discrepancies:
        writer.writerow([found.source, found.field, found.reported, found.computed])
    response = Response(out.getvalue(), mimetype="text/csv")
    response.headers["Content-Disposition"] = f'attachment; filename="audit-{game_id}.csv"'
    return response
