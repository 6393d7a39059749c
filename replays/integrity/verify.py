"""Verification: everything recomputed from the stored events and compared with the seals,
the stored tree, the checkpoints, and (for seeded games) the committed shuffles.

:func:`verify_store` is one streaming pass in notification order over the events and the
seals side by side; memory grows with the number of games (a chain value each), never
with the number of events. :func:`verify_game` does the same for one game and proves its
events against a checkpoint through the stored tree, in ``O(log n)`` lookups per event.

Every finding is a :class:`Problem` naming the game (the record's game id) and the event
number (the aggregate version: 1 is the game's first event).
"""

from __future__ import annotations

import hashlib
import uuid
from bisect import bisect_right
from collections.abc import Iterable
from contextlib import contextmanager
from dataclasses import replace
from functools import lru_cache
from typing import Any

import sqlalchemy as sa
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from replays.integrity import locate as locating
from replays.integrity import merkle
from replays.integrity.append import Head, stored_head
from replays.integrity.canonical import CHAIN_PREFIX, GENESIS, LEAF_PREFIX, chain_hash
from replays.integrity.models import NODE_MIN_LEVEL, CheckpointRow, GameChainHead
from replays.integrity.report import (  # noqa: F401 (the kinds are verify's vocabulary too)
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
)
from replays.integrity.signing import (
    PUBLIC_KEY_FILE,
    Checkpoint,
    SigningError,
    key_dir,
    load_public_key,
)
from replays.integrity.store import (
    NODES,
    SEALS,
    IntegrityError,
    Pages,
    SealRow,
    StoredRow,
    StoredTree,
    UnknownGame,
    _new_row,
    count_events,
    engine,
    event_pages,
    event_stream,
    game_id_from_state,
    game_rows,
    game_seals,
    has_table,
    id_param,
    progress_bar,
    raw_id,
    read_snapshot,
    require_tables,
    seal_head,
    seal_pages,
    seal_stream,
    sealed_up_to,
)
from replays.store.collector import bulk_work, frozen_heap
from replays.store.decoding import (
    CorruptValue,
    UnknownTopic,
    find_corrupt,
    known_topics,
    shorten,
)
from replays.store.schema import EVENTS_TABLE, SNAPSHOTS_TABLE
from replays.store.settings import database_url

# Core columns (as replays.integrity.store's SEALS and NODES): no ORM compilation.
HEADS = GameChainHead.__table__.c


def default_public_key() -> Ed25519PublicKey | None:
    """The key directory's public key, or None; read once per file version (pages ask
    for it on every view)."""
    path = key_dir() / PUBLIC_KEY_FILE
    try:
        stamp = path.stat().st_mtime_ns
    except OSError:
        return None
    return _public_key_at(str(path), stamp)


@lru_cache(maxsize=8)
def _public_key_at(path: str, _stamp: int) -> Ed25519PublicKey | None:
    try:
        return load_public_key(path)
    except SigningError:
        return None


def checkpoint_of(row: Any) -> Checkpoint:
    """A stored checkpoint as signed; :class:`CorruptValue` when its root or signature is
    not hex digits (no checkpoint the ledger signs holds such a value)."""
    return Checkpoint(row.size, _hex(row, "root"), row.time, row.key_id, _hex(row, "signature"))


def _hex(row: Any, column: str) -> bytes:
    value = getattr(row, column)
    try:
        return bytes.fromhex(value)
    except (TypeError, ValueError):
        raise CorruptValue(
            CheckpointRow.__tablename__, column, value, "not hex digits", {"id": row.id}
        ) from None


def _readable(rows: Iterable[Any], report: Report | None) -> Iterable[Checkpoint]:
    """The checkpoints of ``rows``; with ``report``, one that cannot be read is a finding
    and is left out (it vouches for nothing: as a checkpoint that fails), without it, an
    error."""
    for row in rows:
        try:
            yield checkpoint_of(row)
        except CorruptValue as finding:
            if report is None:
                raise
            report.add(UNREADABLE, f"{finding}: the checkpoint is not checked")


def stored_checkpoints(connection: sa.Connection, report: Report | None = None) -> list[Checkpoint]:
    rows = connection.execute(
        sa.select(CheckpointRow.__table__).order_by(CheckpointRow.__table__.c.id)
    )
    return list(_readable(rows, report))


def latest_stored(connection: sa.Connection, report: Report | None = None) -> Checkpoint | None:
    """The checkpoint stored last; with ``report``, the last one that can be read (each
    later one is a finding)."""
    table = CheckpointRow.__table__
    if report is None:
        row = connection.execute(sa.select(table).order_by(table.c.id.desc()).limit(1)).first()
        return None if row is None else checkpoint_of(row)
    rows = connection.execute(sa.select(table).order_by(table.c.id.desc()))
    return next(iter(_readable(rows, report)), None)


def signed_checkpoints(
    checkpoints: Iterable[Checkpoint], public_key: Ed25519PublicKey | None, report: Report
) -> list[Checkpoint]:
    """Checkpoints whose signatures hold (all of them, with a note, when no key is known)."""
    good, seen = [], set()
    for checkpoint in checkpoints:
        key = (checkpoint.size, checkpoint.root, checkpoint.signature)
        if key in seen:
            continue
        seen.add(key)
        reason = None if public_key is None else checkpoint.verify(public_key)
        if reason:
            report.add(
                CHECKPOINT, f"checkpoint of {checkpoint.size} events ({checkpoint.time}): {reason}"
            )
            continue
        if checkpoint.blocks is not None and checkpoint.blocks.root(checkpoint.size) != (
            checkpoint.root
        ):
            report.add(
                CHECKPOINT,
                f"checkpoint of {checkpoint.size} events ({checkpoint.time}): its file's block "
                "hashes do not give its signed root: they were altered (the signed tree head "
                "itself is still checked, without them)",
            )
            checkpoint = replace(checkpoint, blocks=None)
        good.append(checkpoint)
    if public_key is None and seen:
        report.notes.append("no public key: checkpoint signatures were not checked")
    return good


_snapshot = read_snapshot


_UNSEALED_IN_SAVE = (
    "is not sealed, although every save seals its events in the transaction that stores "
    "them: it was inserted directly"
)


def _missing_head(sealed: int) -> str:
    return (
        f"the tree head (integrity_head) is missing although {sealed} events are sealed: "
        "either the store predates sealing in the save (run `rummy-ledger seal` once) or "
        "the row was deleted"
    )


# -- values of the wrong kind ------------------------------------------------------------------
# Read in full by the pass, which checks their kinds as it goes (replays.integrity.store):
# a second scan of them would cost verify a tenth of its time.
_PASS_CHECKED = frozenset({EVENTS_TABLE, "integrity_seals"})
# Large tables scanned only for the kind SQLite keeps (typeof) before the pass; a value of
# the right kind that a type still cannot read stops the pass, and the full scan finds it.
_LARGE = frozenset({"moves", "games", "player_results", "ledger_entries", "integrity_nodes"})
_READ_MODEL_TABLES = frozenset({"moves", "games", "player_results", "ledger_entries"})
_ROW_KEYS = frozenset({"game_id", "dispute_id", "kind", "line", "player", "move_index"})


# Read-model tables whose every game id the read-model step reads as text at its end
# (replays.readmodels.read_model_checks.games_with_rows: a DISTINCT of the column).
_GAME_IDS_READ = ("moves", "games", "player_results")


class _Scope:
    """Which tables the scan before the pass covers (``full``: every one, every check).
    ``events``: the events table of a whole-store pass whose read-model step runs (None
    when it does not), which reads some columns in full (:meth:`decoded_later`)."""

    def __init__(
        self,
        full: bool,
        read_models: bool = True,
        snapshots: bool = True,
        events: str | None = None,
    ) -> None:
        self.full, self.read_models, self.snapshots = full, read_models, snapshots
        self.events = events if read_models and not full else None

    def tables(self) -> list[sa.Table]:
        from replays.store.decoding import owned_tables

        if self.full:
            return owned_tables()
        skipped = set(_PASS_CHECKED)
        if not self.read_models:
            skipped |= _READ_MODEL_TABLES
        if not self.snapshots:
            skipped.add(SNAPSHOTS_TABLE)
        return [table for table in owned_tables() if table.name not in skipped]

    def cheap(self) -> frozenset[str]:
        return frozenset() if self.full else _LARGE | {SNAPSHOTS_TABLE}

    def only(self) -> dict[str, set[str]] | None:
        """The read-model step compares every other value of its tables with what the
        events say (a wrong one is named with its table, column and stored value) and
        reads them through their types (one that cannot be read reruns the pass); what it
        finds rows by is checked first, or a row keyed by a wrong value would go unseen."""
        if self.full:
            return None
        from replays.store.decoding import owned_tables

        return {
            table.name: {c.name for c in table.primary_key.columns}
            | (set(table.c.keys()) & _ROW_KEYS)
            for table in owned_tables()
            if table.name in _READ_MODEL_TABLES
        }

    def decoded_later(self, connection: sa.Connection) -> dict[str, set[str]] | None:
        """The columns whose UTF-8 test the scan leaves to the read-model step: the game
        ids of :data:`_GAME_IDS_READ`, every one of which the step reads as text (on
        SQLite, a read that fails on text that is not UTF-8, and the careful pass then
        finds and names it as the scan would have). None where the step will not run
        (no events table, no read-model tables)."""
        if self.events is None or connection.dialect.name != "sqlite":
            return None
        if not has_table(connection, self.events) or not _has_read_models(connection):
            return None
        return {name: {"game_id"} for name in _GAME_IDS_READ}


