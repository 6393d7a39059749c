"""Read-model tables: what pages and reports query instead of replaying games.

The projection (:mod:`replays.readmodels.projections`) keeps these rows current from the event
stream; nothing else writes them, and a rebuild recreates them from the events alone.

- :class:`GameRow` (``games``): one row per game, its table configuration and outcome.
- :class:`PlayerResultRow` (``player_results``): one row per player of a settled game.
- :class:`MoveRow` (``moves``): the move timeline, one row per move in play order.
- :class:`LedgerEntryRow` (``ledger_entries``): double-entry postings; a settlement debits
  each loser and credits the winner and the fee account, and they balance to the paisa.
- :class:`ProjectionPosition` (``projection_positions``): how far each projection has
  read the notification log, committed in the same transaction as the rows it produced.
- :class:`ProjectionFailure` (``projection_failures``): events a projection could not
  apply, with the game set aside until ``projections retry``.

Money columns use :class:`Fixed`: exact scaled integers in the database (paise for
amounts, millionths for point values and fee percents), :class:`~decimal.Decimal` in
Python, so sums in SQL are exact on SQLite too (whose NUMERIC is a float).

>>> Fixed(2).process_bind_param(Decimal("49.70"), None)
4970
>>> Fixed(2).process_result_value(4970, None)
Decimal('49.70')
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from replays.store.db import Base, StoredLongText, StoredPlayerIds, StoredText

# SQLite only auto-increments an INTEGER PRIMARY KEY.
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


class Fixed(sa.types.TypeDecorator):
    """An exact decimal with up to ``scale`` places, stored as a scaled BIGINT.

    Read back with at least ``places`` decimals (``1.10``, ``0.075``). A value with more
    than ``scale`` places is refused rather than rounded: rounding belongs to the
    computation that produced the figure (docs/rules.md, Money).
    """

    impl = sa.BigInteger
    cache_ok = True

    def __init__(self, scale: int = 2, places: int = 2):
        super().__init__()
        self.scale = scale
        self.places = places

    def process_bind_param(self, value, dialect):
        if value is None:
            return None
        value = Decimal(value)
        scaled = value.scaleb(self.scale)
        if scaled != scaled.to_integral_value():
            raise ValueError(f"{value} has more than {self.scale} decimal places")
        return int(scaled)

    def process_result_value(self, value, dialect):
        if value is None:
            return None
        # Sums come back as Decimal on PostgreSQL and int on SQLite; both are exact.
        number = Decimal(value).scaleb(-self.scale)
        shortest = Decimal(1).scaleb(-self.places)
        if number == number.quantize(shortest):
            return number.quantize(shortest)
        return number.normalize()

    def process_literal_param(self, value, dialect):
        return str(self.process_bind_param(value, dialect))

    @property
    def python_type(self):
        return Decimal


# Amounts are always whole paise; point values and fee percents are rates that may be
# finer (a raise step of 0.005, a 12.5 % fee).
Money = Fixed(2)
Rate = Fixed(6)
SETTLED = "settled"


class GameRow(Base):
    """One game: who, where, under which rules, and (once settled) how it ended."""

    __tablename__ = "games"

    game_id: Mapped[str] = mapped_column(StoredText(64), primary_key=True)
    originator_id: Mapped[str] = mapped_column(StoredText(36), unique=True)
    variant: Mapped[str] = mapped_column(StoredText(16))
    rules: Mapped[str] = mapped_column(StoredText(32))
    table_id: Mapped[str | None] = mapped_column(StoredText(64))
    currency: Mapped[str] = mapped_column(StoredText(8))
    players: Mapped[list[str]] = mapped_column(StoredPlayerIds)
    player_count: Mapped[int] = mapped_column(sa.Integer)
    dealer: Mapped[str | None] = mapped_column(StoredText(64))
    started_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    ended_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    # The UTC date of ended_at: reports group and filter on it with one index.
    ended_on: Mapped[date | None] = mapped_column(sa.Date)
    point_value: Mapped[Decimal] = mapped_column(Rate)
    final_point_value: Mapped[Decimal | None] = mapped_column(Rate)
    fee_percent: Mapped[Decimal] = mapped_column(Rate)
    status: Mapped[str] = mapped_column(StoredText(16))
    round: Mapped[int] = mapped_column(sa.Integer, default=0)
    moves_count: Mapped[int] = mapped_column(sa.Integer, default=0)
    version: Mapped[int] = mapped_column(sa.Integer)
    winner: Mapped[str | None] = mapped_column(StoredText(64))
    gross: Mapped[Decimal | None] = mapped_column(Money)
    fee: Mapped[Decimal | None] = mapped_column(Money)
    net_to_winner: Mapped[Decimal | None] = mapped_column(Money)
    # sha256 of the recorded settlement's canonical JSON, and of the one recomputed from
    # the game's facts during projection; they differ only when the record is wrong.
    settlement_hash: Mapped[str | None] = mapped_column(StoredText(64))
    recomputed_hash: Mapped[str | None] = mapped_column(StoredText(64))
    discrepancy: Mapped[bool] = mapped_column(sa.Boolean, default=False)
    discrepancy_note: Mapped[str | None] = mapped_column(StoredLongText)

    __table_args__ = (
        sa.Index("ix_games_ended_on", "ended_on"),
        sa.Index("ix_games_table_id_ended_on", "table_id", "ended_on"),
        sa.Index("ix_games_status", "status"),
        sa.Index("ix_games_discrepancy", "discrepancy"),
    )


class PlayerResultRow(Base):
    """One player's outcome in a settled game, as the recorded settlement states it."""

    __tablename__ = "player_results"

    game_id: Mapped[str] = mapped_column(
        sa.ForeignKey("games.game_id", ondelete="CASCADE"), primary_key=True
    )
    player: Mapped[str] = mapped_column(StoredText(64), primary_key=True)
    seat: Mapped[int] = mapped_column(sa.Integer)
    result: Mapped[str] = mapped_column(StoredText(16))
    points: Mapped[int] = mapped_column(sa.Integer)
    point_value: Mapped[Decimal] = mapped_column(Rate)
    amount: Mapped[Decimal] = mapped_column(Money)
    hand_score: Mapped[int | None] = mapped_column(sa.Integer)
    # What the best grouping of the same 13 cards would have cost (auditors compare).
    min_score: Mapped[int | None] = mapped_column(sa.Integer)
    scoring_case: Mapped[str | None] = mapped_column(StoredText(40))
    ended_at_round: Mapped[int | None] = mapped_column(sa.Integer)

    __table_args__ = (sa.Index("ix_player_results_player", "player", "game_id"),)


