"""The fair-play read-model tables: :mod:`replays.fairplay.summary` per day and table.

- ``fairplay_games``: the games already counted (a game is counted once, when it has ended).
- ``fairplay_player_days``: :class:`~replays.fairplay.summary.PlayerDay` per (day, table, player).
- ``fairplay_pair_days``: :class:`~replays.fairplay.summary.PairDay` per (day, table, first, second).
- ``fairplay_partner_days``: per (day, table, player) what the player's pairs add up to
  (:class:`~replays.fairplay.summary.PlayerDay`'s ``partners``, ``fed``, ``given``,
  ``strong`` and ``strong_drops``): the populations the pair signals weigh against; with the
  player row's ``games``, ``faced`` and ``useful``, what a period needs by player and table.
- ``fairplay_table_days``: games per (day, table), and the discards faced there by the next
  player and those taken to the picker's gain (the players' ``faced`` and ``useful`` added
  up): a period's rate of useful takes at each table, read from a few hundred rows instead
  of every player's.
- ``fairplay_noted_pair_days``: the ``fairplay_pair_days`` rows of each calendar month's pairs
  whose month sums reach a pair signal's floor
  (:data:`~replays.fairplay.signals.PAIR_FLOORS`), each pair with its reverse: the only
  pairs a period inside the month can test, so the only rows it reads (a tenth of them).
- ``fairplay_noted_months``: the games each month had counted when its pairs were noted; a
  month whose count has moved on since (a catch-up stopped between the two) is read whole.
- ``fairplay_evidence``: the heaviest evidence moves per (day, table, signal, first, second).
- ``fairplay_reviews``: reviews already worked out (each calendar month's, by the catch-up;
  other periods when the page first asks), with the games they counted: one is current
  while the period's games in ``fairplay_table_days`` still add up to that number.

Move times, exit bands and solver agreement are plain numeric columns (one per kind, per
band and per class of discard, named by :data:`TIMING_COLUMNS`, :data:`EXIT_COLUMNS`,
:data:`DISCARD_COLUMNS` and :data:`AGREED_COLUMNS`), not JSON, so that a period's sums are one
``GROUP BY`` in the database (:func:`replays.fairplay.projection.load_period`).

Like every read model they can be dropped and rebuilt from the events
(``rummy-ledger fairplay --rebuild``).
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from replays.fairplay.summary import BREAKS, EXIT_BANDS, TIMED_KINDS
from replays.store.db import Base, StoredLongText, StoredText

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

# Per kind of move: (count, sum of seconds, sum of squared seconds).
TIMING_COLUMNS = {kind: (f"{kind}_n", f"{kind}_sum", f"{kind}_squares") for kind in TIMED_KINDS}
# Per hand-score band of an exit, strongest first.
EXIT_COLUMNS = tuple(f"exits_{place}" for place in range(len(EXIT_BANDS) + 1))
# Solver agreement per class of discard (the links of the solver's choice): discards
# weighed, and those that left no more than the solver's choice.
DISCARD_COLUMNS = tuple(f"discards_{links}" for links in range(BREAKS))
AGREED_COLUMNS = tuple(f"agreed_{links}" for links in range(BREAKS))


class FairplayGame(Base):
    __tablename__ = "fairplay_games"

    game_id: Mapped[str] = mapped_column(StoredText(64), primary_key=True)
    day: Mapped[str] = mapped_column(StoredText(10), index=True)
    table_id: Mapped[str] = mapped_column(StoredText(64))


class FairplayPlayerDay(Base):
    __tablename__ = "fairplay_player_days"

    day: Mapped[str] = mapped_column(StoredText(10), primary_key=True)
    table_id: Mapped[str] = mapped_column(StoredText(64), primary_key=True)
    player: Mapped[str] = mapped_column(StoredText(64), primary_key=True)
    games: Mapped[int] = mapped_column(sa.Integer, default=0)
    choices: Mapped[int] = mapped_column(sa.Integer, default=0)
    choice_sum: Mapped[float] = mapped_column(sa.Float, default=0.0)
    choice_var: Mapped[float] = mapped_column(sa.Float, default=0.0)
    faced: Mapped[int] = mapped_column(sa.Integer, default=0)
    useful: Mapped[int] = mapped_column(sa.Integer, default=0)
    pick_n: Mapped[int] = mapped_column(sa.Integer, default=0)
    pick_sum: Mapped[float] = mapped_column(sa.Float, default=0.0)
    pick_squares: Mapped[float] = mapped_column(sa.Float, default=0.0)
    discard_n: Mapped[int] = mapped_column(sa.Integer, default=0)
    discard_sum: Mapped[float] = mapped_column(sa.Float, default=0.0)
    discard_squares: Mapped[float] = mapped_column(sa.Float, default=0.0)
    drop_n: Mapped[int] = mapped_column(sa.Integer, default=0)
    drop_sum: Mapped[float] = mapped_column(sa.Float, default=0.0)
    drop_squares: Mapped[float] = mapped_column(sa.Float, default=0.0)
    declare_n: Mapped[int] = mapped_column(sa.Integer, default=0)
    declare_sum: Mapped[float] = mapped_column(sa.Float, default=0.0)
    declare_squares: Mapped[float] = mapped_column(sa.Float, default=0.0)
    exits_0: Mapped[int] = mapped_column(sa.Integer, default=0)
    exits_1: Mapped[int] = mapped_column(sa.Integer, default=0)
    exits_2: Mapped[int] = mapped_column(sa.Integer, default=0)
    exits_3: Mapped[int] = mapped_column(sa.Integer, default=0)
    exits_4: Mapped[int] = mapped_column(sa.Integer, default=0)
    exits_5: Mapped[int] = mapped_column(sa.Integer, default=0)
    exits_6: Mapped[int] = mapped_column(sa.Integer, default=0)
    discards_0: Mapped[int] = mapped_column(sa.Integer, default=0)
    discards_1: Mapped[int] = mapped_column(sa.Integer, default=0)
    discards_2: Mapped[int] = mapped_column(sa.Integer, default=0)
    discards_3: Mapped[int] = mapped_column(sa.Integer, default=0)
    agreed_0: Mapped[int] = mapped_column(sa.Integer, default=0)
    agreed_1: Mapped[int] = mapped_column(sa.Integer, default=0)
    agreed_2: Mapped[int] = mapped_column(sa.Integer, default=0)
    agreed_3: Mapped[int] = mapped_column(sa.Integer, default=0)


class _PairSums:
    """A pair's sums on a day at a table: the columns of ``fairplay_pair_days`` and of the
    month's noted copy of its rows (``fairplay_noted_pair_days``), in the same order."""

    day: Mapped[str] = mapped_column(StoredText(10), primary_key=True)
    table_id: Mapped[str] = mapped_column(StoredText(64), primary_key=True)
    first: Mapped[str] = mapped_column(StoredText(64), primary_key=True)
    second: Mapped[str] = mapped_column(StoredText(64), primary_key=True)
    faced: Mapped[int] = mapped_column(sa.Integer, default=0)
    useful: Mapped[int] = mapped_column(sa.Integer, default=0)
    gain: Mapped[int] = mapped_column(sa.Integer, default=0)
    together: Mapped[int] = mapped_column(sa.Integer, default=0)
    strong: Mapped[int] = mapped_column(sa.Integer, default=0)
    strong_drops: Mapped[int] = mapped_column(sa.Integer, default=0)
    exits_0: Mapped[int] = mapped_column(sa.Integer, default=0)
    exits_1: Mapped[int] = mapped_column(sa.Integer, default=0)
    exits_2: Mapped[int] = mapped_column(sa.Integer, default=0)
    exits_3: Mapped[int] = mapped_column(sa.Integer, default=0)
    exits_4: Mapped[int] = mapped_column(sa.Integer, default=0)
    exits_5: Mapped[int] = mapped_column(sa.Integer, default=0)
    exits_6: Mapped[int] = mapped_column(sa.Integer, default=0)