def _quarantine(connection: sa.Connection, report: Report, game_id: str | None = None, scope=None):
    """Every value of the wrong kind in the store (one game's rows, with ``game_id``) is a
    finding (:func:`replays.store.decoding.find_corrupt`, conditions the database evaluates),
    and the rows holding one are hidden from this connection for the rest of the pass
    (:meth:`~replays.store.decoding.Corruption.mask`): every other check goes on over the
    rest. ``scope`` (:class:`_Scope`): the fast scan by default."""
    scope = scope or _Scope(full=False)
    where = None
    if game_id is not None:
        where = _game_rows_where(connection, game_id)
    corruption = find_corrupt(
        connection,
        scope.tables(),
        where=where,
        cheap=scope.cheap(),
        only=scope.only(),
        decoded_later=None if game_id is not None else scope.decoded_later(connection),
    )
    if not corruption:
        return corruption
    corruption.mask(connection)
    names = _chain_names(connection)  # read through the mask: no row holding a bad value
    for finding in corruption.findings:
        game = finding.game_id
        originator = finding.key.get("originator_id")
        if game is None and isinstance(originator, str):
            game = names.get(originator)
        event = finding.key.get("originator_version")
        event = event if type(event) is int else None
        if isinstance(finding, UnknownTopic):
            finding.relocate(game, event)
            message = f"{finding.table}: unknown topic {finding.value}" if game else str(finding)
        else:
            message = str(finding)
        report.add(UNREADABLE, message, game, event)
    return corruption


@contextmanager
def _masking(
    connection: sa.Connection,
    report: Report,
    game_id: str | None = None,
    scope=None,
    before_scan=None,
):
    """The read snapshot, the tables required, and :func:`_quarantine` for the pass.
    ``before_scan``: called with the connection once the snapshot is taken, before the
    scan (``verify --jobs`` starts its workers there)."""
    _snapshot(connection)
    require_tables(connection)
    if before_scan is not None:
        before_scan(connection)
    corruption = _quarantine(connection, report, game_id, scope)
    try:
        yield corruption
    finally:
        corruption.unmask(connection)


def _chain_names(connection: sa.Connection) -> dict[str, str]:
    """Game ids by aggregate id (32 hex digits), read raw: a malformed one is left out."""
    names = {}
    for originator, game in connection.execute(
        sa.text("SELECT originator_id, game_id FROM integrity_games")
    ):
        try:
            names[raw_id(originator).hex()] = game
        except (TypeError, ValueError):
            continue
    return names


def _game_rows_where(connection: sa.Connection, game_id: str) -> dict:
    """Per owned table, the SQL condition selecting one game's rows (tables of the whole
    store, the tree's, entirely; tables of no game, not at all)."""
    from replays.store.decoding import owned_tables

    originators = list(game_heads(connection, game_id))
    marks = ", ".join(f":o{index}" for index in range(len(originators)))
    where = {}
    for table in owned_tables():
        if table.name in ("integrity_head", "integrity_nodes", "integrity_checkpoints"):
            where[table.name] = ("", {})
        elif table.name in (EVENTS_TABLE, SNAPSHOTS_TABLE):
            where[table.name] = (
                f"originator_id IN ({marks})",
                {f"o{i}": id_param(connection, o) for i, o in enumerate(originators)},
            )
        elif "game_id" in table.c:
            where[table.name] = ("game_id = :game", {"game": game_id})
    return where


def _stopped(report: Report, error: BaseException) -> None:
    """What the full scan's pass could still not read: a finding, never a traceback."""
    report.add(
        UNREADABLE,
        f"verification stopped early on a stored value it cannot read: "
        f"{type(error).__name__}: {shorten(str(error), 120)}",
    )


def _resilient(run, read_models: bool = True, snapshots: bool = True, events: str | None = None):
    """Run ``run(scope)`` with the fast scan; if a stored value stops it, run it again with
    every table scanned and every malformed row hidden (:func:`_quarantine`), and if even
    that stops, report how far it got. Missing tables and unknown games stay errors.
    ``events``: a whole-store pass's events table, when its read-model step runs."""
    try:
        return run(_Scope(False, read_models, snapshots, events), None)
    except IntegrityError:
        raise
    except Exception:  # a stored value the fast path could not read: the careful pass
        return run(_Scope(full=True), _stopped)


# -- the whole store -------------------------------------------------------------------------
def verify_store(
    url: str | None = None,
    *,
    game_id: str | None = None,
    checkpoints: Iterable[Checkpoint] = (),
    public_key: Ed25519PublicKey | None = None,
    progress: bool = False,
    events: str = EVENTS_TABLE,
    check_deals: bool = True,
    check_snapshots: bool = True,
    check_read_models: bool = True,
    jobs: int = 1,
) -> Report:
    """Recompute leaves, chains and the tree from the stored events; compare them with all
    seals, stored tree nodes, stored checkpoints and the ``checkpoints`` given; check
    seeded deals against their shuffles, stored snapshots and the read models against
    their events. ``jobs`` > 1 replays the games for the read models (and snapshots) in
    that many processes (:mod:`replays.readmodels.verify_jobs`)."""
    if game_id is not None:
        return verify_game(
            url,
            game_id,
            checkpoints=checkpoints,
            public_key=public_key,
            events=events,
            check_deals=check_deals,
            check_snapshots=check_snapshots,
            check_read_models=check_read_models,
        )
    public_key = public_key or default_public_key()

    def run(scope: _Scope, stopped) -> Report:
        report = Report()
        early = _EarlyReplays(url, jobs, events, check_deals, check_snapshots)
        wanted = check_read_models and jobs > 1 and not scope.full
        try:
            with (
                engine(url).connect() as connection,
                _masking(
                    connection, report, None, scope, early.start if wanted else None
                ) as corruption,
            ):
                if corruption:
                    early.close()  # their connections see no mask: one process replays
                try:
                    _verify_store(
                        connection,
                        url,
                        report,
                        corruption,
                        checkpoints,
                        public_key,
                        progress,
                        events,
                        check_deals,
                        check_snapshots,
                        check_read_models,
                        # Forked workers read through their own connections, which see
                        # no mask.
                        1 if corruption or scope.full else jobs,
                        None if corruption else early,
                    )
                except Exception as error:
                    if stopped is None or isinstance(error, sa.exc.DBAPIError):
                        raise
                    stopped(report, error)
        finally:
            early.close()
        return report

    with bulk_work(), frozen_heap():
        return _resilient(run, check_read_models, check_snapshots, events)


def _verify_store(
    connection,
    url,
    report,
    corruption,
    checkpoints,
    public_key,
    progress,
    events,
    check_deals,
    check_snapshots,
    check_read_models,
    jobs,
    early=None,
) -> None:
    # The files given first: a kept file may carry block hashes its stored copy lacks.
    wanted = signed_checkpoints(
        [*checkpoints, *stored_checkpoints(connection, report)], public_key, report
    )
    has_events = has_table(connection, events)
    total = count_events(connection, events) if has_events and progress else None
    checker = _deal_checker(report) if check_deals and has_events else None
    deferred = None
    if checker is not None and check_read_models and _has_read_models(connection):
        # The read-model replay decodes and applies every event: the deals are checked
        # as it passes them (replays.integrity.deal_checks.DeferredDeals), in the
        # workers with ``jobs`` > 1 (WorkerDeals).
        from replays.integrity.deal_checks import DeferredDeals

        deferred = DeferredDeals(checker, events)
    names = early.names if early is not None and early.started else None
    store_pass = _StorePass(connection, report, wanted, deferred or checker, names)
    started = None
    if check_read_models and has_events and jobs > 1:
        # The workers start and replay while this process reads the events: started
        # before the scan for malformed values found none (``early``), or now.
        started = early.take() if early is not None and early.started else None
        if started is None:
            started = _start_replays(
                connection, url, jobs, store_pass.names, events, check_snapshots, checker
            )
    # Every topic the pass reads: the read-model step skips a variant none of them is.
    topics: set | None = set() if jobs == 1 else None
    try:
        pages = event_pages(connection, events, topics=topics) if has_events else iter(())
        with progress_bar(total, "verifying", progress) as bar:
            seals = seal_stream(store_pass.labelled(seal_pages(connection)))
            store_pass.run(seals, event_stream(pages), bar)
        store_pass.finish()
        if deferred is not None:
            deferred.pass_done()
        elif checker is not None:
            checker.finish()
    except BaseException:
        if started is not None:
            started.close()
        raise
    try:
        # A located edit's game is still replayed: its read rows are what names the event.
        troubled = {p.game_id for p in report.problems if p.kind not in _LOCATING}
        skip = frozenset(o for o, g in store_pass.names.items() if g in troubled)
        names = store_pass.names
        tally = None
        if check_read_models and has_events:
            # The read-model step replays every game it reaches: the snapshots it passes
            # are compared on the way, and the snapshot step checks only the rest.
            tally = _snapshot_tally() if check_snapshots else None
            read_models(
                connection,
                url,
                report,
                names,
                skip=skip,
                progress=progress,
                tally=tally,
                jobs=jobs,
                remember_deals=checker is not None,
                started=started,
                deals=deferred,
                topics=topics,
            )
        if deferred is not None:
            deferred.finish(connection)
        if check_snapshots and has_events:
            done = skip if tally is None else skip | tally.done
            snapshotted = None if started is None else started.snapshotted
            if snapshotted is not None:
                # Read while the workers replayed: only the games no replay compared are read.
                originators = [o for o in snapshotted if o not in done]
                _snapshots(connection, url, report, names, originators=originators, already=tally)
            else:
                _snapshots(
                    connection, url, report, names, skip=done, progress=progress, already=tally
                )
        locating.name_events(report, store_pass.located)
    finally:
        if started is not None:
            # Waited for last: once every result is in, the workers exit while this
            # process finishes.
            started.close()


