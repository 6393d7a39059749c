"""One setting for the whole project: where the ledger's database lives, and where its
read-only copies (read replicas) live."""

from __future__ import annotations

import os
from functools import lru_cache
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

DEFAULT_DATABASE_URL = "sqlite:///rummy-ledger.sqlite3"


def database_url(url: str | None = None) -> str:
    """The SQLAlchemy URL of the ledger database.

    ``RUMMY_LEDGER_DATABASE_URL`` (default: ``rummy-ledger.sqlite3`` in the working directory).
    A plain ``postgresql://`` URL is given the psycopg 3 driver, and a libpq multi-host URL
    (``postgresql://user@h1:5432,h2:5432/db?target_session_attrs=read-write``) is written
    the way SQLAlchemy passes several hosts to psycopg (one ``host=h:p`` per node).

    >>> database_url("postgresql://u@h1:1,h2:2/db?target_session_attrs=read-write")[:82]
    'postgresql+psycopg://u@/db?host=h1%3A1&host=h2%3A2&target_session_attrs=read-write'
    """
    url = url or os.environ.get("RUMMY_LEDGER_DATABASE_URL") or DEFAULT_DATABASE_URL
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            url = "postgresql+psycopg://" + url[len(prefix) :]
    if url.startswith("postgresql"):
        url = _hosts_as_query(url)
    return url


# A cluster's URLs (several hosts, or a replica's) get bounds on a dead or cut-off node:
# without them a connection to a host whose link is down waits for the kernel's TCP
# timeouts (minutes) before libpq tries the next host or the app falls back.
CLUSTER_TIMEOUTS = {
    "connect_timeout": "3",
    "tcp_user_timeout": "5000",
    "keepalives_idle": "5",
    "keepalives_interval": "2",
    "keepalives_count": "2",
}


# The URL functions below are pure, and a page asks them again for every engine, session and
# replica check it opens: parsing and re-encoding a cluster's URL each time cost about a
# millisecond of CPU a page (bench/cluster_failover.py). Kept per URL, a few at a time.
@lru_cache(maxsize=64)
def with_timeouts(url: str) -> str:
    """``url`` with :data:`CLUSTER_TIMEOUTS` for what it does not set itself.

    >>> with_timeouts("postgresql+psycopg://u@/db?host=a&connect_timeout=9")
    'postgresql+psycopg://u@/db?host=a&connect_timeout=9&tcp_user_timeout=5000&keepalives_idle=5&keepalives_interval=2&keepalives_count=2'
    """
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    given = {name for name, _ in query}
    query += [(name, value) for name, value in CLUSTER_TIMEOUTS.items() if name not in given]
    return urlunsplit(parts._replace(query=urlencode(query)))


def read_database_url(url: str | None = None) -> str | None:
    """The URL of the read replicas, or None: reads then go to the primary.

    ``RUMMY_LEDGER_READ_DATABASE_URL``: one host or several (libpq multi-host; readers
    usually add ``target_session_attrs=prefer-standby``). docs/deploying.md says which
    reads it serves."""
    url = url or os.environ.get("RUMMY_LEDGER_READ_DATABASE_URL")
    if not url:
        return None
    url = database_url(url)
    return with_timeouts(url) if is_postgres(url) else url


def reading_database_url(url: str | None = None) -> str:
    """Where a read-only command (``report``, ``verify``) reads: ``url`` when given, else
    the read replicas when configured, else the primary."""
    return database_url(url) if url else (read_database_url() or database_url())


@lru_cache(maxsize=64)
def _hosts_as_query(url: str) -> str:
    """``h1:p1,h2:p2`` in the authority becomes ``?host=h1:p1&host=h2:p2``: SQLAlchemy reads
    a single port after the last colon of the authority and fails on a host list."""
    parts = urlsplit(url)
    user, at, hosts = parts.netloc.rpartition("@")
    if "," not in hosts:
        return with_timeouts(url) if "host=" in parts.query else url
    query = [("host", host) for host in hosts.split(",") if host]
    query += parse_qsl(parts.query, keep_blank_values=True)
    return with_timeouts(
        urlunsplit((parts.scheme, f"{user}{at}", parts.path, urlencode(query), ""))
    )


def is_postgres(url: str) -> bool:
    return url.startswith("postgresql")
