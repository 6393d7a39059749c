"""Tamper evidence over the event store: seals, per-game chains, the Merkle tree, checkpoints.

How it fits together (``docs/integrity.md`` has the byte-level detail):

1. :func:`seal_new_events` follows the notification log like a projection. For every new
   stored event it writes a :class:`~replays.integrity_models.Seal`: the event's identity,
   its leaf hash (over :mod:`replays.canonical` bytes) and the game's chain value, and it
   stores the Merkle tree's complete subtrees. The importer, the API and the simulator
   call it after they write; ``checkpoint`` calls it too.
2. :func:`make_checkpoint` signs the tree head (size, root, time) with the ledger's Ed25519
   key; the file goes to auditors, who keep it outside the system.
3. :func:`verify_store` recomputes everything from the stored events and compares it with
   the seals, the stored tree and every checkpoint: an altered, deleted or inserted row is
   reported with the game id and the event number (the aggregate version, 1 = the game's
   first event). :func:`integrity_verdict` does the same for one game, for its pages.
4. :func:`inclusion_proof` and :func:`consistency_proof` write proof files that
   :func:`replays.proofs.verify_proof` checks offline.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any
from uuid import UUID

import sqlalchemy as sa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from sqlalchemy.orm import Session
from sqlalchemy_utils.types.uuid import UUIDType

from replays import merkle
from replays.canonical import GENESIS, chain_hash, event_leaf
from replays.db import engine_for
from replays.integrity_models import (
    INTEGRITY_TABLES,
    NODE_MIN_LEVEL,
    CheckpointRow,
    GameChainHead,
    Seal,
    TreeNode,
)
from replays.proofs import ProvenEvent, consistency_document, inclusion_document
from replays.schema import EVENTS_TABLE
from replays.settings import database_url
from replays.signing import Checkpoint, SigningError, load_private_key, load_public_key

BATCH = 2000


class IntegrityError(Exception):
    """Integrity work that cannot go on (missing tables, no such game, a failing proof)."""


class UnknownGame(IntegrityError, LookupError):
    pass


def _engine(url: str | None) -> sa.Engine:
    # Resolved first: engine_for caches by its argument, and None would pin whichever
    # database the environment named on the first call.
    return engine_for(database_url(url))


# -- reading the event store -------------------------------------------------------------
@lru_cache(maxsize=4)
def events_table(name: str = EVENTS_TABLE) -> sa.Table:
    """The store's events table, read directly: verification must not trust the app."""
    return sa.Table(
        name,
        sa.MetaData(),
        sa.Column("id", sa.BigInteger, primary_key=True),
        sa.Column("originator_id", UUIDType(binary=True)),
        sa.Column("originator_version", sa.BigInteger),
        sa.Column("topic", sa.Text),
        sa.Column("state", sa.LargeBinary),
    )


@dataclass(frozen=True)
class StoredRow:
    notification_id: int
    originator_id: UUID
    version: int
    topic: str
    state: bytes

    @property
    def leaf(self) -> bytes:
        return event_leaf(self.originator_id, self.version, self.topic, self.state)


def _row(r: Any) -> StoredRow:
    state = r.state if isinstance(r.state, bytes) else bytes(r.state)
    return StoredRow(r.id, r.originator_id, r.originator_version, r.topic, state)


def _has_table(session: Session, name: str) -> bool:
    return sa.inspect(session.connection()).has_table(name)


def _require_tables(session: Session) -> None:
    inspector = sa.inspect(session.connection())
    missing = [t.name for t in INTEGRITY_TABLES if not inspector.has_table(t.name)]
    if missing:
        raise IntegrityError(
            f"integrity tables missing ({', '.join(missing)}): run `rummy-ledger db upgrade`"
        )


def create_tables(url: str | None = None) -> None:
    """Create the integrity tables directly (tests, and databases Alembic does not manage)."""
    from replays.db import Base

    Base.metadata.create_all(_engine(url), tables=INTEGRITY_TABLES)


def game_id_from_state(state: bytes) -> str | None:
    """The record's game id in a game's first event (its table configuration).

    Found by content rather than by event class, so that verification keeps working
    over events whose classes were renamed or moved since they were written.
    """
    try:
        data = json.loads(state)
    except (ValueError, UnicodeDecodeError):
        return None
    todo, seen = [data], 0
    while todo and seen < 200:
        item = todo.pop(0)
        seen += 1
        if isinstance(item, dict):
            value = item.get("game_id")
            if isinstance(value, str):
                return value
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)
    return None


def _progress(total: int | None, desc: str, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="ev", disable=not (enabled and sys.stderr.isatty()))


