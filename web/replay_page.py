"""What the replay and summary pages show, assembled from the read models and a table state.

The views stay thin: they parse the request and hand over to these functions. Nothing here
decides a rule: group kinds, scoring cases and minimum scores come from ``domain`` (the
declaration's evaluation, :func:`domain.rummy13.melds.evaluate`, :func:`domain.rummy13.solver.best_grouping`)
and the money from the recorded settlement.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from decimal import Decimal

from flask import current_app, url_for
from markupsafe import escape
from sqlalchemy import Connection, Row
from sqlalchemy.orm import Session

from domain.cards import Card
from domain.rummy13.melds import ScoringCase
from replays.readmodels.models import GameRow
from web import charts, queries, svg
from web.auth import may_open_player
from web.moves import Moment, describe, moments

OUT_STATUSES = ("dropped", "auto_dropped", "wrong_show", "lost")
# A seat's table status, in the words of the settlement's results.
STATUS_OUTCOMES = {"auto_dropped": "auto_drop", "wrong_show": "wrong_show", "won": "won"}

CASE_WORDS = {
    ScoringCase.NO_PURE_SEQUENCE: "no pure sequence: all 13 cards count",
    ScoringCase.PURE_ONLY: "a pure sequence but fewer than two sequences: "
    "all but the pure sequence count",
    ScoringCase.TWO_SEQUENCES: "two sequences, one of them pure: only cards outside groups count",
}
PENALTIES = ("first_drop", "middle_drop", "auto_drop", "wrong_show")
RESULT_HOW = {
    "first_drop": "first drop",
    "middle_drop": "middle drop",
    "auto_drop": "auto-drop",
    "wrong_show": "wrong show",
    "deal_show": "deal show",
    "lost": "lost",
    "won": "declared",
}


@dataclass
class GameView:
    """One game as the read models hold it: header, results and move timeline."""

    header: GameRow
    timeline: list[Row]  # MoveRow's columns (queries.move_timeline)
    results: list[Row]  # PlayerResultRow's columns (queries.game_results)
    players: list[str] = field(default_factory=list)
    # What the pages derive from these rows (move list, moments, chart), kept with them.
    derived: dict = field(default_factory=dict, repr=False)

    def remember(self, key, build):
        """``build()``'s value, computed once per loaded game."""
        if key not in self.derived:
            self.derived[key] = build()
        return self.derived[key]

    @property
    def game_id(self) -> str:
        return self.header.game_id

    @property
    def total(self) -> int:
        return len(self.timeline)

    def caption(self, move: int, viewer: str | None = None) -> str:
        return "the deal" if move == 0 else describe(self.timeline[move - 1], viewer)

    def moments(self, outcomes: dict[str, str]) -> list[Moment]:
        return moments(self.timeline, outcomes)


_loaded: OrderedDict[tuple[str, str], GameView] = OrderedDict()
_loaded_lock = threading.Lock()
LOADED_GAMES = 256


def load_game(session: Session, game_id: str) -> GameView | None:
    """The game's rows from the read models. Someone stepping through a replay asks for the
    same game again and again, so its timeline and results are kept (the last
    ``LOADED_GAMES`` games) for as long as its header says nothing changed."""
    header = queries.game_header(session, game_id)
    if header is None:
        return None
    bind = session.get_bind()
    # A page drawn around unreadable rows (web/unreadable.py) reads through one connection
    # that hides them: what it loads is not kept for the pages that read the whole tables.
    masked = isinstance(bind, Connection)
    key = (str(bind.engine.url if masked else bind.url), game_id)
    stamp = (header.version, header.status, header.moves_count)
    caching = current_app.config.get("REPLAY_CACHE", True) and not masked
    with _loaded_lock:
        cached = _loaded.get(key) if caching else None
        if cached is not None and cached.derived.get("stamp") == stamp:
            _loaded.move_to_end(key)
            cached.header = header
            return cached
    game = GameView(
        header=header,
        timeline=queries.move_timeline(session, game_id),
        results=queries.game_results(session, game_id),
        players=list(header.players),  # their ids: StoredPlayerIds reads no other shape
    )
    game.derived["stamp"] = stamp
    with _loaded_lock:
        _loaded[key] = game
        while len(_loaded) > LOADED_GAMES:
            _loaded.popitem(last=False)
    return game


