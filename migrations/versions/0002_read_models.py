"""Read models: games, player results, move timeline, ledger entries, projection positions

Revision ID: 0002
Revises: 0001
Create Date: 2025-03-01

Money columns are BIGINT in the smallest unit (paise; ``fee_percent`` in 1/10000 %),
mapped to Decimal by ``replays.readmodels.models.Fixed``: exact sums on SQLite and PostgreSQL.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
Money = sa.BigInteger


def _game_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["game_id"], ["games.game_id"], name=f"fk_{table}_game_id_games", ondelete="CASCADE"
    )


def upgrade() -> None:
    op.create_table(
        "games",
        sa.Column("game_id", sa.String(length=64), nullable=False),
        sa.Column("originator_id", sa.String(length=36), nullable=False),
        sa.Column("variant", sa.String(length=16), nullable=False),
        sa.Column("rules", sa.String(length=32), nullable=False),
        sa.Column("table_id", sa.String(length=64), nullable=True),
        sa.Column("currency", sa.String(length=8), nullable=False),
        sa.Column("players", sa.JSON(), nullable=False),
        sa.Column("player_count", sa.Integer(), nullable=False),
        sa.Column("dealer", sa.String(length=64), nullable=True),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("ended_on", sa.Date(), nullable=True),
        sa.Column("point_value", Money(), nullable=False),
        sa.Column("final_point_value", Money(), nullable=True),
        sa.Column("fee_percent", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("moves_count", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("winner", sa.String(length=64), nullable=True),
        sa.Column("gross", Money(), nullable=True),
        sa.Column("fee", Money(), nullable=True),
        sa.Column("net_to_winner", Money(), nullable=True),
        sa.Column("settlement_hash", sa.String(length=64), nullable=True),
        sa.Column("recomputed_hash", sa.String(length=64), nullable=True),
        sa.Column("discrepancy", sa.Boolean(), nullable=False),
        sa.Column("discrepancy_note", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("game_id", name="pk_games"),
        sa.UniqueConstraint("originator_id", name="uq_games_originator_id"),
    )
    op.create_index("ix_games_ended_on", "games", ["ended_on"])
    op.create_index("ix_games_table_id_ended_on", "games", ["table_id", "ended_on"])
    op.create_index("ix_games_status", "games", ["status"])
    op.create_index("ix_games_discrepancy", "games", ["discrepancy"])

    op.create_table(
        "player_results",
        sa.Column("game_id", sa.String(length=64), nullable=False),
        sa.Column("player", sa.String(length=64), nullable=False),
        sa.Column("seat", sa.Integer(), nullable=False),
        sa.Column("result", sa.String(length=16), nullable=False),
        sa.Column("points", sa.Integer(), nullable=False),
        sa.Column("point_value", Money(), nullable=False),
        sa.Column("amount", Money(), nullable=False),
        sa.Column("hand_score", sa.Integer(), nullable=True),
        sa.Column("min_score", sa.Integer(), nullable=True),
        sa.Column("scoring_case", sa.String(length=24), nullable=True),
        sa.Column("ended_at_round", sa.Integer(), nullable=True),
        _game_fk("player_results"),
        sa.PrimaryKeyConstraint("game_id", "player", name="pk_player_results"),
    )
    op.create_index("ix_player_results_player", "player_results", ["player", "game_id"])

    op.create_table(
        "moves",
        sa.Column("game_id", sa.String(length=64), nullable=False),
        sa.Column("move_index", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("player", sa.String(length=64), nullable=True),
        sa.Column("move_type", sa.String(length=16), nullable=False),
        sa.Column("card", sa.String(length=4), nullable=True),
        sa.Column("source", sa.String(length=8), nullable=True),
        sa.Column("groups", sa.JSON(), nullable=True),
        sa.Column("round", sa.Integer(), nullable=False),
        sa.Column("point_value", Money(), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=True),
        _game_fk("moves"),
        sa.PrimaryKeyConstraint("game_id", "move_index", name="pk_moves"),
    )
    op.create_index("ix_moves_player", "moves", ["player"])

    op.create_table(
        "ledger_entries",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("game_id", sa.String(length=64), nullable=False),
        sa.Column("dispute_id", sa.String(length=64), nullable=True),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("line", sa.Integer(), nullable=False),
        sa.Column("account", sa.String(length=80), nullable=False),
        sa.Column("player", sa.String(length=64), nullable=True),
        sa.Column("debit", Money(), nullable=False),
        sa.Column("credit", Money(), nullable=False),
        sa.Column("currency", sa.String(length=8), nullable=False),
        sa.Column("posted_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("posted_on", sa.Date(), nullable=True),
        _game_fk("ledger_entries"),
        sa.PrimaryKeyConstraint("id", name="pk_ledger_entries"),
    )
    op.create_index("ix_ledger_entries_game_id", "ledger_entries", ["game_id"])
    op.create_index("ix_ledger_entries_posted_on", "ledger_entries", ["posted_on"])
    op.create_index("ix_ledger_entries_account", "ledger_entries", ["account"])
    op.create_index("ix_ledger_entries_dispute_id", "ledger_entries", ["dispute_id"])

    op.create_table(
        "projection_positions",
        sa.Column("name", sa.String(length=32), nullable=False),
        sa.Column("position", sa.BigInteger(), nullable=False),
        sa.Column("events_applied", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("name", name="pk_projection_positions"),
    )


def downgrade() -> None:
    op.drop_table("projection_positions")
    op.drop_table("ledger_entries")
    op.drop_table("moves")
    op.drop_table("player_results")
    op.drop_table("games")
