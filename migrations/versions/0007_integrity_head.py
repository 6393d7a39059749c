"""The integrity tree head (replays/integrity/models.py): sealing moved into the save

Revision ID: 0007
Revises: 0006
Create Date: 2025-03-03

Every save now seals its own events in the transaction that stores them, continuing the
Merkle tree from this one row. A store written before this revision may hold events that
were never sealed: run `rummy-ledger seal` once after upgrading (docs/integrity.md §3);
until then the ledger refuses new writes rather than leave those events behind.

The table may already be there when the application created it directly (tests, a
database Alembic did not manage), so it is kept rather than recreated.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if sa.inspect(op.get_bind()).has_table("integrity_head"):
        return
    op.create_table(
        "integrity_head",
        sa.Column("id", sa.SmallInteger(), autoincrement=False, nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("notification_id", sa.BigInteger(), nullable=False),
        sa.Column("frontier", sa.LargeBinary(), nullable=False),
        sa.Column("root", sa.LargeBinary(length=32), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_integrity_head"),
    )


def downgrade() -> None:
    op.drop_table("integrity_head")
