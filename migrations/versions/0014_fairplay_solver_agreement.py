"""fairplay_player_days: solver agreement per class of discard (the bot-like play signal)

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-29

replays/fairplay/tables.py: per player, day and table, the discards weighed against the
solver and those that left no more than the solver's choice, by how many links the
solver's choice had with the cards kept (``discards_0`` … ``discards_3``, ``agreed_0`` …
``agreed_3``). Plain integer columns, so a period adds up in SQL. Rows counted before
this revision read 0 (no discard weighed) until ``rummy-ledger fairplay --rebuild``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

COLUMNS = [f"discards_{links}" for links in range(4)] + [f"agreed_{links}" for links in range(4)]


def upgrade() -> None:
    with op.batch_alter_table("fairplay_player_days", schema=None) as batch_op:
        for name in COLUMNS:
            batch_op.add_column(
                sa.Column(name, sa.Integer(), nullable=False, server_default=sa.text("0"))
            )


def downgrade() -> None:
    with op.batch_alter_table("fairplay_player_days", schema=None) as batch_op:
        for name in reversed(COLUMNS):
            batch_op.drop_column(name)
