"""The whole database schema, built by Alembic: our tables and the event store's.

``migrate(url)`` runs ``alembic upgrade head`` programmatically (the CLI's ``db upgrade``,
tests and the demo call it), so one command builds every table on SQLite or PostgreSQL
and the :class:`~replays.store.application.Ledger` can run with ``CREATE_TABLE=no``.

Tables are declared in the modules listed in :data:`MODEL_MODULES`; Alembic's ``env.py``
imports them through :func:`target_metadata`. A new module declaring tables on
:class:`replays.store.db.Base` is added to that list and gets a migration (see
``migrations/README.md``).

>>> migrate("sqlite:///:memory:")  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import importlib.util
from functools import lru_cache
from pathlib import Path

import sqlalchemy as sa

from replays.store.db import Base, engine_for
from replays.store.settings import database_url

ROOT = Path(__file__).resolve().parents[2]  # the project: replays/store/schema.py
ALEMBIC_INI = ROOT / "alembic.ini"

# Every module that declares tables on replays.store.db.Base. Modules not written yet are
# skipped; one that exists but fails to import is an error.
MODEL_MODULES = (
    "replays.readmodels.models",
    "replays.access.tokens",
    "replays.access.ownership",
    "replays.integrity.models",
    "replays.access.accounts",
    "replays.access.access_log",
    "replays.disputes.projection",
    "replays.fairplay.tables",
)

# eventsourcing-sqlalchemy names its tables after the application (Ledger.name.lower()):
# <prefix>_events (with the notification ids), <prefix>_snapshots, <prefix>_tracking.
EVENT_STORE_PREFIX = "ledger"
EVENTS_TABLE = f"{EVENT_STORE_PREFIX}_events"
SNAPSHOTS_TABLE = f"{EVENT_STORE_PREFIX}_snapshots"
TRACKING_TABLE = f"{EVENT_STORE_PREFIX}_tracking"


def load_models() -> list[str]:
    """Import every model module that exists; return the names imported."""
    loaded = []
    for name in MODEL_MODULES:
        if importlib.util.find_spec(name) is None:
            continue
        importlib.import_module(name)
        loaded.append(name)
    return loaded


@lru_cache(maxsize=1)
def event_store_metadata() -> sa.MetaData:
    """The event store's tables exactly as eventsourcing-sqlalchemy declares them.

    Built from the library's own record classes (copied into a private MetaData so that
    other applications declared in the same process do not leak in).
    """
    from eventsourcing_sqlalchemy.datastore import SQLAlchemyDatastore

    metadata = sa.MetaData()
    for table_name, base_cls in (
        (EVENTS_TABLE, SQLAlchemyDatastore.base_stored_event_record_cls),
        (SNAPSHOTS_TABLE, SQLAlchemyDatastore.base_snapshot_record_cls),
        (TRACKING_TABLE, SQLAlchemyDatastore.base_notification_tracking_record_cls),
    ):
        record_cls = SQLAlchemyDatastore.define_record_class(
            cls_name="".join(part.capitalize() for part in table_name.split("_")),
            table_name=table_name,
            schema_name=None,
            base_cls=base_cls,
        )
        record_cls.__table__.to_metadata(metadata)
    events = metadata.tables[EVENTS_TABLE]
    sa.Index(
        DISPUTE_INDEX,
        events.c.originator_id,
        events.c.originator_version,
        sqlite_where=sa.text(DISPUTE_EVENTS),
        postgresql_where=sa.text(DISPUTE_EVENTS),
    )
    return metadata


# Dispute cases' events, few among millions of game events: one game's verdict reads its
# cases' adjustments from them (replays.readmodels.read_model_checks.check_adjustments)
# through this partial index instead of scanning every event. Queries must spell the
# condition exactly so for the planners to use the index.
DISPUTE_EVENTS = "topic LIKE 'rummy_ledger:DisputeCase.%'"
DISPUTE_INDEX = f"ix_{EVENTS_TABLE}_dispute_cases"


def index_dispute_events(connection: sa.Connection, events: str = EVENTS_TABLE) -> None:
    """Create the partial index of dispute events on ``events`` where it is missing (a store
    the ledger creates itself; migration 0011 adds it to migrated ones)."""
    connection.execute(
        sa.text(
            f"CREATE INDEX IF NOT EXISTS ix_{events}_dispute_cases ON {events} "
            f"(originator_id, originator_version) WHERE {DISPUTE_EVENTS}"
        )
    )


def target_metadata() -> list[sa.MetaData]:
    """What Alembic compares the database with: our models and the event store."""
    load_models()
    return [Base.metadata, event_store_metadata()]


def alembic_config(url: str | None = None):
    from alembic.config import Config

    config = Config(str(ALEMBIC_INI))
    config.set_main_option("script_location", str(ROOT / "migrations"))
    # Passed as an attribute, not an ini option: URLs may hold '%' (configparser syntax).
    config.attributes["url"] = database_url(url)
    return config


def migrate(url: str | None = None, revision: str = "head") -> None:
    """Bring the database at ``url`` (default: the project setting) up to ``revision``."""
    from alembic import command

    url = database_url(url)
    config = alembic_config(url)
    with engine_for(url).begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def current_revision(url: str | None = None) -> str | None:
    from alembic.runtime.migration import MigrationContext

    with engine_for(database_url(url)).connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()


VERSION_TABLE = "alembic_version"


def known_revisions() -> frozenset[str]:
    """Every schema revision this rummy-ledger's migrations define."""
    from alembic.script import ScriptDirectory

    scripts = ScriptDirectory.from_config(alembic_config())
    return frozenset(script.revision for script in scripts.walk_revisions())


def stored_revisions(connection: sa.Connection) -> list | None:
    """The values of Alembic's version table exactly as stored (None: no such table).
    Read raw, not through Alembic, which stops at a second row: the table is an insider's
    to change like any other, and what it holds is for the caller to judge."""
    if not sa.inspect(connection).has_table(VERSION_TABLE):
        return None
    from replays.store.db import undecodable

    try:
        rows = connection.execute(sa.text(f"SELECT version_num FROM {VERSION_TABLE}")).all()
    except sa.exc.DBAPIError as error:
        if connection.dialect.name != "sqlite" or not undecodable(error):
            raise
        # Text that is not UTF-8 (SQLite keeps any bytes): read as the bytes they are.
        query = f"SELECT CAST(version_num AS BLOB) FROM {VERSION_TABLE}"
        rows = connection.execute(sa.text(query)).all()
    return [value for (value,) in rows]


def missing_columns(connection: sa.Connection) -> list[str]:
    """The columns of this rummy-ledger's tables that the database's tables lack
    (``table.column``): what a read of them would fail on. Tables the database does not
    have are left to their readers (most are optional; the integrity tables are required
    with their own advice)."""
    inspector = sa.inspect(connection)
    missing = []
    for metadata in target_metadata():
        for table in metadata.sorted_tables:
            if not inspector.has_table(table.name):
                continue
            present = {column["name"] for column in inspector.get_columns(table.name)}
            missing += [f"{table.name}.{c.name}" for c in table.c if c.name not in present]
    return missing
