"""ledger_events, ledger_snapshots: a large state compressed with lz4 (PostgreSQL)

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-30

PostgreSQL compresses a value of more than about 2 kB before storing it, with pglz unless a
column says otherwise: every snapshot's state (11 kB on average) and the odd long event.
pglz was 9 % of the instructions the primary's backend spent importing a game (callgrind,
issue 31); lz4 makes the same values for about a tenth of that. A value reads back
byte for byte the same whichever compressed it, and values stored before keep theirs.
A server built without lz4 keeps pglz. SQLite compresses nothing: nothing to do there.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

_STATES = (("ledger_events", "state"), ("ledger_snapshots", "state"))


def _set(method: str) -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    offered = bind.execute(
        sa.text("SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'")
    ).scalar()
    if method not in (offered or ()):
        return
    for table, column in _STATES:
        op.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION {method}")


def upgrade() -> None:
    _set("lz4")


def downgrade() -> None:
    _set("pglz")
