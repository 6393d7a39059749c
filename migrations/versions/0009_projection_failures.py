"""projection_failures: events a projection could not apply (replays/readmodels/models.py)

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23

A failing event no longer stops the read side: the runner records it here, sets its game
aside and goes on (docs/read-models.md, "When an event fails to project").
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "projection_failures",
        sa.Column("projection", sa.String(length=48), nullable=False),
        sa.Column("originator_id", sa.String(length=36), nullable=False),
        sa.Column("notification_id", sa.BigInteger(), nullable=False),
        sa.Column("game_id", sa.String(length=200), nullable=True),
        sa.Column("event_type", sa.String(length=200), nullable=False),
        sa.Column("event_version", sa.BigInteger(), nullable=False),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("first_seen", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_attempt", sa.DateTime(timezone=True), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("projection", "originator_id", name="pk_projection_failures"),
    )


def downgrade() -> None:
    op.drop_table("projection_failures")