# -- the stored tree ---------------------------------------------------------------------
class StoredTree:
    """Complete subtree hashes read from the seals (low levels) and stored nodes."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._cache: dict[tuple[int, int], bytes] = {}

    def size(self) -> int:
        top = self.session.scalar(sa.select(sa.func.max(Seal.position)))
        return 0 if top is None else top + 1

    def prefetch(self, subtrees: Iterable[tuple[int, int]]) -> None:
        wanted = [s for s in set(subtrees) if s not in self._cache]
        high = [s for s in wanted if s[0] >= NODE_MIN_LEVEL]
        positions = sorted(
            {p for lv, ix in wanted if lv < NODE_MIN_LEVEL for p in range(ix << lv, (ix + 1) << lv)}
        )
        for chunk in _chunks(high, 400):
            rows = self.session.execute(
                sa.select(TreeNode.level, TreeNode.index, TreeNode.hash).where(
                    sa.tuple_(TreeNode.level, TreeNode.index).in_(chunk)
                )
            )
            for level, index, value in rows:
                self._cache[(level, index)] = bytes(value)
        leaves: dict[int, bytes] = {}
        for chunk in _chunks(positions, 900):
            rows = self.session.execute(
                sa.select(Seal.position, Seal.leaf_hash).where(Seal.position.in_(chunk))
            )
            leaves.update((p, bytes(h)) for p, h in rows)
        for level, index in wanted:
            if level >= NODE_MIN_LEVEL:
                continue
            span = range(index << level, (index + 1) << level)
            if all(p in leaves for p in span):
                self._cache[(level, index)] = merkle.tree_hash([leaves[p] for p in span])

    def subtree(self, level: int, index: int) -> bytes:
        key = (level, index)
        if key not in self._cache:
            self.prefetch([key])
        try:
            return self._cache[key]
        except KeyError:
            raise IntegrityError(
                f"the stored tree lacks the subtree of level {level}, index {index}: "
                "seals or tree nodes were deleted"
            ) from None

    def root(self, size: int) -> bytes:
        if size == 0:
            return merkle.EMPTY_ROOT
        subtrees = merkle.subtrees_of(0, size)
        self.prefetch(subtrees)
        return merkle.range_hash(0, size, self.subtree)

    def hashes_of(self, ranges: Sequence[tuple[int, int]]) -> list[bytes]:
        self.prefetch(s for a, b in ranges for s in merkle.subtrees_of(a, b))
        return [merkle.range_hash(a, b, self.subtree) for a, b in ranges]


def _chunks(items: Sequence, size: int) -> Iterator[Sequence]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


# -- sealing -----------------------------------------------------------------------------
def seal_new_events(
    url: str | None = None,
    *,
    batch_size: int = BATCH,
    progress: bool = False,
    events: str = EVENTS_TABLE,
) -> int:
    """Seal every stored event not sealed yet, in notification order; return how many.

    Cheap when there is nothing new (two indexed queries). Safe to run from several
    processes: a batch that loses the race to another sealer is rolled back and retried.
    """
    engine = _engine(url)
    with Session(engine) as session:
        _require_tables(session)
        if not _has_table(session, events):
            return 0
        last = session.scalar(sa.select(sa.func.max(Seal.notification_id))) or 0
        table = events_table(events)
        todo = (
            session.scalar(sa.select(sa.func.count()).where(table.c.id > last))
            if progress
            else None
        )
    sealed = 0
    with _progress(todo, "sealing", progress) as bar:
        while True:
            before = _sealed_up_to(engine)
            try:
                count = _seal_batch(engine, events_table(events), batch_size)
            except sa.exc.IntegrityError:
                if _sealed_up_to(engine) != before:
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


def _sealed_up_to(engine: sa.Engine) -> int | None:
    with engine.connect() as connection:
        return connection.scalar(sa.select(sa.func.max(Seal.notification_id)))


def _seal_batch(engine: sa.Engine, table: sa.Table, limit: int) -> int:
    with Session(engine) as session, session.begin():
        top, last_nid = session.execute(
            sa.select(sa.func.max(Seal.position), sa.func.max(Seal.notification_id))
        ).one()
        size = 0 if top is None else top + 1
        rows = [
            _row(r)
            for r in session.execute(
                sa.select(table)
                .where(table.c.id > (last_nid or 0))
                .order_by(table.c.id)
                .limit(limit)
            )
        ]
        if not rows:
            return 0
        tree = StoredTree(session)
        builder = merkle.TreeBuilder.resume(size, tree.subtree)
        originators = list({row.originator_id for row in rows})
        heads = {
            head.originator_id: head
            for chunk in _chunks(originators, 500)
            for head in session.scalars(
                sa.select(GameChainHead).where(GameChainHead.originator_id.in_(chunk))
            )
        }
        seals, nodes = [], []
        for row in rows:
            head = heads.get(row.originator_id)
            if head is None:
                head = GameChainHead(
                    originator_id=row.originator_id,
                    game_id=game_id_from_state(row.state) or str(row.originator_id),
                    version=0,
                    chain_hash=GENESIS,
                    last_position=-1,
                )
                heads[row.originator_id] = head
                session.add(head)
            leaf = row.leaf
            chain = chain_hash(bytes(head.chain_hash), leaf)
            seals.append(
                {
                    "position": size,
                    "notification_id": row.notification_id,
                    "originator_id": row.originator_id,
                    "originator_version": row.version,
                    "game_id": head.game_id,
                    "leaf_hash": leaf,
                    "chain_hash": chain,
                }
            )
            head.version, head.chain_hash, head.last_position = row.version, chain, size
            nodes.extend(
                {"level": level, "index": index, "hash": value}
                for level, index, value in builder.append(leaf)
                if level >= NODE_MIN_LEVEL
            )
            size += 1
        session.execute(sa.insert(Seal), seals)
        if nodes:
            session.execute(sa.insert(TreeNode), nodes)
    return len(rows)


# -- checkpoints -------------------------------------------------------------------------
def _checkpoint_of(row: CheckpointRow) -> Checkpoint:
    return Checkpoint(
        row.size, bytes.fromhex(row.root), row.time, row.key_id, bytes.fromhex(row.signature)
    )


def stored_checkpoints(url: str | None = None) -> list[Checkpoint]:
    with Session(_engine(url)) as session:
        _require_tables(session)
        rows = session.scalars(sa.select(CheckpointRow).order_by(CheckpointRow.id))
        return [_checkpoint_of(row) for row in rows]


def latest_checkpoint(url: str | None = None) -> Checkpoint | None:
    with Session(_engine(url)) as session:
        _require_tables(session)
        row = session.scalars(
            sa.select(CheckpointRow).order_by(CheckpointRow.id.desc()).limit(1)
        ).first()
        return None if row is None else _checkpoint_of(row)


def make_checkpoint(
    url: str | None = None, *, key_directory: str | None = None, time: str | None = None
) -> Checkpoint:
    """Seal what is new, then sign and store the tree head over every sealed event.

    Refuses when the stored tree no longer extends the previous checkpoint: signing it
    would bless a rewritten history.
    """
    private_key = load_private_key(key_directory)
    seal_new_events(url)
    with Session(_engine(url)) as session, session.begin():
        tree = StoredTree(session)
        size = tree.size()
        root = tree.root(size)
        previous = session.scalars(
            sa.select(CheckpointRow).order_by(CheckpointRow.id.desc()).limit(1)
        ).first()
        if previous is not None:
            old = _checkpoint_of(previous)
            if old.size > size or tree.root(old.size) != old.root:
                raise IntegrityError(
                    f"the stored tree no longer matches the previous checkpoint ({old.size} "
                    f"events, {old.time}); run `rummy-ledger verify` before signing anything"
                )
        checkpoint = Checkpoint.sign(private_key, size, root, time)
        session.add(
            CheckpointRow(
                size=checkpoint.size,
                root=checkpoint.root.hex(),
                time=checkpoint.time,
                key_id=checkpoint.key_id,
                signature=checkpoint.signature.hex(),
            )
        )
    return checkpoint


# -- reports -----------------------------------------------------------------------------
# Kinds of problem. Every one makes `verify` fail; only "unsealed" can be innocent (an
# event written a moment ago whose writer has not sealed yet).
ALTERED, DELETED, INSERTED, UNSEALED = "altered", "deleted", "inserted", "unsealed"
CHAIN, TREE, CHECKPOINT = "chain", "tree", "checkpoint"


@dataclass(frozen=True)
class Problem:
    kind: str
    message: str
    game_id: str | None = None
    event: int | None = None

    def __str__(self) -> str:
        where = []
        if self.game_id is not None:
            where.append(f"game {self.game_id}")
        if self.event is not None:
            where.append(f"event {self.event}")
        prefix = ", ".join(where)
        return (
            f"{prefix}: {self.kind}: {self.message}" if prefix else f"{self.kind}: {self.message}"
        )


@dataclass
class Report:
    problems: list[Problem] = field(default_factory=list)
    events: int = 0
    sealed: int = 0
    games: int = 0
    root: bytes | None = None
    checkpoints: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, kind: str, message: str, game_id: str | None = None, event: int | None = None):
        self.problems.append(Problem(kind, message, game_id, event))

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "events": self.events,
            "sealed": self.sealed,
            "games": self.games,
            "root": None if self.root is None else self.root.hex(),
            "checkpoints_checked": self.checkpoints,
            "problems": [asdict(p) for p in self.problems],
            "notes": self.notes,
        }


def _signed(
    checkpoints: Iterable[Checkpoint], public_key: Ed25519PublicKey | None, report: Report
) -> list[Checkpoint]:
    """Checkpoints whose signatures hold (all of them when no key is known, with a note)."""
    good, seen = [], set()
    for checkpoint in checkpoints:
        key = (checkpoint.size, checkpoint.root, checkpoint.signature)
        if key in seen:
            continue
        seen.add(key)
        if public_key is None:
            good.append(checkpoint)
            continue
        reason = checkpoint.verify(public_key)
        if reason:
            report.add(
                CHECKPOINT, f"checkpoint of {checkpoint.size} events ({checkpoint.time}): {reason}"
            )
        else:
            good.append(checkpoint)
    if public_key is None and seen:
        report.notes.append("no public key: checkpoint signatures were not checked")
    return good


def _default_public_key() -> Ed25519PublicKey | None:
    try:
        return load_public_key()
    except SigningError:
        return None


def _paged(
    session: Session, query: sa.Select, key: sa.ColumnElement, size: int = BATCH
) -> Iterator:
    last = None
    while True:
        page = query if last is None else query.where(key > last)
        rows = session.execute(page.order_by(key).limit(size)).all()
        if not rows:
            return
        yield from rows
        last = getattr(rows[-1], key.key)


def verify_store(
    url: str | None = None,
    *,
    game_id: str | None = None,
    checkpoints: Iterable[Checkpoint] = (),
    public_key: Ed25519PublicKey | None = None,
    progress: bool = False,
    events: str = EVENTS_TABLE,
    check_deals: bool = True,
) -> Report:
    """Recompute leaves, chains and the tree from the stored events; compare with all
    seals, stored tree nodes, stored checkpoints and the ``checkpoints`` given.

    One streaming pass in notification order; memory grows with the number of games
    (one chain value each), not with the number of events.
    """
    if game_id is not None:
        return verify_game(
            url, game_id, checkpoints=checkpoints, public_key=public_key, events=events
        )
    public_key = public_key or _default_public_key()
    report = Report()
    with Session(_engine(url)) as session:
        _require_tables(session)
        stored = [
            _checkpoint_of(r)
            for r in session.scalars(sa.select(CheckpointRow).order_by(CheckpointRow.id))
        ]
        wanted = _signed([*stored, *checkpoints], public_key, report)
        by_size: dict[int, list[Checkpoint]] = {}
        for checkpoint in wanted:
            by_size.setdefault(checkpoint.size, []).append(checkpoint)
        has_events = _has_table(session, events)
        table = events_table(events)
        total = (
            session.scalar(sa.select(sa.func.count()).select_from(table))
            if has_events and progress
            else None
        )
        seal_head = session.scalar(sa.select(sa.func.max(Seal.notification_id))) or 0
        seal_rows = _paged(session, sa.select(*Seal.__table__.c), Seal.__table__.c.position)
        event_rows = (
            (_row(r) for r in _paged(session, sa.select(table), table.c.id))
            if has_events
            else iter(())
        )
        pass_ = _StorePass(session, report, by_size, seal_head)
        with _progress(total, "verifying", progress) as bar:
            pass_.run(seal_rows, event_rows, bar)
        pass_.finish()
    if check_deals and has_events:
        _check_deals(url, report, progress=progress)
    return report


def _check_deals(url: str | None, report: Report, **kwargs: Any) -> None:
    from replays.deal_checks import check_deals

    # A game with any finding already (even unsealed rows) is not replayed: its events
    # are suspect, and replaying a forged row would only restate the finding.
    broken = frozenset(p.game_id for p in report.problems if p.game_id)
    check_deals(url, report, skip=broken, **kwargs)


class _StorePass:
    """The state of one verification pass: per-game chains, the tree, pending node checks."""

    def __init__(self, session, report: Report, by_size, seal_head: int) -> None:
        self.session, self.report, self.by_size, self.seal_head = (
            session,
            report,
            by_size,
            seal_head,
        )
        self.builder = merkle.TreeBuilder()
        self.chains: dict[UUID, tuple[int, bytes]] = {}
        # Game ids known from the chain heads, so a row forged ahead of a game's seals
        # is still named by the game's id.
        self.names: dict[UUID, str] = dict(
            session.execute(sa.select(GameChainHead.originator_id, GameChainHead.game_id)).all()
        )
        self.pending_nodes: list[tuple[int, int, bytes]] = []
        self.last_nid = 0

    def name(self, originator_id: UUID, row: StoredRow | None = None) -> str:
        if originator_id in self.names:
            return self.names[originator_id]
        found = row and row.version == 1 and game_id_from_state(row.state)
        return found or str(originator_id)

    def run(self, seals: Iterator, rows: Iterator[StoredRow], bar) -> None:
        seal, row = next(seals, None), next(rows, None)
        while seal is not None or row is not None:
            if row is not None and (seal is None or row.notification_id < seal.notification_id):
                self.unsealed(row)
                self.report.events += 1
                bar.update(1)
                row = next(rows, None)
            elif row is not None and row.notification_id == seal.notification_id:
                self.sealed(seal, row)
                self.report.events += 1
                bar.update(1)
                seal, row = next(seals, None), next(rows, None)
            else:
                self.sealed(seal, None)
                seal = next(seals, None)

    def unsealed(self, row: StoredRow) -> None:
        name = self.name(row.originator_id, row)
        if row.notification_id < self.seal_head:
            self.report.add(
                INSERTED,
                f"stored row {row.notification_id} ({row.topic}) was never sealed although "
                "later rows were: inserted directly into the database",
                name,
                row.version,
            )
        else:
            self.report.add(
                UNSEALED,
                f"stored row {row.notification_id} ({row.topic}) is not sealed: written "
                "without sealing, or inserted directly (run `rummy-ledger checkpoint` if "
                "it is genuine)",
                name,
                row.version,
            )

    def sealed(self, seal: Seal, row: StoredRow | None) -> None:
        report = self.report
        report.sealed += 1
        oid, name = seal.originator_id, seal.game_id
        if seal.position != self.builder.size:
            report.add(
                TREE,
                f"seal positions jump from {self.builder.size} to {seal.position}: seals were deleted",
                name,
                seal.originator_version,
            )
        if seal.notification_id <= self.last_nid:
            report.add(TREE, "seals are out of notification order", name, seal.originator_version)
        self.last_nid = seal.notification_id
        sealed_leaf = bytes(seal.leaf_hash)
        leaf = sealed_leaf
        if row is None:
            report.add(
                DELETED,
                f"stored row {seal.notification_id} is missing: the sealed event was deleted",
                name,
                seal.originator_version,
            )
        elif (row.originator_id, row.version) != (oid, seal.originator_version):
            report.add(
                ALTERED,
                f"stored row {row.notification_id} now claims to be event {row.version} "
                f"of {self.name(row.originator_id)}: its identity was changed",
                name,
                seal.originator_version,
            )
            leaf = row.leaf
        else:
            leaf = row.leaf
            if leaf != sealed_leaf:
                report.add(
                    ALTERED,
                    f"stored row {row.notification_id} ({row.topic}) does not match its seal: "
                    "its bytes were changed",
                    name,
                    seal.originator_version,
                )
        previous_version, previous_chain = self.chains.get(oid, (0, GENESIS))
        if previous_version == 0:
            self.report.games += 1
        if seal.originator_version != previous_version + 1:
            report.add(
                DELETED,
                f"sealed history goes from event {previous_version} to "
                f"{seal.originator_version}: events in between are missing",
                name,
                previous_version + 1,
            )
        chain = chain_hash(previous_chain, sealed_leaf)
        if chain != bytes(seal.chain_hash):
            report.add(
                CHAIN,
                "the seal's chain value does not follow from the game's seals before it: "
                "the seal was altered",
                name,
                seal.originator_version,
            )
        # The recomputed value carries on, so one altered link is reported once.
        self.chains[oid] = (seal.originator_version, chain)
        self.pending_nodes.extend(
            node for node in self.builder.append(leaf) if node[0] >= NODE_MIN_LEVEL
        )
        if len(self.pending_nodes) >= 2000:
            self.check_nodes()
        for checkpoint in self.by_size.get(self.builder.size, ()):
            self.check_root(checkpoint)

    def check_root(self, checkpoint: Checkpoint) -> None:
        self.report.checkpoints.append(checkpoint.size)
        if self.builder.root() != checkpoint.root:
            self.report.add(
                CHECKPOINT,
                f"the tree over the first {checkpoint.size} events does not match the "
                f"checkpoint signed {checkpoint.time}: history it covers was rewritten",
            )

    def check_nodes(self) -> None:
        nodes, self.pending_nodes = self.pending_nodes, []
        stored: dict[tuple[int, int], bytes] = {}
        for chunk in _chunks([(lv, ix) for lv, ix, _ in nodes], 400):
            rows = self.session.execute(
                sa.select(TreeNode.level, TreeNode.index, TreeNode.hash).where(
                    sa.tuple_(TreeNode.level, TreeNode.index).in_(chunk)
                )
            )
            stored.update(((lv, ix), bytes(h)) for lv, ix, h in rows)
        for level, index, value in nodes:
            if stored.get((level, index)) != value:
                self.report.add(
                    TREE,
                    f"stored tree node (level {level}, index {index}) is missing or does not "
                    f"match events {index << level}-{((index + 1) << level) - 1}",
                )

    def finish(self) -> None:
        self.check_nodes()
        report = self.report
        report.root = self.builder.root()
        for size, checkpoints in self.by_size.items():
            if size > self.builder.size:
                for checkpoint in checkpoints:
                    report.add(
                        CHECKPOINT,
                        f"the checkpoint signed {checkpoint.time} covers {size} events, but "
                        f"only {self.builder.size} are sealed: sealed events were removed",
                    )
        size = self.builder.size
        tops = self.session.execute(
            sa.select(TreeNode.level, sa.func.max(TreeNode.index)).group_by(TreeNode.level)
        )
        for level, top in tops:
            if (top + 1) << level > size:
                report.add(
                    TREE,
                    f"stored tree node (level {level}, index {top}) lies beyond the {size} "
                    "sealed events: seals at the end were deleted",
                )
        for head in self.session.scalars(sa.select(GameChainHead)):
            seen = self.chains.get(head.originator_id)
            if seen is None or seen != (head.version, bytes(head.chain_hash)):
                last = 0 if seen is None else seen[0]
                report.add(
                    DELETED,
                    f"the game's sealed events end at event {last}, but its chain head says "
                    f"{head.version}: events and their seals were removed",
                    head.game_id,
                    last + 1,
                )


# -- one game ----------------------------------------------------------------------------
def _game_originators(session: Session, game_id: str) -> list[UUID]:
    found = list(
        session.scalars(
            sa.select(GameChainHead.originator_id).where(GameChainHead.game_id == game_id)
        )
    )
    if found:
        return found
    try:
        from domain.game import Game
    except ImportError:  # the aggregate's module is optional for the storage layer
        return []
    return [Game.create_id(game_id)]


def verify_game(
    url: str | None,
    game_id: str,
    *,
    checkpoints: Iterable[Checkpoint] = (),
    public_key: Ed25519PublicKey | None = None,
    events: str = EVENTS_TABLE,
    latest: bool = True,
    check_deals: bool = True,
) -> Report:
    """Check one game's events against its seals and chain, and against the checkpoints
    (the given ones, plus the latest stored one when ``latest``) through the stored tree;
    and its deal against its shuffle seeds when the record carried them.
    """
    public_key = public_key or _default_public_key()
    report = Report()
    with Session(_engine(url)) as session:
        _require_tables(session)
        originators = _game_originators(session, game_id)
        table = events_table(events)
        rows: list[StoredRow] = []
        if originators and _has_table(session, events):
            rows = [
                _row(r)
                for r in session.execute(
                    sa.select(table)
                    .where(table.c.originator_id.in_(originators))
                    .order_by(table.c.originator_version)
                )
            ]
        seals = (
            list(
                session.scalars(
                    sa.select(Seal)
                    .where(Seal.originator_id.in_(originators))
                    .order_by(Seal.originator_version)
                )
            )
            if originators
            else []
        )
        heads = (
            list(
                session.scalars(
                    sa.select(GameChainHead).where(GameChainHead.originator_id.in_(originators))
                )
            )
            if originators
            else []
        )
        if not rows and not seals and not heads:
            raise UnknownGame(f"no game {game_id} in the ledger")
        report.games = 1
        seal_head = session.scalar(sa.select(sa.func.max(Seal.notification_id))) or 0
        leaves = _compare_game(game_id, rows, seals, heads, seal_head, report)
        given = list(checkpoints)
        if latest:
            row = session.scalars(
                sa.select(CheckpointRow).order_by(CheckpointRow.id.desc()).limit(1)
            ).first()
            if row is not None:
                given.append(_checkpoint_of(row))
        for checkpoint in _signed(given, public_key, report):
            _check_game_in_tree(session, game_id, checkpoint, leaves, seals, report)
    if check_deals and rows:
        _check_deals(url, report, game_id=game_id)
    return report


def _compare_game(
    game_id: str,
    rows: list[StoredRow],
    seals: list[Seal],
    heads: list[GameChainHead],
    seal_head: int,
    report: Report,
) -> dict[int, bytes]:
    """Compare rows with seals by version; return recomputed leaves by tree position."""
    by_version = {row.version: row for row in rows}
    leaves: dict[int, bytes] = {}
    previous_version, previous_chain = 0, GENESIS
    for seal in seals:
        version = seal.originator_version
        report.sealed += 1
        row = by_version.pop(version, None)
        if version != previous_version + 1:
            report.add(
                DELETED,
                f"sealed history goes from event {previous_version} to {version}",
                game_id,
                previous_version + 1,
            )
        if row is None:
            report.add(
                DELETED,
                f"stored row {seal.notification_id} is missing: the sealed event was deleted",
                game_id,
                version,
            )
            leaf = bytes(seal.leaf_hash)
        else:
            report.events += 1
            leaf = row.leaf
            if row.notification_id != seal.notification_id:
                report.add(
                    ALTERED,
                    f"event moved from stored row {seal.notification_id} to {row.notification_id}",
                    game_id,
                    version,
                )
            elif leaf != bytes(seal.leaf_hash):
                report.add(
                    ALTERED,
                    f"stored row {row.notification_id} ({row.topic}) does not match its seal: "
                    "its bytes were changed",
                    game_id,
                    version,
                )
        chain = chain_hash(previous_chain, bytes(seal.leaf_hash))
        if chain != bytes(seal.chain_hash):
            report.add(
                CHAIN,
                "the seal's chain value does not follow from the game's seals before it: "
                "the seal was altered",
                game_id,
                version,
            )
        leaves[seal.position] = leaf
        previous_version, previous_chain = version, chain
    for head in heads:
        if (head.version, bytes(head.chain_hash)) != (previous_version, previous_chain):
            report.add(
                DELETED,
                f"the game's sealed events end at event {previous_version}, but its chain "
                f"head says {head.version}: events and their seals were removed",
                game_id,
                previous_version + 1,
            )
    for version, row in sorted(by_version.items()):
        report.events += 1
        inserted = row.notification_id < seal_head
        report.add(
            INSERTED if inserted else UNSEALED,
            f"stored row {row.notification_id} ({row.topic}) "
            + (
                "was never sealed although later rows were: inserted directly into the database"
                if inserted
                else "is not sealed yet"
            ),
            game_id,
            version,
        )
    return leaves


def _check_game_in_tree(
    session: Session,
    game_id: str,
    checkpoint: Checkpoint,
    leaves: dict[int, bytes],
    seals: list[Seal],
    report: Report,
) -> None:
    covered = {p: leaf for p, leaf in leaves.items() if p < checkpoint.size}
    if not covered:
        return
    report.checkpoints.append(checkpoint.size)
    tree = StoredTree(session)
    positions = sorted(covered)
    tree.prefetch(merkle.needed_subtrees(checkpoint.size, positions))
    try:
        root = merkle.root_from_known(checkpoint.size, covered, tree.subtree)
    except IntegrityError as error:
        report.add(TREE, str(error), game_id)
        return
    if root == checkpoint.root:
        return
    # Find the first event that does not prove on its own; if each one does, the
    # stored tree is damaged elsewhere (and only the full `verify` can say where).
    version_at = {seal.position: seal.originator_version for seal in seals}
    for position in positions:
        ranges = merkle.inclusion_ranges(position, checkpoint.size)
        path = tree.hashes_of(ranges)
        if not merkle.verify_inclusion(
            covered[position], position, checkpoint.size, path, checkpoint.root
        ):
            report.add(
                CHECKPOINT,
                f"not in the tree of the checkpoint signed {checkpoint.time}: the event or "
                "the history around it was rewritten",
                game_id,
                version_at.get(position),
            )
            return
    report.add(
        CHECKPOINT,
        f"the game's events do not lead to the root of the checkpoint signed {checkpoint.time}",
        game_id,
    )


# -- verdicts for pages ------------------------------------------------------------------
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

    ``verified``: every event matches its seal and chain, and all of them are in the
    latest signed checkpoint (signature checked with the public key). ``broken``: an
    event was altered, deleted or inserted (``event`` says which). ``not_checkpointed``:
    nothing is wrong, but some events are not yet sealed or not yet in a checkpoint.
    """
    public_key = public_key or _default_public_key()
    checkpoint = latest_checkpoint(url)
    report = verify_game(url, game_id, public_key=public_key)
    broken = [p for p in report.problems if p.kind != UNSEALED]
    if broken:
        first = min(broken, key=lambda p: (p.event is None, p.event or 0))
        return Verdict(BROKEN, str(first), first.event, *_about(checkpoint))
    unsealed = [p.event for p in report.problems]
    if unsealed:
        return Verdict(
            NOT_CHECKPOINTED,
            f"events {_span(unsealed)} are not sealed yet",
            None,
            *_about(checkpoint),
        )
    if checkpoint is None:
        return Verdict(NOT_CHECKPOINTED, "no checkpoint has been signed yet")
    if public_key is None:
        return Verdict(
            NOT_CHECKPOINTED,
            "the checkpoint's signature cannot be checked: no public key (RUMMY_LEDGER_KEY_DIR)",
            None,
            *_about(checkpoint),
        )
    last = _last_position(url, game_id)
    if last is None or last >= checkpoint.size:
        return Verdict(
            NOT_CHECKPOINTED,
            f"the game has events after the latest checkpoint ({checkpoint.size} events, {checkpoint.time})",
            None,
            *_about(checkpoint),
        )
    return Verdict(
        VERIFIED,
        f"all {report.events} events match their seals and are in the checkpoint of "
        f"{checkpoint.size} events signed {checkpoint.time} by key {checkpoint.key_id}",
        None,
        *_about(checkpoint),
    )


