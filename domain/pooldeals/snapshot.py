"""A match's state in plain JSON, for snapshots.

Everything the match keeps is already plain JSON (scores, chips, each deal's record and
result, the steps) except its configuration, its times and the current deal's 13-card game.
The game is not written at all: a restored match plays the current deal again from its deal
and moves (at most one deal's moves), which keeps the snapshot small and means the deal's
state can never disagree with its record.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from domain.pooldeals.table import MatchConfig
from domain.snapshots import TIMES, AttributeCodecs, same

_DERIVED = ("game",)  # rebuilt by Match.Snapshot.mutate from the last deal

_CODECS: dict[str, tuple[Callable, Callable]] = {
    "config": (MatchConfig.to_dict, MatchConfig.from_dict),
    **TIMES,
}
_PLAIN = (
    "reported",
    "started_at",
    "phase",
    "scores",
    "eliminated",
    "rejoins",
    "rejoin_log",
    "tiebreak",
    "dealer",
    "deals",
    "results",
    "split",
    "winner",
    "settlement",
    "computed_hash",
    "steps",
    "step_versions",
)
_CODECS.update({name: (same, same) for name in _PLAIN})
_MATCH = AttributeCodecs(_CODECS, derived=_DERIVED, what="match")


def snapshot_state(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """The match's attributes (``vars(match)``) as plain JSON values."""
    return _MATCH.encode(attributes)


def restore_state(state: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes a match had, from :func:`snapshot_state`'s output (but its game)."""
    return _MATCH.decode(state)
