"""The Flask site and HTTP API around the ledger. `flask --app web run` uses :func:`create_app`.

Configuration comes from the environment (``RUMMY_LEDGER_DATABASE_URL``, ``SECRET_KEY``) and
can be overridden by the ``config`` mapping, which is how tests point the app at their own
database::

    app = create_app({"DATABASE_URL": "sqlite:///tmp/ledger.sqlite3", "TESTING": True})

The factory lives in :mod:`web.factory` and is imported on first use: the `rummy-ledger` CLI
(``web.cli``) is in this package too, and commands such as ``hand`` must not pay for
importing Flask.
"""

from __future__ import annotations

from typing import Any

_FROM_FACTORY = ("create_app", "BLUEPRINTS", "ERROR_TITLES")


def __getattr__(name: str) -> Any:
    if name in _FROM_FACTORY:
        from web import factory

        return getattr(factory, name)
    raise AttributeError(f"module 'web' has no attribute {name!r}")
