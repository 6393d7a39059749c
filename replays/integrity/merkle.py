"""The ledger's Merkle tree, built the way RFC 6962 / RFC 9162 transparency logs are.

Pure functions over hashes; no storage. SHA-256 throughout:

- leaf hash ``H(0x00 ‖ data)``, interior node ``H(0x01 ‖ left ‖ right)``;
- the tree hash of ``n > 1`` leaves splits at ``k``, the largest power of two below ``n``:
  ``MTH(D[0:n]) = H(0x01 ‖ MTH(D[0:k]) ‖ MTH(D[k:n]))``; of no leaves, ``H("")``;
- inclusion proofs (RFC 9162 §2.1.3) and consistency proofs (§2.1.4) with the RFC's own
  verification algorithms, so any RFC 9162 verifier accepts the proofs we write.

Stored trees are read through *aligned complete subtrees*: ``(level, index)`` covers
leaves ``[index·2^level, (index+1)·2^level)``. Every range that appears in a proof is a
short list of those (:func:`subtrees_of`), so a store that keeps them answers proofs with
``O(log n)`` lookups.

>>> leaves = [leaf_hash(bytes([i])) for i in range(7)]
>>> root = tree_hash(leaves)
>>> path = inclusion_proof(5, leaves)
>>> verify_inclusion(leaves[5], 5, 7, path, root)
True
>>> verify_consistency(3, 7, tree_hash(leaves[:3]), root, consistency_proof(3, leaves))
True
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence

HASH_SIZE = 32
EMPTY_ROOT = hashlib.sha256(b"").digest()

Range = tuple[int, int]  # leaves [start, end)
Subtree = tuple[int, int]  # (level, index): leaves [index << level, (index + 1) << level)


class ProofError(ValueError):
    """A proof request that cannot be answered (an index beyond the tree, sizes reversed)."""


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def split_point(n: int) -> int:
    """The largest power of two strictly below ``n`` (``n >= 2``)."""
    return 1 << ((n - 1).bit_length() - 1)


def tree_hash(leaves: Sequence[bytes]) -> bytes:
    """MTH of a list of leaf hashes (not raw data)."""
    builder = TreeBuilder()
    for leaf in leaves:
        builder.append(leaf)
    return builder.root()


class TreeBuilder:
    """The tree over a stream of leaf hashes, in ``O(log n)`` memory.

    It keeps the binary decomposition of the size as complete subtrees, largest first;
    :meth:`append` returns the subtrees it completed, so a store can keep them.

    >>> builder = TreeBuilder()
    >>> [builder.append(leaf_hash(b"x")) for _ in range(4)][-1][-1][:2]
    (2, 0)
    >>> builder.size
    4
    """

    def __init__(self) -> None:
        self.size = 0
        self._stack: list[tuple[int, bytes]] = []  # (level, hash), levels decreasing

    @classmethod
    def resume(cls, size: int, subtree: Callable[[int, int], bytes]) -> TreeBuilder:
        """Continue a tree of ``size`` leaves from its complete subtrees (largest first)."""
        builder = cls()
        if size:
            builder._stack = [(lv, subtree(lv, ix)) for lv, ix in subtrees_of(0, size)]
        builder.size = size
        return builder

    @classmethod
    def from_frontier(cls, size: int, frontier: bytes) -> TreeBuilder:
        """Continue a tree from :attr:`frontier` (what a store keeps to append cheaply)."""
        spans = subtrees_of(0, size) if size else []
        if len(frontier) != HASH_SIZE * len(spans):
            raise ProofError(
                f"a tree of {size} leaves has a frontier of {len(spans)} hashes, "
                f"not {len(frontier)} bytes"
            )
        builder = cls()
        builder._stack = [
            (level, frontier[HASH_SIZE * i : HASH_SIZE * (i + 1)])
            for i, (level, _) in enumerate(spans)
        ]
        builder.size = size
        return builder

    @property
    def frontier(self) -> bytes:
        """The hashes of the complete subtrees the size splits into, largest first: all a
        tree needs to take more leaves and give its root.

        >>> builder = TreeBuilder()
        >>> for n in range(5):
        ...     _ = builder.append(leaf_hash(bytes([n])))
        >>> resumed = TreeBuilder.from_frontier(5, builder.frontier)
        >>> len(builder.frontier), resumed.root() == builder.root()
        (64, True)
        """
        return b"".join(value for _, value in self._stack)

    def append(self, leaf: bytes) -> list[tuple[int, int, bytes]]:
        completed: list[tuple[int, int, bytes]] = []
        position = self.size
        level, value = 0, leaf
        while self._stack and self._stack[-1][0] == level:
            _, left = self._stack.pop()
            level, value = level + 1, node_hash(left, value)
            completed.append((level, position >> level, value))
        self._stack.append((level, value))
        self.size += 1
        return completed

    def extend(self, leaves: Iterable[bytes], min_level: int = 1) -> list[tuple[int, int, bytes]]:
        """:meth:`append` each leaf in turn; the subtrees they complete at ``min_level`` and
        up, in the order the appends list them (leaf by leaf, lower levels first).

        The same hashes as :meth:`append`, for a save's thousands of leaves taken while
        every other writer waits on the store's lock: no list per leaf, no call per node.

        >>> one, many = TreeBuilder(), TreeBuilder()
        >>> leaves = [leaf_hash(bytes([n])) for n in range(37)]
        >>> appended = [node for leaf in leaves for node in one.append(leaf) if node[0] >= 2]
        >>> many.extend(leaves, 2) == appended, many.frontier == one.frontier
        (True, True)
        """
        completed: list[tuple[int, int, bytes]] = []
        keep = completed.append
        stack, push, pop = self._stack, self._stack.append, self._stack.pop
        sha256, size = hashlib.sha256, self.size
        for leaf in leaves:
            level, value = 0, leaf
            while stack and stack[-1][0] == level:
                value = sha256(b"\x01" + pop()[1] + value).digest()  # node_hash(left, value)
                level += 1
                if level >= min_level:
                    keep((level, size >> level, value))
            push((level, value))
            size += 1
        self.size = size
        return completed

    def root(self) -> bytes:
        if not self._stack:
            return EMPTY_ROOT
        value = self._stack[-1][1]
        for _, left in reversed(self._stack[:-1]):
            value = node_hash(left, value)
        return value


def subtrees_of(start: int, end: int) -> list[Subtree]:
    """The aligned complete subtrees whose hashes give ``MTH(D[start:end])``, left to right.

    Only ranges that occur in the RFC's recursion are accepted (``start`` aligned to the
    power of two at or above the range's length), which covers every proof range.

    >>> subtrees_of(0, 7)
    [(2, 0), (1, 2), (0, 6)]
    """
    if not 0 <= start < end:
        raise ProofError(f"empty or negative range [{start}, {end})")
    n = end - start
    if n & (n - 1) == 0:
        if start % n:
            raise ProofError(f"range [{start}, {end}) is not an aligned subtree")
        return [(n.bit_length() - 1, start // n)]
    k = split_point(n)
    return subtrees_of(start, start + k) + subtrees_of(start + k, end)


def range_hash(start: int, end: int, subtree: Callable[[int, int], bytes]) -> bytes:
    """``MTH(D[start:end])`` from a lookup of aligned complete subtree hashes."""
    parts = [subtree(level, index) for level, index in subtrees_of(start, end)]
    value = parts[-1]
    for left in reversed(parts[:-1]):
        value = node_hash(left, value)
    return value


def needed_subtrees(size: int, known: Sequence[int]) -> list[Subtree]:
    """The aligned subtrees that, with the leaves at sorted positions ``known``, give the root.

    A multi-leaf proof: ranges holding none of the known leaves are taken whole.
    """
    needed: list[Subtree] = []
    _walk_known(0, size, known, 0, len(known), needed.extend)
    return needed


def root_from_known(
    size: int, known: dict[int, bytes], subtree: Callable[[int, int], bytes]
) -> bytes:
    """The root of a tree of ``size`` leaves from some known leaf hashes and stored subtrees.

    Leaves in ``known`` are used as given (not looked up), so a verifier that recomputed
    them from the events learns whether those events are the ones the root commits to.
    """
    if size == 0:
        return EMPTY_ROOT
    positions = sorted(known)
    if positions and not 0 <= positions[0] <= positions[-1] < size:
        raise ProofError(f"known leaves {positions[0]}..{positions[-1]} outside a tree of {size}")

    def hash_of(start: int, end: int, lo: int, hi: int) -> bytes:
        if lo == hi:
            return range_hash(start, end, subtree)
        if end - start == 1:
            return known[start]
        k = split_point(end - start)
        mid = bisect_left(positions, start + k, lo, hi)
        return node_hash(hash_of(start, start + k, lo, mid), hash_of(start + k, end, mid, hi))

    return hash_of(0, size, 0, len(positions))


def _walk_known(start, end, known, lo, hi, emit) -> None:
    if start >= end:
        return
    if lo == hi:
        emit(subtrees_of(start, end))
        return
    if end - start == 1:
        return
    k = split_point(end - start)
    mid = bisect_left(known, start + k, lo, hi)
    _walk_known(start, start + k, known, lo, mid, emit)
    _walk_known(start + k, end, known, mid, hi, emit)


def inclusion_ranges(index: int, size: int) -> list[Range]:
    """The leaf ranges whose tree hashes form the audit path of ``index``, leaf level first."""
    if not 0 <= index < size:
        raise ProofError(f"leaf {index} is not in a tree of {size} leaves")
    ranges: list[Range] = []
    start, end = 0, size
    while end - start > 1:
        k = split_point(end - start)
        if index < start + k:
            ranges.append((start + k, end))
            end = start + k
        else:
            ranges.append((start, start + k))
            start += k
    return ranges[::-1]


def consistency_ranges(old_size: int, new_size: int) -> list[Range]:
    """The leaf ranges whose tree hashes form the RFC 9162 consistency proof."""
    if not 0 <= old_size <= new_size:
        raise ProofError(f"no consistency proof from {old_size} to {new_size} leaves")
    if old_size in (0, new_size):
        return []
    ranges: list[Range] = []
    start, end, m, whole = 0, new_size, old_size, True
    while True:
        if m == end - start:
            if not whole:  # SUBPROOF(m, D[m], false) = {MTH(D[m])}
                ranges.append((start, end))
            break
        k = split_point(end - start)
        if m <= k:
            ranges.append((start + k, end))
            end = start + k
        else:
            ranges.append((start, start + k))
            start, m, whole = start + k, m - k, False
    return ranges[::-1]


def _hashes_of(ranges: Iterable[Range], leaves: Sequence[bytes]) -> list[bytes]:
    return [tree_hash(leaves[start:end]) for start, end in ranges]


def inclusion_proof(index: int, leaves: Sequence[bytes]) -> list[bytes]:
    """The audit path of leaf ``index`` in the tree over all ``leaves`` (in memory)."""
    return _hashes_of(inclusion_ranges(index, len(leaves)), leaves)


def consistency_proof(old_size: int, leaves: Sequence[bytes]) -> list[bytes]:
    """The proof that the first ``old_size`` leaves' tree is a prefix of this one."""
    return _hashes_of(consistency_ranges(old_size, len(leaves)), leaves)


def _lsb(n: int) -> int:
    return n & 1


def verify_inclusion(
    leaf: bytes, index: int, size: int, path: Sequence[bytes], root: bytes
) -> bool:
    """RFC 9162 §2.1.3.2: does ``path`` lead from ``leaf`` at ``index`` to ``root``?"""
    if not 0 <= index < size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            return False
        if _lsb(fn) or fn == sn:
            r = node_hash(p, r)
            if not _lsb(fn):
                while not _lsb(fn) and fn != 0:
                    fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and r == root


def verify_consistency(
    old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> bool:
    """RFC 9162 §2.1.4.2: is the tree of ``old_size`` leaves a prefix of the newer one?"""
    if not 0 <= old_size <= new_size:
        return False
    if old_size == new_size:
        return not proof and old_root == new_root
    if old_size == 0:
        return not proof  # every tree extends the empty one
    if not proof:
        return False
    path = list(proof)
    if old_size & (old_size - 1) == 0:
        path.insert(0, old_root)
    fn, sn = old_size - 1, new_size - 1
    while _lsb(fn):
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if _lsb(fn) or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            if not _lsb(fn):
                while not _lsb(fn) and fn != 0:
                    fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    return fr == old_root and sr == new_root and sn == 0
