"""The read-model rows of a 13-card game, as plain dicts (``replays.readmodels.projections`` writes them).

Every value comes from the game aggregate and its recorded settlement: round, point value
and outcome from the domain, never from rules copied into the projection. The audit
columns come in two kinds: :func:`written_audit_row`, what the projection writes, takes the
settlement the write itself computed (the ``Settled`` body) and compares the operator's
report with it; :func:`audit_row`, what ``audit`` and ``verify`` use, recomputes the
settlement (:func:`domain.rummy13.audit.audit_game`) and compares it with the recorded one
and the report. For a game the ledger settled both give the same columns.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from decimal import Decimal

from domain.rummy13 import audit as audit13
from domain.rummy13.fold import GameFold
from domain.rummy13.game import Game, TableConfig
from domain.rummy13.raise_schedule import point_value_for_round
from domain.rummy13.settlement import (  # re-exported: the projection imports them from here
    Settlement,
    account_of,
    canonical_hash,
    canonical_settlement,
    settlement_hash,
)
from domain.timestamps import parse_time, utc_text
from domain.variant_base import MAX_NOTE, MOVE_COLUMNS, SETTLEMENT_KIND, UNSETTLED_COLUMNS

PLAYER_ACCOUNT = account_of("")


def _moment(value) -> datetime | None:
    """:func:`~domain.timestamps.parse_time` of a move's ``at``, the usual ``...Z`` text
    read as it is (:func:`~domain.timestamps.utc_text`) and kept as the moment's text: the
    row's stored form is that text again (``replays.readmodels.bulk``), which ``verify``
    works out for every move of a game it replays."""
    return utc_text(value, keep=True) or parse_time(value)


def _decimal(text: str | None) -> Decimal | None:
    if type(text) is not str:
        return None if text is None else Decimal(text)
    # By its text: a store's settlements repeat a few hundred amounts, and Decimal(text)
    # costs about ten dict look-ups (verify reads some thirty a game). A finite Decimal
    # made from text is that text's exact value, whatever the context, and immutable: the
    # kept one is what Decimal(text) would give (same value, same exponent). Anything
    # else (NaN, infinities, text that is no number) is made each time, as before.
    found = _DECIMALS.get(text)
    if found is None:
        found = Decimal(text)
        if found.is_finite():
            if len(_DECIMALS) >= _DECIMALS_KEPT:
                _DECIMALS.clear()
            _DECIMALS[text] = found
    return found


_DECIMALS: dict[str, Decimal] = {}
_DECIMALS_KEPT = 4096


def recorded_hash(game: Game | GameFold) -> str:
    """:func:`settlement_hash` of the game's ``Settled`` body. The games row and the audit
    columns both carry it: a fold works it out once (its body is read, never changed)."""
    if type(game) is GameFold:
        digest = game.settled_hash
        if digest is None:
            digest = game.settled_hash = settlement_hash(game.settled_body)
        return digest
    return settlement_hash(game.settled_body)


def settlement_rows(
    config: TableConfig,
    recorded: dict,
    ended_at: datetime | None,
    final_round: int,
    digest: str | None = None,
) -> tuple[dict, list[dict], list[dict]]:
    """The rows a recorded settlement gives: the games row's settlement columns, one
    ``player_results`` row per player (the winner credited ``net_to_winner``) and the
    settlement's ``ledger_entries`` lines, in order. ``digest``: the body's
    :func:`settlement_hash` when already known."""
    game_id = config.game_id
    columns = {
        "ended_at": ended_at,
        "ended_on": ended_at.date() if ended_at else None,
        "gross": _decimal(recorded["gross"]),
        "fee": _decimal(recorded["fee"]),
        "net_to_winner": _decimal(recorded["net_to_winner"]),
        "settlement_hash": settlement_hash(recorded) if digest is None else digest,
    }
    seats = dict(zip(config.players, config.seats or range(1, 99), strict=False))
    winner = recorded["winner"]
    results = [
        {
            "game_id": game_id,
            "player": winner,
            "seat": seats.get(winner, 0),
            "result": "won",
            "points": 0,
            "point_value": point_value_for_round(config, final_round),
            "amount": _decimal(recorded["net_to_winner"]),
            "hand_score": None,
            "min_score": None,
            "scoring_case": None,
            "ended_at_round": final_round,
        }
    ]
    for player, line in recorded["players"].items():
        results.append(
            {
                "game_id": game_id,
                "player": player,
                "seat": seats.get(player, 0),
                "result": line["result"],
                "points": int(line["points"]),
                "point_value": _decimal(line["point_value"]),
                "amount": _decimal(line["amount"]),
                "hand_score": line.get("hand_score"),
                "min_score": line.get("min_score"),
                "scoring_case": line.get("case"),
                "ended_at_round": line.get("ended_at_round"),
            }
        )
    entries = []
    for number, entry in enumerate(recorded.get("ledger_entries", ()), 1):
        account = entry["account"]
        entries.append(
            {
                "game_id": game_id,
                "dispute_id": None,
                "kind": SETTLEMENT_KIND,
                "line": number,
                "account": account,
                "player": account[len(PLAYER_ACCOUNT) :]
                if account.startswith(PLAYER_ACCOUNT)
                else None,
                "debit": _decimal(entry["debit"]),
                "credit": _decimal(entry["credit"]),
                "currency": recorded.get("currency", config.currency),
                "posted_at": ended_at,
                "posted_on": ended_at.date() if ended_at else None,
            }
        )
    return columns, results, entries


def started_row(config: TableConfig, originator_id: str, started_at: datetime | None) -> dict:
    """The games row of a game just started (settlement columns empty)."""
    return {
        "game_id": config.game_id,
        "originator_id": originator_id,
        "variant": config.variant,
        "rules": config.rules,
        "table_id": config.table_id,
        "currency": config.currency,
        "players": list(config.players),
        "player_count": len(config.players),
        "dealer": config.dealer_player,
        "started_at": started_at,
        "ended_at": None,
        "ended_on": None,
        "point_value": config.point_value,
        "fee_percent": config.fee_percent,
        **UNSETTLED_COLUMNS,
    }


def started_row_of(game: Game) -> dict:
    return started_row(game.config, str(game.id), parse_time(game.started_at) or game.created_on)


def progress_row(game: Game) -> dict:
    return {
        "game_id": game.game_id,
        "status": game.phase,
        "round": game.round,
        "moves_count": game.move_count,
        "version": game.version,
        "winner": game.winner,
        "final_point_value": point_value_for_round(game.config, game.round),
    }


def move_row(before: Game, domain_event, move_type: str) -> dict:
    """The move as the event states it, with the round and point value in force before it."""
    return dict(zip(MOVE_COLUMNS, move_fields(before, domain_event, move_type), strict=True))


def move_fields(before: Game, domain_event, move_type: str, read_time=_moment) -> tuple:
    """:func:`move_row`'s values in its columns' order (``MOVE_COLUMNS``), the event's
    ``at`` read by ``read_time``."""
    get = vars(domain_event).get  # the event's fields (a missing one is None, as getattr's)
    if type(before) is Game:
        # The aggregate's own fields behind its properties (config, game_id, move_count,
        # round: a Python call each), read as they are: verify builds these for every
        # move it replays.
        config, count, played = before._config, len(before._moves), before._round
        game_id = config.game_id
    else:
        config, count, played = before.config, before.move_count, before.round
        game_id = before.game_id
    groups = get("groups")
    return (
        game_id,
        count,
        domain_event.originator_version,
        get("player"),
        move_type,
        get("card") or get("finish"),
        get("source"),
        None if groups is None else [list(group) for group in groups],
        played,
        point_value_for_round(config, played),
        read_time(get("at")),
    )


def audit_row(game: Game, *, verify: bool = True) -> dict:
    """The audit columns of a settled game: the recomputed settlement's hash and whether it,
    or the operator's report, differs from what was recorded."""
    if not verify:
        return {"recomputed_hash": None, "discrepancy": False, "discrepancy_note": None}
    report = audit13.audit_game(game, with_recorded=False)  # compared below, in canonical order
    computed = canonical_settlement(report.computed.to_dict())
    found = [d for d in report.discrepancies if d.source != audit13.RECORDED]
    # Read only (canonical_settlement copies what it reorders): no deep copy needed.
    recorded = game.settled_body
    if recorded is not None:
        # Both sides in canonical order: a grouping recorded in another order is the
        # same grouping, whatever order the solver returned this time.
        recorded = canonical_settlement(recorded)
        found = audit13._compare_recorded(recorded, computed) + found
    note = "; ".join(d.note() for d in found)
    return {
        "recomputed_hash": canonical_hash(computed),  # in canonical order already
        "discrepancy": bool(found),
        "discrepancy_note": note[:MAX_NOTE] or None,
    }


