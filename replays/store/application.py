"""The ledger application: games stored as events (eventsourcing + SQLAlchemy).

One setting decides the database for the whole project (``RUMMY_LEDGER_DATABASE_URL``,
see :mod:`replays.store.settings`): SQLite by default, PostgreSQL for a ``postgresql://`` URL.
The event tables are ``ledger_events`` and ``ledger_snapshots`` (the application's name is
their prefix).

>>> ledger = Ledger("sqlite:///:memory:")
>>> from domain.rummy13.table import TableConfig
>>> config = TableConfig(game_id="doc-app", variant="points", players=("p1", "p2"),
...                      point_value="1")
>>> ledger.game_exists("doc-app")
False
>>> _ = ledger.start_game(config)
>>> ledger.game_exists("doc-app"), ledger.get_game("doc-app").phase
(True, 'dealing')
"""

from __future__ import annotations

import functools
import os
import uuid
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

import orjson
from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import (
    EventStore,
    IntegrityError,
    JSONTranscoder,
    Notification,
    Recording,
    Transcoder,
)

from domain import variants
from domain.errors import RuleViolation
from domain.rummy13.game import Game
from domain.rummy13.moves import apply_move, play_game
from domain.rummy13.settlement import Settlement
from domain.rummy13.state import TableState
from domain.rummy13.table import TableConfig
from domain.variants.registry import project as project_game
from replays.store.db import forget_pool_in_child
from replays.store.settings import database_url
from replays.store.transcodings import ledger_transcoder, register_ledger_transcodings

# Events that follow the last move (never a move themselves).
_AFTER_PLAY_TOPICS = frozenset({Game.Settled.TOPIC, Game.Reported.TOPIC})


class GameConflict(Exception):
    """A write that lost a race or would overwrite another game: nothing was stored."""

    def __init__(self, message: str, game_id: str | None = None) -> None:
        super().__init__(message)
        self.game_id = game_id


class ConcurrentWrite(GameConflict):
    """Another writer appended to the game first; reload and try the move again."""


class GameExists(GameConflict):
    """A game with this id is already recorded."""


class GameNotFound(LookupError):
    def __init__(self, game_id: str | uuid.UUID) -> None:
        super().__init__(f"no game {game_id} is recorded")
        self.game_id = str(game_id)


class MoveOutOfRange(LookupError):
    """Asking for the table after a move the game does not have."""


class LedgerEventStore(EventStore):
    """The library's event store, whose :meth:`put` builds each save's ``Recording`` and
    its ``Notification`` straight into their ``__dict__`` (the frozen dataclasses'
    ``__init__`` sets one field at a time through ``object.__setattr__``: seven calls an
    event): equal objects, fields in the same order."""

    def put(self, domain_events: Sequence[Any], **kwargs: Any) -> list[Recording]:
        stored_events = list(map(self.mapper.to_stored_event, domain_events))
        notification_ids = self.recorder.insert_events(stored_events, **kwargs)
        recordings: list[Recording] = []
        if notification_ids:
            if len(notification_ids) != len(stored_events):
                raise AssertionError(
                    f"{len(stored_events)} events stored but {len(notification_ids)} ids"
                )
            new, append = object.__new__, recordings.append
            for domain_event, stored, notification_id in zip(
                domain_events, stored_events, notification_ids, strict=True
            ):
                notification = new(Notification)
                notification.__dict__.update(stored.__dict__)
                notification.__dict__["id"] = notification_id
                recording = new(Recording)
                fields = recording.__dict__
                fields["domain_event"] = domain_event
                fields["notification"] = notification
                append(recording)
        return recordings


def _forget_pools_in_child() -> None:
    """A forked child (``verify --jobs``'s workers) may use an application its parent
    made, for decoding: its store's connections are the child's own from here."""
    engines = {}
    for ledger in list(_LEDGERS):
        for recorder in (ledger.recorder, getattr(ledger.snapshots, "recorder", None)):
            engine = getattr(getattr(recorder, "datastore", None), "engine", None)
            if engine is not None:
                engines[id(engine)] = engine
    for engine in engines.values():
        forget_pool_in_child(engine)


_LEDGERS: weakref.WeakSet = weakref.WeakSet()
os.register_at_fork(after_in_child=_forget_pools_in_child)


