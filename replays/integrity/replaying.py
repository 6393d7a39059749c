"""Stored events decoded and applied for ``verify``'s replays, without the library's
per-event generic work.

``verify`` replays every game in the store (its read rows, snapshots and deal all come
from that replay), so what the eventsourcing library does for each event beyond the
event's own work shows: the mapper resolves the topic, looks up the id convertor and
the class version each time; ``mutate`` copies the event's attributes and filters them
against the body's signature. :class:`Replayer` looks those up once per event class and
does the rest as the library does, in the same order, with the same checks (the event
belongs to this aggregate, its version is the next one) and the same errors, so a
replay gives the same aggregate, or fails the same way, as the library's
(``tests/test_verify_replaying.py`` compares them event by event, on every variant and
on forged events). An event class that overrides ``mutate`` or ``apply`` (a game's
first event, which builds the aggregate) goes through the library itself.
"""

from __future__ import annotations

import inspect
import weakref
from typing import Any
from uuid import UUID

from eventsourcing.domain import (
    CanMutateAggregate,
    DecoratedFuncCaller,
    OriginatorIDError,
    OriginatorVersionError,
    decorated_funcs,
)
from eventsourcing.persistence import (
    Mapper,
    MapperDeserialisationError,
    StoredEvent,
    find_id_convertor,
)

from replays.store.decoding import check_state_topics, event_class


def _body_of(cls: type) -> tuple[Any, tuple[str, ...]] | None:
    """The ``@event`` body an event class applies and its parameter names, when the class
    applies it exactly as ``DecoratedFuncCaller.apply`` under the library's own
    ``mutate`` does; None otherwise (the library then applies it)."""
    if getattr(cls, "mutate", None) is not CanMutateAggregate.mutate:
        return None
    if getattr(cls, "apply", None) is not DecoratedFuncCaller.apply:
        return None
    body = decorated_funcs.get(cls)
    if body is None:
        return None
    # DecoratedFuncCaller.apply ends with super().apply(): only the library's empty one
    # may follow it, or that work would be skipped here.
    mro = cls.__mro__
    for base in mro[mro.index(DecoratedFuncCaller) + 1 :]:
        found = base.__dict__.get("apply")
        if found is not None and found is not CanMutateAggregate.apply:
            return None
    return body, tuple(inspect.signature(body).parameters)


class Replayer:
    """Decode stored events as ``mapper.to_domain_event`` does and apply them as the
    event's ``mutate`` does, the per-class lookups made once."""

    def __init__(self, mapper: Mapper) -> None:
        self.mapper = mapper
        # A cipher or compressor: the mapper decodes (not used by the ledger today).
        self.plain = not (mapper.cipher or mapper.compressor)
        self.decode_state = mapper.transcoder.decode
        self._classes: dict[str, tuple[type, Any, int]] = {}
        self._bodies: dict[type, tuple[Any, tuple[str, ...]] | None] = {}

    def event(self, originator_id: UUID, version: int, topic: str, state: bytes) -> Any:
        """The domain event of a stored row (``originator_id`` as a UUID)."""
        if not self.plain:
            return self.mapper.to_domain_event(StoredEvent(originator_id, version, topic, state))
        found = self._classes.get(topic)
        if found is None:
            cls = event_class(topic, version=version)  # the allow-list: never an import
            found = (cls, find_id_convertor(cls, UUID), getattr(cls, "class_version", 1))
            self._classes[topic] = found
        cls, convert, class_version = found
        try:
            event_state = self.decode_state(state)
        except Exception as error:
            message = (
                f"Failed to deserialise state of stored event with topic '{topic}', "
                f"originator_id '{originator_id}' and originator_version {version}: {error}"
            )
            raise MapperDeserialisationError(message) from error
        check_state_topics(event_state, version=version)
        event_state["originator_id"] = convert(originator_id)
        event_state["originator_version"] = version
        from_version = event_state.pop("class_version", 1)
        while from_version < class_version:
            getattr(cls, f"upcast_v{from_version}_v{from_version + 1}")(event_state)
            from_version += 1
        domain_event = object.__new__(cls)
        object.__setattr__(domain_event, "__dict__", event_state)
        return domain_event

    def apply(self, event: Any, aggregate: Any) -> Any:
        """``event.mutate(aggregate)``: the same checks, body, version and time."""
        cls = type(event)
        try:
            plan = self._bodies[cls]
        except KeyError:
            plan = self._bodies[cls] = _body_of(cls)
        if plan is None or aggregate is None:
            return event.mutate(aggregate)
        if event.originator_id != aggregate.id:
            raise OriginatorIDError(event.originator_id, aggregate.id)
        next_version = aggregate.version + 1
        if event.originator_version != next_version:
            raise OriginatorVersionError(event.originator_version, next_version)
        body, names = plan
        values = event.__dict__
        body(aggregate, **{name: values[name] for name in names if name in values})
        aggregate.version = event.originator_version
        aggregate.modified_on = event.timestamp
        return aggregate


_REPLAYERS: weakref.WeakKeyDictionary[Mapper, Replayer] = weakref.WeakKeyDictionary()


def replayer_for(mapper: Mapper) -> Replayer:
    """One replayer per mapper (its lookups kept for the mapper's life)."""
    found = _REPLAYERS.get(mapper)
    if found is None:
        found = _REPLAYERS[mapper] = Replayer(mapper)
    return found
