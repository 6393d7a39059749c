"""Red 3 matches in the read models, so pages and reports find them beside 13-card games.

The read-model projection (:mod:`replays.projections`) hands every ``Red3Match`` notification
of a batch here, inside the same transaction as its tracking position, so each event is
applied exactly once. Like the 13-card projection, each event is applied to the match
aggregate itself; nothing about the rules is repeated here.

Rows written:

- ``games``: one per match, ``variant`` ``red3``; ``status`` ``dealing``, ``playing`` or
  ``finished``; ``round``, ``moves_count``, ``winner`` (only when one player has the top
  total); no money (RULES.md §2 has no stakes): ``point_value`` and ``fee_percent`` 0,
  ``gross``/``fee``/``net_to_winner`` empty. At the end of the match the audit
  (:func:`replays.red3_ledger.audit_events`) sets ``discrepancy`` and its note.
- ``player_results`` at the end of the match: ``won`` for each player on the top total,
  ``lost`` for the others, ``points`` the player's total, amount 0.
- ``moves``: one row per pick, lay-down and discard, ``move_index`` counting the match's
  moves over all rounds, ``round`` the round it was played in, books in ``groups``.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

import sqlalchemy as sa

from domain.red3.game import Red3Match
from domain.timestamps import parse_time
from replays.models import GameRow, MoveRow, PlayerResultRow

RED3_TOPICS = Red3Match.TOPIC + "."
FINISHED = "finished"
MAX_NOTE = 2000
ZERO = Decimal("0")

GAMES = GameRow.__table__
MOVES = MoveRow.__table__
RESULTS = PlayerResultRow.__table__
_MOVE_EVENTS = ("Picked", "LaidDown", "Discarded")


def status_of(match: Red3Match) -> str:
    if match.phase == "finished":
        return FINISHED
    return "dealing" if match.round == 0 else "playing"


def project_red3(connection: sa.Connection, ledger, notifications: Sequence) -> None:
    """Apply a batch of Red 3 notifications (in order) to the read-model tables."""
    to_domain_event = ledger.mapper.to_domain_event
    matches: dict = {}
    created: set[str] = set()
    finished: dict[str, Red3Match] = {}
    moves: list[dict] = []
    for notification in notifications:
        domain_event = to_domain_event(notification)
        version = domain_event.originator_version
        before = matches.get(domain_event.originator_id)
        if before is None and version > 1:
            before = ledger.get_game(domain_event.originator_id, version=version - 1)
        if type(domain_event).__name__ in _MOVE_EVENTS:
            moves.append(_move_row(before, domain_event))
        match = domain_event.mutate(before)
        matches[match.id] = match
        if version == 1:
            created.add(match.game_id)
        if isinstance(domain_event, Red3Match.MatchEnded):
            finished[match.game_id] = match
    inserts = [_started_row(m) | _progress_row(m) for m in matches.values() if m.game_id in created]
    if inserts:
        connection.execute(GAMES.insert(), inserts)
    for match in matches.values():
        if match.game_id in created:
            continue
        connection.execute(
            GAMES.update().where(GAMES.c.game_id == match.game_id).values(_progress_row(match))
        )
    for game_id, match in finished.items():
        connection.execute(
            GAMES.update().where(GAMES.c.game_id == game_id).values(_ending(ledger, match))
        )
        connection.execute(RESULTS.insert(), _results(match))
    if moves:
        connection.execute(MOVES.insert(), moves)


def _started_row(match: Red3Match) -> dict:
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
        "gross": None,
        "fee": None,
        "net_to_winner": None,
        "settlement_hash": None,
        "recomputed_hash": None,
        "discrepancy": False,
        "discrepancy_note": None,
    }


def _progress_row(match: Red3Match) -> dict:
    return {
        "status": status_of(match),
        "round": match.round,
        "moves_count": len(match.moves),
        "version": match.version,
        "winner": match.winners[0] if len(match.winners) == 1 else None,
        "final_point_value": ZERO,
    }


def _ending(ledger, match: Red3Match) -> dict:
    return ending_row(match, ledger.events.get(match.id, lte=match.version))


def ending_row(match: Red3Match, events) -> dict:
    """The ``games`` columns a finished match sets, its audit over ``events`` (all of the
    match's, in order) included; ``verify`` rebuilds them with this too."""
    from replays.red3_ledger import audit_events

    report = audit_events(events)
    note = "; ".join(
        f"{d.source} {d.field}: {d.reported} != computed {d.computed}" for d in report.discrepancies
    )
    ended_at = match.modified_on
    return {
        "ended_at": ended_at,
        "ended_on": ended_at.date() if ended_at else None,
        "discrepancy": bool(report.discrepancies),
        "discrepancy_note": note[:MAX_NOTE] or None,
    }


def _results(match: Red3Match) -> list[dict]:
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


def _move_row(before: Red3Match, domain_event) -> dict:
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
        "game_id": before.game_id,
        "move_index": len(before.moves),
        "version": domain_event.originator_version,
        "player": player,
        "move_type": move_type,
        "card": card,
        "source": source,
        "groups": groups,
        "round": before.round,
        "point_value": ZERO,
        "at": parse_time(getattr(domain_event, "at", None)),
    }
