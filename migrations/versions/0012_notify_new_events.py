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

The trigger runs once per INSERT statement and sends at most one notification per
transaction (a transaction-local flag); `bench/cluster.py` (stage notify) measures what it
costs an import. SQLite has no NOTIFY: its worker keeps polling, and nothing is created.
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
    # The event recorder inserts with executemany, one statement per event: a
    # transaction-local flag sends the notification once per transaction instead of asking
    # pg_notify to fold thousands (about half the trigger's cost per event, measured).
    op.execute(
        "CREATE OR REPLACE FUNCTION rummy_ledger_notify_events() RETURNS trigger "
        "LANGUAGE plpgsql AS $$ BEGIN "
        "IF current_setting('rummy_ledger.notified', true) IS DISTINCT FROM '1' THEN "
        f"PERFORM pg_notify('{CHANNEL}', TG_TABLE_SCHEMA); "
        "PERFORM set_config('rummy_ledger.notified', '1', true); "
        "END IF; RETURN NULL; END $$"
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
