"""The integrity badge shown on game and audit pages (the slot in the layout's header).

The verdict itself belongs to ``replays.integrity.integrity_verdict(url, game_id)``; this
module only turns it into words for the page and stays quiet while that module is absent.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from flask import current_app

BADGE_WORDS = {
    "verified": "Ledger verified",
    "broken": "Ledger broken",
    "not_checkpointed": "Not yet checkpointed",
}


@dataclass(frozen=True)
class Badge:
    status: str
    text: str
    detail: str


def _verdict_function():
    try:
        module = importlib.import_module("replays.integrity")
    except ImportError:
        return None
    return getattr(module, "integrity_verdict", None)


def integrity_badge(game_id: str) -> Badge | None:
    """The badge for ``game_id``, or None when no integrity check is installed."""
    verdict_of = current_app.config.get("INTEGRITY_VERDICT") or _verdict_function()
    if verdict_of is None:
        return None
    try:
        verdict = verdict_of(current_app.config["DATABASE_URL"], game_id)
    except Exception as error:  # a failing check must not take the page down with it
        current_app.logger.warning("integrity verdict for %s failed: %s", game_id, error)
        return Badge("unknown", "Integrity not checked", str(error))
    status = str(getattr(verdict, "status", verdict))
    text = BADGE_WORDS.get(status, status.replace("_", " "))
    event = getattr(verdict, "event", None)
    if status == "broken" and event is not None:
        text += f" at event {event}"
    return Badge(status, text, str(getattr(verdict, "message", "") or ""))