class Ledger(Application):
    """Use cases over stored games. One instance per process; it is thread-safe."""

    name = "Ledger"
    # Every registered variant's aggregate at its own interval (a snapshot every so many
    # events keeps loading a long game to a snapshot plus a few events).
    # A dict the registry fills: a variant registered later (a test's toy) is seen too.
    snapshotting_intervals: ClassVar[dict] = variants.SNAPSHOT_INTERVALS
    snapshotting_projectors: ClassVar[dict] = variants.SNAPSHOT_PROJECTORS

    def __init__(self, url: str | None = None, env: Mapping[str, str] | None = None) -> None:
        settings = {
            "PERSISTENCE_MODULE": "replays.store.recorders:LedgerFactory",
            "SQLALCHEMY_URL": database_url(url),
            "IS_SNAPSHOTTING_ENABLED": "y",
            "MAPPER_TOPIC": "replays.store.transcodings:LedgerMapper",
        }
        settings.update(env or {})
        self.url = settings["SQLALCHEMY_URL"]
        super().__init__(settings)
        self._write_ahead_log()
        _LEDGERS.add(self)

    def _write_ahead_log(self) -> None:
        """Put a SQLite file in WAL mode now, not at its first transaction: the switch needs
        the file to itself, so processes that open a fresh store and write at once would
        otherwise race for it ("database is locked"). Once set, it stays with the file."""
        datastore = getattr(self.recorder, "datastore", None)
        if datastore is not None and datastore.is_sqlite_filedb:
            datastore.init_sqlite_wal_mode()

    # -- wiring ----------------------------------------------------------------------------
    def construct_event_store(self) -> LedgerEventStore:
        return LedgerEventStore(mapper=self.mapper, recorder=self.recorder)

    def construct_transcoder(self) -> Transcoder:
        return ledger_transcoder()

    def register_transcodings(self, transcoder: JSONTranscoder) -> None:
        register_ledger_transcodings(transcoder)

    def _record(self, processing_event: Any) -> Any:
        """Store the events and, in the same transaction, any snapshot they call for: one
        commit per save, and never a snapshot of events that were not stored. A save given
        ``read_rows`` (``save(*games, read_rows=...)``: the importer's
        :class:`~replays.readmodels.projections.SavedGames`) has it write the games' read
        rows in the same transaction too (``read_rows.write(connection, recordings)``
        after the events, which never fails the save); on PostgreSQL the rows themselves
        go in before the events' lock (``read_rows.before_lock(connection)``), and only
        the projection's position is moved under it.

        The snapshots are taken and encoded first: the insert takes the store's lock
        (every other writer waits from there to the commit), so only the writes go under it.
        """
        read_rows = processing_event.saved_kwargs.pop("read_rows", None)
        snapshots = self._snapshots_of_saved_games(processing_event)
        before_lock = self._writes_before_lock
        try:
            with self.recorder.transaction(commit=True) as session:
                if snapshots and before_lock:
                    self.snapshots.recorder.insert_events(snapshots)
                if read_rows is not None and before_lock:
                    read_rows.before_lock(session.connection())
                recordings = super()._record(processing_event)
                if snapshots and not before_lock:
                    self.snapshots.recorder.insert_events(snapshots)
                if read_rows is not None:
                    read_rows.write(session.connection(), recordings)
        finally:
            # The write gate the insert entered (``import --jobs`` on SQLite) is left once
            # the save is committed or rolled back.
            gate = getattr(self.recorder, "write_gate", None)
            if gate is not None:
                gate.leave()
        return recordings

    @functools.cached_property
    def _writes_before_lock(self) -> bool:
        """PostgreSQL: a save's snapshots and its games' read rows are inserted before its
        events, so before the ``LOCK TABLE`` the events' insert takes (neither names a
        notification id: their order is nobody's); the server's work for them no longer
        holds up the other writers. SQLite: after, since any write takes its one write
        lock (the events' insert first enters the import's write gate)."""
        engine = getattr(getattr(self.recorder, "datastore", None), "engine", None)
        return engine is not None and engine.dialect.name == "postgresql"

    def _take_snapshots(self, processing_event: Any) -> None:
        """Done in :meth:`_record` instead."""

    def _snapshots_of_saved_games(self, processing_event: Any) -> list:
        """A stored snapshot of each saved game whose save crosses a multiple of the interval.

        The library would rebuild the game from the store for each multiple crossed (an
        imported record crosses several in one save); the game in memory is already exactly
        the state the save stores, so it is snapshotted as it is, once, at its latest
        version."""
        if self.snapshots is None:
            return []
        first_versions: dict[uuid.UUID, int] = {}
        last = None  # a game's events come together, sharing its id object (hashed in Python)
        for domain_event in processing_event.events:
            if domain_event.originator_id is not last:
                last = domain_event.originator_id
                first_versions.setdefault(last, domain_event.originator_version)
        snapshots = []
        to_stored_event = self.snapshots.mapper.to_stored_event
        for aggregate_id, first in first_versions.items():
            game = processing_event.aggregates.get(aggregate_id)
            interval = self.snapshotting_intervals.get(type(game))
            if interval is None:
                continue
            if game.version // interval > (first - 1) // interval:
                snapshots.append(to_stored_event(type(game).Snapshot.take(game)))
        return snapshots

    def _save(self, game: Game, *, creating: bool = False) -> None:
        try:
            self.save(game)
        except IntegrityError:
            if creating:
                raise GameExists(f"game {game.game_id} is already recorded", game.game_id) from None
            raise ConcurrentWrite(
                f"game {game.game_id} changed while this move was being recorded "
                "(another writer got there first): nothing was stored; reload and retry",
                game.game_id,
            ) from None

    def change(
        self,
        game_id: str | uuid.UUID,
        command: Any,
        *,
        expected_version: int | None = None,
    ) -> Any:
        """Run ``command(game)`` on the stored game (any variant's) and store what it
        recorded; the live API plays every variant's moves through this."""
        game = self._for_update(game_id, expected_version)
        command(game)
        self._save(game)
        return game

    def events_of(self, game: Any) -> Iterator[Any]:
        """The game's stored events up to its version, read only when iterated (an audit
        that needs only the game itself never reads them)."""
        yield from self.events.get(game.id, lte=game.version)

    def variant_of(self, game_id: str | uuid.UUID) -> variants.Variant | None:
        """The stored game's variant from its first event alone (None: no such game)."""
        first = self.recorder.select_events(self.aggregate_id(game_id), limit=1)
        return variants.for_topic(first[0].topic) if first else None

    @staticmethod
    def aggregate_id(game_id: str | uuid.UUID) -> uuid.UUID:
        return game_id if isinstance(game_id, uuid.UUID) else Game.create_id(game_id)

    # -- writing ---------------------------------------------------------------------------
    def start_game(self, config: TableConfig | Mapping[str, Any], *, at: Any = None) -> uuid.UUID:
        """Record a new game's Started event; :class:`GameExists` if the id is taken."""
        game = Game(config, at=at)
        self._save(game, creating=True)
        return game.id

    def deal(
        self,
        game_id: str | uuid.UUID,
        hands: Mapping[str, Sequence[Any]],
        wild: Any,
        open_card: Any,
        stock: Sequence[Any] | None = None,
        *,
        at: Any = None,
        expected_version: int | None = None,
    ) -> Game:
        game = self._for_update(game_id, expected_version)
        game.deal(hands, wild, open_card, stock, at=at)
        self._save(game)
        return game

    def play(
        self,
        game_id: str | uuid.UUID,
        move: Mapping[str, Any],
        *,
        expected_version: int | None = None,
    ) -> Game:
        """Apply one docs/record-format.md move dict and store its event(s); returns the updated game.

        ``expected_version`` is the version the caller last saw: when the game has moved on
        since, :class:`ConcurrentWrite` is raised and nothing is stored."""
        game = self._for_update(game_id, expected_version)
        apply_move(game, move)
        self._save(game)
        return game

    def settle(
        self, game_id: str | uuid.UUID, *, at: Any = None, expected_version: int | None = None
    ) -> Settlement:
        """Close a game whose winner is known: losers without a show are scored on their
        best grouping. Returns the recorded settlement."""
        game = self._for_update(game_id, expected_version)
        settlement = game.settle(at=at)
        self._save(game)
        return settlement

    def report(
        self, game_id: str | uuid.UUID, reported: Mapping[str, Any], *, at: Any = None
    ) -> Game:
        game = self._for_update(game_id, None)
        game.report(reported, at=at)
        self._save(game)
        return game

    def record_game(
        self,
        config: TableConfig | Mapping[str, Any],
        deal: Any,
        moves: Iterable[Mapping[str, Any]],
        settle: bool = True,
        *,
        reported: Mapping[str, Any] | None = None,
    ) -> Game:
        """Store a whole record atomically: the game is built in memory first (raising the
        first :class:`~domain.errors.RuleViolation` with its move index), then all its
        events go to the store in one save, so a rejected record stores nothing.

        ``settle=True`` settles a game that is over; a running game is stored as it is."""
        game = play_game(config, deal, moves, settle=settle, reported=reported)
        self._save(game, creating=True)
        return game

    def _for_update(self, game_id: str | uuid.UUID, expected_version: int | None) -> Game:
        game = self.get_game(game_id)
        if expected_version is not None and game.version != expected_version:
            raise ConcurrentWrite(
                f"game {game.game_id} is at version {game.version}, not {expected_version}: "
                "it changed since you last read it; nothing was stored",
                game.game_id,
            )
        return game

    # -- reading ---------------------------------------------------------------------------
    def get_game(self, game_id: str | uuid.UUID, *, version: int | None = None) -> Game:
        """The game as it stood at aggregate ``version`` (latest when None)."""
        try:
            return self.repository.get(
                self.aggregate_id(game_id), version=version, projector_func=project_game
            )
        except AggregateNotFoundError:
            raise GameNotFound(game_id) from None

    def game_exists(self, game_id: str | uuid.UUID) -> bool:
        return bool(self.recorder.select_events(self.aggregate_id(game_id), limit=1))

    def stored_games(self, game_ids: Iterable[str]) -> set[str]:
        """Those of ``game_ids`` already recorded (one query for them all)."""
        by_aggregate = {self.aggregate_id(game_id): game_id for game_id in game_ids}
        stored = self.recorder.stored_originators(list(by_aggregate))
        return {by_aggregate[uuid.UUID(str(found))] for found in stored}

    def move_count(self, game_id: str | uuid.UUID) -> tuple[int, int]:
        """``(moves played, latest version)`` read from the last two stored events only."""
        tail = self.recorder.select_events(self.aggregate_id(game_id), desc=True, limit=2)
        if not tail:
            raise GameNotFound(game_id)
        latest = tail[0].originator_version
        after_play = 0
        for stored in tail:
            if stored.topic not in _AFTER_PLAY_TOPICS:
                break
            after_play += 1
        # Versions: 1 Started, 2 Dealt, then one event per move, then Settled/Reported.
        return max(0, latest - 2 - after_play), latest

    def version_after_move(self, game_id: str | uuid.UUID, move: int) -> int:
        """The aggregate version once ``move`` moves were applied (0: right after the deal).
        After the last move this is the latest version, settlement included."""
        moves, latest = self.move_count(game_id)
        if not 0 <= move <= moves:
            raise MoveOutOfRange(f"game {game_id} has {moves} moves: there is no move {move}")
        return latest if move == moves else move + 2

    def state_at(self, game_id: str | uuid.UUID, move: int) -> TableState:
        """The table as it stood after ``move`` moves (the state any replay frame shows)."""
        return self.get_game(game_id, version=self.version_after_move(game_id, move)).table_state()

    def list_game_ids(self, *, batch: int = 1000) -> list[str]:
        """Every recorded game id, in the order the games were started."""
        return list(self.iter_game_ids(batch=batch))

    def iter_game_ids(self, *, batch: int = 1000) -> Iterator[str]:
        start = 1
        while True:
            notifications = self.recorder.select_notifications(
                start, batch, topics=variants.started_topics()
            )
            for notification in notifications:
                yield orjson.loads(notification.state)["config"]["game_id"]
            if len(notifications) < batch:
                return
            start = notifications[-1].id + 1


__all__ = [
    "ConcurrentWrite",
    "GameConflict",
    "GameExists",
    "GameNotFound",
    "Ledger",
    "MoveOutOfRange",
    "RuleViolation",
    "project_game",
]
