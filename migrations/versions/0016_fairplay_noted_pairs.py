"""fairplay_partner_days, fairplay_noted_*: a period reviewed without reading every pair

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-30

replays/fairplay/tables.py: per day, table and player what the player's pairs add up to (the
populations the pair signals weigh against); per calendar month the pair-day rows of the
pairs whose month sums reach a pair signal's floor, with their reverses (the only pairs a
period inside the month can test), and the games the month had counted when they were
noted. Read models: filled here from the kept rows (floors as replays/fairplay/signals.py's
PAIR_FLOORS at this revision), as a rebuild fills them.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_COLUMNS = ", ".join(
    [
        "day",
        "table_id",
        "first",
        "second",
        "faced",
        "useful",
        "gain",
        "together",
        "strong",
        "strong_drops",
        "exits_0",
        "exits_1",
        "exits_2",
        "exits_3",
        "exits_4",
        "exits_5",
        "exits_6",
    ]
)
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
        sa.Column("games", sa.Integer(), nullable=False),
        sa.Column("faced", sa.Integer(), nullable=False),
        sa.Column("useful", sa.Integer(), nullable=False),
        sa.Column("partners", sa.Integer(), nullable=False),
        sa.Column("fed", sa.Integer(), nullable=False),
        sa.Column("given", sa.Integer(), nullable=False),
        sa.Column("strong", sa.Integer(), nullable=False),
        sa.Column("strong_drops", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("day", "table_id", "player", name=op.f("pk_fairplay_partner_days")),
    )
    op.create_table(
        "fairplay_noted_pair_days",
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("table_id", sa.String(length=64), nullable=False),
        sa.Column("first", sa.String(length=64), nullable=False),
        sa.Column("second", sa.String(length=64), nullable=False),
        sa.Column("faced", sa.Integer(), nullable=False),
        sa.Column("useful", sa.Integer(), nullable=False),
        sa.Column("gain", sa.Integer(), nullable=False),
        sa.Column("together", sa.Integer(), nullable=False),
        sa.Column("strong", sa.Integer(), nullable=False),
        sa.Column("strong_drops", sa.Integer(), nullable=False),
        sa.Column("exits_0", sa.Integer(), nullable=False),
        sa.Column("exits_1", sa.Integer(), nullable=False),
        sa.Column("exits_2", sa.Integer(), nullable=False),
        sa.Column("exits_3", sa.Integer(), nullable=False),
        sa.Column("exits_4", sa.Integer(), nullable=False),
        sa.Column("exits_5", sa.Integer(), nullable=False),
        sa.Column("exits_6", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint(
            "day", "table_id", "first", "second", name=op.f("pk_fairplay_noted_pair_days")
        ),
    )
    op.create_table(
        "fairplay_noted_months",
        sa.Column("month", sa.String(length=7), nullable=False),
        sa.Column("games", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("month", name=op.f("pk_fairplay_noted_months")),
    )
    # Each player of a counted game has a player row; its pairs give the partner row.
    op.execute(
        "INSERT INTO fairplay_partner_days (day, table_id, player, games, faced, useful, "
        "partners, fed, given, strong, strong_drops) "
        "SELECT p.day, p.table_id, p.player, p.games, p.faced, p.useful, "
        "COALESCE((SELECT sum(together) FROM fairplay_pair_days r WHERE r.day = p.day AND "
        "r.table_id = p.table_id AND (r.first = p.player OR r.second = p.player)), 0), "
        "COALESCE(sum(r.faced), 0), COALESCE(sum(r.useful), 0), COALESCE(sum(r.strong), 0), "
        "COALESCE(sum(r.strong_drops), 0) FROM fairplay_player_days p LEFT JOIN "
        "fairplay_pair_days r ON r.day = p.day AND r.table_id = p.table_id AND "
        "r.first = p.player GROUP BY p.day, p.table_id, p.player, p.games, p.faced, p.useful"
    )
    reached = (
        "SELECT substr(day, 1, 7) AS month, first, second FROM fairplay_pair_days "
        f"GROUP BY substr(day, 1, 7), first, second HAVING {_FLOORS}"
    )
    op.execute(
        f"INSERT INTO fairplay_noted_pair_days ({_COLUMNS}) SELECT {_COLUMNS} FROM "
        f"fairplay_pair_days r WHERE (substr(r.day, 1, 7), r.first, r.second) IN "
        f"(SELECT month, first, second FROM ({reached}) AS a UNION "
        f"SELECT month, second, first FROM ({reached}) AS b)"
    )
    op.execute(
        "INSERT INTO fairplay_noted_months (month, games) SELECT substr(day, 1, 7), sum(games) "
        "FROM fairplay_table_days GROUP BY substr(day, 1, 7)"
    )


def downgrade() -> None:
    op.drop_table("fairplay_noted_months")
    op.drop_table("fairplay_noted_pair_days")
    op.drop_table("fairplay_partner_days")
