"""The replay viewer for a Red 3 match: the table after any move, in full or as one seat saw it.

The replay, audit and summary routes (:mod:`web.views`) hand a game over to
:func:`replay_page` and its siblings when the stored game's variant names this module as its
pages (``Variant.web_pages``, :mod:`web.variant_pages`), so the permalink is the same as a 13-card
game's: ``/games/<id>/replay?move=17&seat=p2``. ``move`` counts the steps after the first
deal (0 is the table just dealt); later deals are steps of their own, so every round starts
with its fresh table. Everything comes from the match's events (``replays.store.timeline``);
nothing here decides a rule: books, values and scores come from ``domain.red3``.
"""

from __future__ import annotations

from dataclasses import dataclass

from flask import Response, abort, render_template, url_for
from markupsafe import Markup, escape

from domain.cards import Card
from domain.red3.game import Red3Match
from domain.red3.state import Red3SeatState, Red3TableState
from domain.red3.variant import RED3
from domain.seat_view import move_for_view, table_for_view
from web import svg
from web.audit_marks import figure_rows, figure_text, flatten
from web.case_views import AroundMove, CaseView, around
from web.ledger import get_ledger
from web.moves import card_text
from web.step_args import seat_arg, step_arg, step_urls
from web.step_states import step_states

# svg marks every card of the indicator's rank as a joker: any 2 does that for Red 3's twos.
TWOS_ARE_WILD = Card.parse("2C")
PHASE_WORDS = {
    "pick": "to pick",
    "play": "laying down or discarding",
    "round_over": "round over",
    "finished": "match over",
}


@dataclass(frozen=True)
class SeatView:
    player: str
    seat: int
    caption: str
    total: int
    to_play: bool
    opened: bool
    opening_points: int | None
    hand_drawing: str
    hand_words: str
    second_drawing: str | None  # None once picked up
    books: list[dict]
    book_points: int
    held_points: int | None
    round_score: int | None


def describe(move: dict, viewer: str | None = None) -> str:
    """A move in words: ``p2 takes the pile (3 cards)``, ``p1 lays down 5♣ 6♣ 7♣``.

    With ``viewer`` (a seat view) the move goes through the seat filter first, as every
    variant's does: another player's stock draw reads ``p1 picks from the stock``.
    """
    move = move_for_view(move, viewer)
    kind, player = move.get("type"), move.get("player")
    if kind == "deal":
        return f"round {move['round']} dealt"
    if kind == "pick":
        if move["from"] == "pile":
            count = len(move.get("cards", ()))
            return f"{player} takes the pile ({_cards(count)})"
        if move.get("card") is None:
            return f"{player} picks from the stock"
        return f"{player} picks {card_text(move['card'])} from the stock"
    if kind == "discard":
        return f"{player} discards {card_text(move['card'])}"
    parts = [" ".join(card_text(c) for c in book) for book in move.get("books", ())]
    laid = f"lays down {' | '.join(parts)}" if parts else ""
    added = ", ".join(
        f"{' '.join(card_text(c) for c in a['cards'])} to book {a['book'] + 1}"
        for a in move.get("add", ())
    )
    words = " and ".join(x for x in (laid, f"adds {added}" if added else "") if x)
    return f"{player} {words}"


def _cards(count: int) -> str:
    return f"{count} card{'' if count == 1 else 's'}"


def _points(value: int) -> str:
    return f"{figure_text(value)} point{'' if abs(value) == 1 else 's'}"


def _timelines():
    return step_states("red3_timelines")


