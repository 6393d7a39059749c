"""A match's configuration, and the 13-card table each of its deals is played at.

The seating, dealer and toss are the 13-card table's own (checked by
:class:`~domain.rummy13.table.TableConfig`); what a match adds is its format (a pool type
or a number of deals) and its money (entry fee, currency, fee).

>>> config = MatchConfig(game_id="P1", variant="pool", players=("p1", "p2", "p3"), pool=101,
...                      entry_fee="25", dealer="p3")
>>> table = config.deal_table(2, ("p1", "p3"), dealer="p1")
>>> table.players, table.first_mover, table.profile.first_drop
(('p1', 'p3'), 'p3', 20)
>>> MatchConfig.from_dict(config.to_dict()) == config
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from decimal import Decimal
from typing import Any

from domain.errors import BadConfig
from domain.pooldeals.profile import PoolType, deals_chips, pool_type
from domain.rummy13.table import TableConfig, _decimal

POOL, DEALS = "pool", "deals"
MATCH_VARIANTS = (POOL, DEALS)
# A match's phases (``Match.phase``).
DEALING, PLAYING, FINISHED = "dealing", "playing", "finished"


@dataclass(frozen=True)
class MatchConfig:
    """Everything fixed when a match starts; fields may be given as text (normalised)."""

    game_id: str
    variant: str
    players: tuple[str, ...]
    entry_fee: Decimal
    pool: int | None = None  # 61, 101 or 201 (pool)
    deals: int | None = None  # 2, 3 or 6 (deals)
    rules: str = "rummycircle"
    table_id: str | None = None
    decks: int | None = None
    jokers_per_deck: int | None = None
    currency: str = "INR"
    fee_percent: Decimal = Decimal("0")
    max_rejoins: int | None = None
    auto_split: bool = False
    seats: tuple[int, ...] | None = None
    dealer: str | None = None
    toss: Mapping[str, Any] | None = None
    started_at: datetime | None = None
    shuffle: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        put = object.__setattr__
        gid = self.game_id
        if self.variant not in MATCH_VARIANTS:
            raise BadConfig(f"variant must be 'pool' or 'deals', not {self.variant!r}", game_id=gid)
        # The 13-card table checks seats, dealer, toss, decks, rules, times and the fee.
        base = TableConfig(
            game_id=gid,
            variant="points",
            players=self.players,
            point_value="1",
            rules=self.rules,
            table_id=self.table_id,
            decks=self.decks,
            jokers_per_deck=self.jokers_per_deck,
            currency=self.currency,
            fee_percent=self.fee_percent,
            seats=self.seats,
            dealer=self.dealer,
            toss=self.toss,
            started_at=self.started_at,
            shuffle=self.shuffle,
        )
        for name in ("players", "seats", "rules", "decks", "jokers_per_deck", "fee_percent"):
            put(self, name, getattr(base, name))
        put(self, "started_at", base.started_at)
        put(self, "shuffle", base.shuffle)
        put(self, "toss", None if base.toss is None else {p: str(c) for p, c in base.toss.items()})
        put(self, "entry_fee", _decimal(self.entry_fee, "entry_fee", gid))
        if self.entry_fee <= 0:
            raise BadConfig(f"entry_fee must be positive, got {self.entry_fee}", game_id=gid)
        try:
            if self.variant == POOL:
                pool_type(self.pool)
                if self.deals is not None:
                    raise BadConfig("a pool has no fixed number of deals")
            else:
                deals_chips(self.deals)
                if self.pool is not None or self.max_rejoins is not None or self.auto_split:
                    raise BadConfig("a deals match has no pool type, rejoins or auto split")
        except BadConfig as error:
            raise BadConfig(error.reason, game_id=gid) from None
        if self.max_rejoins is not None and (
            isinstance(self.max_rejoins, bool)
            or not isinstance(self.max_rejoins, int)
            or self.max_rejoins < 0
        ):
            raise BadConfig(
                f"max_rejoins must be a whole number, got {self.max_rejoins!r}", game_id=gid
            )
        put(self, "auto_split", bool(self.auto_split))
        put(self, "_base", base)

    # -- derived -------------------------------------------------------------------------
    @property
    def pool_type(self) -> PoolType | None:
        return pool_type(self.pool) if self.variant == POOL else None

    @property
    def starting_chips(self) -> int | None:
        return deals_chips(self.deals) if self.variant == DEALS else None

    @property
    def first_dealer(self) -> str:
        """The first deal's dealer: from the toss, else as given, else the last seat."""
        return self._base.dealer_player

    def seat_of(self, player: str) -> int:
        index = self.players.index(player)
        return self.seats[index] if self.seats else index + 1

    def next_dealer(self, previous: str, players: Sequence[str]) -> str:
        """The deal passes to the left: the next seat after ``previous`` among ``players``
        (those dealt in), whether or not ``previous`` is still in."""
        start = self.players.index(previous)
        for step in range(1, len(self.players) + 1):
            candidate = self.players[(start + step) % len(self.players)]
            if candidate in players:
                return candidate
        raise BadConfig("no player left to deal", game_id=self.game_id)

    def deal_table(self, number: int, players: Sequence[str], dealer: str) -> TableConfig:
        """Deal ``number``'s 13-card table: the players dealt in, in seat order, no money
        (points add up instead), the pool's drop and cap values."""
        players = tuple(p for p in self.players if p in players)
        pool = self.pool_type
        return TableConfig(
            game_id=f"{self.game_id}/deal-{number}",
            variant="points",
            players=players,
            point_value="1",
            rules=self.rules,
            table_id=self.table_id,
            decks=self.decks,
            jokers_per_deck=self.jokers_per_deck,
            currency=self.currency,
            seats=tuple(self.seat_of(p) for p in players),
            dealer=dealer,
            scoring=None if pool is None else pool.scoring,
        )

    # -- JSON ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["players"] = list(self.players)
        data["seats"] = None if self.seats is None else list(self.seats)
        data["entry_fee"] = str(self.entry_fee)
        data["fee_percent"] = str(self.fee_percent)
        data["started_at"] = self._base.to_dict()["started_at"]
        data["toss"] = None if self.toss is None else dict(self.toss)
        data["shuffle"] = None if self.shuffle is None else dict(self.shuffle)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MatchConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise BadConfig(f"unknown match setting {unknown[0]!r}", game_id=data.get("game_id"))
        return cls(**dict(data))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MatchConfig):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]