# Findings about the tree as a whole, which do not make a game's own rows suspect.
_LOCATING = (RESEALED, CHECKPOINT, TREE)


def read_models(
    connection: sa.Connection,
    url: str | None,
    report: Report,
    names: dict[bytes, str],
    *,
    skip: frozenset[bytes] = frozenset(),
    progress: bool = False,
    events: str = EVENTS_TABLE,
    tally=None,
    jobs: int = 1,
    remember_deals: bool | None = None,
    started=None,
    deals=None,
    topics: set | None = None,
) -> None:
    """The read-model step: every game's rows against its events (replays.readmodels.read_model_checks);
    with ``tally`` (a ``SnapshotTally``), the stored snapshots each replay passes too.
    Unless ``remember_deals`` is None (it says whether the deals were checked), each
    clean replay is remembered for the game's badge (:mod:`replays.integrity.replay_memos`).
    ``started``: the replays already submitted to ``jobs`` processes (:func:`_start_replays`).
    ``deals``: the deal check to do inside the replay (a ``DeferredDeals``). ``topics``:
    every topic value in ``events`` (read in this view by the store pass), when known."""
    from replays.integrity.replay_memos import memo_writer
    from replays.readmodels import read_model_checks as checks

    if not checks.has_read_models(connection):
        report.notes.append("no read-model tables: read models not checked")
        return
    total = count_events(connection, events) if progress else None
    with progress_bar(total, "read models", progress) as bar:
        if jobs > 1:
            from replays.readmodels import verify_jobs

            checked = verify_jobs.check_read_models(
                connection,
                database_url(url),
                report,
                jobs,
                names=names,
                skip=skip,
                events=events,
                bar=bar,
                snapshots=tally,
                remember_deals=remember_deals,
                started=started,
                deals=deals,
            )
        else:
            memos = None if remember_deals is None else memo_writer(url, deals=remember_deals)
            checked = checks.check_read_models(
                connection,
                checks.ledger_for(url),
                report,
                names=names,
                skip=skip,
                events=events,
                bar=bar,
                snapshots=tally,
                memos=memos,
                deals=deals,
                topics=topics,
            )
    report.notes.append(f"{checked} game(s)' read rows checked against their events")


def verify_read_models(
    url: str | None = None,
    *,
    game_id: str | None = None,
    progress: bool = False,
    events: str = EVENTS_TABLE,
) -> Report:
    """Only the read models against the events (``rummy-ledger verify --read-models``)."""

    def run(scope: _Scope, stopped) -> Report:
        report = Report()
        with engine(url).connect() as connection, _masking(connection, report, game_id, scope):
            try:
                _verify_read_models(connection, url, report, game_id, progress, events)
            except UnknownGame:
                raise
            except Exception as error:
                if stopped is None:
                    raise
                stopped(report, error)
        return report

    if game_id is not None:
        return _resilient(run, True, False)
    with bulk_work(), frozen_heap():
        return _resilient(run, True, False, events)


def _verify_read_models(connection, url, report, game_id, progress, events) -> None:
    from replays.readmodels import read_model_checks as checks

    names = {
        o.bytes: g for o, g in connection.execute(sa.select(HEADS.originator_id, HEADS.game_id))
    }
    if game_id is None:
        report.games = len(names)
        read_models(connection, url, report, names, progress=progress, events=events)
        return
    report.games = 1
    originators = list(game_heads(connection, game_id))
    if not _known(connection, game_id, originators, events):
        raise UnknownGame(f"no game {game_id} in the ledger")
    if not checks.has_read_models(connection):
        report.notes.append("no read-model tables: read models not checked")
        return
    checks.check_game_read_models(
        connection, checks.ledger_for(url), report, game_id, originators, events
    )


def _known(connection: sa.Connection, game_id: str, originators, events: str) -> bool:
    """Whether the ledger has the game: events, or at least read rows under its id."""
    if has_table(connection, events) and game_rows(connection, originators, events):
        return True
    from replays.readmodels import read_model_checks as checks

    if not checks.has_read_models(connection):
        return False
    games = checks.GAMES
    found = connection.execute(sa.select(games.c.game_id).where(games.c.game_id == game_id))
    return found.first() is not None


def _snapshots(connection, url, report: Report, names, already=None, **kwargs) -> None:
    """The snapshot step, for the snapshots the read-model replay did not compare
    (``already``: what it did)."""
    from replays.integrity.snapshot_checks import check_snapshots

    checked = check_snapshots(connection, url, report, names, **kwargs)
    checked += already.checked if already is not None else 0
    if checked:
        report.notes.append(f"{checked} snapshot(s) checked against their events")


def _start_replays(connection, url, jobs: int, names, events: str, snapshots: bool, checker):
    """The read-model step's replays submitted to ``jobs`` processes, or None where there
    are no read-model tables (:func:`read_models` then says so). ``checker``: whether the
    deals are checked (not None)."""
    from replays.readmodels import read_model_checks as checks
    from replays.readmodels.verify_jobs import SpanReplays

    if not checks.has_read_models(connection):
        return None
    return SpanReplays(
        connection,
        database_url(url),
        jobs,
        names=names,
        events=events,
        snapshots=snapshots,
        remember_deals=checker is not None,
    )


class _EarlyReplays:
    """``verify --jobs``: the read-model step's workers started as soon as the main pass
    has its snapshot, before the scan for malformed values (a core's idle time while it
    runs, a few hundredths of a second at 1,000 games). Their replays are used only if the
    scan masks nothing (the workers' connections see no mask); otherwise, or if the pass
    stops, :meth:`close` stops them."""

    def __init__(self, url, jobs: int, events: str, check_deals: bool, snapshots: bool):
        self.url, self.jobs, self.events = url, jobs, events
        self.check_deals, self.snapshots = check_deals, snapshots
        self.names: dict[bytes, str] | None = None
        self.started = None  # what _start_replays gave: False for nothing started

    def start(self, connection: sa.Connection) -> None:
        """The games' names in the pass's snapshot (as :class:`_StorePass` reads them: on
        a store the scan masks nothing in, the same) and the replays submitted, where
        there are events and read-model tables to check."""
        self.started = False
        if not has_table(connection, self.events):
            return
        self.names = _chain_heads(connection)
        remember_deals = True if self.check_deals else None
        self.started = (
            _start_replays(
                connection,
                self.url,
                self.jobs,
                self.names,
                self.events,
                self.snapshots,
                remember_deals,
            )
            or False
        )

    def take(self):
        started, self.started = self.started, None
        return started

    def close(self) -> None:
        if self.started:
            self.started.close()
        self.started = None


def _has_read_models(connection: sa.Connection) -> bool:
    from replays.readmodels import read_model_checks as checks

    return checks.has_read_models(connection)


def _snapshot_tally():
    from replays.readmodels.read_model_checks import SnapshotTally

    return SnapshotTally()


def _deal_checker(report: Report):
    from replays.integrity.deal_checks import DealChecker

    return DealChecker(report)


def _chain_heads(connection: sa.Connection) -> dict[bytes, str]:
    """Game ids by aggregate id, from the chain heads."""
    return {
        o.bytes: g for o, g in connection.execute(sa.select(HEADS.originator_id, HEADS.game_id))
    }