def _context(game_id: str) -> dict:
    ledger, timelines = get_ledger(), _timelines()
    match = timelines.game(ledger, game_id)
    if not match.steps:
        abort(404, f"Match {game_id} has not been dealt yet: there is nothing to replay.")
    total = RED3.last_move_number(match)
    move = step_arg(game_id, total, f"0 is the first deal, {total} the last move")
    seat = seat_arg(game_id, match.players)
    full = timelines.state(ledger, game_id, move + 1)
    state = table_for_view(full, seat)
    step = match.steps[move]
    return {
        "match": match,
        "game_id": game_id,
        "players": match.players,
        "move": move,
        "total": total,
        "seat": seat,
        "state": state,
        "caption": describe(step, seat),
        "phase_words": PHASE_WORDS,
        "seat_views": [_seat_view(state, s, seat) for s in state.seats],
        "pile_drawing": _pile(state),
        "stock_drawing": svg.stock(state.stock_count, known=state.stock_known),
        "url": step_urls(game_id, seat),
    }


def _pile(state: Red3TableState) -> str:
    # Only the top and the size are drawn (a seat view does not carry the pile's cards).
    shown = [state.pile_top] * state.pile_size if state.pile_top is not None else []
    drawing = svg.open_pile(shown, wild=TWOS_ARE_WILD)
    return drawing.replace("open pile", "discard pile").replace(">open (", ">pile (")


def _seat_view(state: Red3TableState, seat: Red3SeatState, viewer: str | None) -> SeatView:
    if seat.hand is None:
        hand = svg.hidden_hand(
            seat.hand_count, label=f"{seat.player}'s hand, {_cards(seat.hand_count)}"
        )
        words = f"{_cards(seat.hand_count)}, hidden"
    elif seat.hand:
        hand = svg.hand(seat.hand, wild=TWOS_ARE_WILD, label=None)
        words = " ".join(card.symbol for card in svg.sort_for_display(seat.hand, TWOS_ARE_WILD))
    else:
        hand = ""
        words = "no cards"
    second = None
    if not seat.second_hand_taken:
        count = seat.second_hand_count
        second = svg.hidden_hand(
            count, label=f"{seat.player}'s second hand, {_cards(count)} face down"
        )
    books = [
        {
            "text": " ".join(card.symbol for card in book.cards),
            "describe": book.describe(symbols=True),
            "value": book.value(),
            "drawing": svg.grouped_hand(
                [
                    svg.DrawnGroup(
                        book.cards,
                        book.kind.value,
                        f"{book.describe(symbols=True)}, {_points(book.value())}",
                    )
                ],
                wild=TWOS_ARE_WILD,
            ),
        }
        for book in seat.books
    ]
    to_play = state.current_player == seat.player
    return SeatView(
        player=seat.player,
        seat=seat.seat,
        caption=f"seat {seat.seat}, {seat.player}" + (", to play" if to_play else ""),
        total=seat.total,
        to_play=to_play,
        opened=seat.opened,
        opening_points=seat.opening_points,
        hand_drawing=hand,
        hand_words=words,
        second_drawing=second,
        books=books,
        book_points=seat.book_points,
        held_points=seat.held_points,
        round_score=seat.round_score,
    )


def _move_items(match: Red3Match, seat: str | None) -> list[dict]:
    items = []
    for index, step in enumerate(match.steps):
        items.append(
            {
                "move": index,
                "round": step["round"],
                "round_starts": step["type"] == "deal",
                "text": describe(step, seat),
                "at": step.get("at"),
            }
        )
    return items


def _move_list(items: list[dict], url, current: int) -> Markup:
    """The move list's items as HTML. A ten-round match lists well over a thousand moves,
    so they are written here in one pass rather than by the template's loop (a third of
    the page's time); the markup is the same."""
    parts = []
    for item in items:
        move = item["move"]
        if item["round_starts"]:
            parts.append(f'<li class="round-mark" aria-hidden="true">round {item["round"]}</li>')
        at = f' data-at="{escape(item["at"])}"' if item["at"] else ""
        mark = ' aria-current="step"' if move == current else ""
        parts.append(
            f'<li><a href="{escape(url(move))}" data-move="{move}"{at}{mark}>'
            f'<span class="n">{move}</span><span>{escape(item["text"])}</span></a></li>'
        )
    return Markup("\n".join(parts))


