"""Locating a resealed edit: bisect the tree the events give against hashes still known
to hold the tree as first written (``docs/integrity.md`` §6, "A resealed edit").

An insider who edits an event and rewrites its seal and its game's chain leaves nothing
for the seals to find. What still commits to the old event is higher up: a signed
checkpoint's root (and the block hashes its file carries), the tree head, and the stored
subtrees (``integrity_nodes``), unless those were rewritten too. From such an *anchor*
the search goes down the tree: a node whose hash differs from the one the events give is
split in two, and the search follows the half that differs, **as long as two child hashes
are known that give the parent's trusted hash** (then they are as trustworthy as the
parent: a forger would need a SHA-256 second preimage). Children come from *witnesses*:
the checkpoint file's blocks, the tree head's frontier, the stored tree. Where no witness
can vouch for the children, the search stops: that range is a *block*, and one of its
events was edited (or more).

Inside the smallest stored subtree (16 events) no event's original hash is kept anywhere;
:func:`name_events` then asks the read models (rows projected from each event as first
written) and the deal checks which of the block's events they contradict.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from replays.integrity import merkle
from replays.integrity.models import NODE_MIN_LEVEL
from replays.integrity.store import IntegrityError, StoredTree

Lookup = Callable[[int, int], "bytes | None"]  # (level, index) -> subtree hash, if known

RESEALED = "resealed"
# Findings that name an event from outside the tree: rows projected from it as first
# written, a deal that no longer comes from its seeds, an event that no longer replays.
WITNESS_KINDS = ("read_model", "unreadable", "deal")


@dataclass(frozen=True)
class Witness:
    """A source of subtree hashes. ``independent``: the hashes are not part of the anchor
    they confirm (the stored tree, below a tree head), so a match confirms the anchor."""

    name: str
    lookup: Lookup
    independent: bool = True


@dataclass(frozen=True)
class Anchor:
    """A trusted tree: ``size`` events with this ``root``. ``signed``: a checkpoint whose
    signature holds (trusted outright); otherwise (the tree head) a block is reported only
    once an independent witness confirmed the way down to it."""

    name: str
    size: int
    root: bytes
    witnesses: tuple[Witness, ...]
    signed: bool = True


@dataclass(frozen=True)
class Block:
    """Tree positions ``start``..``end - 1``, whose old hash ``held_by`` still holds."""

    start: int
    end: int
    held_by: str
    games: tuple[tuple[str, int, int], ...] = field(default=(), compare=False)

    @property
    def positions(self) -> str:
        return f"{self.start}-{self.end - 1}"

    def covers(self, game_id: str | None, event: int | None) -> bool:
        return any(g == game_id and lo <= (event or 0) <= hi for g, lo, hi in self.games)


def range_hash(lookup: Lookup, start: int, end: int) -> bytes | None:
    """``MTH(D[start:end])`` from a lookup, or None when a part is not known."""
    parts = [lookup(level, index) for level, index in merkle.subtrees_of(start, end)]
    if any(part is None for part in parts):
        return None
    value = parts[-1]
    for left in reversed(parts[:-1]):
        value = merkle.node_hash(left, value)
    return value


def locate(anchor: Anchor, events: Lookup) -> list[Block]:
    """The blocks where the tree the events give (``events``) departs from ``anchor``."""
    blocks: list[Block] = []
    # Nothing is located at the anchor itself: a root no witness can split says no more
    # than the failing checkpoint (or tree head) already does.
    todo = [(0, anchor.size, anchor.root, False, anchor.name)]
    while todo:
        start, end, trusted, confirmed, held_by = todo.pop()
        if range_hash(events, start, end) in (trusted, None):
            continue
        found = _trusted_halves(anchor.witnesses, start, end, trusted) if end - start > 1 else None
        if found is None:
            if confirmed:
                blocks.append(Block(start, end, held_by))
            continue
        (left, right), witness = found
        k = merkle.split_point(end - start)
        confirmed = confirmed or anchor.signed or witness.independent
        todo.append((start + k, end, right, confirmed, witness.name))
        todo.append((start, start + k, left, confirmed, witness.name))
    return sorted(blocks, key=lambda b: b.start)


def _trusted_halves(witnesses: Sequence[Witness], start: int, end: int, trusted: bytes):
    middle = start + merkle.split_point(end - start)
    for witness in witnesses:
        left = range_hash(witness.lookup, start, middle)
        right = range_hash(witness.lookup, middle, end)
        if left is not None and right is not None and merkle.node_hash(left, right) == trusted:
            return (left, right), witness
    return None


# -- witnesses and views of the tree ---------------------------------------------------------
def stored_lookup(tree: StoredTree) -> Lookup:
    """The stored tree: nodes of 16+ events, and below them the seals' leaf hashes."""

    def lookup(level: int, index: int) -> bytes | None:
        try:
            return tree.subtree(level, index)
        except (IntegrityError, TypeError, ValueError):  # missing, or not stored as bytes
            return None

    return lookup


