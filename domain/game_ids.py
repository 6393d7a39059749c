"""Aggregate ids from game ids, the same for every family.

The event store keys aggregates by UUID; each game's is ``uuid5`` of its game id in one
namespace, so storing a game twice (any variant) fails on the second save instead of
making a second game, and two families can never hold the same game id.

>>> game_uuid("T7-000123") == game_uuid("T7-000123")
True
"""

from __future__ import annotations

import uuid

GAME_NAMESPACE = uuid.UUID("3c0e5d52-5f0e-4b8e-9a55-0d6a3c1f7a11")


def game_uuid(game_id: str) -> uuid.UUID:
    """The aggregate id of the game called ``game_id``."""
    return uuid.uuid5(GAME_NAMESPACE, game_id)
