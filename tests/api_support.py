"""Helpers shared by the records, import/export, audit and API tests."""

from __future__ import annotations

from replays.db import Base, engine_for


def ensure_schema(url: str) -> None:
    """Build the tables these tests need.

    Uses the Alembic migrations when they know ``api_tokens``; until the migration for the
    token table exists, creates that one table directly.
    """
    from replays import schema, tokens

    schema.migrate(url)
    engine = engine_for(url)
    Base.metadata.create_all(engine, tables=[tokens.ApiToken.__table__])
