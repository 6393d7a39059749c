"""Tamper evidence over the event store: seals, per-game chains, the Merkle tree, checkpoints.

How it fits together (``docs/integrity.md`` has the byte-level detail):

1. :func:`seal_new_events` follows the notification log like a projection. For every new
   stored event it writes a seal: the event's identity, its leaf hash (over
   :mod:`replays.canonical` bytes) and the game's chain value; and it stores the Merkle
   tree's complete subtrees. The importer, the API and the simulator call it after they
   write; ``checkpoint`` calls it too.
2. :func:`make_checkpoint` signs the tree head (size, root, time) with the ledger's Ed25519
   key; the file goes to auditors, who keep it outside the system.
3. :func:`verify_store` (:mod:`replays.integrity_verify`) recomputes everything from the
   stored events and compares it with the seals, the stored tree and every checkpoint; an
   altered, deleted or inserted row is named by game id and event number.
   :func:`integrity_verdict` is the one-game verdict that game and audit pages show.
4. :func:`inclusion_proof` and :func:`consistency_proof` write the proof files that
   :func:`replays.proofs.verify_proof` checks offline.

>>> integrity_verdict(url, "T7-000123").label  # doctest: +SKIP
'verified'
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from replays import merkle
from replays.canonical import GENESIS, chain_hash
from replays.integrity_models import NODE_MIN_LEVEL, CheckpointRow, GameChainHead, Seal, TreeNode
from replays.integrity_store import (
    IntegrityError,
    StoredTree,
    UnknownGame,
    chunks,
    count_events,
    create_tables,
    engine,
    events_after,
    game_id_from_state,
    game_rows,
    has_table,
    progress_bar,
    require_tables,
    seal_head,
    seal_id_param,
    sealed_up_to,
)
from replays.integrity_verify import (
    ALTERED,
    CHAIN,
    CHECKPOINT,
    DELETED,
    INSERTED,
    TREE,
    UNSEALED,
    Problem,
    Report,
    default_public_key,
    latest_stored,
    stored_checkpoints,
    verify_game,
    verify_store,
)
from replays.proofs import ProvenEvent, consistency_document, inclusion_document
from replays.schema import EVENTS_TABLE
from replays.signing import Checkpoint, load_private_key

__all__ = [
    "ALTERED",
    "CHAIN",
    "CHECKPOINT",
    "DELETED",
    "INSERTED",
    "TREE",
    "UNSEALED",
    "IntegrityError",
    "Problem",
    "Report",
    "UnknownGame",
    "Verdict",
    "consistency_proof",
    "create_tables",
    "inclusion_proof",
    "integrity_verdict",
    "latest_checkpoint",
    "make_checkpoint",
    "seal_new_events",
    "verify_game",
    "verify_store",
]


# -- sealing -----------------------------------------------------------------------------------
def seal_new_events(
    url: str | None = None,
    *,
    batch_size: int = 5000,
    progress: bool = False,
    events: str = EVENTS_TABLE,
) -> int:
    """Seal every stored event not sealed yet, in notification order; return how many.

    Cheap when there is nothing new (two indexed queries). Safe to run from several
    processes at once: a batch that loses the race to another sealer is rolled back and
    the next one starts from where the winner stopped.
    """
    db = engine(url)
    with db.connect() as connection:
        require_tables(connection)
        if not has_table(connection, events):
            return 0
        todo = count_events(connection, events, seal_head(connection)[1]) if progress else None
    sealed = busy = 0
    with progress_bar(todo, "sealing", progress) as bar:
        while True:
            before = _sealed_up_to(db)
            try:
                count = _seal_batch(db, events, batch_size)
            except sa.exc.OperationalError as error:
                # SQLite: another sealer holds the write lock (or moved the snapshot on).
                if "locked" not in str(error) and "busy" not in str(error).lower():
                    raise
                busy += 1
                if busy > 50:
                    raise
                time.sleep(0.05)
                continue
            except sa.exc.IntegrityError:
                if _sealed_up_to(db) != before:
                    continue  # another sealer committed this batch first
                raise IntegrityError(
                    "sealing collides with seals or tree nodes already stored beyond the "
                    "sealed events: the integrity tables were tampered with; run "
                    "`rummy-ledger verify`"
                ) from None
            if not count:
                return sealed
            sealed += count
            bar.update(count)


def _sealed_up_to(db: sa.Engine) -> int:
    with db.connect() as connection:
        return sealed_up_to(connection)


def _seal_batch(db: sa.Engine, events: str, limit: int) -> int:
    with db.begin() as connection:
        size, last_nid = seal_head(connection)
        rows = events_after(connection, last_nid, limit, events)
        if not rows:
            return 0
        builder = merkle.TreeBuilder.resume(size, StoredTree(connection).subtree)
        heads: dict[bytes, list] = {}  # originator -> [game_id, version, chain, position, new]
        originators = list({row.originator for row in rows})
        for chunk in chunks(originators, 500):
            found = connection.execute(
                sa.select(
                    GameChainHead.originator_id,
                    GameChainHead.game_id,
                    GameChainHead.version,
                    GameChainHead.chain_hash,
                    GameChainHead.last_position,
                ).where(GameChainHead.originator_id.in_([UUID(bytes=o) for o in chunk]))
            )
            for originator, game_id, version, chain, position in found:
                heads[originator.bytes] = [game_id, version, bytes(chain), position, False]
        seals, nodes = [], []
        for row in rows:
            head = heads.get(row.originator)
            if head is None:
                name = game_id_from_state(row.state) or str(row.originator_id)
                head = heads[row.originator] = [name, 0, GENESIS, -1, True]
            leaf = row.leaf
            chain = chain_hash(head[2], leaf)
            seal_id = seal_id_param(connection, row.originator)
            seals.append((size, row.notification_id, seal_id, row.version, head[0], leaf, chain))
            head[1:4] = [row.version, chain, size]
            nodes.extend(node for node in builder.append(leaf) if node[0] >= NODE_MIN_LEVEL)
            size += 1
        _insert_many(connection, Seal.__table__, SEAL_COLUMNS, seals)
        _insert_many(connection, TreeNode.__table__, ("level", "index", "hash"), nodes)
        _write_heads(connection, heads)
    return len(rows)


SEAL_COLUMNS = (
    "position",
    "notification_id",
    "originator_id",
    "originator_version",
    "game_id",
    "leaf_hash",
    "chain_hash",
)


def _insert_many(connection: sa.Connection, table: sa.Table, columns, rows: list[tuple]) -> None:
    """A plain DB-API executemany: sealing writes millions of rows, and SQLAlchemy's
    per-value bind processing cost more than the hashing."""
    if not rows:
        return
    preparer = connection.dialect.identifier_preparer
    marker = "?" if connection.dialect.paramstyle == "qmark" else "%s"
    connection.exec_driver_sql(
        f"INSERT INTO {preparer.quote(table.name)} "
        f"({', '.join(preparer.quote(c) for c in columns)}) "
        f"VALUES ({', '.join([marker] * len(columns))})",
        rows,
    )


def _write_heads(connection: sa.Connection, heads: dict[bytes, list]) -> None:
    fresh = [
        {
            "originator_id": UUID(bytes=o),
            "game_id": h[0],
            "version": h[1],
            "chain_hash": h[2],
            "last_position": h[3],
        }
        for o, h in heads.items()
        if h[4]
    ]
    moved = [
        {"b_originator": UUID(bytes=o), "b_version": h[1], "b_chain": h[2], "b_position": h[3]}
        for o, h in heads.items()
        if not h[4]
    ]
    if fresh:
        connection.execute(sa.insert(GameChainHead), fresh)
    if moved:
        table = GameChainHead.__table__
        connection.execute(
            table.update()
            .where(table.c.originator_id == sa.bindparam("b_originator"))
            .values(
                version=sa.bindparam("b_version"),
                chain_hash=sa.bindparam("b_chain"),
                last_position=sa.bindparam("b_position"),
            ),
            moved,
        )


# -- checkpoints -------------------------------------------------------------------------------
def latest_checkpoint(url: str | None = None) -> Checkpoint | None:
    with engine(url).connect() as connection:
        require_tables(connection)
        return latest_stored(connection)


def make_checkpoint(
    url: str | None = None, *, key_directory: str | None = None, time: str | None = None
) -> Checkpoint:
    """Seal what is new, then sign and store the tree head over every sealed event.

    Refuses when the stored tree no longer extends the previous checkpoint: signing it
    would bless a rewritten history.
    """
    private_key = load_private_key(key_directory)
    seal_new_events(url)
    with engine(url).begin() as connection:
        tree = StoredTree(connection)
        size = tree.size()
        root = tree.root(size)
        previous = stored_checkpoints(connection)[-1:]
        for old in previous:
            if old.size > size or tree.root(old.size) != old.root:
                raise IntegrityError(
                    f"the stored tree no longer matches the previous checkpoint ({old.size} "
                    f"events, {old.time}); run `rummy-ledger verify` before signing anything"
                )
        checkpoint = Checkpoint.sign(private_key, size, root, time)
        connection.execute(
            sa.insert(CheckpointRow).values(
                size=checkpoint.size,
                root=checkpoint.root.hex(),
                time=checkpoint.time,
                key_id=checkpoint.key_id,
                signature=checkpoint.signature.hex(),
            )
        )
    return checkpoint


# -- verdicts for pages ------------------------------------------------------------------------
VERIFIED, BROKEN, NOT_CHECKPOINTED = "verified", "broken", "not_checkpointed"


@dataclass(frozen=True)
class Verdict:
    """What a game page shows: ``verified``, ``broken`` (at ``event``) or ``not_checkpointed``."""

    status: str
    message: str
    event: int | None = None
    checkpoint_size: int | None = None
    checkpoint_time: str | None = None

    @property
    def label(self) -> str:
        if self.status == BROKEN:
            return f"broken at event {self.event}" if self.event else "broken"
        return {VERIFIED: "verified", NOT_CHECKPOINTED: "not yet checkpointed"}[self.status]

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "label": self.label}


def integrity_verdict(
    url: str | None, game_id: str, *, public_key: Ed25519PublicKey | None = None
) -> Verdict:
    """The integrity verdict on one game, for its game and audit pages.

    ``verified``: every event matches its seal and chain, the deal matches its shuffle
    seeds (when the record had them), and all the events are in the latest checkpoint,
    whose signature holds. ``broken``: an event was altered, deleted or inserted, or the
    deal does not come from its seeds (``event`` says where). ``not_checkpointed``:
    nothing is wrong, but some events are not sealed or not in a checkpoint yet.
    Raises :class:`UnknownGame` for a game the ledger does not have.
    """
    public_key = public_key or default_public_key()
    report = verify_game(url, game_id, public_key=public_key)
    checkpoint = report.latest
    about = (None, None) if checkpoint is None else (checkpoint.size, checkpoint.time)
    broken = [p for p in report.problems if p.kind != UNSEALED]
    if broken:
        first = min(broken, key=lambda p: (p.event is None, p.event or 0))
        return Verdict(BROKEN, str(first), first.event, *about)
    if report.problems:
        events = sorted(p.event for p in report.problems if p.event is not None)
        span = f"{events[0]}-{events[-1]}" if len(events) > 1 else str(events[0])
        return Verdict(NOT_CHECKPOINTED, f"events {span} are not sealed yet", None, *about)
    if checkpoint is None:
        return Verdict(NOT_CHECKPOINTED, "no checkpoint has been signed yet")
    if public_key is None:
        message = (
            "the checkpoint's signature cannot be checked: no public key (RUMMY_LEDGER_KEY_DIR)"
        )
        return Verdict(NOT_CHECKPOINTED, message, None, *about)
    if checkpoint.size not in report.checkpoints or report.last_position >= checkpoint.size:
        message = (
            f"the game has events after the latest checkpoint ({checkpoint.size} events, "
            f"{checkpoint.time})"
        )
        return Verdict(NOT_CHECKPOINTED, message, None, *about)
    message = (
        f"all {report.events} events match their seals and are in the checkpoint of "
        f"{checkpoint.size} events signed {checkpoint.time} by key {checkpoint.key_id}"
    )
    return Verdict(VERIFIED, message, None, *about)


# -- proofs ------------------------------------------------------------------------------------
def inclusion_proof(
    url: str | None,
    game_id: str,
    checkpoint: Checkpoint | None = None,
    *,
    events: str = EVENTS_TABLE,
) -> dict[str, Any]:
    """The inclusion proof file for a game's events against ``checkpoint`` (default: the
    latest one issued). Refuses when the stored events no longer match their seals."""
    checkpoint = checkpoint or latest_checkpoint(url)
    if checkpoint is None:
        raise IntegrityError("no checkpoint yet: run `rummy-ledger checkpoint` first")
    with engine(url).connect() as connection:
        require_tables(connection)
        seals = list(
            connection.execute(
                sa.select(
                    Seal.position,
                    Seal.originator_id,
                    Seal.originator_version,
                    Seal.leaf_hash,
                    Seal.chain_hash,
                )
                .where(Seal.game_id == game_id)
                .order_by(Seal.originator_version)
            )
        )
        if not seals:
            raise UnknownGame(f"no sealed events for game {game_id}")
        originator = seals[0].originator_id.bytes
        rows = {row.version: row for row in game_rows(connection, [originator], events)}
        covered = [s for s in seals if s.position < checkpoint.size]
        if not covered:
            raise IntegrityError(
                f"game {game_id} has no events in the checkpoint of {checkpoint.size} events "
                f"({checkpoint.time}); sign a newer checkpoint first"
            )
        tree = StoredTree(connection)
        ranges = {s.position: merkle.inclusion_ranges(s.position, checkpoint.size) for s in covered}
        tree.prefetch(
            sub for spans in ranges.values() for a, b in spans for sub in merkle.subtrees_of(a, b)
        )
        proven = []
        for seal in covered:
            version, row = seal.originator_version, rows.get(seal.originator_version)
            if row is None or row.leaf != bytes(seal.leaf_hash):
                raise IntegrityError(
                    f"game {game_id}, event {version}: the stored event no longer matches its "
                    "seal; run `rummy-ledger verify`"
                )
            path = tree.hashes_of(ranges[seal.position])
            if not merkle.verify_inclusion(
                row.leaf, seal.position, checkpoint.size, path, checkpoint.root
            ):
                raise IntegrityError(
                    f"game {game_id}, event {version}: the stored tree does not lead to the "
                    "checkpoint's root; run `rummy-ledger verify`"
                )
            proven.append(
                ProvenEvent(
                    version,
                    seal.position,
                    row.topic,
                    row.state,
                    bytes(seal.chain_hash),
                    tuple(path),
                )
            )
    return inclusion_document(
        game_id, UUID(bytes=originator), checkpoint, proven, complete=len(covered) == len(seals)
    )


def consistency_proof(
    url: str | None, old: Checkpoint, new: Checkpoint | None = None
) -> dict[str, Any]:
    """The consistency proof file from checkpoint ``old`` to ``new`` (default: latest)."""
    new = new or latest_checkpoint(url)
    if new is None:
        raise IntegrityError("no checkpoint yet: run `rummy-ledger checkpoint` first")
    if old.size > new.size:
        old, new = new, old
    with engine(url).connect() as connection:
        require_tables(connection)
        tree = StoredTree(connection)
        sealed = tree.size()
        if sealed < new.size:
            raise IntegrityError(
                f"the checkpoint covers {new.size} events but only {sealed} are sealed"
            )
        proof = tree.hashes_of(merkle.consistency_ranges(old.size, new.size))
    return consistency_document(old, new, proof)
