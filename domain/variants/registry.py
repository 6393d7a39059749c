"""The registry: every game type the ledger records, looked up by name, record, game or topic.

Code outside a variant's package asks here and never names a variant (as python-chess's
``find_variant`` does). :mod:`domain.variants` registers the families; a test may register
a toy variant and :func:`unregister` it again.

>>> from domain.variants import get
>>> get("points").name, get("red3").has_money
('points', False)
>>> get("gin")
Traceback (most recent call last):
...
domain.variants.registry.UnknownVariant: unknown variant 'gin' (known: points, raise, red3, pool, deals)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from domain.variant_base import Variant

_VARIANTS: dict[str, Variant] = {}
# The snapshot policy, kept up to date as variants come and go: the Ledger reads these
# dicts themselves (eventsourcing's ``snapshotting_intervals``/``_projectors``).
SNAPSHOT_INTERVALS: dict[type, int] = {}
SNAPSHOT_PROJECTORS: dict[type, Any] = {}
_BY_PREFIX: dict[str, Variant] = {}  # topic prefix -> variant (the projection asks per event)


def project(game: Any, events: Iterable[Any]) -> Any:
    """Apply events in order (the library's default projector spends most of its time on an
    ``isinstance`` check per event; see EVENTSOURCING.md)."""
    for domain_event in events:
        game = domain_event.mutate(game)
    return game


class UnknownVariant(ValueError):
    """A variant name (or record format, or event topic) no registered variant has."""


def register(variant: Variant) -> Variant:
    """Add ``variant``; its name must be new (a second ``points`` would shadow the first)."""
    if variant.name in _VARIANTS and _VARIANTS[variant.name] is not variant:
        raise ValueError(f"variant {variant.name!r} is already registered")
    _VARIANTS[variant.name] = variant
    _policy()
    return variant


def unregister(name: str) -> None:
    """Remove a variant (tests register toy variants and take them out again)."""
    _VARIANTS.pop(name, None)
    _policy()


def _policy() -> None:
    SNAPSHOT_INTERVALS.clear()
    SNAPSHOT_PROJECTORS.clear()
    _BY_PREFIX.clear()
    for variant in reversed(_VARIANTS.values()):  # the first registered wins a shared prefix
        _BY_PREFIX[variant.topic_prefix] = variant
    for variant in _VARIANTS.values():
        if variant.snapshot_interval:
            SNAPSHOT_INTERVALS[variant.aggregate] = variant.snapshot_interval
        SNAPSHOT_PROJECTORS[variant.aggregate] = project


def all() -> tuple[Variant, ...]:  # the registry's own word, as in the design
    """Every registered variant, in registration order."""
    return tuple(_VARIANTS.values())


def names() -> tuple[str, ...]:
    return tuple(_VARIANTS)


def get(name: Any) -> Variant:
    """The variant called ``name``; :class:`UnknownVariant` lists the known names."""
    try:
        return _VARIANTS[name]
    except (KeyError, TypeError):
        known = ", ".join(_VARIANTS)
        raise UnknownVariant(f"unknown variant {name!r} (known: {known})") from None


def for_record(obj: Mapping[str, Any]) -> Variant | None:
    """The variant a raw record claims: by ``format`` (a family's own record shape), then
    by ``variant`` among the variants sharing that format; None when no registered variant
    has the format (the caller's parser then names the bad field)."""
    record_format = obj.get("format")
    by_format = [v for v in _VARIANTS.values() if v.record_format == record_format]
    named = [v for v in by_format if v.name == obj.get("variant")]
    return (named or by_format or [None])[0]


def _name_of(value: Any) -> Any:
    """A record's or game's variant name: its own ``variant``, or its table's."""
    name = getattr(value, "variant", None)
    if name is None:
        name = getattr(getattr(value, "config", None), "variant", None)
    return name


def for_parsed(record: Any) -> Variant:
    """The variant of a record already parsed (its ``variant``, or its table's)."""
    return get(_name_of(record))


def for_game(game: Any) -> Variant:
    """The variant of an aggregate: by its class, and by its ``variant`` name where one
    class serves several (13-card Points and Raise)."""
    owners = [v for v in _VARIANTS.values() if v.owns(game)]
    named = _name_of(game)
    for variant in owners:
        if variant.name == named:
            return variant
    if owners:
        return owners[0]
    raise UnknownVariant(f"no registered variant records {type(game).__name__} games")


def for_topic(topic: str) -> Variant | None:
    """The variant whose aggregate's events have ``topic`` (None: not a game event)."""
    found = _BY_PREFIX.get(topic[: topic.rfind(".") + 1])
    if found is not None:
        return found
    for variant in _VARIANTS.values():
        if topic.startswith(variant.topic_prefix):
            return variant
    return None


def settlement_kinds() -> tuple[str, ...]:
    """Every ledger_entries kind a registered variant's settlement posts, once each."""
    return tuple(dict.fromkeys(kind for v in _VARIANTS.values() for kind in v.entry_kinds))


def started_topics() -> list[str]:
    """Every family's first-event topic, once each (listing the stored games)."""
    return list(dict.fromkeys(v.started_topic for v in _VARIANTS.values()))


def topic_prefixes() -> tuple[str, ...]:
    """Every family's event-topic prefix, once each."""
    return tuple(dict.fromkeys(v.topic_prefix for v in _VARIANTS.values()))