def written_audit_row(game: Game, whole: Callable[[], Game] | None = None) -> dict:
    """The audit columns from what the write already knew, without the solver.

    The ``Settled`` body is the settlement :meth:`Game.settle` computed from the game's
    facts when the game was stored, so at write time the recomputation *is* the recorded
    settlement: its hash is the recomputed hash, nothing recorded differs from it, and
    only the operator's report (which the write did not compute) is compared, with it.
    :func:`audit_row` recomputes instead; ``audit`` and ``verify`` (whose read-model check
    compares these columns with it) distrust the stored figures (docs/read-models.md).

    ``game`` may be a :class:`~domain.rummy13.fold.GameFold`; ``whole()`` then gives the
    aggregate for the recomputation, when one is needed."""
    recorded = game.settled_body
    written = game.computed_hash
    digest = None if recorded is None or written is None else recorded_hash(game)
    if digest is None or digest != written:
        # Stored before the write carried its hash, or the body is not what the write
        # computed (changed in the store since): only a recomputation can say what is right.
        return audit_row(game if whole is None else whole())
    reported = game.reported_body
    found = audit13._compare_reported(reported, Settlement.from_dict(recorded)) if reported else []
    note = "; ".join(d.note() for d in found)
    return {
        "recomputed_hash": digest,
        "discrepancy": bool(found),
        "discrepancy_note": note[:MAX_NOTE] or None,
    }
