"""integrity_replay_memos: what a game's replay gave, under a MAC (replays/integrity/models.py)

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-25

A game page's badge reuses a replay of the game's events made from exactly the same stored
events and snapshots instead of replaying them again (docs/integrity.md, "Remembered
replays"); the read rows are still compared on every view.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # The ledger creates it with the integrity tables when it opens a new store.
    if sa.inspect(op.get_bind()).has_table("integrity_replay_memos"):
        return
    op.create_table(
        "integrity_replay_memos",
        sa.Column("game_id", sa.String(length=200), nullable=False),
        sa.Column("digest", sa.LargeBinary(length=32), nullable=False),
        sa.Column("rows_digest", sa.LargeBinary(length=32), nullable=True),
        sa.Column("notes", sa.Text(), nullable=False),
        sa.Column("body", sa.LargeBinary(), nullable=False),
        sa.Column("mac", sa.LargeBinary(length=32), nullable=False),
        sa.Column("made_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("game_id", name="pk_integrity_replay_memos"),
    )


def downgrade() -> None:
    op.drop_table("integrity_replay_memos")
