"""The canonical bytes of a stored event, its leaf hash, and the per-game hash chain.

A stored event is what eventsourcing writes: the aggregate's id, its version, the event's
topic and its state bytes (already transcoded). The same event gives the same bytes on
SQLite and PostgreSQL, because nothing engine-specific goes in — not the notification id,
not a timestamp of storage, not the driver's UUID or blob representation:

====================  =======================================================
bytes                 content
====================  =======================================================
4                     magic ``b"RLE1"`` (rummy-ledger event, encoding 1)
16                    originator id, the UUID's 16 bytes in RFC 4122 order
8                     originator version, unsigned big-endian
4 + n                 topic: length n (unsigned big-endian), then UTF-8 bytes
4 + m                 state: length m (unsigned big-endian), then the bytes
====================  =======================================================

The Merkle leaf is ``SHA-256(0x00 ‖ event bytes)`` (RFC 6962). A game's chain starts at
32 zero bytes and goes ``chain_v = SHA-256(0x02 ‖ chain_(v-1) ‖ leaf_v)`` for versions
1, 2, 3, ...: the 0x02 keeps chain links apart from tree leaves (0x00) and nodes (0x01).

>>> from uuid import UUID
>>> data = event_bytes(UUID(int=1), 1, "t", b"{}")
>>> data.hex()
'524c45310000000000000000000000000000000100000000000000010000000174000000027b7d'
>>> chain_hash(GENESIS, event_leaf(UUID(int=1), 1, "t", b"{}")).hex()[:16]
'fd379db9faaa127c'
"""

from __future__ import annotations

import hashlib
from uuid import UUID

from replays.integrity.merkle import leaf_hash

MAGIC = b"RLE1"
GENESIS = bytes(32)  # the chain value before a game's first event
LEAF_PREFIX = b"\x00" + MAGIC  # RFC 6962's leaf prefix, then the event's first bytes
CHAIN_PREFIX = b"\x02"  # a chain link: SHA-256(0x02 ‖ previous ‖ leaf)


def event_bytes(
    originator_id: UUID | bytes, originator_version: int, topic: str, state: bytes
) -> bytes:
    """The documented, engine-independent encoding of one stored event.

    ``originator_id`` may be given as a UUID or as its 16 bytes.
    """
    if originator_version < 0:
        raise ValueError(f"negative originator version {originator_version}")
    raw_id = originator_id.bytes if isinstance(originator_id, UUID) else originator_id
    if len(raw_id) != 16:
        raise ValueError(f"an originator id is 16 bytes, got {len(raw_id)}")
    topic_bytes = topic.encode("utf-8")
    return b"".join(
        (
            MAGIC,
            raw_id,
            originator_version.to_bytes(8, "big"),
            len(topic_bytes).to_bytes(4, "big"),
            topic_bytes,
            len(state).to_bytes(4, "big"),
            bytes(state),
        )
    )


def event_leaf(
    originator_id: UUID | bytes, originator_version: int, topic: str, state: bytes
) -> bytes:
    """The event's Merkle leaf hash, ``SHA-256(0x00 ‖ event bytes)``.

    Every save hashes each of its events, so the bytes are hashed as they are joined,
    without the checks and the copy of :func:`event_bytes` when the id is well formed.
    """
    raw_id = originator_id.bytes if isinstance(originator_id, UUID) else originator_id
    if len(raw_id) != 16 or originator_version < 0:
        return leaf_hash(event_bytes(originator_id, originator_version, topic, state))
    topic_bytes = topic.encode("utf-8")
    return hashlib.sha256(
        b"".join(
            (
                LEAF_PREFIX,
                raw_id,
                originator_version.to_bytes(8, "big"),
                len(topic_bytes).to_bytes(4, "big"),
                topic_bytes,
                len(state).to_bytes(4, "big"),
                state,
            )
        )
    ).digest()


def chain_hash(previous: bytes, leaf: bytes) -> bytes:
    """The next link of a game's chain: ``SHA-256(0x02 ‖ previous ‖ leaf)``."""
    return hashlib.sha256(CHAIN_PREFIX + previous + leaf).digest()
