"""fairplay_table_days: each day and table's discards faced and useful takes

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-30

replays/fairplay/tables.py: beside a day and table's games, the discards faced there by the
next player and those taken to the picker's gain (its players' ``faced`` and ``useful``
added up), so that a period's rate of useful takes at each table is summed from a few
hundred rows, not from every player's. A read model: filled here from the kept player rows,
as a rebuild fills it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("fairplay_table_days", schema=None) as batch_op:
        batch_op.add_column(sa.Column("faced", sa.Integer(), server_default="0", nullable=False))
        batch_op.add_column(sa.Column("useful", sa.Integer(), server_default="0", nullable=False))
    kept = (
        "FROM fairplay_player_days p WHERE p.day = fairplay_table_days.day "
        "AND p.table_id = fairplay_table_days.table_id"
    )
    op.execute(
        f"UPDATE fairplay_table_days SET faced = COALESCE((SELECT sum(p.faced) {kept}), 0), "
        f"useful = COALESCE((SELECT sum(p.useful) {kept}), 0)"
    )


def downgrade() -> None:
    with op.batch_alter_table("fairplay_table_days", schema=None) as batch_op:
        batch_op.drop_column("useful")
        batch_op.drop_column("faced")
