"""fairplay_reviews: fair-play reviews worked out and kept, so the page reads one; the
evidence found by subject

Revision ID: 0015
Revises: 0013 (0014 is reserved for another change: point this at it once that lands)
Create Date: 2026-11-29

replays/fairplay/tables.py: each calendar month's review (stored by the catch-up) and the
other periods the page was asked for, with the number of games each counted; a review is
current while its period's counted games still add up to that. A read model. And an index
of fairplay_evidence by (signal, first, second, day): a review's flags' evidence rows.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "fairplay_reviews",
        sa.Column("start", sa.String(length=10), nullable=False),
        sa.Column("end", sa.String(length=10), nullable=False),
        sa.Column("table_id", sa.String(length=64), nullable=False),
        sa.Column("fdr", sa.Float(), nullable=False),
        sa.Column("games", sa.Integer(), nullable=False),
        sa.Column("made_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint(
            "start", "end", "table_id", "fdr", name=op.f("pk_fairplay_reviews")
        ),
    )
    with op.batch_alter_table("fairplay_evidence", schema=None) as batch_op:
        batch_op.create_index(
            "ix_fairplay_evidence_who", ["signal", "first", "second", "day"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("fairplay_evidence", schema=None) as batch_op:
        batch_op.drop_index("ix_fairplay_evidence_who")
    op.drop_table("fairplay_reviews")
