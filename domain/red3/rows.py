"""Red 3 matches' read-model rows, as plain dicts, so pages and reports find them beside
13-card games (``replays.readmodels.projections`` writes them, one writer for every variant).

Like the 13-card rows, each event is applied to the match aggregate itself; nothing about
the rules is repeated here.

Rows written:

- ``games``: one per match, ``variant`` ``red3``; ``status`` ``dealing``, ``playing`` or
  ``finished``; ``round``, ``moves_count``, ``winner`` (only when one player has the top
  total); no money (docs/rules.md §2 has no stakes): ``point_value`` and ``fee_percent`` 0,
  ``gross``/``fee``/``net_to_winner`` empty. At the end of the match the audit
  (:func:`domain.red3.audit.audit_events`) sets ``discrepancy`` and its note.
- ``player_results`` at the end of the match: ``won`` for each player on the top total,
  ``lost`` for the others, ``points`` the player's total, amount 0.
- ``moves``: one row per pick, lay-down and discard, ``move_index`` counting the match's
  moves over all rounds, ``round`` the round it was played in, books in ``groups``.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from domain.red3 import audit as red3_audit
from domain.red3.game import Red3Match
from domain.timestamps import parse_time
from domain.variant_base import MAX_NOTE, UNSETTLED_COLUMNS

FINISHED = "finished"
ZERO = Decimal("0")
MOVE_EVENTS = ("Picked", "LaidDown", "Discarded")


def status_of(match: Red3Match) -> str:
    if match.phase == "finished":
        return FINISHED
    return "dealing" if match.round == 0 else "playing"


def started_row(match: Red3Match) -> dict:
    config = match.config
    return {
        "game_id": match.game_id,
        "originator_id": str(match.id),
        "variant": "red3",
        "rules": config.rules,
        "table_id": config.table_id,
        "currency": "",
        "players": list(config.players),
        "player_count": len(config.players),
        "dealer": None,
        "started_at": match.started_at or match.created_on,
        "ended_at": None,
        "ended_on": None,
        "point_value": ZERO,
        "fee_percent": ZERO,
        **UNSETTLED_COLUMNS,
    }


def progress_row(match: Red3Match) -> dict:
    return {
        "status": status_of(match),
        "round": match.round,
        "moves_count": match.move_count,
        "version": match.version,
        "winner": match.winners[0] if len(match.winners) == 1 else None,
        "final_point_value": ZERO,
    }


def ended_row(match: Red3Match) -> dict:
    """The ``games`` columns a finished match sets, beside its audit columns."""
    ended_at = match.modified_on
    return {"ended_at": ended_at, "ended_on": ended_at.date() if ended_at else None}


def audit_row(events: Iterable) -> dict:
    """The audit columns of a finished match, from its events (all of them, in order)."""
    return audit_columns(red3_audit.audit_events(events))


def written_audit_row(match: Red3Match, events: Iterable) -> dict:
    """The audit columns from what the write already knew (``red3_audit.written_audit``),
    or from a replay of ``events`` when only a replay can say."""
    report = red3_audit.written_audit(match)
    return audit_row(events) if report is None else audit_columns(report)


def audit_columns(report: red3_audit.Red3Audit) -> dict:
    note = "; ".join(d.note() for d in report.discrepancies)
    return {"discrepancy": bool(report.discrepancies), "discrepancy_note": note[:MAX_NOTE] or None}


def ending_row(match: Red3Match, events) -> dict:
    """The ``games`` columns a finished match sets, its audit over ``events`` (all of the
    match's, in order) included; ``verify`` rebuilds them with this too."""
    return ended_row(match) | audit_row(events)


def results(match: Red3Match) -> list[dict]:
    return [
        {
            "game_id": match.game_id,
            "player": player,
            "seat": match.config.seat_of(player),
            "result": "won" if player in match.winners else "lost",
            "points": match.totals[player],
            "point_value": ZERO,
            "amount": ZERO,
            "hand_score": None,
            "min_score": None,
            "scoring_case": None,
            "ended_at_round": match.round,
        }
        for player in match.players
    ]


def saved_move_rows(match: Red3Match, events) -> list[dict] | None:
    """The move rows of a match saved whole, without applying its events again: each move
    event's row needs only the moves before it and the round, counted here. None when an
    event follows ``MatchEnded`` (the closing rows need the match as it stood then)."""
    if match.phase == "finished" and not isinstance(events[-1], Red3Match.MatchEnded):
        return None
    rows, moves, round_number = [], 0, 0
    for domain_event in events:
        if type(domain_event).__name__ in MOVE_EVENTS:
            rows.append(_move_row(match.game_id, domain_event, moves, round_number))
            moves += 1
        elif isinstance(domain_event, Red3Match.RoundDealt):
            round_number = domain_event.number
    return rows


def move_row(before: Red3Match, domain_event) -> dict:
    return _move_row(before.game_id, domain_event, before.move_count, before.round)


def _move_row(game_id: str, domain_event, moves: int, round_number: int) -> dict:
    """The row of a move event after ``moves`` moves, in round ``round_number``."""
    kind = type(domain_event).__name__
    player = domain_event.player
    card = source = groups = None
    if kind == "Picked":
        source = domain_event.source
        card = domain_event.cards[0] if source == "stock" else None
        move_type = "pick"
    elif kind == "Discarded":
        card = domain_event.card
        move_type = "discard"
    else:
        move_type = "lay_down"
        groups = [list(book) for book in domain_event.books]
        groups += [list(added["cards"]) for added in domain_event.additions]
    return {
        "game_id": game_id,
        "move_index": moves,
        "version": domain_event.originator_version,
        "player": player,
        "move_type": move_type,
        "card": card,
        "source": source,
        "groups": groups,
        "round": round_number,
        "point_value": ZERO,
        "at": parse_time(getattr(domain_event, "at", None)),
    }
