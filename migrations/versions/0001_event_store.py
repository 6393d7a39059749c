"""The event store's own tables, as eventsourcing-sqlalchemy declares them

Revision ID: 0001
Revises:
Create Date: 2025-03-01

``ledger_events`` holds every stored event; its ``id`` is the notification id that
projections follow. ``ledger_snapshots`` and ``ledger_tracking`` are the library's
snapshot and tracking tables. The prefix is the application's name (``Ledger``).

A database written before migrations existed (the application's ``CREATE_TABLE=yes``)
already has some of these: they are kept, not recreated.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy_utils.types.uuid import UUIDType

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _missing(table: str) -> bool:
    return not sa.inspect(op.get_bind()).has_table(table)


def upgrade() -> None:
    if _missing("ledger_events"):
        op.create_table(
            "ledger_events",
            sa.Column("id", BigId, autoincrement=True, nullable=False),
            sa.Column("originator_id", UUIDType(binary=True), nullable=False),
            sa.Column("originator_version", BigId, nullable=False),
            sa.Column("topic", sa.Text(), nullable=False),
            sa.Column("state", sa.LargeBinary(), nullable=False),
            sa.PrimaryKeyConstraint("id"),
        )
        op.create_index(
            "ledger_events_aggregate_idx",
            "ledger_events",
            ["originator_id", "originator_version"],
            unique=True,
        )
    if _missing("ledger_snapshots"):
        op.create_table(
            "ledger_snapshots",
            sa.Column("originator_id", UUIDType(binary=True), nullable=False),
            sa.Column("originator_version", BigId, nullable=False),
            sa.Column("topic", sa.Text(), nullable=False),
            sa.Column("state", sa.LargeBinary(), nullable=False),
            sa.PrimaryKeyConstraint("originator_id", "originator_version"),
        )
    if _missing("ledger_tracking"):
        op.create_table(
            "ledger_tracking",
            sa.Column("application_name", sa.String(length=32), nullable=False),
            sa.Column("notification_id", BigId, nullable=True),
            sa.PrimaryKeyConstraint("application_name"),
        )


def downgrade() -> None:
    op.drop_table("ledger_tracking")
    op.drop_table("ledger_snapshots")
    op.drop_index("ledger_events_aggregate_idx", table_name="ledger_events")
    op.drop_table("ledger_events")