class MoveRow(Base):
    """One move of the timeline. ``move_index`` is the move's 0-based place in play order,
    so the table after it is ``Ledger.state_at(game, move_index + 1)``.

    Read by game only (a replay's timeline, a dispute's moves around its move): the primary
    key is its one index. A second on ``player``, read by nothing, cost every imported move
    an index entry (revision 0017)."""

    __tablename__ = "moves"

    game_id: Mapped[str] = mapped_column(
        sa.ForeignKey("games.game_id", ondelete="CASCADE"), primary_key=True
    )
    move_index: Mapped[int] = mapped_column(sa.Integer, primary_key=True)
    version: Mapped[int] = mapped_column(sa.Integer)
    player: Mapped[str | None] = mapped_column(StoredText(64))
    move_type: Mapped[str] = mapped_column(StoredText(16))
    card: Mapped[str | None] = mapped_column(StoredText(4))
    source: Mapped[str | None] = mapped_column(StoredText(8))
    groups: Mapped[list | None] = mapped_column(sa.JSON(none_as_null=True))
    round: Mapped[int] = mapped_column(sa.Integer)
    point_value: Mapped[Decimal] = mapped_column(Rate)
    at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))


class LedgerEntryRow(Base):
    """A double-entry posting line. ``kind`` says what posted it: ``settlement`` lines come
    from the game's Settled event (this projection); disputes add ``adjustment`` lines
    with their ``dispute_id``. Debits and credits of one posting balance."""

    __tablename__ = "ledger_entries"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    game_id: Mapped[str] = mapped_column(sa.ForeignKey("games.game_id", ondelete="CASCADE"))
    dispute_id: Mapped[str | None] = mapped_column(StoredText(64))
    kind: Mapped[str] = mapped_column(StoredText(16))
    line: Mapped[int] = mapped_column(sa.Integer)
    account: Mapped[str] = mapped_column(StoredText(80))
    player: Mapped[str | None] = mapped_column(StoredText(64))
    debit: Mapped[Decimal] = mapped_column(Money, default=Decimal("0.00"))
    credit: Mapped[Decimal] = mapped_column(Money, default=Decimal("0.00"))
    currency: Mapped[str] = mapped_column(StoredText(8))
    posted_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    posted_on: Mapped[date | None] = mapped_column(sa.Date)

    __table_args__ = (
        sa.Index("ix_ledger_entries_game_id", "game_id"),
        sa.Index("ix_ledger_entries_posted_on", "posted_on"),
        sa.Index("ix_ledger_entries_account", "account"),
        sa.Index("ix_ledger_entries_dispute_id", "dispute_id"),
    )


class ProjectionPosition(Base):
    """The tracking record: the last notification id a projection applied."""

    __tablename__ = "projection_positions"

    name: Mapped[str] = mapped_column(StoredText(32), primary_key=True)
    position: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    events_applied: Mapped[int] = mapped_column(sa.BigInteger, default=0)
    updated_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))


class ProjectionFailure(Base):
    """An event a projection could not apply, and the aggregate it set aside until a retry.

    One row per (projection, aggregate): the aggregate's later events are skipped while the
    row exists, so its read rows are never half-written (docs/read-models.md).
    """

    __tablename__ = "projection_failures"

    projection: Mapped[str] = mapped_column(StoredText(48), primary_key=True)
    originator_id: Mapped[str] = mapped_column(StoredText(36), primary_key=True)
    notification_id: Mapped[int] = mapped_column(sa.BigInteger)
    game_id: Mapped[str | None] = mapped_column(StoredText(200))
    event_type: Mapped[str] = mapped_column(StoredText(200))
    event_version: Mapped[int] = mapped_column(sa.BigInteger)
    error: Mapped[str] = mapped_column(StoredLongText)
    first_seen: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True))
    last_attempt: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True))
    attempts: Mapped[int] = mapped_column(sa.Integer, default=1)


READ_MODEL_TABLES = (
    GameRow.__table__,
    PlayerResultRow.__table__,
    MoveRow.__table__,
    LedgerEntryRow.__table__,
)
