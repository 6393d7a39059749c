"""One setting for the whole project: where the ledger's database lives."""

from __future__ import annotations

import os

DEFAULT_DATABASE_URL = "sqlite:///rummy-ledger.sqlite3"


def database_url(url: str | None = None) -> str:
    """The SQLAlchemy URL of the ledger database.

    ``RUMMY_LEDGER_DATABASE_URL`` (default: ``rummy-ledger.sqlite3`` in the working directory).
    A plain ``postgresql://`` URL is given the psycopg 3 driver.
    """
    url = url or os.environ.get("RUMMY_LEDGER_DATABASE_URL") or DEFAULT_DATABASE_URL
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def is_postgres(url: str) -> bool:
    return url.startswith("postgresql")