_states: OrderedDict[tuple, object] = OrderedDict()
STATES = 4096


def state_after(game: GameView, move: int):
    """The table after ``move`` moves (``Ledger.state_at``). A game's past never changes, so a
    state once built is kept (the last ``STATES``), keyed also by the game's read-model stamp
    so that a game that moved on, or was settled, is read again."""
    from web.ledger import get_ledger

    ledger = get_ledger()
    if not current_app.config.get("REPLAY_CACHE", True):
        return ledger.state_at(game.game_id, move)
    key = (ledger.url, game.game_id, move, game.derived.get("stamp"))
    with _loaded_lock:
        state = _states.get(key)
        if state is not None:
            _states.move_to_end(key)
            return state
    state = ledger.state_at(game.game_id, move)
    with _loaded_lock:
        _states[key] = state
        while len(_states) > STATES:
            _states.popitem(last=False)
    return state


def outcomes_of(game: GameView, final_state=None) -> dict[str, str]:
    """How each player's game ended: the settlement's results, or while the game is still
    running the final table's seat statuses."""
    if game.results:
        return {row.player: row.result for row in game.results}
    if final_state is None:
        from web.ledger import get_ledger

        final_state = get_ledger().state_at(game.game_id, game.total)
    return {
        seat.player: STATUS_OUTCOMES[seat.status]
        for seat in final_state.seats
        if seat.status in STATUS_OUTCOMES
    }


def move_items(timeline: list[Row], viewer: str | None = None) -> list[dict]:
    """The move list: number (the table position after it), words, time, round starts."""
    items = []
    previous_round = None
    for row in timeline:
        items.append(
            {
                "move": row.move_index + 1,
                "text": describe(row, viewer),
                "at": row.at.isoformat() if row.at else None,
                "round": row.round,
                "round_starts": previous_round is not None and row.round != previous_round,
            }
        )
        previous_round = row.round
    return items


def move_list_html(items: list[dict], url) -> str:
    """The move list's markup (``<ol id="moves">``), without a current move: a line per move,
    joined in Python (a template loop costs several times as much for a long game), every
    value escaped as the templates escape it. ``url(n)``: the link to the table after move n.
    """
    lines = [
        '<ol id="moves">',
        f'  <li><a href="{escape(url(0))}" data-move="0">'
        '<span class="n">0</span><span>the deal</span></a></li>',
    ]
    for item in items:
        if item["round_starts"]:
            lines.append(
                f'  <li class="round-mark" aria-hidden="true">round {item["round"] + 1}</li>'
            )
        move = item["move"]
        at = f' data-at="{escape(item["at"])}"' if item["at"] else ""
        lines.append(
            f'  <li><a href="{escape(url(move))}" data-move="{move}"{at}>'
            f'<span class="n">{move}</span><span>{escape(item["text"])}</span></a></li>'
        )
    lines.append("</ol>")
    return "\n".join(lines)


# -- drawing the seats ---------------------------------------------------------------------


def drawn_groups(evaluation) -> tuple[list[svg.DrawnGroup], tuple[Card, ...]]:
    """A :class:`domain.rummy13.melds.HandEvaluation` as groups to draw, and its loose cards."""
    groups = [
        svg.DrawnGroup(
            tuple(verdict.cards), verdict.kind.value if verdict.kind else None, verdict.reason
        )
        for verdict in evaluation.groups
    ]
    return groups, tuple(evaluation.loose)