def replay_page(game_id: str) -> str:
    match = _timelines().game(get_ledger(), game_id)
    if not match.steps:
        return _undealt_page(game_id, match)
    context = _context(game_id)
    items = _move_items(context["match"], context["seat"])
    return render_template(
        "replays/red3_replay.html",
        move_list=_move_list(items, context["url"], context["move"]),
        timed=any(item["at"] for item in items),
        settlement=context["match"].settlement().to_dict(),
        no_analysis_words=RED3.no_analysis_words,
        **context,
    )


def _undealt_page(game_id: str, match: Red3Match) -> str:
    """A running match with no round dealt yet is a stored, listed game: its summary and
    replay say who sits at it and that nothing has been dealt, rather than "not found"."""
    return render_template(
        "replays/red3_undealt.html",
        match=match,
        game_id=game_id,
        players=match.players,
        settlement=match.settlement().to_dict(),
    )


def table_fragment(game_id: str) -> str:
    return render_template("replays/_red3_table.html", **_context(game_id))


def table_image(game_id: str) -> Response:
    """The table after a move as one SVG image: hands, books and the centre, stacked."""
    context = _context(game_id)
    parts = [context["stock_drawing"], context["pile_drawing"]]
    for view in context["seat_views"]:
        parts.append(view.hand_drawing)
        parts.extend(book["drawing"] for book in view.books)
    return Response(_stack(parts, context["caption"]), mimetype="image/svg+xml")


def _stack(drawings: list[str], label: str) -> str:
    """Nest drawings one under another in a single SVG document."""
    y, width, body = 0, 0, []
    for drawing in drawings:
        if not drawing:
            continue
        w = int(drawing.split('width="', 1)[1].split('"', 1)[0])
        h = int(drawing.split('height="', 1)[1].split('"', 1)[0])
        body.append(drawing.replace("<svg ", f'<svg y="{y}" ', 1))
        y += h + 8
        width = max(width, w)
    from xml.sax.saxutils import quoteattr

    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y}" '
        f'viewBox="0 0 {width} {y}" role="img" aria-label={quoteattr(label)}>'
        + "".join(body)
        + "</svg>"
    )


# -- a dispute case's view of the match ------------------------------------------------------


def case_view(game_id: str, contested: int, seat: str | None):
    """The match around the contested move for a dispute case page (:mod:`web.case_views`):
    the moves around it, each with its round, and the contested move's round as its scoring
    counted it (each seat's books and held cards) once that round was scored."""
    ledger, timelines = get_ledger(), _timelines()
    match = timelines.game(ledger, game_id)
    last = RED3.last_move_number(match)
    if not match.steps:
        return CaseView(last, table_words="Nothing has been dealt yet: no table to show.")
    moves = [
        AroundMove(number, describe(match.steps[number], seat), f"round {step['round']}")
        for number in around(contested, 0, last)
        for step in (match.steps[number],)
    ]
    number = match.steps[min(contested, last)]["round"]
    end = max(i for i, step in enumerate(match.steps) if step["round"] == number)
    state = table_for_view(timelines.state(ledger, game_id, end + 1), seat)
    score = next((s for s in state.round_scores if s.round == number), None)
    if score is None:
        return CaseView(last, moves, stylesheet="css/red3.css")
    hands = render_template(
        "replays/_red3_scored.html",
        score=score,
        state=state,
        seat_views=[_seat_view(state, s, seat) for s in state.seats],
    )
    words = (
        f"Round {number}, the round of the contested move, as its scoring counted it: each "
        "seat's books count for it, the cards it still held count against it."
    )
    return CaseView(last, moves, Markup(hands), words, stylesheet="css/red3.css")


# -- the audit page and the summary ---------------------------------------------------------


def _audit(game_id: str):
    from replays.store.timeline import audit_stored

    return audit_stored(get_ledger(), game_id)


