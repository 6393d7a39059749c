"""API tokens (replays/access/tokens.py) and integrity seals (replays/integrity/models.py)

Revision ID: 0003
Revises: 0002
Create Date: 2025-03-01

Both modules can also create their tables directly (tests, databases Alembic does not
manage), so a table that is already there is kept rather than recreated.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _missing(table: str) -> bool:
    return not sa.inspect(op.get_bind()).has_table(table)


def upgrade() -> None:
    if _missing("api_tokens"):
        op.create_table(
            "api_tokens",
            sa.Column("token_id", sa.String(length=16), nullable=False),
            sa.Column("operator", sa.String(length=64), nullable=False),
            sa.Column("token_hash", sa.String(length=64), nullable=False),
            sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
            sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
            sa.PrimaryKeyConstraint("token_id", name="pk_api_tokens"),
            sa.UniqueConstraint("token_hash", name="uq_api_tokens_token_hash"),
        )
        op.create_index("ix_api_tokens_operator", "api_tokens", ["operator"])

    if _missing("integrity_checkpoints"):
        op.create_table(
            "integrity_checkpoints",
            sa.Column("id", BigId, autoincrement=True, nullable=False),
            sa.Column("size", sa.BigInteger(), nullable=False),
            sa.Column("root", sa.String(length=64), nullable=False),
            sa.Column("time", sa.String(length=20), nullable=False),
            sa.Column("key_id", sa.String(length=16), nullable=False),
            sa.Column("signature", sa.String(length=128), nullable=False),
            sa.PrimaryKeyConstraint("id", name="pk_integrity_checkpoints"),
        )
        op.create_index("ix_integrity_checkpoints_size", "integrity_checkpoints", ["size"])

    if _missing("integrity_games"):
        op.create_table(
            "integrity_games",
            sa.Column("originator_id", sa.Uuid(), nullable=False),
            sa.Column("game_id", sa.String(length=200), nullable=False),
            sa.Column("version", sa.BigInteger(), nullable=False),
            sa.Column("chain_hash", sa.LargeBinary(length=32), nullable=False),
            sa.Column("last_position", sa.BigInteger(), nullable=False),
            sa.PrimaryKeyConstraint("originator_id", name="pk_integrity_games"),
        )
        op.create_index("ix_integrity_games_game_id", "integrity_games", ["game_id"])

    if _missing("integrity_nodes"):
        op.create_table(
            "integrity_nodes",
            sa.Column("level", sa.SmallInteger(), autoincrement=False, nullable=False),
            sa.Column("index", sa.BigInteger(), autoincrement=False, nullable=False),
            sa.Column("hash", sa.LargeBinary(length=32), nullable=False),
            sa.PrimaryKeyConstraint("level", "index", name="pk_integrity_nodes"),
        )

    if _missing("integrity_seals"):
        op.create_table(
            "integrity_seals",
            sa.Column("position", sa.BigInteger(), autoincrement=False, nullable=False),
            sa.Column("notification_id", sa.BigInteger(), nullable=False),
            sa.Column("originator_id", sa.Uuid(), nullable=False),
            sa.Column("originator_version", sa.BigInteger(), nullable=False),
            sa.Column("game_id", sa.String(length=200), nullable=False),
            sa.Column("leaf_hash", sa.LargeBinary(length=32), nullable=False),
            sa.Column("chain_hash", sa.LargeBinary(length=32), nullable=False),
            sa.PrimaryKeyConstraint("position", name="pk_integrity_seals"),
            sa.UniqueConstraint("notification_id", name="uq_integrity_seals_notification_id"),
            sa.UniqueConstraint(
                "originator_id", "originator_version", name="uq_integrity_seals_event"
            ),
        )
        op.create_index("ix_integrity_seals_game_id", "integrity_seals", ["game_id"])


def downgrade() -> None:
    op.drop_table("integrity_seals")
    op.drop_table("integrity_nodes")
    op.drop_table("integrity_games")
    op.drop_table("integrity_checkpoints")
    op.drop_table("api_tokens")
