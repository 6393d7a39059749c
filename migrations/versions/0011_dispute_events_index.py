"""ix_ledger_events_dispute_cases: a partial index of dispute cases' events

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-25

A game's verdict (its page's badge) checks its dispute adjustments against their cases'
events; without this index that meant reading every event of the store on every view.
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

WHERE = "topic LIKE 'rummy_ledger:DisputeCase.%'"


def upgrade() -> None:
    # The ledger creates it itself on a store it opens first (replays/store/recorders.py).
    op.execute(
        "CREATE INDEX IF NOT EXISTS ix_ledger_events_dispute_cases ON ledger_events "
        f"(originator_id, originator_version) WHERE {WHERE}"
    )


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ix_ledger_events_dispute_cases")
