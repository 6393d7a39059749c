"""An aggregate's attributes as plain JSON, for snapshots, attribute by attribute.

A family whose state the event store's transcoder does not know (frozen value types, the
card Counter) lists a codec for each attribute: how to write it as plain JSON and read it
back. Anything not listed is refused, so a new attribute on the aggregate cannot silently go
missing from its snapshots. What the library keeps itself (identity, version, unsaved
events) and what a family rebuilds on restore are left out.

>>> codecs = AttributeCodecs({"phase": (same, same)}, derived=("players",), what="toy")
>>> codecs.decode(codecs.encode({"_id": 1, "phase": "dealt", "players": ("a", "b")}))
{'phase': 'dealt'}
>>> codecs.encode({"hand": []})
Traceback (most recent call last):
...
domain.snapshots.UnknownAttribute: toy snapshots do not know attribute 'hand'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

# Kept by the library itself (identity, version, unsaved events), never in a snapshot.
LIBRARY = ("_id", "_version", "_pending_events")


class UnknownAttribute(TypeError):
    """The aggregate has an attribute its family does not know how to snapshot."""


def same(value: Any) -> Any:
    return value


def time_out(moment: datetime | None) -> str | None:
    # Text, not the store's datetime envelope: a snapshot without envelopes decodes in one
    # pass (see replays.store.transcodings.OrjsonTranscoder.decode).
    return None if moment is None else moment.isoformat()


def time_in(text: str | None) -> datetime | None:
    return None if text is None else datetime.fromisoformat(text)


# The library's own times, which every aggregate has.
TIMES: dict[str, tuple[Callable, Callable]] = {
    "_created_on": (time_out, time_in),
    "_modified_on": (time_out, time_in),
}


class AttributeCodecs:
    """``codecs``: attribute -> (to plain JSON, back); ``derived``: attributes rebuilt on
    restore, never written; ``what``: the family, for the refusal."""

    def __init__(
        self,
        codecs: Mapping[str, tuple[Callable, Callable]],
        *,
        derived: Iterable[str] = (),
        what: str,
    ) -> None:
        self.codecs = dict(codecs)
        self.skipped = frozenset(LIBRARY) | frozenset(derived)
        self.what = what

    def encode(self, attributes: Mapping[str, Any]) -> dict[str, Any]:
        """The attributes (``vars(aggregate)``) as plain JSON values."""
        state = {}
        for name, value in attributes.items():
            if name in self.skipped:
                continue
            try:
                encode = self.codecs[name][0]
            except KeyError:
                raise UnknownAttribute(
                    f"{self.what} snapshots do not know attribute {name!r}"
                ) from None
            state[name] = encode(value)
        return state

    def decode(self, state: Mapping[str, Any]) -> dict[str, Any]:
        """The attributes written by :meth:`encode` (not the derived ones)."""
        attributes = {}
        for name, value in state.items():
            try:
                decode = self.codecs[name][1]
            except KeyError:
                raise UnknownAttribute(
                    f"a {self.what} snapshot holds unknown attribute {name!r}"
                ) from None
            attributes[name] = decode(value)
        return attributes


def restored(aggregate_class: type, snapshot: Any, attributes: dict[str, Any]) -> Any:
    """An aggregate of ``aggregate_class`` with ``attributes`` (from :meth:`AttributeCodecs.
    decode`) and the snapshot's identity and version, built without running ``__init__``
    (a snapshot's ``mutate``: nothing is pending)."""
    aggregate = object.__new__(aggregate_class)
    attributes.update(
        _id=snapshot.originator_id, _version=snapshot.originator_version, _pending_events=[]
    )
    object.__setattr__(aggregate, "__dict__", attributes)
    return aggregate
