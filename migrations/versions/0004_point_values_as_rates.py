"""Point values and fee percents kept to six decimals (a raise step of 0.005 exists)

Revision ID: 0004
Revises: 0003
Create Date: 2025-03-01

The columns stay BIGINT; what changes is the scale ``replays.readmodels.models.Rate`` stores them at:
millionths instead of hundredths (fee percent: ten-thousandths before). Rows already
projected are rescaled in place, so no rebuild is needed.
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

# (table, column, factor from the old scale to the new one)
RESCALED = (
    ("games", "point_value", 10_000),
    ("games", "final_point_value", 10_000),
    ("games", "fee_percent", 100),
    ("player_results", "point_value", 10_000),
    ("moves", "point_value", 10_000),
)


def upgrade() -> None:
    for table, column, factor in RESCALED:
        op.execute(f"UPDATE {table} SET {column} = {column} * {factor}")


def downgrade() -> None:
    # Values finer than the old scale cannot be kept: they round toward zero.
    for table, column, factor in RESCALED:
        op.execute(f"UPDATE {table} SET {column} = {column} / {factor}")
