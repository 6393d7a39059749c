"""Alembic environment: the project's database URL and every table we and the store own.

``replays.store.schema.migrate(url)`` hands in a live connection; the ``alembic`` command line
builds one from RUMMY_LEDGER_DATABASE_URL.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context

from replays.readmodels.models import Fixed
from replays.store.schema import target_metadata
from replays.store.settings import database_url

config = context.config
metadata = target_metadata()


def render_item(type_, obj, autogen_context):
    """Write our column types as the plain types they store, so migrations do not import
    application code that may later change."""
    if type_ == "type" and isinstance(obj, Fixed):
        return "sa.BigInteger()"
    if type_ == "type" and type(obj).__name__ == "UUIDType":
        autogen_context.imports.add("from sqlalchemy_utils.types.uuid import UUIDType")
        return "UUIDType(binary=True)"
    return False


def compare_type(context, inspected_column, metadata_column, inspected_type, metadata_type):
    """SQLite reflects the store's BINARY(16) UUID column as NUMERIC(16): not a change."""
    if type(metadata_type).__name__ == "UUIDType":
        return not (
            isinstance(inspected_type, sa.Uuid | sa.LargeBinary)
            or (isinstance(inspected_type, sa.Numeric) and inspected_type.precision == 16)
        )
    return None  # Alembic's own comparison


def configure(**kwargs) -> None:
    context.configure(
        target_metadata=metadata,
        compare_type=compare_type,
        render_item=render_item,
        **kwargs,
    )


def run_offline() -> None:
    configure(url=config.attributes.get("url") or database_url(), literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        run_on(connection)
        return
    engine = sa.create_engine(config.attributes.get("url") or database_url())
    try:
        with engine.begin() as connection:
            run_on(connection)
    finally:
        engine.dispose()


def run_on(connection: sa.Connection) -> None:
    configure(
        connection=connection,
        # SQLite cannot ALTER most things; batch mode rebuilds the table instead.
        render_as_batch=connection.dialect.name == "sqlite",
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
