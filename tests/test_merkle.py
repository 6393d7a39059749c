"""RFC 6962/9162 tree hash, proofs and their verification, against the RFC's definitions."""

from __future__ import annotations

import doctest
import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import replays.integrity.merkle
from replays.integrity.merkle import (
    EMPTY_ROOT,
    ProofError,
    TreeBuilder,
    consistency_proof,
    consistency_ranges,
    inclusion_proof,
    leaf_hash,
    node_hash,
    range_hash,
    subtrees_of,
    tree_hash,
    verify_consistency,
    verify_inclusion,
)

# The leaves and roots published with the Certificate Transparency reference tests.
CT_LEAVES = [
    b"",
    b"\x00",
    b"\x10",
    b"\x20\x21",
    b"\x30\x31",
    b"\x40\x41\x42\x43",
    b"\x50\x51\x52\x53\x54\x55\x56\x57",
    bytes(range(0x60, 0x70)),
]
CT_ROOTS = [
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]


# -- the RFC's recursive definitions, written out literally -------------------------------
def _k(n):
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def mth(d):
    if not d:
        return hashlib.sha256(b"").digest()
    if len(d) == 1:
        return hashlib.sha256(b"\x00" + d[0]).digest()
    k = _k(len(d))
    return hashlib.sha256(b"\x01" + mth(d[:k]) + mth(d[k:])).digest()


def path(m, d):
    if len(d) == 1:
        return []
    k = _k(len(d))
    if m < k:
        return [*path(m, d[:k]), mth(d[k:])]
    return [*path(m - k, d[k:]), mth(d[:k])]


def subproof(m, d, b):
    if m == len(d):
        return [] if b else [mth(d)]
    k = _k(len(d))
    if m <= k:
        return [*subproof(m, d[:k], b), mth(d[k:])]
    return [*subproof(m - k, d[k:], False), mth(d[:k])]


def data(n):
    return [i.to_bytes(4, "big") for i in range(n)]


def test_docstring_examples():
    assert doctest.testmod(replays.integrity.merkle).failed == 0


def test_certificate_transparency_reference_roots():
    for size, expected in enumerate(CT_ROOTS, start=1):
        leaves = [leaf_hash(x) for x in CT_LEAVES[:size]]
        assert tree_hash(leaves).hex() == expected
    assert tree_hash([]) == EMPTY_ROOT == mth([])


@settings(max_examples=80, deadline=None)
@given(st.integers(min_value=1, max_value=140), st.data())
def test_proofs_agree_with_the_rfc_definitions_and_verify(size, draw):
    d = data(size)
    leaves = [leaf_hash(x) for x in d]
    root = tree_hash(leaves)
    assert root == mth(d)
    index = draw.draw(st.integers(0, size - 1))
    proof = inclusion_proof(index, leaves)
    assert proof == path(index, d)
    assert verify_inclusion(leaves[index], index, size, proof, root)

    old = draw.draw(st.integers(1, size))
    cproof = consistency_proof(old, leaves)
    assert cproof == subproof(old, d, True)
    assert verify_consistency(old, size, mth(d[:old]), root, cproof)


@settings(max_examples=80, deadline=None)
@given(st.integers(min_value=2, max_value=100), st.data())
def test_any_tampering_with_an_inclusion_proof_fails(size, draw):
    leaves = [leaf_hash(x) for x in data(size)]
    root = tree_hash(leaves)
    index = draw.draw(st.integers(0, size - 1))
    proof = inclusion_proof(index, leaves)
    other = draw.draw(st.integers(0, size - 1).filter(lambda i: i != index))
    assert not verify_inclusion(leaves[other], index, size, proof, root)
    assert not verify_inclusion(leaves[index], other, size, proof, root) or (
        inclusion_proof(other, leaves) == proof and leaves[other] == leaves[index]
    )
    # The size is bound by the signed checkpoint; a proof for n leaves fails against the
    # honest root of n + 1 leaves.
    bigger = tree_hash([*leaves, leaf_hash(b"next")])
    assert not verify_inclusion(leaves[index], index, size + 1, proof, bigger)
    assert not verify_inclusion(leaves[index], index, size, proof[:-1], root)
    assert not verify_inclusion(leaves[index], index, size, [*proof, root], root)
    flipped = list(proof)
    at = draw.draw(st.integers(0, len(proof) - 1))
    flipped[at] = bytes([flipped[at][0] ^ 1]) + flipped[at][1:]
    assert not verify_inclusion(leaves[index], index, size, flipped, root)
    assert not verify_inclusion(leaves[index], size, size, proof, root)


@settings(max_examples=80, deadline=None)
@given(st.integers(min_value=2, max_value=100), st.data())
def test_a_history_rewritten_before_the_old_size_fails_consistency(size, draw):
    d = data(size)
    leaves = [leaf_hash(x) for x in d]
    old = draw.draw(st.integers(1, size - 1))
    old_root = tree_hash(leaves[:old])
    proof = consistency_proof(old, leaves)
    assert verify_consistency(old, size, old_root, tree_hash(leaves), proof)
    # Alter one leaf the old checkpoint covered, and rebuild the newer tree honestly.
    changed = list(leaves)
    at = draw.draw(st.integers(0, old - 1))
    changed[at] = leaf_hash(b"forged")
    assert not verify_consistency(
        old, size, old_root, tree_hash(changed), consistency_proof(old, changed)
    )
    # A proof is bound to its sizes and roots.
    assert not verify_consistency(
        old, size, tree_hash(leaves[: old - 1] or [b""]), tree_hash(leaves), proof
    )
    bigger = tree_hash([*leaves, leaf_hash(b"next")])
    assert not verify_consistency(old, size + 1, old_root, bigger, proof)
    if proof:
        flipped = [bytes([proof[0][0] ^ 1]) + proof[0][1:], *proof[1:]]
        assert not verify_consistency(old, size, old_root, tree_hash(leaves), flipped)
        assert not verify_consistency(old, size, old_root, tree_hash(leaves), proof[:-1])


