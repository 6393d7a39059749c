"""Tamper evidence over the event store: seals, per-game chains, the Merkle tree, checkpoints.

How it fits together (``docs/integrity.md`` has the byte-level detail):

1. Every save seals its own events in the transaction that stores them
   (:mod:`replays.integrity.append`, called by the recorder): for each event a seal with
   the event's identity, its leaf hash (over :mod:`replays.integrity.canonical` bytes) and the
   game's chain value; the Merkle tree's newly complete subtrees; and the tree head.
   :func:`seal_new_events` is the backfill for stores written before that.
2. :func:`make_checkpoint` signs the tree head (size, root, time) with the ledger's Ed25519
   key; the file goes to auditors, who keep it outside the system.
3. :func:`verify_store` (:mod:`replays.integrity.verify`) recomputes everything from the
   stored events and compares it with the seals, the stored tree and every checkpoint; an
   altered, deleted or inserted row is named by game id and event number.
   :func:`integrity_verdict` is the one-game verdict that game and audit pages show.
4. :func:`inclusion_proof` and :func:`consistency_proof` write the proof files that
   :func:`replays.integrity.proofs.verify_proof` checks offline.

>>> integrity_verdict(url, "T7-000123").label  # doctest: +SKIP
'verified'
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from replays.integrity import merkle
from replays.integrity.append import SaveSeals, lock_store, stored_chains, stored_head
from replays.integrity.models import CheckpointRow, Seal
from replays.integrity.proofs import ProvenEvent, consistency_document, inclusion_document
from replays.integrity.signing import Checkpoint, load_private_key
from replays.integrity.store import (
    IntegrityError,
    StoredTree,
    UnknownGame,
    count_events,
    create_tables,
    engine,
    events_after,
    game_id_from_state,
    game_rows,
    has_table,
    progress_bar,
    require_tables,
    sealed_up_to,
)
from replays.integrity.verify import (
    ALTERED,
    CHAIN,
    CHECKPOINT,
    DELETED,
    INSERTED,
    RESEALED,
    TREE,
    UNREADABLE,
    UNSEALED,
    Problem,
    Report,
    default_public_key,
    latest_stored,
    verify_game,
    verify_read_models,
    verify_store,
)
from replays.readmodels.read_model_checks import READ_MODEL
from replays.store.schema import EVENTS_TABLE

__all__ = [
    "ALTERED",
    "CHAIN",
    "CHECKPOINT",
    "DELETED",
    "INSERTED",
    "RESEALED",
    "TREE",
    "UNREADABLE",
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
    "verify_read_models",
    "verify_store",
]


# -- sealing ---------------------------------------------------------------------------------
def seal_new_events(
    url: str | None = None,
    *,
    batch_size: int = 5000,
    progress: bool = False,
    events: str = EVENTS_TABLE,
    force: bool = False,
) -> int:
    """Seal stored events that no save sealed, in notification order; return how many.

    Saves seal their own events in the transaction that stores them
    (:mod:`replays.integrity.append`), so this is the backfill for a store written before
    that: run once after upgrading, it seals what the old after-write step had not sealed
    yet and sets up the tree head the saves continue from. With nothing to seal it is two
    indexed queries.

    On a store that already has a tree head, an unsealed event was not written by the
    ledger: sealing it would bless a forgery, so :class:`IntegrityError` names such events
    instead, unless ``force`` (an operator who checked that they are genuine).
    """
    db = engine(url)
    with db.connect() as connection:
        require_tables(connection)
        if not has_table(connection, events):
            return 0
        head = stored_head(connection)
        last = sealed_up_to(connection) if head is None else head.notification_id
        if head is not None and not events_after(connection, last, 1, events):
            return 0  # the usual answer, without taking the saves' lock
        todo = count_events(connection, events, last) if progress else None
    sealed = 0
    with progress_bar(todo, "sealing", progress) as bar:
        while True:
            count = _seal_batch(db, events, batch_size, force)
            if not count:
                return sealed
            sealed += count
            bar.update(count)


def _seal_batch(db: sa.Engine, events: str, limit: int, force: bool) -> int:
    with db.begin() as connection:
        lock_store(connection, events)  # saves wait: the tree cannot move under this batch
        head = stored_head(connection)
        last = sealed_up_to(connection) if head is None else head.notification_id
        rows = events_after(connection, last, limit, events)
        if not rows and head is not None:
            return 0
        if head is not None and not force:
            raise IntegrityError(_unsealed_message(connection, rows, events))
        seals = SaveSeals(
            [(row.originator, row.version, row.topic, row.state) for row in rows],
            connection.dialect.name,
        )
        # An old store gets its tree head with the last batch: saves refuse to go on from
        # a tree with events left behind it, and wait for the backfill to finish.
        last_batch = (
            head is not None
            or not rows
            or not events_after(connection, rows[-1].notification_id, 1, events)
        )
        seals.write(
            connection,
            [row.notification_id for row in rows],
            head,
            stored_chains(connection, seals.continuing),
            events_table=events,
            backfill=True,
            keep_head=last_batch,
        )
    return len(rows)


def _unsealed_message(connection: sa.Connection, rows: list, events: str) -> str:
    names = {o: g for o, g in _chain_names(connection, {row.originator for row in rows[:5]})}
    shown = ", ".join(
        f"game {names.get(row.originator) or game_id_from_state(row.state) or row.originator_id}"
        f" event {row.version} (row {row.notification_id})"
        for row in rows[:5]
    )
    more = count_events(connection, events, rows[0].notification_id - 1)
    return (
        f"{more} stored event(s) are not sealed although every save seals its own events: "
        f"they were inserted directly ({shown}{', ...' if more > 5 else ''}). "
        "Run `rummy-ledger verify`; `rummy-ledger seal --force` seals them only if you have "
        "checked that they are genuine"
    )


def _chain_names(connection: sa.Connection, originators: set[bytes]):
    for originator, chain in stored_chains(connection, sorted(originators)).items():
        yield originator, chain.game_id


# -- checkpoints -------------------------------------------------------------------------------
def latest_checkpoint(url: str | None = None) -> Checkpoint | None:
    with engine(url).connect() as connection:
        require_tables(connection)
        return latest_stored(connection)


def make_checkpoint(
    url: str | None = None, *, key_directory: str | None = None, time: str | None = None
) -> Checkpoint:
    """Sign and store the tree head over every sealed event (on a store written before
    sealing moved into the save, seal its backlog first).

    Refuses when the stored tree no longer extends the previous checkpoint, or no longer
    matches the tree head the saves keep: signing it would bless a rewritten history.
    """
    private_key = load_private_key(key_directory)
    with engine(url).connect() as connection:
        require_tables(connection)
        adopted = stored_head(connection) is not None
    if not adopted:
        seal_new_events(url)
    with engine(url).begin() as connection:
        # Saves wait a moment: on SQLite a transaction that read first could not write the
        # checkpoint after a save's commit.
        if has_table(connection, EVENTS_TABLE):
            lock_store(connection, EVENTS_TABLE)
        tree = StoredTree(connection)
        head = stored_head(connection)
        size = tree.size() if head is None else head.size
        root = tree.root(size)
        # The last one alone: an older row that cannot be read is verify's to report.
        previous = [c for c in [latest_stored(connection)] if c is not None]
        for old in previous:
            if old.size > size or tree.root(old.size) != old.root:
                raise IntegrityError(
                    f"the stored tree no longer matches the previous checkpoint ({old.size} "
                    f"events, {old.time}); run `rummy-ledger verify` before signing anything"
                )
        if head is not None and root != head.root:
            raise IntegrityError(
                f"the stored tree over {size} events does not match the tree head the saves "
                "keep; run `rummy-ledger verify` before signing anything"
            )
        blocks = tree.blocks(size)
        if blocks.root(size) != root:
            raise IntegrityError(
                f"the stored tree's subtrees of level {blocks.level} do not give its root "
                f"over {size} events; run `rummy-ledger verify` before signing anything"
            )
        checkpoint = replace(Checkpoint.sign(private_key, size, root, time), blocks=blocks)
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
# The game's read rows (what its pages and reports show) differ from its events, or an
# event cannot be read at all: neither is "verified", and both say why.
READ_MODEL_DIFFERS, UNVERIFIABLE = "read_model_differs", "unverifiable"


@dataclass(frozen=True)
class Verdict:
    """What a game page shows: ``verified``, ``broken`` (at ``event``) or ``not_checkpointed``."""

    status: str
    message: str
    event: int | None = None
    checkpoint_size: int | None = None
    checkpoint_time: str | None = None
    # For READ_MODEL_DIFFERS: each differing field, as `verify` words it.
    fields: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        if self.status == BROKEN:
            return f"broken at event {self.event}" if self.event else "broken"
        if self.status == UNVERIFIABLE:
            return (
                f"cannot be verified (event {self.event})" if self.event else "cannot be verified"
            )
        return {
            VERIFIED: "verified",
            NOT_CHECKPOINTED: "not yet checkpointed",
            READ_MODEL_DIFFERS: "read model differs from the ledger",
        }[self.status]

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
    report = verify_game(url, game_id, public_key=public_key, memos="use")
    checkpoint = report.latest
    about = (None, None) if checkpoint is None else (checkpoint.size, checkpoint.time)
    unreadable = [p for p in report.problems if p.kind == UNREADABLE]
    if unreadable:
        first = min(unreadable, key=lambda p: (p.event is None, p.event or 0))
        return Verdict(UNVERIFIABLE, str(first), first.event, *about)
    broken = [p for p in report.problems if p.kind not in (UNSEALED, READ_MODEL)]
    if broken:
        first = min(broken, key=lambda p: (p.event is None, p.event or 0))
        return Verdict(BROKEN, str(first), first.event, *about)
    differs = [p for p in report.problems if p.kind == READ_MODEL]
    if differs:
        fields = tuple(p.message for p in differs)
        message = "the read model differs from the ledger: " + "; ".join(fields)
        return Verdict(READ_MODEL_DIFFERS, message, None, *about, fields=fields)
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
        f"all {report.events} events match their seals, its read rows match its events, "
        f"and the events are in the checkpoint of "
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
