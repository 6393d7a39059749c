"""Game types as plug-ins: the interface (:mod:`.base`), the registry (:mod:`.registry`) and
the ONE list in the project that names every family.

Importing this package registers them; everything else asks the registry
(docs/adding-a-variant.md).
"""

from domain.pooldeals.variant import DEALS, POOL
from domain.red3.variant import RED3
from domain.rummy13.variant import POINTS, RAISE
from domain.variants.base import (
    RECORDED,
    REPORTED,
    Discrepancy,
    GameRows,
    NotLive,
    PublishedSchema,
    ReportedAlready,
    SimulatedPlay,
    Variant,
)
from domain.variants.registry import (
    SNAPSHOT_INTERVALS,
    SNAPSHOT_PROJECTORS,
    UnknownVariant,
    for_game,
    for_parsed,
    for_record,
    for_topic,
    get,
    names,
    register,
    settlement_kinds,
    started_topics,
    topic_prefixes,
    unregister,
)
from domain.variants.registry import all as all_variants

for _variant in (POINTS, RAISE, RED3, POOL, DEALS):
    register(_variant)

__all__ = [
    "RECORDED",
    "REPORTED",
    "SNAPSHOT_INTERVALS",
    "SNAPSHOT_PROJECTORS",
    "Discrepancy",
    "GameRows",
    "NotLive",
    "PublishedSchema",
    "ReportedAlready",
    "SimulatedPlay",
    "UnknownVariant",
    "Variant",
    "all_variants",
    "for_game",
    "for_parsed",
    "for_record",
    "for_topic",
    "get",
    "names",
    "register",
    "settlement_kinds",
    "started_topics",
    "topic_prefixes",
    "unregister",
]
