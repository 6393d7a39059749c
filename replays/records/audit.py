"""Audit one stored game: its variant recomputes the figures from the events and compares.

Each family's audit is pure and lives in its package (13-card:
:mod:`domain.rummy13.audit`, and so on); this module loads the game
and asks the registry which one applies. Every audit has ``discrepancies``, ``to_dict()``
and ``for_people()``.
"""

from __future__ import annotations

from domain import variants
from domain.rummy13.audit import (
    AuditReport,
    LoserLine,
    NothingToAudit,
    _compare_recorded,
    audit_game,
)
from domain.variant_base import RECORDED, REPORTED, Discrepancy


def audit(ledger, game_id: str):
    """Audit the stored game ``game_id`` (GameNotFound when there is none)."""
    game = ledger.get_game(game_id)
    return variants.for_game(game).audit(game, ledger.events_of(game))


__all__ = [
    "RECORDED",
    "REPORTED",
    "AuditReport",
    "Discrepancy",
    "LoserLine",
    "NothingToAudit",
    "_compare_recorded",
    "audit",
    "audit_game",
]