def _about(checkpoint: Checkpoint | None) -> tuple[int | None, str | None]:
    return (None, None) if checkpoint is None else (checkpoint.size, checkpoint.time)


def _span(events: Sequence[int | None]) -> str:
    numbers = sorted(e for e in events if e is not None)
    if not numbers:
        return "?"
    return str(numbers[0]) if numbers[0] == numbers[-1] else f"{numbers[0]}-{numbers[-1]}"


def _last_position(url: str | None, game_id: str) -> int | None:
    with Session(_engine(url)) as session:
        return session.scalar(
            sa.select(sa.func.max(GameChainHead.last_position)).where(
                GameChainHead.game_id == game_id
            )
        )


# -- proofs ------------------------------------------------------------------------------
def inclusion_proof(
    url: str | None,
    game_id: str,
    checkpoint: Checkpoint | None = None,
    *,
    events: str = EVENTS_TABLE,
) -> dict[str, Any]:
    """The inclusion proof file for a game's events against ``checkpoint`` (default: the
    latest stored one). Refuses when the stored events no longer match their seals.
    """
    checkpoint = checkpoint or latest_checkpoint(url)
    if checkpoint is None:
        raise IntegrityError("no checkpoint yet: run `rummy-ledger checkpoint` first")
    with Session(_engine(url)) as session:
        _require_tables(session)
        seals = list(
            session.scalars(
                sa.select(Seal).where(Seal.game_id == game_id).order_by(Seal.originator_version)
            )
        )
        if not seals:
            raise UnknownGame(f"no sealed events for game {game_id}")
        originator_id = seals[0].originator_id
        table = events_table(events)
        rows = {
            r.originator_version: _row(r)
            for r in session.execute(sa.select(table).where(table.c.originator_id == originator_id))
        }
        covered = [s for s in seals if s.position < checkpoint.size]
        if not covered:
            raise IntegrityError(
                f"game {game_id} has no events in the checkpoint of {checkpoint.size} events "
                f"({checkpoint.time}); sign a newer checkpoint first"
            )
        tree = StoredTree(session)
        all_ranges = {
            s.position: merkle.inclusion_ranges(s.position, checkpoint.size) for s in covered
        }
        tree.prefetch(
            st
            for ranges in all_ranges.values()
            for a, b in ranges
            for st in merkle.subtrees_of(a, b)
        )
        proven = []
        for seal in covered:
            version = seal.originator_version
            row = rows.get(version)
            if row is None or row.leaf != bytes(seal.leaf_hash):
                raise IntegrityError(
                    f"game {game_id}, event {version}: the stored event no longer matches its "
                    "seal; run `rummy-ledger verify`"
                )
            path = tree.hashes_of(all_ranges[seal.position])
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
        game_id, originator_id, checkpoint, proven, complete=len(covered) == len(seals)
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
    with Session(_engine(url)) as session:
        _require_tables(session)
        tree = StoredTree(session)
        if tree.size() < new.size:
            raise IntegrityError(
                f"the checkpoint covers {new.size} events but only {tree.size()} are sealed"
            )
        proof = tree.hashes_of(merkle.consistency_ranges(old.size, new.size))
    return consistency_document(old, new, proof)


def require_tables(url: str | None = None) -> None:
    with Session(_engine(url)) as session:
        _require_tables(session)
