"""Whether the read side is whole: `/healthz` and the staff banner on every page.

The read models are projected from the events (docs/read-models.md). When a projection
could not apply an event it sets that game aside and records why
(:mod:`replays.readmodels.projection_runner`); until someone retries it, the pages and reports are
missing that game. Nothing about that may be silent:

- ``/healthz`` answers 503 with a JSON body naming each failure (game, event, type; the
  error text stays in ``projections status``, since the route is public), or when the
  projection is stuck (events waiting and no run for five minutes); 200 ``{"status": "ok"}``
  otherwise.
- Staff (auditor, dispute officer, admin) see a banner on every page naming the first
  failure and the count. Players see only that some games are not yet available.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from flask import Flask, current_app, g

from replays.readmodels.projection_failures import Failure
from replays.readmodels.projection_runner import Status

STUCK_AFTER_SECONDS = 300.0


@dataclass(frozen=True)
class ReadSide:
    status: Status | None  # None: the database could not be read
    error: str | None = None

    @property
    def failures(self) -> tuple[Failure, ...]:
        return () if self.status is None else self.status.failures

    @property
    def stuck(self) -> bool:
        return self.status is not None and self.status.stuck(after_seconds=STUCK_AFTER_SECONDS)

    @property
    def healthy(self) -> bool:
        return self.status is not None and not self.failures and not self.stuck

    def health(self) -> tuple[dict, int]:
        if self.healthy:
            return {"status": "ok"}, 200
        if self.status is None:
            return {"status": "error", "error": self.error}, 503
        status = self.status
        return {
            "status": "degraded",
            "read_models": {
                "projection": status.name,
                "position": status.position,
                "head": status.head,
                "lag": status.lag,
                "stuck": self.stuck,
                "updated_at": status.updated_at.isoformat() if status.updated_at else None,
                "failures": [
                    {
                        "game_id": failure.game_id,
                        "event_version": failure.event_version,
                        "event_type": failure.event_type,
                        "notification_id": failure.notification_id,
                        "during_rebuild": failure.during_rebuild,
                        "attempts": failure.attempts,
                        "first_seen": failure.first_seen.isoformat()
                        if failure.first_seen
                        else None,
                    }
                    for failure in status.failures
                ],
            },
        }, 503


# The status is three small queries; every page and /healthz asks for it. Under concurrent
# load that cost showed (healthz p50 0.2 -> 6-10 ms in bench/replay_page.py), so a process
# reuses an answer for READ_SIDE_CACHE_SECONDS (default 2; 0 reads it on every request, the
# default under TESTING so tests see a failure the moment it is recorded).
_cache: dict[str, tuple[float, ReadSide]] = {}
_cache_lock = threading.Lock()


def _cache_seconds() -> float:
    configured = current_app.config.get("READ_SIDE_CACHE_SECONDS")
    if configured is None:
        return 0.0 if current_app.testing else 2.0
    return float(configured)


def read_side(url: str | None = None) -> ReadSide:
    """The read models' status for this request (read once per request, and reused across
    requests for a second or two)."""
    cached = g.get("read_side")
    if cached is not None:
        return cached
    url = url or current_app.config["DATABASE_URL"]
    max_age = _cache_seconds()
    if max_age > 0:
        with _cache_lock:
            kept = _cache.get(url)
        if kept is not None and time.monotonic() - kept[0] < max_age:
            g.read_side = kept[1]
            return kept[1]
    from replays.readmodels.projections import projection_status

    try:
        found = ReadSide(projection_status(url))
        # Judged here, where a failure is caught: a value of the wrong kind in the status
        # row (a position stored as text, issue 29) is a status that cannot be read, not a
        # 500 on every page's banner.
        found.healthy  # noqa: B018
    except Exception as error:  # an unmigrated or unreachable database: not healthy
        current_app.logger.warning("cannot read the projection status: %s", error)
        found = ReadSide(None, f"cannot read the projection status ({error.__class__.__name__})")
    if max_age > 0:
        with _cache_lock:
            _cache[url] = (time.monotonic(), found)
    g.read_side = found
    return found


def register(app: Flask) -> None:
    # /healthz itself is in web/ops.py, beside /readyz and /metrics.
    @app.context_processor
    def read_side_notice():
        return {"read_side_notice": _notice}


def _notice() -> dict | None:
    """What the layout's banner says to the signed-in user, or None (called from the page)."""
    from web.auth import STAFF, current_account

    account = current_account()
    if account is None:
        return None
    found = read_side()
    if found.healthy or found.status is None:
        return None
    if account.role not in STAFF:
        return {"staff": False} if found.failures else None
    return {
        "staff": True,
        "failures": found.failures,
        "first": found.failures[0] if found.failures else None,
        "stuck": found.stuck,
        "lag": found.status.lag,
    }