def audit_page(game_id: str) -> str:
    """Every round recomputed from the table at its end, beside the recorded and reported
    figures; differences marked in words, not only in colour."""
    report = _audit(game_id)
    match = get_ledger().get_game(game_id)
    recorded = {score.round: score for score in report.recorded}
    reported = (report.reported or {}).get("rounds") or []
    differing = {d.field for d in report.discrepancies}
    rounds = []
    for index, score in enumerate(report.computed):
        lines = []
        for line in score.players:
            theirs = recorded.get(score.round)
            recorded_score = theirs.score_of(line.player) if theirs else None
            told = reported[index].get(line.player) if index < len(reported) else None
            lines.append(
                {
                    "player": line.player,
                    "books": line.books,
                    "held": line.held,
                    "red_threes": line.red_threes,
                    "score": line.score,
                    "recorded": recorded_score,
                    "reported": told,
                    "differs": any(
                        field.startswith(f"rounds[{index}].") and line.player in field
                        for field in differing
                    ),
                    # The mark goes on the figure that differs from the recomputation, with
                    # the field of each discrepancy it answers to.
                    "recorded_differs": recorded_score is not None and recorded_score != line.score,
                    "reported_differs": told is not None and told != line.score,
                    "recorded_marks": [
                        f
                        for f in differing
                        if f.startswith(f"rounds[{index}].scores.{line.player}.")
                    ],
                    "reported_marks": [
                        f for f in differing if f == f"rounds[{index}].{line.player}"
                    ],
                }
            )
        out_marks = [f for f in differing if f == f"rounds[{index}].out"]
        rounds.append(
            {"round": score.round, "out": score.out, "lines": lines, "out_marks": out_marks}
        )
    return render_template(
        "audit/red3_audit.html",
        report=report,
        match=match,
        rounds=rounds,
        game_id=game_id,
        figures=_audit_figures(report),
    )


def _audit_figures(report) -> list:
    """The match's totals and winners: recomputed, recorded, reported (each round's scores
    are marked in the round's own table)."""
    single = report.winners[0] if len(report.winners) == 1 else None
    computed = flatten(
        {"totals": report.totals, "winner": single, "winners": list(report.winners)},
        ("totals", "winner", "winners"),
    )
    recorded = {"winners": list(report.recorded_winners)}
    reported = report.reported
    return figure_rows(
        computed,
        recorded,
        None if reported is None else flatten(reported, [k for k in reported if k != "rounds"]),
        report.discrepancies,
        placed=lambda d: d.field.startswith("rounds["),
    )


def audit_json(game_id: str) -> Response:
    import json

    response = Response(json.dumps(_audit(game_id).to_dict()), mimetype="application/json")
    response.headers["Content-Disposition"] = f'attachment; filename="audit-{game_id}.json"'
    return response


def audit_csv(game_id: str) -> Response:
    import csv
    import io

    report = _audit(game_id)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["round", "out", "player", "books", "held", "red_threes", "score", "recorded"])
    recorded = {score.round: score for score in report.recorded}
    for score in report.computed:
        for line in score.players:
            theirs = recorded.get(score.round)
            writer.writerow(
                [
                    score.round,
                    score.out or "",
                    line.player,
                    line.books,
                    line.held,
                    line.red_threes,
                    line.score,
                    theirs.score_of(line.player) if theirs else "",
                ]
            )
    # The totals and winners as the page's figures table shows them.
    writer.writerow(["figure", "field", "recomputed", "recorded", "reported", "differs"])
    for row in _audit_figures(report):
        marks = " | ".join(row.recorded_marks + row.reported_marks)
        writer.writerow(
            ["figure", row.label, row.computed, row.recorded or "", row.reported or "", marks]
        )
    for found in report.discrepancies:
        writer.writerow(["discrepancy", found.source, found.field, found.reported, found.computed])
    response = Response(out.getvalue(), mimetype="text/csv")
    response.headers["Content-Disposition"] = f'attachment; filename="audit-{game_id}.csv"'
    return response


def summary_redirect(game_id: str):
    """A match's summary is its replay at the last move: the final table and the scores."""
    from flask import redirect

    from replays.store.timeline import game_of

    match = game_of(get_ledger(), game_id)
    return redirect(url_for("replays.replay", game_id=game_id, move=RED3.last_move_number(match)))