class _StorePass:
    """The state of one verification pass: per-game chains, the tree, pending node checks."""

    def __init__(
        self,
        connection: sa.Connection,
        report: Report,
        checkpoints: list[Checkpoint],
        checker,
        names: dict[bytes, str] | None = None,
    ) -> None:
        self.connection, self.report, self.checker = connection, report, checker
        self.by_size: dict[int, list[Checkpoint]] = {}
        for checkpoint in checkpoints:
            self.by_size.setdefault(checkpoint.size, []).append(checkpoint)
        self.checkpoint_sizes = sorted(self.by_size)
        # Each known topic's part of an event's canonical bytes (its length, then its
        # UTF-8 bytes), for :meth:`usual`'s leaves: one look-up instead of three steps.
        self.topic_fields = {
            topic: len(encoded).to_bytes(4, "big") + encoded
            for topic in known_topics()
            for encoded in (topic.encode("utf-8"),)
        }
        self.seal_head = seal_head(connection)[1]
        self.builder = merkle.TreeBuilder()
        self.chains: dict[bytes, tuple[int, bytes]] = {}
        # Game ids from the chain heads, so a row forged ahead of a game's seals is still
        # named by the game's id (``names``: already read in this snapshot).
        self.names: dict[bytes, str] = _chain_heads(connection) if names is None else names
        self.pending_nodes: list[tuple[int, int, bytes]] = []
        self.last_nid: int | None = None
        self.head: Head | None = stored_head(connection)
        self.head_checked = False
        self.held: set[int] = set()  # checkpoint sizes whose roots the tree still gives
        self.failed: list[Checkpoint] = []
        # Where the tree the events give differs from what is stored (for locating an
        # edit): recomputed leaves that differ from their seals, recomputed subtrees of
        # 16+ events that differ from the stored nodes. Only differences are kept.
        self.leaf_differs: dict[int, bytes] = {}
        self.node_differs: dict[tuple[int, int], bytes] = {}
        self.head_differs = False
        self.located: list[locating.Block] = []
        # Per game: its first event's state (what owns its rows: the record's game id, not
        # a label an insider can edit) and, per page of seals, the game ids its seals are
        # labelled with and its last seal's position (:meth:`labelled`), compared with the
        # chain heads once per game at the end (:meth:`check_heads`).
        self.firsts: dict[bytes, bytes] = {}
        self.owners: dict[bytes, str] = {}
        self.labels: set[tuple[Any, Any]] = set()
        self.last_positions: dict[Any, Any] = {}

    def labelled(self, pages: Iterable[list[Any]]) -> Iterable[list[Any]]:
        """The seal pages, noting on each (C loops over its columns, no call per seal) the
        (aggregate id, game id) pairs its seals hold and each aggregate's last position."""
        labels, last_positions = self.labels, self.last_positions
        for page in pages:
            if page:
                try:
                    positions, _, originators, _, games, _, _ = zip(*page, strict=True)
                    labels.update(zip(originators, games, strict=True))
                    last_positions.update(zip(originators, positions, strict=True))
                except (TypeError, ValueError):
                    pass  # a value that cannot be a key: the pass names it
            yield page

    def owner(self, originator: bytes, label: str | None = None) -> str | None:
        """The game that owns an aggregate's rows, as the save named it: the record's game
        id in its first event (unaltered), or the aggregate id where it records none; else
        its chain head's game id (``label``, a seal's, when neither is known)."""
        found = self.owners.get(originator)
        if found is None and originator in self.firsts:
            found = game_id_from_state(self.firsts[originator]) or uuid_text(originator)
            self.owners[originator] = found
        return found or self.names.get(originator) or label

    def name(self, row: StoredRow) -> str:
        known = self.names.get(row.originator)
        if known is not None:
            return known
        found = game_id_from_state(row.state) if row.version == 1 else None
        return found or str(row.originator_id)

    def run(self, seals: Pages, rows: Pages, bar) -> None:
        # The bar is told every few hundred events: a call per event costs the pass more
        # than the bar shows.
        sealed, unsealed, usual, shown = self.sealed, self.unsealed, self.usual, 0
        while True:
            # Most events: runs of them taken at once, straight from the pages (:meth:`usual`);
            # one it does not take goes through the general path below, converted as
            # the plain readers convert it (a seal first, as they read the two).
            taken = usual(seals, rows, _SHOWN_EVERY - shown)
            if taken:
                shown += taken
                if shown == _SHOWN_EVERY:
                    bar.update(shown)
                    shown = 0
                continue
            seal, row = seals.current(), rows.current()
            if row is not None and (seal is None or row.notification_id < seal.notification_id):
                unsealed(row)
                rows.at += 1
                shown += 1
            elif row is not None and row.notification_id == seal.notification_id:
                sealed(seal, row)
                seals.at += 1
                rows.at += 1
                shown += 1
            elif seal is not None:
                sealed(seal, None)
                seals.at += 1
            else:
                break
            if shown == _SHOWN_EVERY:
                bar.update(shown)
                shown = 0
        bar.update(shown)

    def usual(self, seals: Pages, rows: Pages, limit: int) -> int:
        """Take the usual events at the reading positions of ``seals`` and ``rows`` on (at
        most ``limit``, the events until the progress bar is told next), as :meth:`sealed`
        takes them, and return how many it took; the positions are left at the first pair
        it does not take. Usual: the row is its seal's event, unaltered and readable (its
        page holds only values of the ledger's own types: :class:`Pages`); its seal
        follows the one before in position, notification order and its game's chain, and
        lies within the tree head; the tree's size after it is no checkpoint's and not the
        head's (those sizes are checked by :meth:`sealed`). Nothing is found about such an
        event, so what :meth:`sealed` does with it comes down to counting it, feeding the
        deal check, carrying its game's chain and appending its leaf.

        The raw rows are read in place: no row object but the one the deal check is fed,
        and the leaf and chain hashed here as :func:`canonical.event_leaf` and
        :func:`chain_hash` hash them (a test holds the two to the same values).

        The leaves are appended a run at a time (:meth:`merkle.TreeBuilder.extend`: no
        call per node), each run ending at the first leaf that completes a stored node
        (every 16th), so the stored nodes are read back (:meth:`check_nodes`) after the
        same leaf as when appended one by one: a finding there takes the same place in the
        report, between the deal check's."""
        report, builder, chains, feed = self.report, self.builder, self.chains, None
        if self.checker is not None:
            feed = self.checker.feed
        # The first tree size :meth:`sealed` must check (a checkpoint's or the head's): the
        # run stops before the event that reaches it, or at once past the head.
        size = builder.size
        stop = size + limit + 1  # never reached: ``limit`` ends the run first
        if self.head is not None and self.head.size < stop:
            stop = self.head.size
        sizes = self.checkpoint_sizes
        later = bisect_right(sizes, size)
        if later < len(sizes) and sizes[later] < stop:
            stop = sizes[later]
        pending, fields, sha256 = self.pending_nodes, self.topic_fields, hashlib.sha256
        # Before the first seal, any id above -1 follows; a lower one is left to
        # :meth:`sealed` (leaving a pair to it is always safe).
        last_nid = self.last_nid if self.last_nid is not None else -1
        taken, games = 0, 0
        leaves: list[bytes] = []
        step = (1 << NODE_MIN_LEVEL) - 1  # a leaf at a position p with p & step == step
        seal_page, seal_at, seal_ids = seals.page, seals.at, seals.ids
        row_page, row_at, row_ids = rows.page, rows.at, rows.ids
        seal_end, row_end = len(seal_page), len(row_page)
        try:
            while taken < limit:
                if seal_at == seal_end:
                    turned = seals.advance(seal_at)
                    if turned is None:
                        break
                    seal_page, seal_at, seal_ids, seal_end = turned
                if row_at == row_end:
                    turned = rows.advance(row_at)
                    if turned is None:
                        break
                    row_page, row_at, row_ids, row_end = turned
                if seal_ids is None or row_ids is None:
                    break  # a page with an odd value: read row by row
                position, notification_id, _, version, name, sealed_leaf, chain = seal_page[seal_at]
                row_id, _, row_version, topic, state = row_page[row_at]
                originator = row_ids[row_at]
                if (
                    row_id != notification_id
                    or position != size
                    or notification_id <= last_nid
                    or size + 1 >= stop
                    or row_version != version
                    or originator != seal_ids[seal_at]
                ):
                    break
                previous_version, previous_chain = chains.get(originator, _NO_CHAIN)
                if version != previous_version + 1 or version < 0:
                    break
                # canonical.event_leaf for a 16-byte id and a version of 0 and up, and
                # canonical.chain_hash below, without a call each (a test holds them equal).
                leaf = sha256(
                    b"".join(
                        (
                            LEAF_PREFIX,
                            originator,
                            version.to_bytes(8, "big"),
                            fields[topic],
                            len(state).to_bytes(4, "big"),
                            state,
                        )
                    )
                ).digest()
                if (
                    leaf != sealed_leaf
                    or sha256(CHAIN_PREFIX + previous_chain + sealed_leaf).digest() != chain
                ):
                    break
                # Counted and noted before the deal check is fed, as :meth:`sealed` does.
                taken += 1
                last_nid = notification_id
                if feed is not None:
                    feed(
                        _new_row(StoredRow, (row_id, originator, version, topic, state, None)), name
                    )
                if previous_version == 0:
                    games += 1
                    self.firsts[originator] = state
                chains[originator] = (version, chain)
                leaves.append(leaf)
                size += 1
                seal_at += 1
                row_at += 1
                if position & step == step:
                    pending += builder.extend(leaves, NODE_MIN_LEVEL)
                    leaves.clear()
                    if len(pending) >= _NODES_READ_AT:
                        self.check_nodes()
                        pending = self.pending_nodes
        finally:
            seals.at, rows.at = seal_at, row_at
            if leaves:
                pending += builder.extend(leaves, NODE_MIN_LEVEL)
            if taken:
                self.last_nid = last_nid
            report.sealed += taken
            report.events += taken
            report.games += games
        return taken

    def unsealed(self, row: StoredRow) -> None:
        self.report.events += 1
        if row.defect is not None:
            self.report.add(UNREADABLE, _defect(row), self.name(row), row.version)
        if self.checker is not None:
            self.checker.skip(row.originator)
        where = f"stored row {row.notification_id} ({row.topic})"
        if self.head is not None:
            self.report.add(INSERTED, f"{where} {_UNSEALED_IN_SAVE}", self.name(row), row.version)
        elif row.notification_id < self.seal_head:
            message = f"{where} was never sealed although later rows were: inserted directly"
            self.report.add(INSERTED, message, self.name(row), row.version)
        else:
            message = (
                f"{where} is not sealed: written without sealing or inserted directly "
                "(`rummy-ledger seal` seals it if it is genuine)"
            )
            self.report.add(UNSEALED, message, self.name(row), row.version)

    def sealed(self, seal: SealRow, row: StoredRow | None) -> None:
        report, builder = self.report, self.builder
        report.sealed += 1
        position, notification_id, originator, version, name, sealed_leaf, sealed_chain = seal
        if (
            version == 1
            and row is not None
            and (row.originator, row.version, row.defect) == (originator, 1, None)
            and row.leaf == sealed_leaf  # an altered first event owns nothing
        ):
            self.firsts.setdefault(originator, row.state)
        # Findings name the game that owns the row, not the seal's label (checked at the end).
        name = self.owner(originator, name)
        if position != builder.size:
            report.add(
                TREE,
                f"seal positions jump from {builder.size} to {position}: seals were deleted",
                name,
                version,
            )
        if self.last_nid is not None and notification_id <= self.last_nid:
            report.add(TREE, "seals are out of notification order", name, version)
        self.last_nid = notification_id
        head = self.head
        if head is not None and position >= head.size:
            report.add(
                INSERTED,
                f"the seal at position {position} (stored row {notification_id}) "
                f"lies beyond the tree head's {head.size} events: no save wrote it, "
                "the seal was forged",
                name,
                version,
            )
        if (
            row is not None
            and row.defect is None
            and row.originator == originator
            and row.version == version
        ):
            # The usual event, unaltered (what _compare finds first), without the call.
            report.events += 1
            leaf = row.leaf
            if leaf == sealed_leaf:
                if self.checker is not None:
                    self.checker.feed(row, name)
            else:
                message = f"stored row {row.notification_id} ({row.topic}) does not match its seal"
                report.add(ALTERED, message + ": its bytes were changed", name, version)
                if self.checker is not None:
                    self.checker.skip(originator)
                self.leaf_differs[position] = leaf
        else:
            leaf = self._compare(seal, row)
            if leaf != sealed_leaf:
                self.leaf_differs[position] = leaf
        previous_version, previous_chain = self.chains.get(originator, _NO_CHAIN)
        if previous_version == 0:
            report.games += 1
        if version != previous_version + 1:
            report.add(
                DELETED,
                f"sealed history goes from event {previous_version} to {version}: "
                "events in between are missing",
                name,
                previous_version + 1,
            )
        chain = chain_hash(previous_chain, sealed_leaf)
        if chain != sealed_chain:
            report.add(CHAIN, _CHAIN_MESSAGE, name, version)
        # The recomputed value carries on, so one altered link is reported once.
        self.chains[originator] = (version, chain)
        completed = builder.append(leaf)
        if completed:
            pending = self.pending_nodes
            for node in completed:
                if node[0] >= NODE_MIN_LEVEL:
                    pending.append(node)
            if len(pending) >= _NODES_READ_AT:
                self.check_nodes()
        size = builder.size
        if size in self.by_size:
            for checkpoint in self.by_size[size]:
                self.check_root(checkpoint)
        if head is not None and size == head.size:
            self.check_head()

    def check_head(self) -> None:
        """The tree head the saves go on from must be the tree over the sealed events."""
        self.head_checked = True
        head, builder = self.head, self.builder
        if (head.frontier, head.root) != (builder.frontier, builder.root()):
            self.head_differs = True
            self.report.add(
                TREE,
                f"the tree head (integrity_head) over {head.size} events does not match the "
                "seals: it was changed outside the ledger",
            )
        elif head.notification_id != self.last_nid:
            self.report.add(
                TREE,
                f"the tree head ends at stored row {head.notification_id}, but its last seal "
                f"is for row {self.last_nid}: it was changed outside the ledger",
            )

    def _compare(self, seal: SealRow, row: StoredRow | None) -> bytes:
        """The leaf to build the tree with: recomputed from the event when there is one."""
        name, version = self.owner(seal.originator, seal.game_id), seal.version
        if row is None:
            message = f"stored row {seal.notification_id} is missing: the sealed event was deleted"
            self.report.add(DELETED, message, name, version)
            if self.checker is not None:
                self.checker.skip(seal.originator)
            return seal.leaf
        self.report.events += 1
        leaf = row.leaf
        if row.defect is not None:
            self.report.add(UNREADABLE, _defect(row), name, version)
        if (row.originator, row.version) != (seal.originator, version):
            self.report.add(
                ALTERED,
                f"stored row {row.notification_id} now claims to be event {row.version} of "
                f"{self.name(row)}: its identity was changed",
                name,
                version,
            )
        elif leaf != seal.leaf:
            message = f"stored row {row.notification_id} ({row.topic}) does not match its seal"
            self.report.add(ALTERED, message + ": its bytes were changed", name, version)
        elif self.checker is not None and row.defect is None:
            self.checker.feed(row, name)
            return leaf
        if self.checker is not None:
            self.checker.skip(seal.originator)
        return leaf

    def check_root(self, checkpoint: Checkpoint) -> None:
        self.report.checkpoints.append(checkpoint.size)
        if self.builder.root() == checkpoint.root:
            self.held.add(checkpoint.size)
        else:
            self.failed.append(checkpoint)

    def anchors(self) -> list[locating.Anchor]:
        """What still holds the tree as first written, where it differs from the events:
        the signed checkpoints that fail (with their files' blocks), and the tree head."""
        tree = StoredTree(self.connection)
        stored = locating.stored_witness(tree)
        found = [
            _checkpoint_anchor(checkpoint, stored)
            for checkpoint in self.failed
            if checkpoint.size <= self.builder.size
        ]
        head = self.head
        if self.head_differs and head.size <= self.builder.size and _head_holds(head):
            found.append(
                locating.Anchor(
                    "the tree head",
                    head.size,
                    head.root,
                    (locating.frontier_witness(head.size, head.frontier), stored),
                    signed=False,
                )
            )
        return found

    def locate_edits(self) -> None:
        """Bisect the events' tree against each anchor; report each block found once.
        A block holding an event already found altered against its seal says nothing new."""
        anchors = self.anchors()
        if not anchors:
            return
        tree = StoredTree(self.connection)
        view = locating.events_view(tree, self.node_differs, self.leaf_differs, self.builder.size)
        seen: set[tuple[int, int]] = set()
        for anchor in anchors:
            for block in locating.locate(anchor, view):
                span = (block.start, block.end)
                if span in seen or any(block.start <= p < block.end for p in self.leaf_differs):
                    continue
                seen.add(span)
                block = replace(block, games=tuple(_games_between(self.connection, *span)))
                self.located.append(block)
                self.report.add(RESEALED, locating.describe(block), locating.block_game(block))

    def report_failed_checkpoints(self) -> None:
        """Each checkpoint whose root the tree no longer gives, with where the rewrite lies:
        after the largest smaller checkpoint that still holds, before its own size (and,
        when the stored tree or the checkpoint's blocks could narrow it, the blocks found:
        reported as ``resealed``)."""
        for checkpoint in self.failed:
            start = max((size for size in self.held if size < checkpoint.size), default=0)
            games = _games_between(self.connection, start, checkpoint.size)
            where = ", ".join(f"{g} events {lo}-{hi}" for g, lo, hi in games[:10])
            if len(games) > 10:
                where += f" and {len(games) - 10} more games"
            inside = [b for b in self.located if start <= b.start and b.end <= checkpoint.size]
            if inside:
                where = "located at tree positions " + ", ".join(b.positions for b in inside)
            self.report.add(
                CHECKPOINT,
                f"the tree over the first {checkpoint.size} events does not match the "
                f"checkpoint signed {checkpoint.time}: history it covers was rewritten, at "
                f"tree positions {start}-{checkpoint.size - 1} (the checkpoints before it "
                f"still hold): {where or 'no sealed events there'}",
                games[0][0] if len(games) == 1 and not inside else None,
            )

    def check_nodes(self) -> None:
        nodes, self.pending_nodes = self.pending_nodes, []
        stored: dict[tuple[int, int], bytes] = {}
        # The nodes a run of leaves completes are, level by level, a run of indices: one
        # range read per level (a list of pairs costs SQLAlchemy more than the read).
        spans: dict[int, list[int]] = {}
        for level, index, _ in nodes:
            span = spans.get(level)
            if span is None:
                spans[level] = [index, index]
            else:
                span[0], span[1] = min(span[0], index), max(span[1], index)
        for level, (low, high) in spans.items():
            rows = self.connection.execute(
                _NODES_BETWEEN, {"level": level, "low": low, "high": high}
            )
            stored.update(((level, index), bytes(value)) for level, index, value in rows)
        for level, index, value in nodes:
            if stored.get((level, index)) != value:
                self.node_differs[(level, index)] = value
                first, last = index << level, ((index + 1) << level) - 1
                self.report.add(
                    TREE,
                    f"stored tree node (level {level}, index {index}) is missing or does not "
                    f"match the events at positions {first}-{last}",
                )

    def finish(self) -> None:
        self.check_nodes()
        self.locate_edits()
        self.report_failed_checkpoints()
        report, size = self.report, self.builder.size
        report.root = self.builder.root()
        if self.head is None and size:
            report.add(TREE, _missing_head(size))
        elif self.head is not None and not self.head_checked and self.head.size:
            report.add(
                TREE,
                f"the tree head counts {self.head.size} sealed events but only {size} seals "
                "are stored: seals at the end were deleted",
            )
        for covered, checkpoints in self.by_size.items():
            for checkpoint in checkpoints if covered > size else ():
                report.add(
                    CHECKPOINT,
                    f"the checkpoint signed {checkpoint.time} covers {covered} events, but "
                    f"only {size} are sealed: sealed events were removed",
                )
        tops = self.connection.execute(
            sa.select(NODES.level, sa.func.max(NODES.index)).group_by(NODES.level)
        )
        placeless_nodes(self.connection, report)
        for level, top in tops:
            if node_placed(level, top) and (top + 1) << level > size:
                report.add(
                    TREE,
                    f"stored tree node (level {level}, index {top}) lies beyond the {size} "
                    "sealed events: seals at the end were deleted",
                )
        self.check_heads()

    def check_heads(self) -> None:
        """Each game's chain head (``integrity_games``: the saves go on from its version,
        chain hash and last position, and the game is named by its game id) against what
        its seals give; and each seal's game id against the game that owns its row."""
        report, chains = self.report, self.chains
        last_positions = {}
        for stored, position in self.last_positions.items():
            try:
                last_positions[raw_id(stored)] = position
            except (TypeError, ValueError):
                continue
        heads = self.connection.execute(
            sa.select(
                HEADS.originator_id,
                HEADS.game_id,
                HEADS.version,
                HEADS.chain_hash,
                HEADS.last_position,
            )
        )
        headed = set()
        for originator, game_id, version, chain, last_position in heads:
            originator = originator.bytes
            headed.add(originator)
            last, sealed_chain = chains.get(originator, _NO_CHAIN)
            owner = self.owner(originator)
            where = f"integrity_games originator_id={uuid_text(originator)}"
            if owner is not None and game_id != owner:
                report.add(
                    ALTERED,
                    f"{where}: game_id holds {_shown(game_id)}, but the game's first event "
                    f"names it {owner}: the chain head's game id was changed",
                    owner,
                )
            name = owner or game_id
            if last != version:
                report.add(*_head_problem(last, version), name, min(last, version) + 1)
                continue
            if last and chain != sealed_chain:
                report.add(
                    CHAIN,
                    f"{where}: chain_hash does not match the chain the game's seals give: the "
                    "chain head was altered",
                    name,
                )
            position = last_positions.get(originator)
            if position is not None and last_position != position:
                report.add(
                    TREE,
                    f"{where}: last_position holds {last_position}, but the game's last seal "
                    f"lies at position {position}: the chain head was altered",
                    name,
                )
        for originator in chains.keys() - headed:
            report.add(
                DELETED,
                f"integrity_games has no row for aggregate {uuid_text(originator)} although "
                "its events are sealed: the game's chain head was deleted",
                self.owner(originator),
            )
        self.check_labels()

    def check_labels(self) -> None:
        """Each seal's game id (read page by page: :meth:`labelled`) against the game
        that owns its row: one comparison per game and label, not per seal."""
        for stored, label in sorted(self.labels, key=repr):
            try:
                originator = raw_id(stored)
            except (TypeError, ValueError):
                continue
            owner = self.owner(originator)
            if owner is None or label == owner:
                continue
            self.report.add(
                ALTERED,
                f"integrity_seals: seals of game {owner} (aggregate {uuid_text(originator)}) "
                f"are labelled game_id {_shown(label)}: the seals' game id was changed "
                "(findings name the game its first event records)",
                owner,
            )


