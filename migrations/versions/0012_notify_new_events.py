"""PostgreSQL: a statement trigger on ledger_events sends NOTIFY rummy_ledger_events

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-29

The projection worker (`rummy-ledger projections run --follow`) LISTENs on the channel and
wakes as soon as events are committed instead of polling (docs/deploying.md). PostgreSQL
delivers a notification only when the transaction that stored the events commits, and
folds identical ones of one transaction into one: an import batch wakes the worker once.
The payload is the table's schema, so that stores sharing a database (one schema each)
wake only their own workers.
One trigger per INSERT statement, not per row, so a batch of a thousand events adds one
pg_notify call. SQLite has no NOTIFY: its worker keeps polling, and nothing is created.
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

CHANNEL = "rummy_ledger_events"  # replays/readmodels/notify.py listens on it


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(
        "CREATE OR REPLACE FUNCTION rummy_ledger_notify_events() RETURNS trigger "
        "LANGUAGE plpgsql AS $$ BEGIN "
        f"PERFORM pg_notify('{CHANNEL}', TG_TABLE_SCHEMA); RETURN NULL; END $$"
    )
    op.execute("DROP TRIGGER IF EXISTS ledger_events_notify ON ledger_events")
    op.execute(
        "CREATE TRIGGER ledger_events_notify AFTER INSERT ON ledger_events "
        "FOR EACH STATEMENT EXECUTE FUNCTION rummy_ledger_notify_events()"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER IF EXISTS ledger_events_notify ON ledger_events")
    op.execute("DROP FUNCTION IF EXISTS rummy_ledger_notify_events()")
