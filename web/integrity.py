"""The integrity badge shown on game and audit pages (the slot in the layout's header).

The verdict itself belongs to ``replays.integrity.evidence.integrity_verdict(url, game_id)``; this
module only turns it into words for the page and stays quiet while that module is absent.
"""

from __future__ import annotations

import importlib
import threading
import time
from dataclasses import dataclass

from flask import current_app

BADGE_WORDS = {
    "verified": "Ledger verified",
    "broken": "Ledger broken",
    "not_checkpointed": "Not yet checkpointed",
    "read_model_differs": "Read model differs from the ledger",
    "unverifiable": "Cannot be verified",
}
# What a player sees instead: that the game failed, not which stored rows an insider edited.
PLAYER_WORDS = {"read_model_differs": "Failed verification"}


@dataclass(frozen=True)
class Badge:
    status: str
    text: str
    detail: str
    # Shown under the badge to staff: each read-model field that differs from the events.
    fields: tuple[str, ...] = ()


def _verdict_function():
    try:
        module = importlib.import_module("replays.integrity.evidence")
    except ImportError:
        return None
    return getattr(module, "integrity_verdict", None)


_cache: dict[tuple[str, str], tuple[float, Badge]] = {}
_cache_lock = threading.Lock()


def integrity_badge(game_id: str, *, fresh: bool = True) -> Badge | None:
    """The badge for ``game_id``, or None when no integrity check is installed.

    The check re-hashes the game's events, which costs more than the rest of a replay
    frame; stepping through a replay (``fresh=False``) reuses a verdict up to
    ``INTEGRITY_CACHE_SECONDS`` old (default 30). The summary and audit pages always
    check afresh.
    """
    verdict_of = current_app.config.get("INTEGRITY_VERDICT") or _verdict_function()
    if verdict_of is None:
        return None
    from web.ledger import reading_url

    # On a replica, the verdict reads the events and the read rows there, in one snapshot.
    key = (reading_url(), game_id)
    max_age = float(current_app.config.get("INTEGRITY_CACHE_SECONDS", 30))
    if not fresh and max_age > 0:
        with _cache_lock:
            cached = _cache.get(key)
        if cached is not None and time.monotonic() - cached[0] < max_age:
            # Cached in staff words; each viewer gets their own.
            return _for_viewer(cached[1])
    badge = _check(verdict_of, key[0], game_id)
    with _cache_lock:
        if len(_cache) > 10_000:
            _cache.clear()
        _cache[key] = (time.monotonic(), badge)
    return _for_viewer(badge)


def _for_viewer(badge: Badge) -> Badge:
    from web.auth import viewer_seat

    if badge.status not in PLAYER_WORDS or viewer_seat() is None:
        return badge
    return Badge(badge.status, PLAYER_WORDS[badge.status], "this game failed verification")


def _check(verdict_of, url: str, game_id: str) -> Badge:
    try:
        verdict = verdict_of(url, game_id)
    except Exception as error:  # a failing check must not take the page down with it
        current_app.logger.warning("integrity verdict for %s failed: %s", game_id, error)
        return Badge("unknown", "Integrity not checked", str(error))
    status = str(getattr(verdict, "status", verdict))
    text = BADGE_WORDS.get(status, status.replace("_", " "))
    event = getattr(verdict, "event", None)
    if status == "broken" and event is not None:
        text += f" at event {event}"
    if status == "unverifiable" and event is not None:
        text += f" (event {event})"
    fields = tuple(getattr(verdict, "fields", ()) or ())
    return Badge(status, text, str(getattr(verdict, "message", "") or ""), fields)