# The highest level of a tree of fewer than 2**63 events. A stored node's level and index
# are an insider's to change: shifting by a negative level fails, by a huge one it
# exhausts memory, so a node is placed in a tree before any arithmetic on it.
_TOP_LEVEL = 63


def node_placed(level: int, index: int) -> bool:
    """Whether a stored node's level and index are a place in some tree."""
    return 0 <= level <= _TOP_LEVEL and index >= 0


def placeless_nodes(connection: sa.Connection, report: Report) -> None:
    """Every stored tree node at a level or index no tree has: a finding naming its row."""
    rows = connection.execute(
        sa.select(NODES.level, NODES.index)
        .where(sa.or_(NODES.level < 0, NODES.level > _TOP_LEVEL, NODES.index < 0))
        .order_by(NODES.level, NODES.index)
    )
    for level, index in rows:
        report.add(
            TREE,
            f"integrity_nodes level={level}, index={index}: no tree has a node at that level "
            "and index: it was written outside the ledger",
        )


_NODES_BETWEEN = sa.select(NODES.level, NODES.index, NODES.hash).where(
    NODES.level == sa.bindparam("level"),
    NODES.index.between(sa.bindparam("low"), sa.bindparam("high")),
)


def _checkpoint_anchor(checkpoint: Checkpoint, stored: locating.Witness) -> locating.Anchor:
    witnesses = (stored,)
    if checkpoint.blocks is not None:
        witnesses = (locating.blocks_witness(checkpoint), stored)
    return locating.Anchor(
        f"the checkpoint signed {checkpoint.time}", checkpoint.size, checkpoint.root, witnesses
    )


