"""``rummy-ledger verify --since OLD.json --state DIR``: the auditor's daily verify, which
costs what is new (docs/integrity.md §6, "Day by day").

The auditor keeps a state directory (:mod:`replays.integrity.state_dir`): the tree head the
last run proved and, per game, digests of what it verified. A run

1. checks OLD's signature and that the state was written for OLD;
2. takes the new tree head (a checkpoint file given, else a fresh checkpoint when this
   process holds the signing key, else the latest stored one) and checks the RFC 9162
   consistency proof from OLD to it: the proof is generated from the stored tree
   (:meth:`StoredTree.hashes_of`) and verified with :func:`merkle.verify_consistency`,
   which sees only the proof and the two signed heads;
3. in one read snapshot, digests every game's stored events (with their seals and chain
   head), snapshots and read rows, and the stored tree nodes below OLD's size;
4. replays in full (:func:`replays.integrity.verify.verify_game`, every check) each game
   that is new, has events at or after OLD's size, or whose digests differ from the kept
   ones; a game whose events differ while its replay finds nothing is still a finding
   (the events before the checkpoint are immutable);
5. writes the new state only when nothing was found.

A first run (no state yet) is a whole-store ``verify`` that then writes the state.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from uuid import UUID

import sqlalchemy as sa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from replays.integrity import merkle
from replays.integrity.append import stored_head
from replays.integrity.models import GameChainHead
from replays.integrity.report import (
    ALTERED,
    CHECKPOINT,
    DELETED,
    INSERTED,
    TREE,
    UNREADABLE,
    Problem,
    Report,
)
from replays.integrity.signing import Checkpoint, SigningError, load_private_key, utc_now
from replays.integrity.state_dir import GameState, VerifyState, load_state, save_state
from replays.integrity.store import (
    IntegrityError,
    StoredTree,
    UnknownGame,
    _mistyped,
    count_events,
    engine,
    game_id_from_state,
    has_table,
    plain_rows,
    progress_bar,
    raw_id,
    read_snapshot,
)
from replays.store.db import text_as_stored, undecodable
from replays.store.schema import EVENTS_TABLE, SNAPSHOTS_TABLE

_DIGEST_FORMAT = b"rummy-ledger verify-state 1\0"
READ_MODEL = "read_model"  # replays.readmodels.read_model_checks' kind (it imports this package)


@dataclass
class Coverage:
    """What a ``--since`` run covered, for its summary line."""

    first_run: bool = False
    replayed: list[str] = field(default_factory=list)
    compared: int = 0
    proven: int = 0  # events before OLD's size, proven unchanged by the consistency proof
    old_size: int = 0
    new_size: int = 0
    seconds: float = 0.0
    state_written: bool = False
    checkpoint: Checkpoint | None = None
    stages: dict[str, float] = field(default_factory=dict)  # seconds, by step

    def lap(self, stage: str, since: float) -> float:
        now = time.perf_counter()
        self.stages[stage] = round(self.stages.get(stage, 0.0) + now - since, 3)
        return now

    def summary(self) -> str:
        if self.first_run:
            return (
                f"first run: the whole store verified up to the checkpoint of {self.new_size} "
                f"events in {self.seconds:.1f} s"
            )
        return (
            f"{len(self.replayed)} game(s) replayed in full, {self.compared} compared with "
            f"their kept digests, {self.proven} event(s) proven unchanged by the consistency "
            f"proof from {self.old_size} to {self.new_size} events, in {self.seconds:.1f} s"
        )


# -- digests -----------------------------------------------------------------------------------
def _field(digest, data: bytes) -> None:
    # Length-prefixed, so no two sequences of fields hash alike.
    digest.update(len(data).to_bytes(8, "big") + data)


@dataclass
class StoreDigests:
    """Per game: digests of its events (with seals and chain head), snapshots and read
    rows; its last tree position; the digest of the tree nodes below ``size``."""

    events: dict[str, bytes]
    snapshots: dict[str, bytes]
    rows: dict[str, bytes]
    last_position: dict[str, int]
    nodes: bytes
    events_read: int

    def games(self) -> set[str]:
        return set(self.events) | set(self.rows) | set(self.snapshots)

    def state(self, checkpoint: Checkpoint) -> VerifyState:
        empty = hashlib.sha256(_DIGEST_FORMAT).hexdigest()
        return VerifyState(
            checkpoint.size,
            checkpoint.root,
            utc_now(),
            self.nodes.hex(),
            {
                game: GameState(
                    self.events[game].hex() if game in self.events else empty,
                    self.snapshots[game].hex() if game in self.snapshots else empty,
                    self.rows[game].hex() if game in self.rows else empty,
                    self.last_position.get(game, -1),
                )
                for game in self.games()
            },
            checkpoint.to_dict(),
        )


class _Digests(dict):
    def __missing__(self, game: str):
        digest = self[game] = hashlib.sha256(_DIGEST_FORMAT)
        return digest


def store_digests(
    connection: sa.Connection,
    size: int,
    *,
    progress: bool = False,
    events: str = EVENTS_TABLE,
    report: Report | None = None,
) -> StoreDigests:
    """Every game's digests, read in the connection's snapshot: one pass over the events,
    one over the seals, and one query per read-model table; nothing is decoded. With
    ``report``, the seals' order is checked on the way as the full verify checks it
    (positions without gaps, notification ids rising)."""
    names: dict[bytes, str] = {}
    positions: dict[str, int] = {}
    heads = _Digests()
    # Read raw: a value of the wrong kind (the scan before the pass checks only some
    # columns) digests by its repr, so its game's digest differs and the game is replayed.
    for originator, game, version, chain, last in plain_rows(
        connection,
        "SELECT originator_id, game_id, version, chain_hash, last_position FROM integrity_games",
        {},
    ):
        with contextlib.suppress(TypeError, ValueError):
            names[raw_id(originator)] = game
        if type(last) is int:
            positions[game] = max(positions.get(game, -1), last)
        _field(heads[game], repr(("head", originator, version, chain, last)).encode())
    found = _Digests()
    read = 0
    if has_table(connection, events):
        total = count_events(connection, events) if progress else None
        with progress_bar(total, "since: digests", progress) as bar:
            query = (
                "SELECT id, originator_id, originator_version, topic, state FROM "
                f"{events} WHERE id > :last ORDER BY id LIMIT :n"
            )
            last = -(2**62)  # forged rows may carry any id, negative ones included
            while True:
                batch = list(plain_rows(connection, query, {"last": last, "n": 5000}))
                for raw in batch:
                    nid, originator, version, topic, state = raw
                    try:
                        if not (
                            type(state) is bytes and type(topic) is str and type(version) is int
                        ):
                            raise TypeError
                        if type(originator) is not bytes:
                            originator = raw_id(originator)
                        head = b"%d %d %d %d\0" % (nid, version, len(topic), len(state))
                    except (TypeError, ValueError):
                        # A row the ledger cannot have written so: its repr goes in.
                        row = _mistyped(raw)
                        originator, version, state = row.originator, row.version, row.state
                        topic, head = "", repr(tuple(raw)).encode() + b"\0"
                    game = names.get(originator)
                    if game is None:
                        game = (game_id_from_state(state) if version == 1 else None) or str(
                            UUID(bytes=originator)
                        )
                    found[game].update(head + originator + topic.encode() + state)
                read += len(batch)
                bar.update(len(batch))
                if len(batch) < 5000:
                    break
                last = batch[-1][0]
    expected, last_nid = 0, None
    # The seals as the driver gives them, in position order, nothing converted: a value
    # of the wrong kind was hidden by the quarantine, and any other form still digests
    # (by its repr) to something that differs from what the last run kept.
    query = (
        "SELECT position, notification_id, originator_version, game_id, originator_id, "
        "leaf_hash, chain_hash FROM integrity_seals WHERE position > :last "
        "ORDER BY position LIMIT :n"
    )
    last = -1
    while True:
        batch = list(plain_rows(connection, query, {"last": last, "n": 5000}))
        for position, nid, version, game, originator, leaf, chain in batch:
            if type(nid) is not int or type(version) is not int or type(game) is not str:
                found[str(game)].update(repr(("seal", position, nid, version, originator)).encode())
                continue
            if report is not None:
                if position != expected:
                    report.add(
                        TREE,
                        f"seal positions jump from {expected} to {position}: seals were deleted",
                        game,
                        version,
                    )
                if last_nid is not None and nid <= last_nid:
                    report.add(TREE, "seals are out of notification order", game, version)
            expected, last_nid = position + 1, nid
            try:
                data = b"seal %d %d %d %s\0" % (position, nid, version, str(originator).encode())
                found[game].update(data + leaf + chain)
            except TypeError:
                found[game].update(repr((position, nid, version, originator, leaf, chain)).encode())
            positions[game] = max(positions.get(game, -1), position)
        if len(batch) < 5000:
            break
        last = batch[-1][0]
    for game, digest in heads.items():
        _field(found[game], digest.digest())
    return StoreDigests(
        {game: digest.digest() for game, digest in found.items()},
        _snapshot_digests(connection, names),
        _row_digests(connection),
        positions,
        _nodes_digest(connection, size),
        read,
    )


def _snapshot_digests(connection: sa.Connection, names: dict[bytes, str]) -> dict[str, bytes]:
    if not has_table(connection, SNAPSHOTS_TABLE):
        return {}
    found = _Digests()
    query = (
        f"SELECT originator_id, originator_version, topic, state FROM {SNAPSHOTS_TABLE} "
        "ORDER BY originator_id, originator_version"
    )
    for originator, version, topic, state in plain_rows(connection, query, {}):
        try:
            key = raw_id(originator)
            game = names.get(key) or str(UUID(bytes=key))
        except (TypeError, ValueError):
            game = repr(originator)
        if type(state) is bytes:
            _field(found[game], f"snapshot {originator!r} {version!r} {topic!r}".encode())
            _field(found[game], state)
        else:
            _field(found[game], repr(("snapshot", originator, version, topic, state)).encode())
    return {game: digest.digest() for game, digest in found.items()}


# Each read-model table in a fixed order of its rows; the ledger lines' own ids are left
# out (a `projections rebuild` numbers them anew without changing what they say).
_READ_TABLES = (
    ("games", "game_id"),
    ("player_results", "game_id, player"),
    ("moves", "game_id, move_index"),
    ("ledger_entries", "game_id, dispute_id, kind, line, account, player, id"),
)


def _row_digests(connection: sa.Connection) -> dict[str, bytes]:
    """Each game's read rows as the driver returns them (on SQLite from its own cursor),
    every column but the lines' ids, in a fixed order. A stored text that is not UTF-8
    fails SQLite's usual reading: then the rows are read again taking it as it is stored
    (:func:`~replays.store.db.text_as_stored`; valid text reads the same, so every other
    game's digest is too), and its game's digest differs from the kept one."""
    try:
        return _read_row_digests(connection)
    except sqlite3.OperationalError as error:
        if not undecodable(error):
            raise
    with text_as_stored(connection):
        return _read_row_digests(connection)


def _read_row_digests(connection: sa.Connection) -> dict[str, bytes]:
    found = _Digests()
    inspector = sa.inspect(connection)
    for table, order in _READ_TABLES:
        if not inspector.has_table(table):
            continue
        names = [c["name"] for c in inspector.get_columns(table) if c["name"] != "id"]
        names.remove("game_id")
        columns = ", ".join(f'"{name}"' for name in ["game_id", *names])
        label = repr((table, tuple(names))).encode()
        query = f"SELECT {columns} FROM {table} ORDER BY {order}"
        # One update per game: its rows in order, as one text.
        current, rows = None, []
        for row in plain_rows(connection, query, {}):
            if row[0] != current:
                if rows:
                    _field(found[current], label + repr(rows).encode())
                current, rows = row[0], []
            rows.append(tuple(row))
        if rows:
            _field(found[current], label + repr(rows).encode())
    return {game: digest.digest() for game, digest in found.items()}


def _nodes_digest(connection: sa.Connection, size: int) -> bytes:
    """The stored subtrees wholly below ``size`` events: they never change once written."""
    from replays.integrity.verify import node_placed

    digest = hashlib.sha256(_DIGEST_FORMAT + b"nodes\0")
    rows = plain_rows(
        connection, 'SELECT level, "index", hash FROM integrity_nodes ORDER BY level, "index"', {}
    )
    for level, index, value in rows:
        if (
            type(level) is not int
            or type(index) is not int
            or type(value) is not bytes
            or not node_placed(level, index)  # named by placeless_nodes
        ):
            _field(digest, repr((level, index, value)).encode())
        elif (index + 1) << level <= size:
            _field(digest, f"{level} {index}".encode() + value)
    return digest.digest()


# -- the run -----------------------------------------------------------------------------------
def new_tree_head(
    url: str | None, given: Checkpoint | None, report: Report, old: Checkpoint
) -> Checkpoint:
    """The checkpoint to verify up to: the one given, else a fresh one when this process
    holds the ledger's signing key, else the latest stored one; when the store cannot give
    one (its checkpoint rows hold values of the wrong kind, say), that is a finding and the
    run goes on up to ``old``."""
    from replays.integrity.evidence import latest_checkpoint, make_checkpoint

    if given is not None:
        return given
    try:
        load_private_key()
    except SigningError:
        pass
    else:
        try:
            return make_checkpoint(url)
        except (IntegrityError, ValueError, TypeError, sa.exc.DBAPIError) as error:
            report.add(CHECKPOINT, f"no fresh checkpoint could be signed: {error}")
    try:
        latest = latest_checkpoint(url)
    except (ValueError, TypeError, sa.exc.DBAPIError) as error:
        report.add(CHECKPOINT, f"the latest stored checkpoint cannot be read: {error}")
        return old
    if latest is None:
        raise IntegrityError(
            "no checkpoint to verify up to: give one with --checkpoint, or run "
            "`rummy-ledger checkpoint` on the server"
        )
    if type(latest.size) is not int or type(latest.root) is not bytes or len(latest.root) != 32:
        report.add(CHECKPOINT, f"the latest stored checkpoint is malformed: size {latest.size!r}")
        return old
    return latest


def check_consistency(
    connection: sa.Connection, old: Checkpoint, new: Checkpoint, report: Report
) -> bool:
    """The RFC 9162 consistency proof from ``old`` to ``new``: generated from the stored
    tree, then verified from the proof and the two signed heads alone."""
    if new.size < old.size:
        report.add(
            CHECKPOINT,
            f"the new checkpoint covers {new.size} events, fewer than the {old.size} of your "
            f"checkpoint signed {old.time}: the ledger's history was cut short",
        )
        return False
    tree = StoredTree(connection)
    try:
        proof = tree.hashes_of(merkle.consistency_ranges(old.size, new.size))
    except IntegrityError as error:
        report.add(
            CHECKPOINT,
            f"no consistency proof from your checkpoint of {old.size} events signed "
            f"{old.time} to {new.size} events: {error}",
        )
        return False
    if merkle.verify_consistency(old.size, new.size, old.root, new.root, proof):
        return True
    report.add(
        CHECKPOINT,
        f"the consistency proof from your checkpoint of {old.size} events signed {old.time} "
        f"to the checkpoint of {new.size} events signed {new.time} fails: the ledger's tree "
        f"no longer extends yours, history before event {old.size} was rewritten "
        "(`rummy-ledger verify --checkpoint OLD.json` locates it)",
    )
    return False


def _check_projection_position(connection: sa.Connection, report: Report) -> None:
    """The read-model projection's position against the events, as the full pass checks
    it (:func:`replays.readmodels.read_model_checks.projection_reach`): the games replayed
    here are checked up to it."""
    from replays.readmodels import read_model_checks as checks

    if checks.has_read_models(connection):
        finding = checks.projection_reach(connection, EVENTS_TABLE).finding
        if finding is not None:
            report.add(READ_MODEL, finding)


def _check_tree_head(connection: sa.Connection, new: Checkpoint, report: Report) -> None:
    """The tree head the saves go on from must extend the new checkpoint."""
    from replays.integrity.verify import _head_holds

    head = stored_head(connection)
    if head is None:
        if new.size:
            report.add(TREE, "the tree head (integrity_head) is missing")
        return
    tree = StoredTree(connection)
    try:
        holds = (
            head.size >= new.size
            and _head_holds(head)
            and tree.root(head.size) == head.root
            and tree.root(new.size) == new.root
        )
    except IntegrityError as error:
        report.add(TREE, str(error))
        return
    if not holds:
        report.add(
            TREE,
            f"the tree head (integrity_head) over {head.size} events does not extend the "
            f"checkpoint of {new.size} events through the stored tree: it was changed "
            "outside the ledger",
        )


def _check_stored_checkpoints(
    connection: sa.Connection, public_key: Ed25519PublicKey | None, report: Report
) -> None:
    """Every checkpoint the ledger stored: its signature, and its root from the stored tree
    (a few subtrees each)."""
    from replays.integrity.verify import signed_checkpoints, stored_checkpoints

    tree = StoredTree(connection)
    top = tree.size()
    for checkpoint in signed_checkpoints(
        stored_checkpoints(connection, report), public_key, report
    ):
        if checkpoint.size > top:
            report.add(
                CHECKPOINT,
                f"the checkpoint signed {checkpoint.time} covers {checkpoint.size} events, "
                f"but only {top} are sealed: sealed events were removed",
            )
            continue
        try:
            root = tree.root(checkpoint.size)
        except IntegrityError as error:
            report.add(TREE, str(error))
            continue
        if root != checkpoint.root:
            report.add(
                CHECKPOINT,
                f"the stored tree over the first {checkpoint.size} events does not match the "
                f"checkpoint signed {checkpoint.time}: history it covers was rewritten",
            )


def verify_since(
    url: str | None,
    old: Checkpoint,
    state_dir: str | Path,
    *,
    new: Checkpoint | None = None,
    public_key: Ed25519PublicKey | None = None,
    progress: bool = False,
) -> tuple[Report, Coverage]:
    """The incremental verify (module docstring). Raises :class:`IntegrityError` (or
    :class:`~replays.integrity.state_dir.StateError`) for what stops it before any check:
    a state written for another checkpoint, no checkpoint to verify up to."""
    from replays.integrity.verify import (
        _masking,
        default_public_key,
        placeless_nodes,
        verify_game,
        verify_store,
    )

    started = time.perf_counter()
    public_key = public_key or default_public_key()
    report, coverage = Report(), Coverage(old_size=old.size)
    reason = None if public_key is None else old.verify(public_key)
    if reason:
        report.add(CHECKPOINT, f"your checkpoint of {old.size} events ({old.time}): {reason}")
        coverage.seconds = time.perf_counter() - started
        return report, coverage
    if public_key is None:
        report.notes.append("no public key: checkpoint signatures were not checked")
    kept = load_state(state_dir)
    if kept is not None and (kept.size, kept.root) != (old.size, old.root):
        raise IntegrityError(
            f"the state in {state_dir} was written for the checkpoint of {kept.size} events "
            f"(root {kept.root.hex()[:16]}…), not for the {old.size} events of the one given: "
            f"give {Path(state_dir) / 'checkpoint.json'}"
        )
    new = new_tree_head(url, new, report, old)
    lap = coverage.lap("new tree head", started)
    if public_key is not None and (reason := new.verify(public_key)):
        report.add(CHECKPOINT, f"the new checkpoint of {new.size} events ({new.time}): {reason}")
    coverage.new_size, coverage.checkpoint = new.size, new
    report.checkpoints += [old.size, new.size]
    if kept is None:
        coverage.first_run = True
        full = verify_store(url, checkpoints=[old, new], public_key=public_key, progress=progress)
        report.problems += full.problems
        report.notes += full.notes
        report.events, report.sealed, report.games = full.events, full.sealed, full.games
        # The full pass reported any value of the wrong kind; here it is only hidden.
        with (
            engine(url).connect() as connection,
            _masking(connection, Report(), None, _since_scope()),
        ):
            check_consistency(connection, old, new, report)
            digests = store_digests(connection, new.size, progress=progress)
    else:
        # Every value of the wrong kind in the store is a finding, and its row is hidden
        # from the pass (docs/integrity.md §6): its game's digests differ, so it is
        # replayed, and its own check names the value again.
        with (
            engine(url).connect() as connection,
            _masking(connection, report, None, _since_scope()),
        ):
            lap = coverage.lap("wrong-kind scan", lap)
            proven = check_consistency(connection, old, new, report)
            coverage.proven = old.size if proven else 0
            _check_tree_head(connection, new, report)
            _check_stored_checkpoints(connection, public_key, report)
            _check_projection_position(connection, report)
            placeless_nodes(connection, report)
            lap = coverage.lap("consistency and tree checks", lap)
            digests = store_digests(connection, old.size, progress=progress, report=report)
            lap = coverage.lap("digests", lap)
            if digests.nodes.hex() != kept.nodes:
                report.add(
                    TREE,
                    f"stored tree nodes below the {old.size} events of your checkpoint were "
                    "changed since the last run: they were written outside the ledger",
                )
            digests.nodes = _nodes_digest(connection, new.size)
            replay, suspects, rows_changed = _to_replay(digests, kept, old.size, report)
        # Read rows of a game no event, seal or chain head knows: nothing to replay.
        orphans = sorted(g for g in replay if g in digests.rows and g not in digests.events)
        for game in orphans:
            report.add(READ_MODEL, "read rows stored for a game with no events", game)
            replay.discard(game)
        coverage.compared = len(digests.games() - replay - set(orphans))
        report.games = len(digests.games())
        lap = coverage.lap("digests compared", lap)
        _replay(
            url, sorted(replay), [old, new], public_key, progress, report, coverage, verify_game
        )
        for game in sorted(suspects):
            if not any(p.game_id == game for p in report.problems):
                report.add(
                    ALTERED,
                    "its stored events, seals or chain head differ from those verified on "
                    f"{kept.time}, although they all lie before your checkpoint's "
                    f"{old.size} events and each matches its seal: they were rewritten",
                    game,
                )
        for game in sorted(rows_changed):
            if not any(p.game_id == game for p in report.problems):
                report.notes.append(
                    f"game {game}: its read rows or snapshots changed since the last run and "
                    "agree with its events (the projection caught up, or snapshots were "
                    "written or dropped)"
                )
    if not coverage.first_run:
        lap = coverage.lap("replays", lap)
    if report.ok:
        save_state(state_dir, digests.state(new), new.to_json())
        coverage.state_written = True
    coverage.seconds = time.perf_counter() - started
    # A store-wide finding (an unreadable stored checkpoint) is met by each game replayed.
    report.problems = list(dict.fromkeys(report.problems))
    report.notes = list(dict.fromkeys(report.notes))
    return report, coverage


def _since_scope():
    """The scan before the pass (:func:`replays.integrity.verify._masking`), with the
    events and seals too: no whole-store pass reads them here to check their kinds as it
    goes, so they are scanned as the other large tables are, in the database."""
    from replays.integrity.verify import _PASS_CHECKED, _Scope

    class SinceScope(_Scope):
        def tables(self):
            from replays.store.decoding import owned_tables

            fast = {table.name for table in super().tables()}
            return [t for t in owned_tables() if t.name in fast or t.name in _PASS_CHECKED]

        def cheap(self):
            return super().cheap() | _PASS_CHECKED

    return SinceScope(full=False)


def _to_replay(
    digests: StoreDigests, kept: VerifyState, size: int, report: Report
) -> tuple[set[str], set[str], set[str]]:
    """The games to replay in full; of them, those whose events before ``size`` changed
    (suspects) and those whose read rows or snapshots alone changed."""
    replay, suspects, rows_changed = set(), set(), set()
    now = digests.games()
    for game in sorted(set(kept.games) - now):
        report.add(
            DELETED,
            f"the game was verified on {kept.time} and is gone: its events, seals and read "
            "rows were removed",
            game,
        )
    for game in now:
        before = kept.games.get(game)
        if before is None or digests.last_position.get(game, -1) >= size:
            replay.add(game)
            continue
        if before.last_position >= size:
            replay.add(game)
            continue
        empty = hashlib.sha256(_DIGEST_FORMAT).digest()
        if digests.events.get(game, empty).hex() != before.events:
            replay.add(game)
            suspects.add(game)
        if (
            digests.rows.get(game, empty).hex() != before.rows
            or digests.snapshots.get(game, empty).hex() != before.snapshots
        ):
            replay.add(game)
            rows_changed.add(game)
    return replay, suspects, rows_changed - suspects


def _replay(url, games, checkpoints, public_key, progress, report, coverage, verify_game):
    """Every game of ``games`` replayed with every check. The clean case goes through the
    whole-store verify's batched steps (:func:`_replay_batched`); any game they find
    anything wrong with, or cannot take, is checked again on its own by ``verify_game``,
    whose findings alone are reported (as ``verify --jobs`` re-checks in the main pass)."""
    old, new = checkpoints
    scratch = Report()
    try:
        alone = _replay_batched(url, games, old, new, scratch, progress)
    except Exception as error:  # the game-by-game path decides
        report.notes.append(f"batched replay stopped ({error}); games checked one by one")
        alone = set(games)
    if any(p.game_id is None for p in scratch.problems):
        alone = set(games)
    alone |= {p.game_id for p in scratch.problems if p.game_id is not None}
    for game in games:
        if game not in alone:
            coverage.replayed.append(game)
    report.events += scratch.events
    report.sealed += scratch.sealed
    with progress_bar(len(alone), "since: rechecking", progress and bool(alone)) as bar:
        for game in sorted(alone):
            try:
                one = verify_game(url, game, checkpoints=checkpoints, public_key=public_key)
            except UnknownGame:
                report.problems.append(
                    Problem(
                        INSERTED,
                        "stored rows of an aggregate that no seal, chain head or game id "
                        "knows: inserted directly",
                        game,
                    )
                )
                bar.update(1)
                continue
            except (IntegrityError, ValueError, TypeError, sa.exc.DBAPIError) as error:
                # A stored value verify_game cannot take (the whole-store pass has named
                # it already, with its table and column).
                report.add(UNREADABLE, f"the game cannot be checked on its own: {error}", game)
                bar.update(1)
                continue
            report.problems += one.problems
            report.notes += [n for n in one.notes if "checked" not in n]
            report.events += one.events
            report.sealed += one.sealed
            coverage.replayed.append(game)
            bar.update(1)


_GAMES_A_QUERY = 200


def _replay_batched(url, games, old: Checkpoint, new: Checkpoint, report: Report, progress):
    """The games' events against their seals and chains, their leaves against the signed
    trees (with the stored subtrees the consistency proof and the node digest vouch for),
    their deals, snapshots and read rows, in batches as the whole-store verify does.
    Returns the games it leaves to ``verify_game`` (dispute cases, and games it cannot
    name)."""
    from domain import variants
    from replays.integrity.deal_checks import DealChecker
    from replays.integrity.replay_memos import memo_writer
    from replays.integrity.snapshot_checks import check_snapshots
    from replays.integrity.store import game_rows, game_seals, sealed_up_to
    from replays.integrity.verify import _compare_game
    from replays.readmodels import read_model_checks as checks

    game_topics = variants.topic_prefixes()
    alone: set[str] = set()
    by_game: dict[str, list[bytes]] = {}
    names: dict[bytes, str] = {}
    with engine(url).connect() as connection:
        read_snapshot(connection)
        heads: dict[bytes, int] = {}
        for chunk in _chunks(games, _GAMES_A_QUERY):
            rows = connection.execute(
                sa.select(
                    GameChainHead.originator_id, GameChainHead.game_id, GameChainHead.version
                ).where(GameChainHead.game_id.in_(chunk))
            )
            for originator, game, version in rows:
                by_game.setdefault(game, []).append(originator.bytes)
                names[originator.bytes] = game
                heads[originator.bytes] = version
        alone |= set(games) - set(by_game)
        # A game with dispute lines: verify_game checks them against its cases' events.
        if has_table(connection, "ledger_entries"):
            for chunk in _chunks(games, _GAMES_A_QUERY):
                query = sa.text(
                    "SELECT DISTINCT game_id FROM ledger_entries "
                    "WHERE dispute_id IS NOT NULL AND game_id IN :games"
                ).bindparams(sa.bindparam("games", expanding=True))
                alone |= {g for (g,) in connection.execute(query, {"games": list(chunk)})}
        by_game = {g: o for g, o in by_game.items() if g not in alone}
        tree_head = stored_head(connection)
        seal_top = sealed_up_to(connection)
        leaves: dict[int, bytes] = {}
        checker = DealChecker(report)
        fed: list[bytes] = []
        with progress_bar(len(by_game), "since: replaying", progress) as bar:
            for game, originators in sorted(by_game.items()):
                rows = game_rows(connection, originators)
                seals = game_seals(connection, originators)
                if any(not row.topic.startswith(game_topics) for row in rows):
                    alone.add(game)  # a dispute case: its lines are verify_game's
                    bar.update(1)
                    continue
                found = len(report.problems)
                versions = [heads[o] for o in originators]
                leaves.update(
                    _compare_game(game, rows, seals, versions, seal_top, report, tree_head)
                )
                if len(report.problems) == found:
                    for row in rows:
                        checker.feed(row, game)
                    fed += originators
                bar.update(1)
        checker.finish()
        tree = StoredTree(connection)
        for checkpoint in (old, new):
            known = {p: leaf for p, leaf in leaves.items() if p < checkpoint.size}
            if not known:
                continue
            tree.prefetch(merkle.needed_subtrees(checkpoint.size, sorted(known)))
            if merkle.root_from_known(checkpoint.size, known, tree.subtree) != checkpoint.root:
                report.add(
                    CHECKPOINT,
                    f"the replayed games' events do not give the checkpoint of "
                    f"{checkpoint.size} events",
                )
        if not checks.has_read_models(connection):
            report.notes.append("no read-model tables: read models not checked")
            return alone
        troubled = {o for o in names if names[o] in {p.game_id for p in report.problems}}
        tally = checks.SnapshotTally()
        ledger = checks.ledger_for(url)
        only = [o for o in fed if o not in troubled]
        memos = memo_writer(url, deals=True)
        for chunk in _chunks(only, _GAMES_A_QUERY):
            checks.replay_games(
                connection,
                ledger,
                report,
                names=names,
                skip=frozenset(),
                position=checks.projection_position(connection),
                events=EVENTS_TABLE,
                snapshots=tally,
                only=list(chunk),
                memos=memos,
            )
        rest = [o for o in only if o not in tally.done]
        if rest:
            check_snapshots(connection, url, report, names, originators=rest)
    return alone


def _chunks(items, size: int):
    items = list(items)
    for start in range(0, len(items), size):
        yield items[start : start + size]