class FairplayPairDay(_PairSums, Base):
    __tablename__ = "fairplay_pair_days"


class FairplayPartnerDay(Base):
    # Beside ``fairplay_player_days``, not in it: the player rows are kept as counted before.
    __tablename__ = "fairplay_partner_days"

    day: Mapped[str] = mapped_column(StoredText(10), primary_key=True)
    table_id: Mapped[str] = mapped_column(StoredText(64), primary_key=True)
    player: Mapped[str] = mapped_column(StoredText(64), primary_key=True)
    # The player row's games and takes again: a period's sums by player and table read
    # these narrow rows, not the wide ones.
    games: Mapped[int] = mapped_column(sa.Integer, default=0)
    faced: Mapped[int] = mapped_column(sa.Integer, default=0)
    useful: Mapped[int] = mapped_column(sa.Integer, default=0)
    partners: Mapped[int] = mapped_column(sa.Integer, default=0)
    fed: Mapped[int] = mapped_column(sa.Integer, default=0)
    given: Mapped[int] = mapped_column(sa.Integer, default=0)
    strong: Mapped[int] = mapped_column(sa.Integer, default=0)
    strong_drops: Mapped[int] = mapped_column(sa.Integer, default=0)


class FairplayNotedPairDay(_PairSums, Base):
    __tablename__ = "fairplay_noted_pair_days"


