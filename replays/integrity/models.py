"""Tables that make tampering with stored events evident (see ``docs/integrity.md``).

They live apart from the events so that a change made to an event row alone shows:

- :class:`Seal` (``integrity_seals``): one row per sealed event, in notification order;
  ``position`` is the event's leaf index in the global Merkle tree. It keeps the event's
  identity, its leaf hash and the game's chain value after it.
- :class:`GameChainHead` (``integrity_games``): per game (aggregate), the record's game id,
  the last sealed version and chain value: where the next seal continues from.
- :class:`TreeNode` (``integrity_nodes``): hashes of complete subtrees of
  ``2**level`` leaves (levels :data:`NODE_MIN_LEVEL` and up), so proofs and per-game
  verdicts need ``O(log n)`` lookups instead of every leaf. Lower levels are rebuilt
  from at most ``2**NODE_MIN_LEVEL`` seals.
- :class:`TreeHead` (``integrity_head``): one row, the tree as the last write left it: its
  size, the last sealed notification id, the frontier (the hashes a tree needs to take
  more leaves) and the root. Each save reads it and moves it on, under the event store's
  write lock, in the transaction that stores the events (:mod:`replays.integrity.append`).
- :class:`CheckpointRow` (``integrity_checkpoints``): every signed tree head issued, as
  signed; the auditor's copies outside the system are what really count.
- :class:`ReplayMemo` (``integrity_replay_memos``): per game, what the replay of its events
  gave, under a MAC, so that its page's badge need not replay it again.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from replays.store.db import Base, StoredLongText, StoredText

NODE_MIN_LEVEL = 4  # subtrees of 16+ leaves are stored; smaller ones are recomputed


class Seal(Base):
    __tablename__ = "integrity_seals"

    position: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, autoincrement=False)
    notification_id: Mapped[int] = mapped_column(sa.BigInteger, unique=True)
    originator_id: Mapped[UUID] = mapped_column(sa.Uuid)
    originator_version: Mapped[int] = mapped_column(sa.BigInteger)
    game_id: Mapped[str] = mapped_column(StoredText(200), index=True)
    leaf_hash: Mapped[bytes] = mapped_column(sa.LargeBinary(32))
    chain_hash: Mapped[bytes] = mapped_column(sa.LargeBinary(32))

    __table_args__ = (
        sa.UniqueConstraint("originator_id", "originator_version", name="uq_integrity_seals_event"),
    )


class GameChainHead(Base):
    __tablename__ = "integrity_games"

    originator_id: Mapped[UUID] = mapped_column(sa.Uuid, primary_key=True)
    game_id: Mapped[str] = mapped_column(StoredText(200), index=True)
    version: Mapped[int] = mapped_column(sa.BigInteger)
    chain_hash: Mapped[bytes] = mapped_column(sa.LargeBinary(32))
    last_position: Mapped[int] = mapped_column(sa.BigInteger)


class TreeNode(Base):
    __tablename__ = "integrity_nodes"

    level: Mapped[int] = mapped_column(sa.SmallInteger, primary_key=True, autoincrement=False)
    index: Mapped[int] = mapped_column(sa.BigInteger, primary_key=True, autoincrement=False)
    hash: Mapped[bytes] = mapped_column(sa.LargeBinary(32))


HEAD_ID = 1  # the tree head's only row


class TreeHead(Base):
    __tablename__ = "integrity_head"

    # One row, so that a write finds where to go on with one key lookup.
    id: Mapped[int] = mapped_column(sa.SmallInteger, primary_key=True, autoincrement=False)
    size: Mapped[int] = mapped_column(sa.BigInteger)
    notification_id: Mapped[int] = mapped_column(sa.BigInteger)
    frontier: Mapped[bytes] = mapped_column(sa.LargeBinary)
    root: Mapped[bytes] = mapped_column(sa.LargeBinary(32))


class CheckpointRow(Base):
    __tablename__ = "integrity_checkpoints"

    id: Mapped[int] = mapped_column(
        sa.BigInteger().with_variant(sa.Integer(), "sqlite"), primary_key=True, autoincrement=True
    )
    size: Mapped[int] = mapped_column(sa.BigInteger, index=True)
    root: Mapped[str] = mapped_column(StoredText(64))
    time: Mapped[str] = mapped_column(StoredText(20))
    key_id: Mapped[str] = mapped_column(StoredText(16))
    signature: Mapped[str] = mapped_column(StoredText(128))


class ReplayMemo(Base):
    """What one game's replay gave, remembered for its badge (:mod:`replays.integrity.replay_memos`):
    the digest of the replay's inputs, the digest of the read rows found to match, the
    deal check's notes, the rows the events give, and the MAC over all of it."""

    __tablename__ = "integrity_replay_memos"

    game_id: Mapped[str] = mapped_column(StoredText(200), primary_key=True)
    digest: Mapped[bytes] = mapped_column(sa.LargeBinary(32))
    rows_digest: Mapped[bytes | None] = mapped_column(sa.LargeBinary(32), nullable=True)
    notes: Mapped[str] = mapped_column(StoredLongText)
    body: Mapped[bytes] = mapped_column(sa.LargeBinary)
    mac: Mapped[bytes] = mapped_column(sa.LargeBinary(32))
    made_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True))


INTEGRITY_TABLES = [
    model.__table__ for model in (Seal, GameChainHead, TreeNode, TreeHead, CheckpointRow)
]
# Created with them, but not required: a store without memos replays every game it checks.
MEMO_TABLES = [ReplayMemo.__table__]
