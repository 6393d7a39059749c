"""player_results.scoring_case holds the longest case name (33 characters)

Revision ID: 0005
Revises: 0004
Create Date: 2025-03-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("player_results") as batch:
        batch.alter_column(
            "scoring_case", type_=sa.String(length=40), existing_type=sa.String(length=24)
        )


def downgrade() -> None:
    with op.batch_alter_table("player_results") as batch:
        batch.alter_column(
            "scoring_case", type_=sa.String(length=24), existing_type=sa.String(length=40)
        )
