"""The table after each step of a stored game, as the replay pages of a family with steps
(``Variant.timeline``) ask for it, kept per process.

A first view reads only what it shows: the latest game (from its snapshot) and the table at
the step asked for (``state_at``: the events up to that step). Someone who comes back to the
same game is stepping through it, so the second view builds every table state from one
read of its events and later views look them up. A game's past never changes; a running
game is read again when its latest version moves on.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

# Games whose every table state is kept in memory, per page module.
CACHED_GAMES = 32


class StepStates:
    """What the pages of one process know of each game, keyed by its latest version."""

    def __init__(self):
        self.states: OrderedDict = OrderedDict()  # key -> (game, every state)
        self.games: OrderedDict = OrderedDict()  # key -> the game, before its states
        self.shown: OrderedDict = OrderedDict()  # keys whose one table state was drawn

    def game(self, ledger, game_id: str) -> Any:
        key = self._key(ledger, game_id)
        if key in self.states:
            return self.states[key][0]
        if key not in self.games:
            from replays.store.timeline import game_of

            self._keep(self.games, key, game_of(ledger, game_id))
        return self.games[key]

    def state(self, ledger, game_id: str, step: int) -> Any:
        """The table after ``step`` steps (1: after the first); ``game`` asked first."""
        from replays.store.timeline import state_at_step, states_after_steps

        key = self._key(ledger, game_id)
        if key not in self.states:
            if key not in self.shown:
                self._keep(self.shown, key, True)
                return state_at_step(ledger, game_id, step, game=self.games.get(key))
            self._keep(self.states, key, states_after_steps(ledger, game_id))
        self.states.move_to_end(key)
        return self.states[key][1][step - 1]

    @staticmethod
    def _key(ledger, game_id: str) -> tuple:
        from replays.store.timeline import latest_version

        return ledger.url, game_id, latest_version(ledger, game_id)

    @staticmethod
    def _keep(cache, key, value) -> None:
        cache[key] = value
        while len(cache) > CACHED_GAMES:
            cache.popitem(last=False)


def step_states(name: str) -> StepStates:
    """The app's kept states under ``name`` (one per page module), or a fresh, empty one
    when the app keeps nothing (``REPLAY_CACHE`` off: every view is a first view)."""
    from flask import current_app

    if not current_app.config.get("REPLAY_CACHE", True):
        return StepStates()
    return current_app.extensions.setdefault(name, StepStates())
