"""The query of a replay page of a family with steps: which step (``move``), whose seat
(``seat``), and the link to any step. Red 3's and Pool and Deals' pages read them alike.

A bad value is a 400 naming the game and what is allowed, never a traceback.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from flask import abort, request, url_for


def step_arg(game_id: str, total: int, ends: str) -> int:
    """The ``move`` asked for, 0 to ``total``; ``ends`` says what 0 and ``total`` are, for
    the refusal (``"0 is the first deal, 9 the last move"``)."""
    text = request.args.get("move", "0").strip()
    if not text.lstrip("-").isdecimal():
        abort(400, f"Game {game_id}: move must be a whole number from 0 to {total}, not {text!r}.")
    move = int(text)
    if not 0 <= move <= total:
        abort(400, f"Game {game_id} has {total} moves: there is no move {move} ({ends}).")
    return move


def seat_arg(game_id: str, players: Sequence[str]) -> str | None:
    """The ``seat`` asked for (None: the full view), one of ``players``."""
    seat = request.args.get("seat", "").strip() or None
    if seat is not None and seat not in players:
        abort(400, f"Game {game_id} has no player {seat!r} (players: {', '.join(players)}).")
    return seat


def step_urls(game_id: str, seat: str | None) -> Callable[[int], str]:
    """``url(n)``: the replay at step ``n``. A long game lists a thousand steps, so the URL is
    built once by Flask and the step number put in by hand."""
    marker = "MOVE-NUMBER"
    template = url_for("replays.replay", game_id=game_id, move=marker, seat=seat)
    return lambda n: template.replace(marker, str(int(n)))
