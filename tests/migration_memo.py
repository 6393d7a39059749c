"""The suite's migrations of empty stores, run once per process and replayed after.

Most tests start from an empty store that the code under test migrates (``migrate(url)``
through the app, the CLI or a fixture): about a thousand times in a run, each time Alembic
loading its scripts and building every operation again, for the same statements. Here the
first upgrade of an empty store to ``head`` on each engine runs through Alembic as usual,
and the statements it sends are kept; a later upgrade of an empty store to ``head`` sends
the same statements, in the same order, in the same transaction. Upgrades to another
revision, of a store that already holds a table, or with Alembic's options run through
Alembic. The statements Alembic sends to an empty store do not depend on anything but the
engine: the reads among them (whether a table exists) find the same nothing each time, so
only the statements that write are kept. tests/test_migrations.py turns the memo off to
test Alembic itself (the ``real_migrations`` fixture).
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import command

_real_upgrade = command.upgrade
_kept: dict[str, list[tuple[str, Any]]] = {}
enabled = True


def _empty(connection: sa.Connection) -> bool:
    if connection.dialect.name == "sqlite":
        sql = "SELECT count(*) FROM sqlite_master"
    else:
        sql = (
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema()"
        )
    return connection.exec_driver_sql(sql).scalar() == 0


def upgrade(config, revision, **options):
    connection = config.attributes.get("connection")
    if not enabled or revision != "head" or options or connection is None or not _empty(connection):
        return _real_upgrade(config, revision, **options)
    dialect = connection.dialect.name
    kept = _kept.get(dialect)
    if kept is None:
        sent: list[tuple[str, Any]] = []
        schema = (
            connection.exec_driver_sql("SELECT current_schema()").scalar()
            if (dialect == "postgresql")
            else None
        )

        def keep(conn, cursor, statement, parameters, context, executemany):
            sent.append((statement, parameters))

        sa.event.listen(connection, "before_cursor_execute", keep)
        try:
            _real_upgrade(config, revision)
        finally:
            sa.event.remove(connection, "before_cursor_execute", keep)
        writes = [
            (statement, parameters)
            for statement, parameters in sent
            if not statement.lstrip().upper().startswith(("SELECT", "PRAGMA"))
        ]
        # A statement naming the schema it ran in would not fit another one: keep nothing.
        if schema is None or not any(schema in statement for statement, _ in writes):
            _kept[dialect] = writes
        return None
    if dialect == "postgresql" and not any(parameters for _, parameters in kept):
        # In one round trip: the server's work is the same, the waits between are not. Sent
        # without parameters, a statement's "%%" (how it was escaped for them) is a "%".
        script = ";\n".join(statement.replace("%%", "%") for statement, _ in kept)
        connection.connection.driver_connection.execute(script)
        return None
    for statement, parameters in kept:
        connection.exec_driver_sql(statement, parameters)
    return None


def install() -> None:
    command.upgrade = upgrade


def uninstall() -> None:
    command.upgrade = _real_upgrade
