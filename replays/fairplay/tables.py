"""The fair-play read-model tables: :mod:`replays.fairplay.summary` per day and table.

- ``fairplay_games``: the games already counted (a game is counted once, when it has ended).
- ``fairplay_player_days``: :class:`~replays.fairplay.summary.PlayerDay` per (day, table, player).
- ``fairplay_pair_days``: :class:`~replays.fairplay.summary.PairDay` per (day, table, first, second).
- ``fairplay_table_days``: games per (day, table).
- ``fairplay_evidence``: the heaviest evidence moves per (day, table, signal, first, second).

Like every read model they can be dropped and rebuilt from the events
(``rummy-ledger fairplay --rebuild``).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from replays.store.db import Base

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


class FairplayGame(Base):
    __tablename__ = "fairplay_games"

    game_id: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    day: Mapped[str] = mapped_column(sa.String(10), index=True)
    table_id: Mapped[str] = mapped_column(sa.String(64))


class FairplayPlayerDay(Base):
    __tablename__ = "fairplay_player_days"

    day: Mapped[str] = mapped_column(sa.String(10), primary_key=True)
    table_id: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    player: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    games: Mapped[int] = mapped_column(sa.Integer, default=0)
    choices: Mapped[int] = mapped_column(sa.Integer, default=0)
    choice_sum: Mapped[float] = mapped_column(sa.Float, default=0.0)
    choice_var: Mapped[float] = mapped_column(sa.Float, default=0.0)
    faced: Mapped[int] = mapped_column(sa.Integer, default=0)
    useful: Mapped[int] = mapped_column(sa.Integer, default=0)
    timing: Mapped[dict] = mapped_column(sa.JSON)
    exits: Mapped[list] = mapped_column(sa.JSON)


class FairplayPairDay(Base):
    __tablename__ = "fairplay_pair_days"

    day: Mapped[str] = mapped_column(sa.String(10), primary_key=True)
    table_id: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    first: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    second: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    faced: Mapped[int] = mapped_column(sa.Integer, default=0)
    useful: Mapped[int] = mapped_column(sa.Integer, default=0)
    gain: Mapped[int] = mapped_column(sa.Integer, default=0)
    together: Mapped[int] = mapped_column(sa.Integer, default=0)
    exits: Mapped[list] = mapped_column(sa.JSON)


class FairplayTableDay(Base):
    __tablename__ = "fairplay_table_days"

    day: Mapped[str] = mapped_column(sa.String(10), primary_key=True)
    table_id: Mapped[str] = mapped_column(sa.String(64), primary_key=True)
    games: Mapped[int] = mapped_column(sa.Integer, default=0)


class FairplayEvidence(Base):
    __tablename__ = "fairplay_evidence"
    __table_args__ = (sa.Index("ix_fairplay_evidence_subject", "day", "signal", "first", "second"),)

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    day: Mapped[str] = mapped_column(sa.String(10))
    table_id: Mapped[str] = mapped_column(sa.String(64))
    signal: Mapped[str] = mapped_column(sa.String(16))
    first: Mapped[str] = mapped_column(sa.String(64))
    second: Mapped[str] = mapped_column(sa.String(64))
    game_id: Mapped[str] = mapped_column(sa.String(64))
    step: Mapped[int] = mapped_column(sa.Integer)
    weight: Mapped[float] = mapped_column(sa.Float)
    note: Mapped[str] = mapped_column(sa.String(200))
