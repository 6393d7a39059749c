"""Game types as plug-ins: the registry (:mod:`.registry`) and the ONE list in the project
that names every family, with the interface (:mod:`domain.variant_base`) re-exported.

Importing this package registers them; everything else asks the registry
(docs/adding-a-variant.md). The interface lives outside this package so that a family's
modules, which implement it, never run this list: any of them imports on its own, before
anything else (``import domain.pooldeals.rows`` once met its own family half-imported).
"""

from domain.pooldeals.variant import DEALS, POOL
from domain.red3.variant import RED3
from domain.rummy13.variant import POINTS, RAISE
from domain.variant_base import (
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