def _head_holds(head: Head) -> bool:
    """Whether the tree head is at least consistent with itself (its frontier folds to
    its root): only then can it vouch for the stored tree below it."""
    try:
        return merkle.TreeBuilder.from_frontier(head.size, head.frontier).root() == head.root
    except merkle.ProofError:
        return False


def _defect(row: StoredRow) -> str:
    return (
        f"stored row {row.notification_id} ({EVENTS_TABLE}) cannot be read as the ledger "
        f"wrote it: {row.defect}"
    )


def _games_between(connection: sa.Connection, start: int, end: int) -> list[tuple]:
    """The games sealed at tree positions ``start``..``end - 1``, with their event range."""
    rows = connection.execute(
        sa.text(
            "SELECT game_id, min(originator_version), max(originator_version), min(position) "
            "FROM integrity_seals WHERE position >= :start AND position < :end "
            "GROUP BY game_id ORDER BY min(position)"
        ),
        {"start": start, "end": end},
    )
    return [(g, lo, hi) for g, lo, hi, _ in rows]


_NO_CHAIN = (0, GENESIS)


def uuid_text(originator: bytes) -> str:
    return str(uuid.UUID(bytes=originator))


def _shown(value: Any) -> str:
    """A stored value in a finding: quoted, cut short (an id may be a megabyte)."""
    return shorten(value, 80)


_SHOWN_EVERY = 512  # events the store pass reads between two updates of its progress bar
_NODES_READ_AT = 2000  # recomputed stored nodes held before they are read back and compared

_CHAIN_MESSAGE = (
    "the seal's chain value does not follow from the game's seals before it: the seal was altered"
)


def _head_problem(last: int, head: int) -> tuple[str, str]:
    """A game's seals against its chain head: fewer were removed, more were added."""
    if last < head:
        message = (
            f"the game's sealed events end at event {last}, but its chain head says {head}: "
            "events and their seals were removed"
        )
        return DELETED, message
    message = (
        f"the game's seals go on to event {last}, but its chain head stops at {head}: no "
        "save wrote the seals after it, they were added outside the ledger"
    )
    return INSERTED, message


# -- one game ----------------------------------------------------------------------------------
def game_heads(connection: sa.Connection, game_id: str) -> dict[bytes, int | None]:
    """The aggregates (16-byte ids) a game id names, with their sealed chain head's version:
    from the heads table, else the id the game would have (not sealed yet: None)."""
    found = {
        originator.bytes: version
        for originator, version in connection.execute(
            sa.select(HEADS.originator_id, HEADS.version).where(HEADS.game_id == game_id)
        )
    }
    if found:
        return found
    from domain.rummy13.game import Game

    return {Game.create_id(game_id).bytes: None}


