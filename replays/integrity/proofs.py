"""Proof files and their offline verification: no database, only the proof, the
checkpoint(s) and the ledger's public key.

Two kinds of proof file (JSON; ``docs/integrity.md`` shows examples):

- ``rummy-ledger/inclusion@1``: one game's stored events, each with its leaf position
  and RFC 9162 audit path to the root of a checkpoint, plus the game's chain values. It
  shows that these exact events (bytes and order) are in the tree the ledger signed.
- ``rummy-ledger/consistency@1``: an RFC 9162 consistency proof between two checkpoints:
  the later tree only appends to the earlier one, nothing before it was changed.

:func:`verify_proof` checks a proof file's content and returns a :class:`ProofResult`
with what was checked, line by line, or the first reason it fails.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from replays.integrity.canonical import GENESIS, chain_hash, event_leaf
from replays.integrity.merkle import verify_consistency, verify_inclusion
from replays.integrity.signing import Checkpoint, SigningError

INCLUSION_FORMAT = "rummy-ledger/inclusion@1"
CONSISTENCY_FORMAT = "rummy-ledger/consistency@1"


class ProofFormatError(ValueError):
    """A proof file that is not shaped as documented; the message names the field."""


@dataclass
class ProofResult:
    ok: bool = True
    checked: list[str] = field(default_factory=list)
    failure: str | None = None

    def fail(self, reason: str) -> ProofResult:
        self.ok, self.failure = False, reason
        return self


@dataclass(frozen=True)
class ProvenEvent:
    """One stored event as it appears in an inclusion proof."""

    version: int
    position: int
    topic: str
    state: bytes
    chain: bytes
    path: tuple[bytes, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "position": self.position,
            "topic": self.topic,
            "state": base64.b64encode(self.state).decode(),
            "chain": self.chain.hex(),
            "path": [node.hex() for node in self.path],
        }


def inclusion_document(
    game_id: str,
    originator_id: UUID,
    checkpoint: Checkpoint,
    events: Sequence[ProvenEvent],
    complete: bool,
) -> dict[str, Any]:
    return {
        "format": INCLUSION_FORMAT,
        "game_id": game_id,
        "originator_id": str(originator_id),
        "checkpoint": checkpoint.to_dict(),
        "complete": complete,
        "events": [event.to_dict() for event in events],
    }


def consistency_document(old: Checkpoint, new: Checkpoint, proof: Sequence[bytes]) -> dict:
    return {
        "format": CONSISTENCY_FORMAT,
        "old": old.to_dict(),
        "new": new.to_dict(),
        "proof": [node.hex() for node in proof],
    }


def verify_proof(
    document: Any,
    public_key: Ed25519PublicKey,
    checkpoints: Iterable[Checkpoint] = (),
) -> ProofResult:
    """Check a proof file's content against the public key and the auditor's checkpoints.

    When ``checkpoints`` are given, the proof must be against one of them (same size and
    root); the auditor's own copies are what make the proof independent of the ledger.
    """
    result = ProofResult()
    try:
        if not isinstance(document, dict):
            raise ProofFormatError("a proof file is a JSON object")
        kind = document.get("format")
        if kind == INCLUSION_FORMAT:
            return _verify_inclusion(document, public_key, list(checkpoints), result)
        if kind == CONSISTENCY_FORMAT:
            return _verify_consistency(document, public_key, list(checkpoints), result)
        raise ProofFormatError(
            f"format must be {INCLUSION_FORMAT!r} or {CONSISTENCY_FORMAT!r}, got {kind!r}"
        )
    except (ProofFormatError, SigningError) as error:
        return result.fail(str(error))


def _checkpoint(
    data: Any, where: str, public_key: Ed25519PublicKey, result: ProofResult
) -> Checkpoint | None:
    checkpoint = Checkpoint.from_dict(data, where)
    reason = checkpoint.verify(public_key)
    if reason:
        result.fail(f"{where}: {reason}")
        return None
    result.checked.append(
        f"{where}: signature good (key {checkpoint.key_id}), {checkpoint.size} events, "
        f"root {checkpoint.root.hex()[:16]}…, {checkpoint.time}"
    )
    return checkpoint


def _matches_given(checkpoint: Checkpoint, given: list[Checkpoint]) -> bool:
    return any(c.size == checkpoint.size and c.root == checkpoint.root for c in given)


def _verify_inclusion(
    document: dict, public_key: Ed25519PublicKey, given: list[Checkpoint], result: ProofResult
) -> ProofResult:
    game_id = document.get("game_id")
    try:
        originator_id = UUID(str(document.get("originator_id")))
    except ValueError:
        raise ProofFormatError(
            f"originator_id is not a UUID: {document.get('originator_id')!r}"
        ) from None
    checkpoint = _checkpoint(document.get("checkpoint"), "checkpoint", public_key, result)
    if checkpoint is None:
        return result
    if given and not _matches_given(checkpoint, given):
        return result.fail(
            f"the proof is against a tree of {checkpoint.size} events with root "
            f"{checkpoint.root.hex()}, which is not a checkpoint you gave"
        )
    events = document.get("events")
    if not isinstance(events, list) or not events:
        raise ProofFormatError("events must be a non-empty list")
    previous, last_position = GENESIS, -1
    for number, raw in enumerate(events, start=1):
        event = _proven_event(raw, f"events[{number - 1}]")
        where = f"game {game_id}, event {event.version}"
        if event.version != number:
            return result.fail(
                f"{where}: expected event {number} next; a game's events start at 1 "
                "and have no gaps"
            )
        if event.position <= last_position:
            return result.fail(f"{where}: positions must increase (log order)")
        leaf = event_leaf(originator_id, event.version, event.topic, event.state)
        if not verify_inclusion(leaf, event.position, checkpoint.size, event.path, checkpoint.root):
            return result.fail(
                f"{where}: not included in the checkpoint at position {event.position}: "
                "the event's bytes or its audit path were altered"
            )
        previous = chain_hash(previous, leaf)
        if previous != event.chain:
            return result.fail(f"{where}: chain value does not follow from the events before it")
        last_position = event.position
    complete = "all of its sealed events" if document.get("complete") else "its first events"
    result.checked.append(
        f"game {game_id}: events 1-{len(events)} ({complete}) are in the checkpoint, "
        f"chain head {previous.hex()[:16]}…"
    )
    return result


def _verify_consistency(
    document: dict, public_key: Ed25519PublicKey, given: list[Checkpoint], result: ProofResult
) -> ProofResult:
    old = _checkpoint(document.get("old"), "old checkpoint", public_key, result)
    new = old and _checkpoint(document.get("new"), "new checkpoint", public_key, result)
    if old is None or new is None:
        return result
    if given and not (_matches_given(old, given) or _matches_given(new, given)):
        return result.fail("neither checkpoint in the proof is one you gave")
    proof = _hashes(document.get("proof"), "proof")
    if old.size > new.size:
        return result.fail(f"old checkpoint ({old.size} events) is larger than new ({new.size})")
    if not verify_consistency(old.size, new.size, old.root, new.root, proof):
        return result.fail(
            f"the tree of {new.size} events does not extend the tree of {old.size}: "
            "history before the old checkpoint was changed"
        )
    result.checked.append(
        f"the tree of {new.size} events ({new.time}) extends the tree of {old.size} "
        f"({old.time}): append-only"
    )
    return result


def _proven_event(raw: Any, where: str) -> ProvenEvent:
    if not isinstance(raw, dict):
        raise ProofFormatError(f"{where} must be an object")
    version, position, topic = raw.get("version"), raw.get("position"), raw.get("topic")
    for name, value in (("version", version), ("position", position)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ProofFormatError(f"{where}.{name} must be a non-negative integer")
    if not isinstance(topic, str):
        raise ProofFormatError(f"{where}.topic must be text")
    try:
        state = base64.b64decode(str(raw.get("state")), validate=True)
    except (binascii.Error, ValueError):
        raise ProofFormatError(f"{where}.state must be base64") from None
    chain = _hashes([raw.get("chain")], f"{where}.chain")[0]
    return ProvenEvent(
        version, position, topic, state, chain, tuple(_hashes(raw.get("path"), f"{where}.path"))
    )


def _hashes(values: Any, where: str) -> list[bytes]:
    if not isinstance(values, list):
        raise ProofFormatError(f"{where} must be a list of hex hashes")
    hashes = []
    for value in values:
        try:
            digest = bytes.fromhex(value) if isinstance(value, str) else b""
        except ValueError:
            digest = b""
        if len(digest) != 32:
            raise ProofFormatError(f"{where} holds {value!r}, not a 64-digit hex hash")
        hashes.append(digest)
    return hashes
