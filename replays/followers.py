"""What follows the event store after a write: read-model projections and integrity seals.

The importer and the ingest API call :func:`catch_up_followers` after storing events so
new games show up on the pages and are covered by the hash chains without a manual step.
Each follower is optional (a deployment may run them as separate workers instead).
"""

from __future__ import annotations

import importlib
import importlib.util


def _follower(module: str, name: str):
    if importlib.util.find_spec(module) is None:
        return None
    return getattr(importlib.import_module(module), name, None)


def catch_up_followers(url: str, warn=None) -> dict[str, int | None]:
    """Run each follower over the new events; how many events each one took in.

    A follower that fails does not undo the write (the events are stored and it can catch
    up later); ``warn`` is told why, and that follower's count is None.
    """
    done: dict[str, int | None] = {}
    for label, module, name in (
        ("projected", "replays.projections", "catch_up"),
        ("sealed", "replays.integrity", "seal_new_events"),
    ):
        follow = _follower(module, name)
        done[label] = None
        if follow is None:
            continue
        try:
            done[label] = follow(url)
        except Exception as error:  # stored is stored; the follower catches up later
            if warn is not None:
                warn(f"warning: events stored but not {label} yet: {error}")
    return done
