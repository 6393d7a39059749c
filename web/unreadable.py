"""Pages degrade, they do not fall (issue 29): one boundary for every page that reads the store.

Anyone with write access to the database can put a value of the wrong kind in any column
(``games.started_at='zzz'``, ``point_value='abc'``): the read that meets it raises deep in a
type's reader, and without this one bad row would answer 500 to everyone who opens the list.

Every GET page's view runs inside :func:`guard`. The usual path costs nothing: the view runs
as it always did. Only when it raises (anything but an HTTP answer) are the store's rows it
could have read checked for values of the wrong kind
(:func:`replays.store.decoding.find_corrupt`: one game's rows for a game's pages, one
player's for a player's, the read models' for the rest). None found: the error was not the
data's, and it stays a 500. Found: the rows holding them are hidden from a connection
(:meth:`~replays.store.decoding.Corruption.mask`), the view runs again reading through it
(:func:`web.ledger.read_session` does while one is set), and the page is drawn from what
can be read, with the findings shown in its banner in place of what cannot (the games list
shows the rest and names the unreadable row; a game whose own row cannot be read shows the
findings where its page would be).

Each finding is also kept for a while in this process: the staff banner and ``/healthz``
name them (a count and the first few) without reading the store again, so both stay cheap.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import NoReturn

from flask import Flask, abort, current_app, g, make_response, render_template, request
from werkzeug.exceptions import HTTPException

# Findings pages met, per database, kept for this long (a page that still meets one notes
# it again).
KEEP_SECONDS = 600.0
KEEP_MAX = 200
_seen: dict[str, OrderedDict[str, tuple[float, dict]]] = {}
_seen_lock = threading.Lock()


def note(findings) -> None:
    now = time.monotonic()
    url = current_app.config["DATABASE_URL"]
    with _seen_lock:
        seen = _seen.setdefault(url, OrderedDict())
        for finding in findings:
            text = str(finding)
            seen.pop(text, None)
            seen[text] = (
                now,
                {"finding": text, "table": finding.table, "game_id": finding.game_id},
            )
        while len(seen) > KEEP_MAX:
            seen.popitem(last=False)


def recent() -> list[dict]:
    """The findings pages met in the last :data:`KEEP_SECONDS`, oldest first."""
    cutoff = time.monotonic() - KEEP_SECONDS
    with _seen_lock:
        seen = _seen.get(current_app.config["DATABASE_URL"])
        if not seen:
            return []
        for text in [t for t, (at, _) in seen.items() if at < cutoff]:
            del seen[text]
        return [entry for _, entry in seen.values()]


def health() -> dict | None:
    """What ``/healthz`` says of them: None when pages met none lately."""
    found = recent()
    if not found:
        return None
    return {"count": len(found), "first": [entry["finding"] for entry in found[:5]]}


# -- the boundary --------------------------------------------------------------------------
EVENT_TABLES = ("ledger_events", "ledger_snapshots")


def rows_read_by(view_args: dict) -> dict | None:
    """The rows a page could have read: per owned table, an SQL condition (None: all)."""
    from replays.store.decoding import owned_tables

    where: dict[str, tuple[str, dict]] = {}
    game_id = view_args.get("game_id")
    for table in owned_tables():
        if game_id is not None and "game_id" in table.c:
            where[table.name] = ("game_id = :game", {"game": game_id})
        elif game_id is not None and table.name in EVENT_TABLES:
            # A game's events are keyed by its aggregate id, which a bad row may have lost:
            # the whole store's are looked at (on this failing path only).
            where[table.name] = ("", {})
        elif game_id is None and table.name not in EVENT_TABLES:
            # The list, a player's history: any game's rows may be the one it met; the
            # staff's pages (fair play's days, accounts) read tables of no game.
            where[table.name] = ("", {})
    return where


def _again(view: Callable, args, kwargs, error: Exception):
    from replays.store.db import engine_for
    from replays.store.decoding import find_corrupt
    from web.ledger import reading_url

    # The server this page reads from (a replica for read-only pages when one is set), so
    # the rows it hides are those the page would have read.
    url = reading_url()
    with engine_for(url).connect() as connection:
        try:
            corruption = find_corrupt(connection, where=rows_read_by(request.view_args or {}))
        except Exception:
            current_app.logger.exception("cannot look for unreadable values")
            raise error from None
        if not corruption:
            broken = _failed_verification(error)
            if broken is None:
                raise error  # not the data's fault: a 500, as any other bug
            note([broken])
            g.unreadable = [broken]
            return make_response(
                render_template("errors/unreadable.html", findings=[broken], path=request.path)
            )
        findings = corruption.named()
        note(findings)
        current_app.logger.warning(
            "%s: %d unreadable stored value(s), first: %s", request.path, len(findings), findings[0]
        )
        g.unreadable = findings
        corruption.mask(connection)
        g.masked_connection = connection
        try:
            return make_response(view(*args, **kwargs))
        except Exception as again:
            # What is left cannot be drawn either: the page is the findings.
            if isinstance(again, HTTPException) and again.code not in (404, None):
                raise
            current_app.logger.warning("%s cannot be drawn around them: %r", request.path, again)
            return make_response(
                render_template("errors/unreadable.html", findings=findings, path=request.path)
            )
        finally:
            g.pop("masked_connection", None)
            # Whatever the page did on this connection ends here, even if the views cannot
            # be dropped: an open transaction would hold SQLite's lock for every other writer.
            try:
                connection.rollback()
                corruption.unmask(connection)
            finally:
                connection.rollback()


@dataclass(frozen=True)
class Finding:
    """A game whose stored events fail verification, as a page names it."""

    text: str
    game_id: str
    table: str = "ledger_events"

    def __str__(self) -> str:
        return self.text


def _failed_verification(error: Exception) -> Finding | None:
    """Values of the right kind in the wrong place (two events' states swapped, an edited
    event) decode and then fail to replay: when the game's own check says its events are
    not the ones sealed, that is the finding; otherwise the error is a bug (None)."""
    from web.integrity import integrity_badge

    game_id = (request.view_args or {}).get("game_id")
    if game_id is None:
        return None
    try:
        badge = integrity_badge(game_id)
    except Exception:
        current_app.logger.exception("cannot check %s after %r", game_id, error)
        return None
    if badge is None or badge.status not in ("broken", "unverifiable", "read_model_differs"):
        return None
    current_app.logger.warning("%s cannot be drawn: %s (%r)", request.path, badge.text, error)
    detail = f": {badge.detail}" if badge.detail else ""
    return Finding(f"game {game_id}: {badge.text}{detail}", game_id)


def refuse(error: Exception, game_id: str) -> NoReturn:
    """A player's access to ``game_id`` is decided from its row in ``games`` before any page
    runs, outside :func:`guard`; when that read failed on ``error``, the row is looked at for
    values of the wrong kind. Found: they are noted for the staff (the banner, ``/healthz``)
    and the request is refused (403) naming the column, never its value (the viewer may be
    none of the game's players): access is never granted on a value that cannot be read.
    None found: the error was not the data's, and it stays a 500."""
    from replays.store.db import engine_for
    from replays.store.decoding import find_corrupt
    from web.ledger import reading_url

    with engine_for(reading_url()).connect() as connection:
        try:
            findings = find_corrupt(
                connection, where={"games": ("game_id = :game", {"game": game_id})}
            ).named()
        except Exception:
            current_app.logger.exception("cannot look for unreadable values")
            raise error from None
        finally:
            connection.rollback()
    if not findings:
        raise error
    note(findings)
    current_app.logger.warning("%s: access refused, unreadable: %s", request.path, findings[0])
    columns = ", ".join(sorted({f"{finding.table}.{finding.column}" for finding in findings}))
    abort(
        403,
        f"Game {game_id}: who played it cannot be read from the ledger ({columns} holds a "
        "value of the wrong kind), so whether it is one of your games cannot be checked. "
        "Staff have been told; nothing was changed.",
    )


def guard(view: Callable) -> Callable:
    """``view`` drawn around unreadable stored values (see the module docstring)."""

    @wraps(view)
    def guarded(*args, **kwargs):
        try:
            return view(*args, **kwargs)
        except HTTPException:
            raise
        except Exception as error:
            if request.method != "GET" or g.get("masked_connection") is not None:
                raise
            return _again(view, args, kwargs, error)

    return guarded


def register(app: Flask) -> None:
    """Guard every GET page (the API's answers are its own; POSTs write, never degrade)."""
    for rule in app.url_map.iter_rules():
        if "GET" not in (rule.methods or ()) or rule.endpoint.startswith(("api.", "static")):
            continue
        view = app.view_functions[rule.endpoint]
        if not getattr(view, "unreadable_guarded", False):
            guarded = guard(view)
            guarded.unreadable_guarded = True
            app.view_functions[rule.endpoint] = guarded

    @app.context_processor
    def unreadable_notice():
        return {"unreadable_findings": g.get("unreadable", ()), "unreadable_recent": recent}