def _owned(
    connection: sa.Connection,
    game_id: str,
    found: dict[bytes, int | None],
    events: str,
    report: Report,
) -> dict[bytes, int | None]:
    """The aggregates a game id names in the chain heads, less those whose first event
    records another game (the head's game id was copied onto it): each is a finding, named
    with the game that owns it, and left out (the whole-store pass checks it as that game)."""
    if all(version is None for version in found.values()):
        # No chain head names the game: one that holds its aggregate names another.
        for originator in found:
            named = connection.execute(
                sa.select(HEADS.game_id).where(HEADS.originator_id == uuid.UUID(bytes=originator))
            ).scalar()
            if named is not None and named != game_id:
                report.add(
                    ALTERED,
                    f"integrity_games originator_id={uuid_text(originator)}: game_id holds "
                    f"{_shown(named)}, but the aggregate is game {game_id}'s: the chain "
                    "head's game id was changed",
                    game_id,
                )
        return found
    if len(found) < 2 or not has_table(connection, events):
        return found
    query = sa.text(
        f"SELECT state FROM {events} WHERE originator_id = :o AND originator_version = 1"
    )
    kept = {}
    for originator, version in found.items():
        state = connection.execute(query, {"o": id_param(connection, originator)}).scalar()
        owner = game_id_from_state(state) if isinstance(state, bytes) else None
        if owner is None or owner == game_id:
            kept[originator] = version
            continue
        report.add(
            ALTERED,
            f"integrity_games originator_id={uuid_text(originator)}: game_id holds "
            f"{_shown(game_id)}, but the game's first event names it {owner}: the chain "
            "head's game id was changed",
            owner,
        )
    return kept or found


def verify_game(
    url: str | None,
    game_id: str,
    *,
    checkpoints: Iterable[Checkpoint] = (),
    public_key: Ed25519PublicKey | None = None,
    events: str = EVENTS_TABLE,
    latest: bool = True,
    check_deals: bool = True,
    check_snapshots: bool = True,
    check_read_models: bool = True,
    memos: str = "write",
) -> Report:
    """One game's events against its seals and chain, its inclusion in the checkpoints,
    its deal, snapshots and read rows (:func:`_verify_game`); a stored value of the wrong
    kind among its rows is a finding, and the rest is still checked (:func:`_resilient`)."""
    checkpoints = list(checkpoints)

    def run(scope: _Scope, stopped) -> Report:
        report = Report(games=1)
        try:
            _verify_game(
                url,
                game_id,
                report,
                scope,
                checkpoints=checkpoints,
                public_key=public_key,
                events=events,
                latest=latest,
                check_deals=check_deals,
                check_snapshots=check_snapshots,
                check_read_models=check_read_models,
                memos=memos,
            )
        except UnknownGame:
            raise
        except Exception as error:
            if stopped is None:
                raise
            stopped(report, error)
        return report

    return _resilient(run, check_read_models, check_snapshots)


def _verify_game(
    url: str | None,
    game_id: str,
    report: Report,
    scope: _Scope,
    *,
    checkpoints: Iterable[Checkpoint] = (),
    public_key: Ed25519PublicKey | None = None,
    events: str = EVENTS_TABLE,
    latest: bool = True,
    check_deals: bool = True,
    check_snapshots: bool = True,
    check_read_models: bool = True,
    memos: str = "write",
) -> Report:
    """One game's events against its seals and chain; its inclusion in the checkpoints
    (the given ones, plus the latest stored one when ``latest``) through the stored tree;
    and its deal against its shuffle seeds when the record carried them.

    ``memos`` (:mod:`replays.integrity.replay_memos`): ``"write"`` replays the game and
    remembers a clean replay; ``"use"`` also takes a remembered replay of exactly these
    events and snapshots instead of replaying (the pages' badge); ``"off"`` neither."""
    public_key = public_key or default_public_key()
    with engine(url).connect() as connection, _masking(connection, report, game_id, scope):
        found = _owned(connection, game_id, game_heads(connection, game_id), events, report)
        originators = list(found)
        heads = [version for version in found.values() if version is not None]
        seals = game_seals(connection, originators)
        seal_top = sealed_up_to(connection)
        tree_head = stored_head(connection)
        rows = game_rows(connection, originators, events) if has_table(connection, events) else []
        if not rows and not seals and not heads:
            raise UnknownGame(f"no game {game_id} in the ledger")
        leaves = _compare_game(game_id, rows, seals, heads, seal_top, report, tree_head)
        if tree_head is None and seal_top:
            report.add(TREE, _missing_head(seal_head(connection)[0]))
        # A stored checkpoint that cannot be read is no finding about this game's rows:
        # reported once the game's own checks have decided what they read.
        unreadable = Report()
        report.latest = latest_stored(connection, unreadable)
        report.last_position = max((seal.position for seal in seals), default=-1)
        given = list(checkpoints)
        if latest and report.latest is not None:
            given.append(report.latest)
        proven: set[int] = set()
        mismatched: list[Checkpoint] = []
        tree = StoredTree(connection)
        for checkpoint in signed_checkpoints(given, public_key, report):
            _check_game_in_tree(
                connection, game_id, checkpoint, leaves, seals, report, proven, mismatched, tree
            )
        altered = {seal.position for seal in seals if leaves.get(seal.position) != seal.leaf}
        located = _GameLocator(connection, game_id, leaves, tree, altered)
        located.run(mismatched, tree_head)
        _report_mismatches(game_id, report.last_position, mismatched, proven, report, located)
        snapshots_wanted = bool(check_snapshots and rows and not report.problems)
        # A located edit leaves the game's own rows to be read: they name the event.
        settled = not [p for p in report.problems if p.kind not in _LOCATING]
        report.problems += unreadable.problems
        riders = None
        if check_read_models and rows and settled:
            from replays.readmodels import read_model_checks as checks

            if checks.has_read_models(connection):
                # One replay of the game for its read rows, its snapshots and its deal.
                riders = _riders(connection, rows, snapshots_wanted, check_deals, game_id)
                riders.memo = _memo(connection, url, game_id, rows, riders, check_deals, memos)
                checks.check_game_read_models(
                    connection,
                    checks.ledger_for(url),
                    report,
                    game_id,
                    originators,
                    events,
                    riders=riders,
                )
        carried = riders is not None and riders.carried
        snapshots_done = carried and (riders.snapshots is None or riders.snapshots.done)
        if snapshots_wanted and not snapshots_done:
            found = len(report.problems)
            names = dict.fromkeys(originators, game_id)
            _snapshots(connection, url, report, names, originators=originators)
            # As when this step ran first: a snapshot that differs leaves the deal unread.
            settled = settled and len(report.problems) == found
        # Last: a label names no event, and leaves the game's own rows to be checked.
        _check_labels(connection, game_id, originators, seals, report)
    if check_deals and rows and settled and not (riders is not None and riders.snapshot_failed):
        if carried and riders.recalled is not None:
            report.notes += riders.recalled
        elif carried and riders.watch is not None:
            riders.watch.checker.finish()
            report.problems += riders.watch.found.problems
            report.notes += riders.watch.found.notes
        else:
            checker = _deal_checker(report)
            for row in rows:
                checker.feed(row, game_id)
            checker.finish()
    locating.name_events(report, located.here)
    if riders is not None and riders.memo is not None:
        _remember(riders)
    return report


def _memo(connection, url, game_id: str, rows, riders, deals: bool, memos: str):
    """The game's memo slot, or None (memos off, or this process has no memo key)."""
    if memos == "off":
        return None
    from replays.integrity import replay_memos

    key = replay_memos.memo_key()
    if key is None:
        return None
    snapshots = riders.snapshots.stored if riders.snapshots is not None else None
    return replay_memos.GameMemo(
        connection, engine(url), key, game_id, rows, snapshots, deals, read=memos == "use"
    )


def _remember(riders) -> None:
    """Store what this check established in the game's memo: a replay that went to the end
    and found its deal and snapshots clean, and read rows found equal to its rows (what
    the read rows say does not decide the memo: they are compared on every view)."""
    memo = riders.memo
    if riders.recalled is None:
        if riders.expected is None or not riders.carried or riders.snapshot_failed:
            return
        if riders.snapshots is not None and not riders.snapshots.done:
            return
        notes: list[str] = []
        if riders.watch is not None:
            if riders.watch.found.problems:
                return
            notes = list(riders.watch.found.notes)
        memo.replayed(riders.expected, notes)
    memo.remember()


class _DealWatch:
    """The deal check fed by a game's replay (its findings kept apart until the replay
    is known to have gone to the end)."""

    def __init__(self, game_id: str) -> None:
        self.game_id = game_id
        self.found = Report()
        self.checker = _deal_checker(self.found)

    def __call__(self, row: StoredRow, event, game) -> None:
        self.checker.feed(row, self.game_id, event, game)


def _riders(connection, rows, snapshots_wanted: bool, deals_wanted: bool, game_id: str):
    from replays.integrity.snapshot_checks import snapshots_of
    from replays.readmodels.read_model_checks import Riders, SnapshotsToCheck

    snapshots = None
    if snapshots_wanted:
        stored = snapshots_of(connection, [rows[0].originator]).get(rows[0].originator)
        snapshots = SnapshotsToCheck(stored) if stored else None
    return Riders(rows, snapshots, _DealWatch(game_id) if deals_wanted else None)


