"""fairplay_*: the fair-play review's sufficient statistics per day, table, player and pair

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-29

replays/fairplay/tables.py: games counted, per-player and per-pair counts and sums by day and
table (move times and exit bands in plain numeric columns, so a period adds up in SQL), and
the heaviest evidence moves. A read model: rebuilt from the events on demand.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "fairplay_evidence",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("table_id", sa.String(length=64), nullable=False),
        sa.Column("signal", sa.String(length=16), nullable=False),
        sa.Column("first", sa.String(length=64), nullable=False),
        sa.Column("second", sa.String(length=64), nullable=False),
        sa.Column("game_id", sa.String(length=64), nullable=False),
        sa.Column("step", sa.Integer(), nullable=False),
        sa.Column("weight", sa.Float(), nullable=False),
        sa.Column("note", sa.String(length=200), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_fairplay_evidence")),
    )
    with op.batch_alter_table("fairplay_evidence", schema=None) as batch_op:
        batch_op.create_index(
            "ix_fairplay_evidence_subject", ["day", "signal", "first", "second"], unique=False
        )

    op.create_table(
        "fairplay_games",
        sa.Column("game_id", sa.String(length=64), nullable=False),
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("table_id", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("game_id", name=op.f("pk_fairplay_games")),
    )
    with op.batch_alter_table("fairplay_games", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_fairplay_games_day"), ["day"], unique=False)

    op.create_table(
        "fairplay_pair_days",
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
            "day", "table_id", "first", "second", name=op.f("pk_fairplay_pair_days")
        ),
    )
    op.create_table(
        "fairplay_player_days",
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("table_id", sa.String(length=64), nullable=False),
        sa.Column("player", sa.String(length=64), nullable=False),
        sa.Column("games", sa.Integer(), nullable=False),
        sa.Column("choices", sa.Integer(), nullable=False),
        sa.Column("choice_sum", sa.Float(), nullable=False),
        sa.Column("choice_var", sa.Float(), nullable=False),
        sa.Column("faced", sa.Integer(), nullable=False),
        sa.Column("useful", sa.Integer(), nullable=False),
        sa.Column("pick_n", sa.Integer(), nullable=False),
        sa.Column("pick_sum", sa.Float(), nullable=False),
        sa.Column("pick_squares", sa.Float(), nullable=False),
        sa.Column("discard_n", sa.Integer(), nullable=False),
        sa.Column("discard_sum", sa.Float(), nullable=False),
        sa.Column("discard_squares", sa.Float(), nullable=False),
        sa.Column("drop_n", sa.Integer(), nullable=False),
        sa.Column("drop_sum", sa.Float(), nullable=False),
        sa.Column("drop_squares", sa.Float(), nullable=False),
        sa.Column("declare_n", sa.Integer(), nullable=False),
        sa.Column("declare_sum", sa.Float(), nullable=False),
        sa.Column("declare_squares", sa.Float(), nullable=False),
        sa.Column("exits_0", sa.Integer(), nullable=False),
        sa.Column("exits_1", sa.Integer(), nullable=False),
        sa.Column("exits_2", sa.Integer(), nullable=False),
        sa.Column("exits_3", sa.Integer(), nullable=False),
        sa.Column("exits_4", sa.Integer(), nullable=False),
        sa.Column("exits_5", sa.Integer(), nullable=False),
        sa.Column("exits_6", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("day", "table_id", "player", name=op.f("pk_fairplay_player_days")),
    )
    op.create_table(
        "fairplay_table_days",
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("table_id", sa.String(length=64), nullable=False),
        sa.Column("games", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("day", "table_id", name=op.f("pk_fairplay_table_days")),
    )


def downgrade() -> None:
    op.drop_table("fairplay_table_days")
    op.drop_table("fairplay_player_days")
    op.drop_table("fairplay_pair_days")
    with op.batch_alter_table("fairplay_games", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_fairplay_games_day"))

    op.drop_table("fairplay_games")
    with op.batch_alter_table("fairplay_evidence", schema=None) as batch_op:
        batch_op.drop_index("ix_fairplay_evidence_subject")

    op.drop_table("fairplay_evidence")
