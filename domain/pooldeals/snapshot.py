"""A match's state in plain JSON, for snapshots.

Everything the match keeps is already plain JSON (scores, chips, each deal's record and
result, the steps) except its configuration, its times and the current deal's 13-card game.
The game is not written at all: a restored match plays the current deal again from its deal
and moves (at most one deal's moves), which keeps the snapshot small and means the deal's
state can never disagree with its record.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from domain.pooldeals.table import MatchConfig

_LIBRARY = ("_id", "_version", "_pending_events")
_DERIVED = ("game",)  # rebuilt by Match.Snapshot.mutate from the last deal


def _time_out(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def _time_in(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


def _same(value: Any) -> Any:
    return value


_CODECS: dict[str, tuple[Callable, Callable]] = {
    "config": (MatchConfig.to_dict, MatchConfig.from_dict),
    "_created_on": (_time_out, _time_in),
    "_modified_on": (_time_out, _time_in),
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
    "steps",
    "step_versions",
)
_CODECS.update({name: (_same, _same) for name in _PLAIN})


class UnknownAttribute(TypeError):
    """The match has an attribute this module does not know how to snapshot."""


def snapshot_state(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """The match's attributes (``vars(match)``) as plain JSON values."""
    state = {}
    for name, value in attributes.items():
        if name in _LIBRARY or name in _DERIVED:
            continue
        try:
            encode = _CODECS[name][0]
        except KeyError:
            raise UnknownAttribute(f"match snapshots do not know attribute {name!r}") from None
        state[name] = encode(value)
    return state


def restore_state(state: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes a match had, from :func:`snapshot_state`'s output (but its game)."""
    attributes = {}
    for name, value in state.items():
        try:
            decode = _CODECS[name][1]
        except KeyError:
            raise UnknownAttribute(f"a match snapshot holds unknown attribute {name!r}") from None
        attributes[name] = decode(value)
    return attributes
