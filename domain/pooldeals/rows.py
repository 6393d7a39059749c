"""Pool and Deals matches' read-model rows, as plain dicts (``replays.readmodels.projections``
writes them, one writer for every variant).

- ``games``: one per match; ``round`` is the deal number, ``moves_count`` every 13-card move
  of every deal; at the end ``gross`` is the prize pool (every entry fee, rejoins included),
  ``fee`` the operator's fee and ``net_to_winner`` what the winner (or the sharers of a
  split) received, status ``settled`` so period reports total it like any money game.
- ``player_results`` at the end: ``won``, ``split`` or ``lost``; ``points`` the final score
  (pool) or chips (deals); ``amount`` what the player received; ``ended_at_round`` the deal
  that eliminated a pool player (else the last deal).
- ``moves``: one row per 13-card move, ``round`` the deal it was played in.
- ``ledger_entries``: the settlement's balanced lines (``kind`` ``settlement``): each
  player debited every entry fee paid, the payouts and the fee credited.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from decimal import Decimal

from domain.pooldeals.audit import audit_match, compare_reported
from domain.pooldeals.match import FINISHED, PLAYING, Match
from domain.pooldeals.outcome import match_outcome, outcome_hash
from domain.rummy13.settlement import canonical_json
from domain.timestamps import parse_time
from domain.variant_base import MAX_NOTE, SETTLEMENT_KIND, UNSETTLED_COLUMNS

ZERO = Decimal("0")
SETTLED = "settled"  # the games row's status once the prize pool is paid (reports select it)
PLAYER_PREFIX = "player:"


def status_of(match: Match) -> str:
    if match.phase == FINISHED:
        return SETTLED
    return "playing" if match.phase == PLAYING else "dealing"


def started_row(match: Match) -> dict:
    config = match.config
    return {
        "game_id": match.game_id,
        "originator_id": str(match.id),
        "variant": config.variant,
        "rules": config.rules,
        "table_id": config.table_id,
        "currency": config.currency,
        "players": list(config.players),
        "player_count": len(config.players),
        "dealer": config.first_dealer,
        "started_at": parse_time(match.started_at) or match.created_on,
        "ended_at": None,
        "ended_on": None,
        "point_value": ZERO,
        "fee_percent": config.fee_percent,
        **UNSETTLED_COLUMNS,
    }


def progress_row(match: Match) -> dict:
    return {
        "status": status_of(match),
        "round": len(match.deals),
        "moves_count": sum(len(dealt["moves"]) for dealt in match.deals),
        "version": match.version,
        "winner": match.winner,
        "final_point_value": ZERO,
    }


def move_row(before: Match, domain_event) -> dict:
    moves = sum(len(dealt["moves"]) for dealt in before.deals)
    return _move_row(before.game_id, domain_event, moves, len(before.deals))


def saved_move_rows(match: Match, events) -> list[dict] | None:
    """The move rows of a match saved whole, without playing its moves again: each
    ``Moved`` event's row needs only the moves and deals before it, counted here. None
    when an event follows ``Settled`` (the closing rows then need the match as it stood
    at ``Settled``, not as it ends)."""
    if match.phase == FINISHED and not isinstance(events[-1], Match.Settled):
        return None
    rows, moves, deals = [], 0, 0
    for domain_event in events:
        if isinstance(domain_event, Match.Moved):
            rows.append(_move_row(match.game_id, domain_event, moves, deals))
            moves += 1
        elif isinstance(domain_event, Match.DealStarted):
            deals += 1
    return rows


def _move_row(game_id: str, domain_event, moves: int, deals: int) -> dict:
    """The row of a ``Moved`` event after ``moves`` moves in ``deals`` deals."""
    move = domain_event.move
    groups = move.get("groups")
    return {
        "game_id": game_id,
        "move_index": moves,
        "version": domain_event.originator_version,
        "player": move.get("player"),
        "move_type": move["type"],
        "card": move.get("card") or move.get("finish"),
        "source": move.get("from"),
        "groups": None if groups is None else [list(group) for group in groups],
        "round": deals,
        "point_value": ZERO,
        "at": parse_time(move.get("at")),
    }


def settlement_hash(settlement: dict) -> str:
    # canonical_json: json.dumps(sort_keys, no spaces, ensure_ascii=False)'s bytes, faster.
    return hashlib.sha256(canonical_json(settlement)).hexdigest()


def closing_rows(match: Match, ended_at) -> tuple[dict, list[dict], list[dict]]:
    """The games columns, ``player_results`` and ``ledger_entries`` of a settled match."""
    settled = match.settlement
    payouts = {p: Decimal(v) for p, v in settled["payouts"].items()}
    columns = {
        "ended_at": ended_at,
        "ended_on": ended_at.date() if ended_at else None,
        "gross": Decimal(settled["prize_pool"]),
        "fee": Decimal(settled["fee"]),
        "net_to_winner": sum(payouts.values(), Decimal("0.00")),
        "settlement_hash": settlement_hash(settled),
    }
    results = []
    for player in match.config.players:
        if player == match.winner:
            result = "won"
        elif player in payouts:
            result = "split"
        else:
            result = "lost"
        results.append(
            {
                "game_id": match.game_id,
                "player": player,
                "seat": match.config.seat_of(player),
                "result": result,
                "points": match.scores[player],
                "point_value": ZERO,
                "amount": payouts.get(player, Decimal("0.00")),
                "hand_score": None,
                "min_score": None,
                "scoring_case": None,
                "ended_at_round": match.eliminated.get(player, len(match.deals)),
            }
        )
    entries = []
    for number, entry in enumerate(settled["ledger_entries"], 1):
        account = entry["account"]
        entries.append(
            {
                "game_id": match.game_id,
                "dispute_id": None,
                "kind": entry.get("kind", SETTLEMENT_KIND),
                "line": number,
                "account": account,
                "player": account[len(PLAYER_PREFIX) :]
                if account.startswith(PLAYER_PREFIX)
                else None,
                "debit": Decimal(entry["debit"]),
                "credit": Decimal(entry["credit"]),
                "currency": settled["currency"],
                "posted_at": ended_at,
                "posted_on": ended_at.date() if ended_at else None,
            }
        )
    return columns, results, entries


def written_audit_row(match: Match) -> dict:
    """The audit columns from what the write already knew, without playing the match again.

    A match the ledger settled carries the hash of its outcome as the rules computed it
    (``Settled.computed_hash``): every deal's points, scores or chips, eliminations, rejoins,
    the split and the money. When the stored match's outcome still hashes to it, the
    recomputation *is* that outcome, and only the operator's report (which the write did
    not compute) is compared with it. Anything else (no hash: stored before it existed; a
    different one: changed in the store since) is recomputed by :func:`audit_row`, which
    ``audit`` and ``verify`` always use (docs/read-models.md)."""
    if match.phase != FINISHED or match.computed_hash is None:
        return audit_row(match)
    outcome = match_outcome(match)
    if outcome_hash(outcome) != match.computed_hash:
        return audit_row(match)
    found = compare_reported(match.reported, outcome)
    note = "; ".join(d.note() for d in found)
    return {
        "recomputed_hash": settlement_hash(match.settlement),
        "discrepancy": bool(found),
        "discrepancy_note": note[:MAX_NOTE] or None,
    }


def audit_row(match: Match, events: Iterable | None = None, *, verify: bool = True) -> dict:
    if not verify or match.phase != FINISHED:
        return {"recomputed_hash": None, "discrepancy": False, "discrepancy_note": None}
    report = audit_match(match)
    note = "; ".join(d.note() for d in report.discrepancies)
    return {
        "recomputed_hash": None
        if report.settlement is None
        else settlement_hash(report.settlement),
        "discrepancy": bool(report.discrepancies),
        "discrepancy_note": note[:MAX_NOTE] or None,
    }