class _GameLocator:
    """Where one game's view of the tree (its events' leaves, the stored tree for the
    rest) departs from a failing checkpoint or from the tree head: blocks holding this
    game's events (``here``, reported against the game) or only others' (``elsewhere``)."""

    def __init__(
        self,
        connection: sa.Connection,
        game_id: str,
        leaves: dict[int, bytes],
        tree: StoredTree,
        altered: set[int],
    ):
        self.connection, self.game_id, self.leaves, self.tree = connection, game_id, leaves, tree
        self.altered = altered  # positions whose event no longer matches its seal
        self.stored = locating.stored_witness(tree)
        self.here: list[locating.Block] = []
        self.elsewhere: dict[int, list[locating.Block]] = {}  # by checkpoint size

    def view(self, size: int) -> locating.Lookup:
        known = {p: leaf for p, leaf in self.leaves.items() if p < size}
        self.tree.prefetch(merkle.needed_subtrees(size, sorted(known)))
        return locating.with_leaves(known, self.stored.lookup)

    def run(self, mismatched: list[Checkpoint], head: Head | None) -> None:
        anchors = [(c.size, _checkpoint_anchor(c, self.stored)) for c in mismatched]
        if head is not None and head.size and self.leaves and _head_holds(head):
            view = self.view(head.size)
            if locating.range_hash(view, 0, head.size) != head.root:
                witnesses = (locating.frontier_witness(head.size, head.frontier), self.stored)
                anchor = locating.Anchor("the tree head", head.size, head.root, witnesses, False)
                anchors.append((None, anchor))
        for size, anchor in anchors:
            for block in locating.locate(anchor, self.view(anchor.size)):
                self.add(size, block)

    def add(self, size: int | None, block: locating.Block) -> None:
        if any(block.start <= p < block.end for p in self.altered):
            return  # found against its seal already: `altered`
        block = replace(block, games=tuple(_games_between(self.connection, block.start, block.end)))
        if any(block.start <= p < block.end for p in self.leaves):
            if all((b.start, b.end) != (block.start, block.end) for b in self.here):
                self.here.append(block)
        elif size is not None:  # a head that differs elsewhere is the whole-store pass's
            self.elsewhere.setdefault(size, []).append(block)

    def report(self, report: Report) -> None:
        for block in self.here:
            message = locating.describe(block)
            report.add(RESEALED, message, self.game_id)


def _compare_game(
    game_id: str,
    rows: list[StoredRow],
    seals: list[SealRow],
    heads: list[int],
    seal_top: int,
    report: Report,
    tree_head: Head | None,
) -> dict[int, bytes]:
    """Compare rows with seals by version; return recomputed leaves by tree position."""
    by_version = {row.version: row for row in rows}
    leaves: dict[int, bytes] = {}
    previous_version, previous_chain = 0, GENESIS
    for seal in seals:
        version = seal.version
        report.sealed += 1
        row = by_version.pop(version, None)
        if version != previous_version + 1:
            message = f"sealed history goes from event {previous_version} to {version}"
            report.add(DELETED, message, game_id, previous_version + 1)
        if row is None:
            message = f"stored row {seal.notification_id} is missing: the sealed event was deleted"
            report.add(DELETED, message, game_id, version)
            leaf = seal.leaf
        else:
            report.events += 1
            leaf = row.leaf
            if row.defect is not None:
                report.add(UNREADABLE, _defect(row), game_id, version)
            if row.notification_id != seal.notification_id:
                message = (
                    f"event moved from stored row {seal.notification_id} to {row.notification_id}"
                )
                report.add(ALTERED, message, game_id, version)
            elif leaf != seal.leaf:
                message = f"stored row {row.notification_id} ({row.topic}) does not match its seal"
                report.add(ALTERED, message + ": its bytes were changed", game_id, version)
        if tree_head is not None and seal.position >= tree_head.size:
            message = (
                f"the seal at position {seal.position} lies beyond the tree head's "
                f"{tree_head.size} events: no save wrote it, the seal was forged"
            )
            report.add(INSERTED, message, game_id, version)
        chain = chain_hash(previous_chain, seal.leaf)
        if chain != seal.chain:
            report.add(CHAIN, _CHAIN_MESSAGE, game_id, version)
        leaves[seal.position] = leaf
        previous_version, previous_chain = version, chain
    for head in heads:
        if head != previous_version:
            kind, message = _head_problem(previous_version, head)
            report.add(kind, message, game_id, min(previous_version, head) + 1)
    for version, row in sorted(by_version.items()):
        report.events += 1
        where = f"stored row {row.notification_id} ({row.topic})"
        if tree_head is not None:
            report.add(INSERTED, f"{where} {_UNSEALED_IN_SAVE}", game_id, version)
        elif row.notification_id < seal_top:
            message = f"{where} was never sealed although later rows were: inserted directly"
            report.add(INSERTED, message, game_id, version)
        else:
            report.add(UNSEALED, f"{where} is not sealed yet", game_id, version)
    return leaves


def _check_labels(
    connection: sa.Connection,
    game_id: str,
    originators: list[bytes],
    seals: list[SealRow],
    report: Report,
) -> None:
    """One game's seals labelled with another game id, and another game's seals labelled
    with this one's (the whole-store pass: :meth:`_StorePass.check_labels`)."""
    for label in sorted({seal.game_id for seal in seals} - {game_id}, key=repr):
        report.add(
            ALTERED,
            f"integrity_seals: seals of game {game_id} are labelled game_id {_shown(label)}: "
            "the seals' game id was changed",
            game_id,
        )
    labelled = connection.execute(
        sa.select(SEALS.originator_id).where(SEALS.game_id == game_id).distinct()
    )
    for (stored,) in labelled:
        try:
            originator = raw_id(stored)
        except (TypeError, ValueError):
            continue
        if originator not in originators:
            report.add(
                ALTERED,
                f"integrity_seals: seals of another aggregate ({uuid_text(originator)}, not "
                f"this game's) are labelled game_id {_shown(game_id)}: the seals' game id was "
                "changed (`rummy-ledger verify` names the game that owns them)",
                game_id,
            )


def _check_game_in_tree(
    connection: sa.Connection,
    game_id: str,
    checkpoint: Checkpoint,
    leaves: dict[int, bytes],
    seals: list[SealRow],
    report: Report,
    proven: set[int],
    mismatched: list[Checkpoint],
    tree: StoredTree,
) -> None:
    covered = {p: leaf for p, leaf in leaves.items() if p < checkpoint.size}
    if not covered:
        return
    report.checkpoints.append(checkpoint.size)
    positions = sorted(covered)
    tree.prefetch(merkle.needed_subtrees(checkpoint.size, positions))
    try:
        root = merkle.root_from_known(checkpoint.size, covered, tree.subtree)
    except IntegrityError as error:
        report.add(TREE, str(error), game_id)
        return
    if root == checkpoint.root:
        proven.add(checkpoint.size)
        return
    # Every leaf here matches its seal, so the stored tree was rewritten, with its seals,
    # somewhere under this checkpoint: from one game alone no event can be blamed. When
    # another checkpoint covering all of the game's events still holds, the rewrite lies
    # elsewhere, and the game is not named.
    mismatched.append(checkpoint)


def _report_mismatches(
    game_id: str,
    last_position: int,
    mismatched: list[Checkpoint],
    proven: set[int],
    report: Report,
    located: _GameLocator,
) -> None:
    """Each failing checkpoint, blaming this game only when the failure may lie in its
    events: not when a checkpoint that still holds proves them, nor when the rewrite was
    located in blocks without them (then those blocks are named instead)."""
    cleared = any(size > last_position for size in proven)
    located.report(report)
    for checkpoint in mismatched:
        elsewhere = located.elsewhere.get(checkpoint.size, [])
        if located.here or elsewhere:
            where = ", ".join(
                f"{b.positions} ({', '.join(f'{g} events {lo}-{hi}' for g, lo, hi in b.games)})"
                for b in located.here + elsewhere
            )
            message = (
                f"the ledger's tree no longer matches the checkpoint of {checkpoint.size} "
                f"events signed {checkpoint.time}: the rewrite lies at tree positions {where}"
            )
            report.add(CHECKPOINT, message)
        elif cleared:
            message = (
                f"the ledger's tree no longer matches the checkpoint of {checkpoint.size} "
                f"events signed {checkpoint.time}; this game's events are proven by a "
                "checkpoint that still holds, so history elsewhere was rewritten (`rummy-ledger "
                "verify --checkpoint` locates it)"
            )
            report.add(CHECKPOINT, message)
        else:
            message = (
                f"the ledger's tree no longer matches the checkpoint of {checkpoint.size} "
                f"events signed {checkpoint.time}: history it covers, this game's events or "
                "others', was rewritten with its seals (`rummy-ledger verify --checkpoint` "
                "locates it)"
            )
            report.add(CHECKPOINT, message, game_id)
