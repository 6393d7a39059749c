"""Accounts and sign-in attempts (replays/access/accounts.py), the append-only access log
(replays/access/access_log.py) and the dispute case read model (replays/disputes/projection.py)

Revision ID: 0006
Revises: 0005
Create Date: 2025-03-02

The access log refuses UPDATE and DELETE (and on PostgreSQL TRUNCATE) with database
triggers: the application has no code path that rewrites it, and neither may anyone with
an SQL prompt short of dropping the triggers.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
APPEND_ONLY = "access_log is append-only"


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("username", sa.String(length=64), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("player_id", sa.String(length=64), nullable=True),
        sa.Column("password_hash", sa.String(length=255), nullable=False),
        sa.Column("session_key", sa.String(length=32), nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_login_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_users"),
        sa.UniqueConstraint("username", name="uq_users_username"),
    )
    op.create_index("ix_users_player_id", "users", ["player_id"])

    op.create_table(
        "login_attempts",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("username", sa.String(length=64), nullable=False),
        sa.Column("remote_addr", sa.String(length=64), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("succeeded", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_login_attempts"),
    )
    op.create_index("ix_login_attempts_username_at", "login_attempts", ["username", "at"])
    op.create_index("ix_login_attempts_remote_addr_at", "login_attempts", ["remote_addr", "at"])

    op.create_table(
        "access_log",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("username", sa.String(length=64), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("game_id", sa.String(length=64), nullable=False),
        sa.Column("move", sa.Integer(), nullable=True),
        sa.Column("view", sa.String(length=80), nullable=False),
        sa.Column("page", sa.String(length=64), nullable=False),
        sa.Column("remote_addr", sa.String(length=64), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_access_log"),
    )
    op.create_index("ix_access_log_at", "access_log", ["at"])
    op.create_index("ix_access_log_game_id_at", "access_log", ["game_id", "at"])
    op.create_index("ix_access_log_username_at", "access_log", ["username", "at"])
    _append_only_triggers()

    op.create_table(
        "dispute_cases",
        sa.Column("case_id", sa.String(length=64), nullable=False),
        sa.Column("originator_id", sa.String(length=36), nullable=False),
        sa.Column("game_id", sa.String(length=64), nullable=False),
        sa.Column("move", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=8), nullable=False),
        sa.Column("opened_by", sa.String(length=64), nullable=False),
        sa.Column("opener_role", sa.String(length=16), nullable=False),
        sa.Column("opened_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("currency", sa.String(length=8), nullable=False),
        sa.Column("notes", sa.Integer(), nullable=False),
        sa.Column("evidence", sa.Integer(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("closed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("closed_by", sa.String(length=64), nullable=True),
        sa.Column("decision", sa.String(length=16), nullable=True),
        sa.Column("amount", sa.BigInteger(), nullable=True),
        sa.Column("credited", sa.String(length=64), nullable=True),
        sa.Column("debited", sa.String(length=64), nullable=True),
        sa.PrimaryKeyConstraint("case_id", name="pk_dispute_cases"),
        sa.UniqueConstraint("originator_id", name="uq_dispute_cases_originator_id"),
    )
    op.create_index("ix_dispute_cases_game_id", "dispute_cases", ["game_id"])
    op.create_index("ix_dispute_cases_opened_by", "dispute_cases", ["opened_by"])
    op.create_index("ix_dispute_cases_status_opened_at", "dispute_cases", ["status", "opened_at"])


def _append_only_triggers() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "CREATE FUNCTION access_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$ "
            f"BEGIN RAISE EXCEPTION '{APPEND_ONLY}'; END $$"
        )
        op.execute(
            "CREATE TRIGGER access_log_no_rewrite BEFORE UPDATE OR DELETE ON access_log "
            "FOR EACH ROW EXECUTE FUNCTION access_log_append_only()"
        )
        op.execute(
            "CREATE TRIGGER access_log_no_truncate BEFORE TRUNCATE ON access_log "
            "FOR EACH STATEMENT EXECUTE FUNCTION access_log_append_only()"
        )
        return
    for action in ("UPDATE", "DELETE"):
        op.execute(
            f"CREATE TRIGGER access_log_no_{action.lower()} BEFORE {action} ON access_log "
            f"BEGIN SELECT RAISE(ABORT, '{APPEND_ONLY}'); END"
        )


def downgrade() -> None:
    op.drop_table("dispute_cases")
    op.drop_table("access_log")  # its triggers go with it
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION access_log_append_only()")
    op.drop_table("login_attempts")
    op.drop_table("users")