def test_consistency_edge_cases():
    leaves = [leaf_hash(x) for x in data(5)]
    root = tree_hash(leaves)
    assert consistency_ranges(5, 5) == [] == consistency_ranges(0, 5)
    assert verify_consistency(5, 5, root, root, [])
    assert not verify_consistency(5, 5, root, EMPTY_ROOT, [])
    assert verify_consistency(0, 5, EMPTY_ROOT, root, [])
    assert not verify_consistency(4, 5, tree_hash(leaves[:4]), root, [])
    assert not verify_consistency(5, 4, root, root, [])
    with pytest.raises(ProofError, match="no consistency proof from 6 to 5 leaves"):
        consistency_ranges(6, 5)
    with pytest.raises(ProofError, match="leaf 5 is not in a tree of 5 leaves"):
        inclusion_proof(5, leaves)


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, 13, 64, 100, 257])
def test_builder_emits_every_complete_subtree_and_ranges_rebuild_from_them(size):
    leaves = [leaf_hash(x) for x in data(size)]
    builder = TreeBuilder()
    stored = {(0, i): leaf for i, leaf in enumerate(leaves)}
    for i, leaf in enumerate(leaves):
        for level, index, value in builder.append(leaf):
            assert value == tree_hash(leaves[index << level : (index + 1) << level])
            stored[(level, index)] = value
        assert builder.root() == tree_hash(leaves[: i + 1])
    # Every proof range is answered from the stored complete subtrees.
    for index in range(size):
        assert [
            range_hash(a, b, lambda lv, ix: stored[(lv, ix)])
            for a, b in replays.integrity.merkle.inclusion_ranges(index, size)
        ] == inclusion_proof(index, leaves)
    for old in range(1, size + 1):
        assert [
            range_hash(a, b, lambda lv, ix: stored[(lv, ix)])
            for a, b in consistency_ranges(old, size)
        ] == consistency_proof(old, leaves)


def test_subtrees_of_rejects_unaligned_ranges():
    assert subtrees_of(8, 13) == [(2, 2), (0, 12)]
    with pytest.raises(ProofError, match=r"range \[1, 3\) is not an aligned subtree"):
        subtrees_of(1, 3)
    with pytest.raises(ProofError, match="empty or negative range"):
        subtrees_of(3, 3)


def test_leaf_and_node_are_domain_separated():
    a, b = leaf_hash(b"a"), leaf_hash(b"b")
    assert leaf_hash(a + b) != node_hash(a, b)
    assert node_hash(a, b) == hashlib.sha256(b"\x01" + a + b).digest()


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=1, max_value=200), st.data())
def test_multi_leaf_root_from_known_leaves_and_stored_subtrees(size, draw):
    leaves = [leaf_hash(x) for x in data(size)]
    stored = {}
    builder = TreeBuilder()
    for i, leaf in enumerate(leaves):
        stored[(0, i)] = leaf
        for level, index, value in builder.append(leaf):
            stored[(level, index)] = value
    known_positions = sorted(draw.draw(st.sets(st.integers(0, size - 1), max_size=12)))
    needed = replays.integrity.merkle.needed_subtrees(size, known_positions)
    asked = []

    def lookup(level, index):
        asked.append((level, index))
        return stored[(level, index)]

    known = {p: leaves[p] for p in known_positions}
    root = replays.integrity.merkle.root_from_known(size, known, lookup)
    assert root == tree_hash(leaves)
    assert sorted(asked) == sorted(needed)
    # Known leaves are never looked up: they are what is being checked.
    assert not {(0, p) for p in known_positions} & set(asked)
    if known_positions:
        forged = {**known, known_positions[0]: leaf_hash(b"forged")}
        assert replays.integrity.merkle.root_from_known(size, forged, lookup) != root


@pytest.mark.parametrize("size", [0, 1, 5, 16, 17, 100])
def test_builder_resumes_from_stored_subtrees(size):
    leaves = [leaf_hash(x) for x in data(size + 7)]
    stored = {}
    builder = TreeBuilder()
    for i, leaf in enumerate(leaves[:size]):
        stored[(0, i)] = leaf
        for level, index, value in builder.append(leaf):
            stored[(level, index)] = value
    resumed = TreeBuilder.resume(size, lambda level, index: stored[(level, index)])
    assert resumed.size == size and resumed.root() == tree_hash(leaves[:size])
    for leaf in leaves[size:]:
        resumed.append(leaf)
    assert resumed.root() == tree_hash(leaves)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 300), st.integers(0, 300), st.integers(1, 6))
def test_extend_is_append_leaf_by_leaf(before, count, min_level):
    """A save's leaves taken at once give the nodes, order and frontier of one append each."""
    leaves = [leaf_hash(x) for x in data(before + count)]
    one, many = TreeBuilder(), TreeBuilder()
    for leaf in leaves[:before]:
        one.append(leaf)
        many.append(leaf)
    appended = [node for leaf in leaves[before:] for node in one.append(leaf)]
    assert many.extend(leaves[before:], min_level) == [n for n in appended if n[0] >= min_level]
    assert (many.size, many.frontier, many.root()) == (one.size, one.frontier, one.root())