def stored_witness(tree: StoredTree) -> Witness:
    return Witness("the stored tree nodes", stored_lookup(tree))


def frontier_witness(size: int, frontier: bytes) -> Witness:
    """The tree head's frontier: the complete subtrees its size splits into."""
    spans = merkle.subtrees_of(0, size) if size else []
    values = {
        span: frontier[merkle.HASH_SIZE * i : merkle.HASH_SIZE * (i + 1)]
        for i, span in enumerate(spans)
    }
    return Witness("the tree head", lambda level, index: values.get((level, index)), False)


def blocks_witness(checkpoint) -> Witness:
    """A kept checkpoint file's block hashes (checked against its signed root first)."""
    blocks, size = checkpoint.blocks, checkpoint.size
    return Witness(
        f"the block hashes of the checkpoint signed {checkpoint.time}",
        lambda level, index: blocks.subtree(size, level, index),
    )


def events_view(
    tree: StoredTree, nodes: dict[tuple[int, int], bytes], leaves: dict[int, bytes], size: int
) -> Lookup:
    """The tree the events give, after a whole-store pass compared every complete subtree
    of 16+ events with the stored one: the stored hash where they agreed, the recomputed
    one (``nodes``) where not; below, the seals' leaves with the recomputed ``leaves``
    where those differ."""

    def lookup(level: int, index: int) -> bytes | None:
        start, end = index << level, (index + 1) << level
        if end > size:
            return None
        if level >= NODE_MIN_LEVEL:
            return nodes.get((level, index)) or stored_lookup(tree)(level, index)
        found = tree.leaves(start, end) | {p: v for p, v in leaves.items() if start <= p < end}
        if len(found) != end - start:
            return None
        return merkle.tree_hash([found[p] for p in range(start, end)])

    return lookup


def with_leaves(known: dict[int, bytes], base: Lookup) -> Lookup:
    """``base`` with some leaves replaced by the ones recomputed from events: every subtree
    holding one of them is computed from below (one game's view, for ``verify --game``)."""
    positions = sorted(known)

    def lookup(level: int, index: int) -> bytes | None:
        start, end = index << level, (index + 1) << level
        i = bisect_left(positions, start)
        if i == len(positions) or positions[i] >= end:
            return base(level, index)
        if level == 0:
            return known[start]
        left, right = lookup(level - 1, 2 * index), lookup(level - 1, 2 * index + 1)
        return None if left is None or right is None else merkle.node_hash(left, right)

    return lookup


# -- what to say -----------------------------------------------------------------------------
def describe(block: Block) -> str:
    games = ", ".join(f"{g} events {lo}-{hi}" for g, lo, hi in block.games[:10])
    if len(block.games) > 10:
        games += f" and {len(block.games) - 10} more games"
    return (
        f"an event at tree positions {block.positions} ({games or 'no sealed events'}) was "
        f"edited, and its seal and its game's chain rewritten to match: those events no "
        f"longer give the hash that {block.held_by} still hold(s) for them"
    )


def block_game(block: Block) -> str | None:
    """The game a block lies in, when it lies in one."""
    return block.games[0][0] if len(block.games) == 1 else None


def name_events(report, located: list[Block]) -> None:
    """Replace each located block's finding by the events the witnesses name in it (rows
    projected from an event as first written that its stored bytes no longer give)."""
    for block in located:
        witnesses = [
            p
            for p in report.problems
            if p.kind in WITNESS_KINDS and block.covers(p.game_id, p.event)
        ]
        if not witnesses:
            continue
        report.problems[:] = [
            p for p in report.problems if not (p.kind == RESEALED and p.message == describe(block))
        ]
        for game_id, event in sorted({(p.game_id, p.event) for p in witnesses}):
            said = "; ".join(
                p.message for p in witnesses if (p.game_id, p.event) == (game_id, event)
            )
            report.add(
                RESEALED,
                f"the event was edited, and its seal and its game's chain rewritten to match: "
                f"it lies at tree positions {block.positions}, whose events no longer give the "
                f"hash that {block.held_by} still hold(s) for them; what was projected from it "
                f"when it was written says so: {said}",
                game_id,
                event,
            )
