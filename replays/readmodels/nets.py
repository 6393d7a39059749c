"""A player's money in a game, read off the ledger: the one definition every page shows.

A player's **net** for a game is the sum of that player's ledger entries for it, credits
minus debits: a Points or Raise loser's charge, a winner's payout after the fee, every entry
and rejoin fee a Pool or Deals player paid against the prize or share received, and any
dispute adjustment posted on the game. No page works a net out from a game's columns or
its variant: they ask :func:`player_nets` (a game without stakes, Red 3, has no entries and
so no net). ``paid`` keeps the player's debits by entry kind, from which each variant words
what the player staked (``Variant.stake_words``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal

import sqlalchemy as sa
from sqlalchemy.orm import Session

from replays.readmodels.models import LedgerEntryRow, Money

ZERO = Decimal("0.00")


@dataclass(frozen=True)
class PlayerMoney:
    """One player's ledger lines for one game, totalled."""

    received: Decimal = ZERO  # credits
    paid: Decimal = ZERO  # debits
    paid_by_kind: dict[str, Decimal] = field(default_factory=dict)

    @property
    def net(self) -> Decimal:
        return self.received - self.paid


def player_nets(
    session: Session | sa.Connection, player: str, game_ids: Iterable[str] | None = None
) -> dict[str, PlayerMoney]:
    """``player``'s money in each of ``game_ids`` (every game of theirs when None) that has
    ledger entries for them, by game id, from one grouped query."""
    e = LedgerEntryRow.__table__.c
    conditions = [e.player == player]
    if game_ids is not None:
        wanted = list(game_ids)
        if not wanted:
            return {}
        conditions.append(e.game_id.in_(wanted))
    return {game_id: money for (game_id, _), money in _totals(session, conditions).items()}


def game_nets(session: Session | sa.Connection, game_id: str) -> dict[str, PlayerMoney]:
    """Every player's money in one game, by player (players without entries left out)."""
    e = LedgerEntryRow.__table__.c
    found = _totals(session, [e.game_id == game_id, e.player.is_not(None)])
    return {player: money for (_, player), money in found.items()}


def _totals(session, conditions) -> dict[tuple[str, str], PlayerMoney]:
    e = LedgerEntryRow.__table__.c
    query = (
        sa.select(
            e.game_id,
            e.player,
            e.kind,
            sa.type_coerce(sa.func.sum(e.debit), Money).label("debit"),
            sa.type_coerce(sa.func.sum(e.credit), Money).label("credit"),
        )
        .where(*conditions)
        .group_by(e.game_id, e.player, e.kind)
    )
    found: dict[tuple[str, str], dict] = {}
    for row in session.execute(query):
        line = found.setdefault(
            (row.game_id, row.player), {"received": ZERO, "paid": ZERO, "kinds": {}}
        )
        debit = row.debit or ZERO
        line["received"] += row.credit or ZERO
        line["paid"] += debit
        if debit:
            line["kinds"][row.kind] = line["kinds"].get(row.kind, ZERO) + debit
    return {
        key: PlayerMoney(line["received"], line["paid"], line["kinds"])
        for key, line in found.items()
    }
