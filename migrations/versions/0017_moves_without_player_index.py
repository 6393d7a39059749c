"""moves: the index on player dropped

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-30

Nothing reads moves by player (a replay's timeline and a dispute's moves are read by game,
through the primary key), and every imported move paid for the index: an entry to insert
in the import's transaction, about 4 % of its WAL (issue 31: the primary's backend work a
game while it imports). The stored rows are unchanged.
"""

from __future__ import annotations

from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_moves_player", table_name="moves")


def downgrade() -> None:
    op.create_index("ix_moves_player", "moves", ["player"])
