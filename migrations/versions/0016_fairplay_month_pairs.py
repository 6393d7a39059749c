"""fairplay_partner_days, fairplay_month_pairs: a period reviewed without reading every pair

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-30

replays/fairplay/tables.py: per day, table and player what the player's pairs add up to (the
populations the pair signals weigh against), and per calendar month the pairs whose month
sums reach a pair signal's floor, with their reverses (the only pairs a period inside the
month can test). Read models: both are filled here from the kept ``fairplay_pair_days``
(floors as replays/fairplay/signals.py's PAIR_FLOORS at this revision), as a rebuild fills them.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_EXITS = " + ".join(f"exits_{place}" for place in range(7))
# PAIR_FLOORS: feeding (5 faced, 2 useful), seating (3 together), folding (3 strong, 2
# drops), dumping (3 exits).
_FLOORS = (
    "(sum(faced) >= 5 AND sum(useful) >= 2) OR sum(together) >= 3 "
    f"OR (sum(strong) >= 3 AND sum(strong_drops) >= 2) OR sum({_EXITS}) >= 3"
)


def upgrade() -> None:
    op.create_table(
        "fairplay_partner_days",
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("table_id", sa.String(length=64), nullable=False),
        sa.Column("player", sa.String(length=64), nullable=False),
        sa.Column("partners", sa.Integer(), nullable=False),
        sa.Column("fed", sa.Integer(), nullable=False),
        sa.Column("given", sa.Integer(), nullable=False),
        sa.Column("strong", sa.Integer(), nullable=False),
        sa.Column("strong_drops", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("day", "table_id", "player", name=op.f("pk_fairplay_partner_days")),
    )
    op.create_table(
        "fairplay_month_pairs",
        sa.Column("month", sa.String(length=7), nullable=False),
        sa.Column("first", sa.String(length=64), nullable=False),
        sa.Column("second", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("month", "first", "second", name=op.f("pk_fairplay_month_pairs")),
    )
    # Each player of a counted game has a player row; its pairs give the partner row.
    op.execute(
        "INSERT INTO fairplay_partner_days (day, table_id, player, partners, fed, given, strong, "
        "strong_drops) SELECT p.day, p.table_id, p.player, "
        "COALESCE((SELECT sum(together) FROM fairplay_pair_days r WHERE r.day = p.day AND "
        "r.table_id = p.table_id AND (r.first = p.player OR r.second = p.player)), 0), "
        "COALESCE(sum(r.faced), 0), COALESCE(sum(r.useful), 0), COALESCE(sum(r.strong), 0), "
        "COALESCE(sum(r.strong_drops), 0) FROM fairplay_player_days p LEFT JOIN "
        "fairplay_pair_days r ON r.day = p.day AND r.table_id = p.table_id AND "
        "r.first = p.player GROUP BY p.day, p.table_id, p.player"
    )
    pairs = (
        "SELECT substr(day, 1, 7) AS month, first, second FROM fairplay_pair_days "
        f"GROUP BY substr(day, 1, 7), first, second HAVING {_FLOORS}"
    )
    op.execute(
        "INSERT INTO fairplay_month_pairs (month, first, second) "
        f"SELECT month, first, second FROM ({pairs}) AS a UNION "
        f"SELECT month, second, first FROM ({pairs}) AS b"
    )


def downgrade() -> None:
    op.drop_table("fairplay_month_pairs")
    op.drop_table("fairplay_partner_days")