def _picked_by(state, player: str) -> Card | None:
    move = getattr(state, "last_move", None) or {}
    if move.get("type") == "pick" and move.get("player") == player and move.get("card"):
        return Card.parse(move["card"])
    return None


Layout = tuple[list[svg.DrawnGroup], tuple[Card, ...]]


def _charged_groups(line, wild: Card | None, profile) -> Layout | None:
    """A scored loser's hand as the settlement charged it (the show, or the best grouping),
    read again by the rules engine so that a group that is not one says why."""
    if not line.groups and not line.loose:
        return None
    return _submitted_groups(
        line.groups, [c for g in line.groups for c in g] + list(line.loose), wild, profile
    )


def _submitted_groups(groups, held, wild: Card | None, profile) -> Layout:
    """A grouping as a player submitted it (a show, a wrong show), read by the rules engine;
    the held cards it does not list are loose."""
    from domain.rummy13.melds import evaluate

    groups = [[Card.parse(c) for c in group] for group in groups]
    loose = list(held)
    for c in (c for group in groups for c in group):
        if c in loose:
            loose.remove(c)
    return drawn_groups(evaluate(groups, loose, wild, profile))


def _laid_out(layout: Layout, wild: Card | None) -> tuple[str, list[str]]:
    """The drawing of a grouped hand and, in words, why each group that is not one fails."""
    groups, loose = layout
    notes = [
        f"{' '.join(c.symbol for c in group.cards)}: {group.reason}"
        for group in groups
        if group.reason
    ]
    return svg.grouped_hand(groups, loose, wild=wild), notes


def _seat_drawing(state, seat, profile) -> str:
    owner = f"{seat.player}'s hand"
    if seat.hand_hidden:
        return svg.hidden_hand(seat.hand_size, label=f"{owner}: {seat.hand_size} cards, hidden")
    if seat.player == state.winner and state.declaration is not None:
        return svg.grouped_hand(*drawn_groups(state.declaration), wild=state.wild)
    if seat.shown_groups:
        return _laid_out(
            _submitted_groups(seat.shown_groups, seat.hand, state.wild, profile), state.wild
        )[0]
    picked = _picked_by(state, seat.player)
    cards = svg.sort_for_display(seat.hand, state.wild)
    return svg.hand(
        cards,
        wild=state.wild,
        sort=False,
        marked={picked: "just picked"} if picked else None,
        label=f"{owner}, {len(cards)} cards: "
        + ", ".join(svg.card_label(c, state.wild) for c in cards),
    )


def seat_views(state, seat: str | None, game: GameView, move: int) -> list[dict]:
    from domain.rummy13.profiles import get_profile
    from web.hand_views import seat_analyses

    profile = get_profile(game.header.rules)
    analyses = seat_analyses(state, seat, game)
    views = []
    for s in state.seats:
        to_play = s.player == state.current_player and state.phase == "playing"
        words = svg.status_words(s, to_play=to_play)
        views.append(
            {
                "player": s.player,
                "seat": s.seat,
                "status": s.status,
                "status_words": words,
                "to_play": to_play,
                "out": s.status in OUT_STATUSES,
                "misses": s.consecutive_misses,
                "caption": svg.seat_caption(s, to_play=to_play),
                "drawing": _seat_drawing(state, s, profile),
                "analysis": analyses.get(s.player),
                "link": url_for("players.player", player_id=s.player)
                if may_open_player(s.player)
                else None,
            }
        )
    return views


# -- the end of the game -------------------------------------------------------------------


def final_hands(state, game: GameView) -> list[dict]:
    """Every player's last hand drawn in groups with loose cards marked, beside the scoring
    case, the points charged and the minimum the same cards could have scored.

    The groups are the ones the settlement charged (a show, or the best grouping when no
    show was recorded); a wrong show is drawn as declared, with the rules engine's reason
    under each group that is not one.
    """
    from domain.rummy13.profiles import get_profile

    declared = {
        row.player: row.groups for row in game.timeline if row.move_type == "declare" and row.groups
    }
    results = {row.player: row.result for row in game.results}
    return scored_hands(state, get_profile(game.header.rules), declared, results)


