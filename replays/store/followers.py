"""What follows the event store after a write: the read-model projections.

The importer, the ingest API, disputes and the simulator call :func:`catch_up_followers`
after storing events so new games show up on the pages without a manual step. A follower
is optional (a deployment may run it as a separate worker instead). Integrity seals are
not a follower: every save writes its events' seals in its own transaction
(:mod:`replays.integrity.append`), so nothing is left to catch up there.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import threading

log = logging.getLogger(__name__)


def _follower(module: str, name: str):
    if importlib.util.find_spec(module) is None:
        return None
    return getattr(importlib.import_module(module), name, None)


def catch_up_followers(url: str, warn=None, *, progress: bool = False) -> dict[str, int | None]:
    """Run each follower over the new events; how many events each one took in.

    A follower that fails does not undo the write (the events are stored and it can catch
    up later); ``warn`` is told why, and that follower's count is None.
    """
    done: dict[str, int | None] = {}
    for label, module, name in (("projected", "replays.readmodels.projections", "catch_up"),):
        follow = _follower(module, name)
        done[label] = None
        if follow is None:
            continue
        try:
            done[label] = follow(url, progress=progress) if progress else follow(url)
        except Exception as error:  # stored is stored; the follower catches up later
            if warn is not None:
                warn(f"warning: events stored but not {label} yet: {error}")
            continue
        if warn is not None:
            _warn_failures(url, warn)
    return done


def _warn_failures(url: str, warn) -> None:
    """A game the projection set aside is stored but missing from pages: say which."""
    from replays.readmodels.projections import projection_status

    try:
        failures = projection_status(url).failures
    except Exception:  # an older database without the failures table: nothing to say
        return
    for failure in failures[:3]:
        warn(f"warning: stored but not on the pages: {failure.describe()}")
    if len(failures) > 3:
        warn(f"warning: and {len(failures) - 3} more; see `rummy-ledger projections status`")


class BackgroundFollower:
    """Runs :func:`catch_up_followers` on a daemon thread whenever :meth:`poke` is called.

    Pokes that arrive while a catch-up runs are coalesced into one more run, so a burst of
    API writes costs one catch-up, and no request waits for the read models.
    """

    def __init__(self, url: str):
        self.url = url
        self._wanted = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def poke(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="ledger-followers", daemon=True
                )
                self._thread.start()
            self._idle.clear()
            self._wanted.set()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until every poke so far has been followed (tests and shutdown use it)."""
        return self._idle.wait(timeout)

    def _run(self) -> None:
        while True:
            self._wanted.wait()
            self._wanted.clear()
            catch_up_followers(self.url, warn=log.warning)
            with self._lock:
                if not self._wanted.is_set():
                    self._idle.set()