class FairplayNotedMonth(Base):
    __tablename__ = "fairplay_noted_months"

    month: Mapped[str] = mapped_column(StoredText(7), primary_key=True)
    games: Mapped[int] = mapped_column(sa.Integer)  # the month's games counted when noted


class FairplayTableDay(Base):
    __tablename__ = "fairplay_table_days"

    day: Mapped[str] = mapped_column(StoredText(10), primary_key=True)
    table_id: Mapped[str] = mapped_column(StoredText(64), primary_key=True)
    games: Mapped[int] = mapped_column(sa.Integer, default=0)
    faced: Mapped[int] = mapped_column(sa.Integer, default=0, server_default="0")
    useful: Mapped[int] = mapped_column(sa.Integer, default=0, server_default="0")


class FairplayEvidence(Base):
    __tablename__ = "fairplay_evidence"
    __table_args__ = (
        sa.Index("ix_fairplay_evidence_subject", "day", "signal", "first", "second"),
        # A review's flags' evidence: each subject's few rows of the period, found directly
        # (a month keeps a million rows, and by day alone every one of them was read).
        sa.Index("ix_fairplay_evidence_who", "signal", "first", "second", "day"),
    )

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    day: Mapped[str] = mapped_column(StoredText(10))
    table_id: Mapped[str] = mapped_column(StoredText(64))
    signal: Mapped[str] = mapped_column(StoredText(16))
    first: Mapped[str] = mapped_column(StoredText(64))
    second: Mapped[str] = mapped_column(StoredText(64))
    game_id: Mapped[str] = mapped_column(StoredText(64))
    step: Mapped[int] = mapped_column(sa.Integer)
    weight: Mapped[float] = mapped_column(sa.Float)
    note: Mapped[str] = mapped_column(StoredText(200))


class FairplayReview(Base):
    __tablename__ = "fairplay_reviews"

    start: Mapped[str] = mapped_column(StoredText(10), primary_key=True)
    end: Mapped[str] = mapped_column(StoredText(10), primary_key=True)
    table_id: Mapped[str] = mapped_column(StoredText(64), primary_key=True)  # "" for all
    fdr: Mapped[float] = mapped_column(sa.Float, primary_key=True)
    games: Mapped[int] = mapped_column(sa.Integer)  # the period's games it counted
    made_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True))
    body: Mapped[str] = mapped_column(StoredLongText)  # the review, flags and evidence, as JSON


def _spelled_out() -> None:
    # The columns are written out above (the schema check reads them); keep them in step
    # with the kinds and bands the summary counts.
    pair_columns = list(FairplayPairDay.__table__.columns.keys())
    assert list(FairplayNotedPairDay.__table__.columns.keys()) == pair_columns
    for model, timed in ((FairplayPlayerDay, True), (FairplayPairDay, False)):
        names = set(model.__table__.columns.keys())
        wanted = set(EXIT_COLUMNS) | (
            {c for cs in TIMING_COLUMNS.values() for c in cs}
            | set(DISCARD_COLUMNS)
            | set(AGREED_COLUMNS)
            if timed
            else set()
        )
        assert wanted <= names, (model.__tablename__, wanted - names)


_spelled_out()
