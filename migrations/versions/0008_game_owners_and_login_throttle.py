"""Games owned by the operator that created them (replays/access/ownership.py) and the sign-in
throttle's atomic counters (replays/access/accounts.py)

Revision ID: 0008
Revises: 0007
Create Date: 2025-03-04

Games already stored get no owner: no operator reaches them through the API until an
administrator writes their ``game_owners`` row (docs/operator-api.md, "Operators apart").
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "game_owners",
        sa.Column("game_id", sa.String(length=64), nullable=False),
        sa.Column("operator", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("game_id", name="pk_game_owners"),
    )
    op.create_index("ix_game_owners_operator", "game_owners", ["operator"])
    op.create_table(
        "login_throttle",
        sa.Column("scope", sa.String(length=8), nullable=False),
        sa.Column("username", sa.String(length=64), nullable=False),
        sa.Column("remote_addr", sa.String(length=64), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("window_start", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("scope", "username", "remote_addr", name="pk_login_throttle"),
    )


def downgrade() -> None:
    op.drop_table("login_throttle")
    op.drop_index("ix_game_owners_operator", table_name="game_owners")
    op.drop_table("game_owners")
