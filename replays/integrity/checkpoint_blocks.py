"""The block hashes a checkpoint file carries, so that a kept checkpoint can locate a
rewrite (``docs/integrity.md`` §4).

A checkpoint's root commits to every event below its size, but a root alone can only say
"something changed". The file therefore also carries the hashes of the tree's complete
subtrees at one level ``L`` (the *blocks*: leaves ``i·2^L … (i+1)·2^L − 1``), and the
hashes of the aligned subtrees that make up the rest after the last complete block (the
*rest*). They need no signature of their own: folded as the tree folds them they must
give the signed root, so a block hash that was changed no longer does (SHA-256 second
preimages being out of reach). ``L`` is the smallest level (16 leaves or more, the
smallest subtree the store keeps) at which there are at most :data:`MOST_BLOCKS` blocks,
so the file stays small: at most 4,096 hashes, about 270 kB, whatever the store's size.

Pure: no storage. :mod:`replays.integrity.evidence` writes them, :mod:`replays.integrity.locate`
bisects with them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from replays.integrity import merkle
from replays.integrity.models import NODE_MIN_LEVEL

MOST_BLOCKS = 4096
_HEX64 = re.compile(r"[0-9a-f]{64}\Z")


class BlocksError(ValueError):
    """A ``blocks`` member that is not what a checkpoint file holds (the message says why)."""


def block_level(size: int, most: int = MOST_BLOCKS) -> int:
    """The smallest level, at least the smallest stored one, with at most ``most`` blocks.

    >>> block_level(100_000), 100_000 >> 5
    (5, 3125)
    """
    level = NODE_MIN_LEVEL
    while size >> level > most:
        level += 1
    return level


def rest_subtrees(size: int, level: int) -> list[merkle.Subtree]:
    """The aligned subtrees after the last complete block (none when the size is a
    multiple of the block size)."""
    start = (size >> level) << level
    return merkle.subtrees_of(start, size) if start < size else []


@dataclass(frozen=True)
class Blocks:
    """Block hashes at ``level`` (in order) and the rest's subtree hashes (largest first)."""

    level: int
    hashes: tuple[bytes, ...]
    rest: tuple[bytes, ...]

    def root(self, size: int) -> bytes | None:
        """The root these hashes give for a tree of ``size`` leaves (None when their
        number does not fit that size). The RFC 9162 tree over ``size`` leaves splits at
        powers of two, so above the block level it is the same tree over the block
        hashes followed by the rest's hash."""
        spans = rest_subtrees(size, self.level)
        if len(self.hashes) != size >> self.level or len(self.rest) != len(spans):
            return None
        items = list(self.hashes)
        if self.rest:
            value = self.rest[-1]
            for left in reversed(self.rest[:-1]):
                value = merkle.node_hash(left, value)
            items.append(value)
        return merkle.tree_hash(items) if items else merkle.EMPTY_ROOT

    def subtree(self, size: int, level: int, index: int) -> bytes | None:
        """The hash of an aligned subtree these blocks give (a block, a whole run of
        blocks above the block level, or one of the rest's subtrees), else None."""
        if level >= self.level:
            span = 1 << (level - self.level)
            first = index * span
            if first + span > len(self.hashes):
                return None
            return merkle.tree_hash(self.hashes[first : first + span])
        for (lv, ix), value in zip(rest_subtrees(size, self.level), self.rest, strict=True):
            if (lv, ix) == (level, index):
                return value
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "hashes": [h.hex() for h in self.hashes],
            "rest": [h.hex() for h in self.rest],
        }

    @classmethod
    def from_dict(cls, data: Any, size: int, where: str = "checkpoint") -> Blocks:
        """Parse a file's ``blocks`` member; raise :class:`BlocksError` naming the field."""
        if not isinstance(data, dict):
            raise BlocksError(f"{where}: blocks must be a JSON object")
        level = data.get("level")
        if not isinstance(level, int) or isinstance(level, bool) or not 0 <= level <= 63:
            raise BlocksError(f"{where}: blocks.level must be an integer 0-63, got {level!r}")
        parsed = {}
        for name, count in (
            ("hashes", size >> level),
            ("rest", len(rest_subtrees(size, level))),
        ):
            values = data.get(name)
            if not isinstance(values, list) or len(values) != count:
                raise BlocksError(
                    f"{where}: blocks.{name} must be a list of {count} hashes for "
                    f"{size} events at level {level}"
                )
            for i, value in enumerate(values):
                if not isinstance(value, str) or not _HEX64.match(value):
                    raise BlocksError(
                        f"{where}: blocks.{name}[{i}] must be 64 lowercase hex digits"
                    )
            parsed[name] = tuple(bytes.fromhex(v) for v in values)
        return cls(level, parsed["hashes"], parsed["rest"])