def scored_hands(
    state, profile, declared: dict, results: dict | None = None, *, money: bool = True
) -> list[dict]:
    """:func:`final_hands` of any settled 13-card table ``state`` (a game's, or one deal of a
    match): ``declared`` each player's declared groups, ``results`` how each player's game
    ended where the read models say so. Without ``money`` the points are not priced (a
    match's deal adds points to a score; its money is the match's own)."""
    lines = state.settlement.players if state.settlement is not None else {}
    results = results or {}
    hands = []
    for s in state.seats:
        line = lines.get(s.player)
        outcome = (
            line.result
            if line is not None
            else results.get(s.player) or STATUS_OUTCOMES.get(s.status, s.status)
        )
        layout = None
        if s.hand_hidden:
            layout = None
        elif s.player == state.winner and state.declaration is not None:
            layout = drawn_groups(state.declaration)
        elif outcome == "wrong_show" and s.player in declared:
            layout = _submitted_groups(declared[s.player], s.hand, state.wild, profile)
        elif line is not None:
            layout = _charged_groups(line, state.wild, profile)
        if layout is None and s.shown_groups and not s.hand_hidden:
            layout = _submitted_groups(s.shown_groups, s.hand, state.wild, profile)
        if layout is not None:
            drawing, notes = _laid_out(layout, state.wild)
        elif s.hand_hidden:
            drawing, notes = svg.hidden_hand(s.hand_size, label=f"{s.player}'s hand, not shown"), []
        else:
            drawing, notes = (svg.hand(s.hand, wild=state.wild) if s.hand else ""), []
        hand_score = line.hand_score if line is not None else None
        # The least score of cards a seat never saw face up would tell that seat about them.
        min_score = line.min_score if line is not None and not s.hand_hidden else None
        case = line.case if line is not None else None
        points = line.points if line is not None else (0 if s.player == state.winner else None)
        hands.append(
            {
                "player": s.player,
                "result": outcome,
                "drawing": drawing,
                "notes": notes,
                "case_words": CASE_WORDS.get(case, case.replace("_", " ") if case else None),
                "hand_score": hand_score,
                "points": "—" if points is None else points,
                # Drops, auto-drops and wrong shows are fixed penalties, not a hand's score.
                "penalty": outcome in PENALTIES,
                "min_score": min_score,
                "over_min": hand_score is not None
                and min_score is not None
                and hand_score > min_score,
                "point_value": line.point_value if line is not None and money else None,
                "amount": line.amount if line is not None and money else None,
                "met_objective": line is not None and line.met_objective,
            }
        )
    return hands


def exits(game: GameView) -> list[charts.Exit]:
    """Where each player's game ended on the move line, at the value they were charged."""
    outcomes = {row.player: row.result for row in game.results}
    by_player: dict[str, int] = {}
    declaration = None
    for moment in game.moments(outcomes):
        row = game.timeline[moment.move - 1]
        if moment.kind in ("drop", "auto_drop", "wrong_show"):
            by_player[row.player] = moment.move
        elif moment.kind == "declaration":
            declaration = moment.move
            by_player[row.player] = moment.move
    found = []
    for row in game.results:
        move = by_player.get(row.player, declaration if declaration is not None else game.total)
        found.append(
            charts.Exit(move, row.player, RESULT_HOW.get(row.result, row.result), row.point_value)
        )
    return sorted(found, key=lambda e: (e.move, e.player))


def point_value_chart(game: GameView) -> str | None:
    """Raise Rummy only: the point value after each move, with each player's exit marked."""
    if game.header.variant != "raise":
        return None

    def draw() -> str:
        values = [game.header.point_value] + [Decimal(row.point_value) for row in game.timeline]
        return charts.point_value_chart(values, exits(game))

    return game.remember("point_value_chart", draw)
