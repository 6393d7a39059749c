"""The game projection: stored game events → the read-model tables of :mod:`replays.readmodels.models`.

Every game event is folded by its variant (:mod:`domain.variants`, found by the event's
topic), which turns it into plain rows, so round, point value and outcome come from the
domain, never from rules copied here; one writer below writes every variant's rows. A
variant with a light fold (13-card games: :mod:`domain.rummy13.fold`) folds its events into
a small state that gives the same rows without moving cards; any other has each event
applied to its aggregate itself (the same event bodies that rebuild a game). Games seen
recently stay in memory between batches; any other is loaded at the version before the
event (its events folded again, or its aggregate from a snapshot plus a few events).

Per batch of notifications (see :mod:`replays.readmodels.projection_runner` for the exactly-once
tracking), the projection writes:

For a 13-card game (each family's row builders live in its package under ``domain/``):

- one ``moves`` row per move event (pick, discard, drop, miss, declare, show, reshuffle),
  with the round and point value in force when the move was made;
- one ``games`` row per game: inserted at ``Started``, brought up to date at the end of
  each batch that touched it;
- at ``Settled``: ``player_results`` (each loser as the recorded settlement states it, and
  the winner credited ``net_to_winner``), the settlement's ``ledger_entries``, and a hash
  of the recorded settlement;
- at ``Settled`` and ``Reported``: the audit (:func:`domain.rummy13.audit.audit_game`) recomputes
  the settlement from the game's facts and compares it with the recorded settlement and
  the operator's reported figures; a difference flags the game as a discrepancy, so period
  reports stay pure SQL (docs/read-models.md explains the trade-off).

Entry points: :func:`catch_up` (called by the importer, the ingest API and the simulator
after they write), :func:`rebuild`, :func:`follow`, :func:`projection_status`; the importer
projects its own saves from memory first (:class:`SavedGames`).

>>> catch_up("sqlite:///rummy-ledger.sqlite3")  # doctest: +SKIP
0
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import sqlalchemy as sa
from eventsourcing.persistence import Notification

from domain import variants
from domain.rummy13.game import Game
from domain.rummy13.rows import (  # re-exported: the 13-card rows' own home is domain
    canonical_settlement,
    settlement_hash,
    settlement_rows,
    started_row,
)
from domain.variants import Variant
from replays.disputes.projection import (
    DISPUTE_TOPICS,
    clear_disputes,
    discard_dispute,
    dispute_case_of,
    project_disputes,
)
from replays.readmodels.bulk import Statements, insert_rows, run_statements, update_rows
from replays.readmodels.models import GameRow, LedgerEntryRow, MoveRow, PlayerResultRow
from replays.readmodels.projection_runner import Failure, Projection, Runner, Status
from replays.store.db import engine_for
from replays.store.settings import database_url

NAME = "read_models"
GAME_TOPICS = Game.TOPIC + "."  # every Game event's topic starts so (explicit topics)
# Games still in play, kept between batches so the next event needs no store read. A game
# that is over leaves at the end of its batch (``_forget_finished``): an import streams
# through games that all end, and memory stays flat in their number (bench/memory.py).
CACHE_SIZE = 1024

GAMES = GameRow.__table__
MOVES = MoveRow.__table__
RESULTS = PlayerResultRow.__table__
ENTRIES = LedgerEntryRow.__table__


@dataclass
class _Batch:
    """Row changes gathered over one batch, written together at its end."""

    created: set[str] = field(default_factory=set)
    touched: dict[str, Any] = field(default_factory=dict)  # game id -> game after its last event
    variant: dict[str, Variant] = field(default_factory=dict)  # game id -> its variant
    closing: dict[str, dict] = field(default_factory=dict)  # game id -> columns set on closing
    audit: set[str] = field(default_factory=set)
    moves: list[dict] = field(default_factory=list)
    results: list[dict] = field(default_factory=list)
    entries: list[dict] = field(default_factory=list)
    events: dict[str, list] = field(default_factory=dict)  # game id -> its events, when held


class GameProjection(Projection):
    """Projects every registered variant's events with one writer: the variant gives plain
    rows (:class:`~domain.variant_base.GameRows`), this writes them; dispute events go to
    :mod:`replays.disputes.projection`, anything else is skipped.

    The audit columns come from what the write already knew
    (:meth:`~domain.variant_base.Variant.written_audit_columns`: a 13-card game's
    settlement is not computed again); ``recompute=True`` recomputes it as ``verify`` does,
    and ``verify=False`` leaves the audit out (both for measuring its cost). ``light=False``
    applies every event to its aggregate even where the variant offers a light fold (the
    reference path the fold is tested and measured against).
    """

    name = NAME

    def __init__(
        self,
        ledger,
        *,
        verify: bool = True,
        recompute: bool = False,
        cache_size: int = CACHE_SIZE,
        light: bool = True,
    ):
        self.ledger = ledger
        self.verify = verify
        self.recompute = recompute
        self.cache_size = cache_size
        self.light = light
        self._games: OrderedDict[Any, Any] = OrderedDict()  # id -> game or its light fold
        self._folds: dict[Variant, Callable[[Any, Any], Any] | None] = {}

    def _fold(self, variant: Variant) -> Callable[[Any, Any], Any] | None:
        """The variant's light fold, or None: its events go through the aggregate."""
        try:
            return self._folds[variant]
        except KeyError:
            fold = self._folds[variant] = variant.light_fold() if self.light else None
            return fold

    def forget(self) -> None:
        self._games.clear()

    # -- applying events ---------------------------------------------------------------
    def process(self, connection: sa.Connection, notifications: Sequence[Notification]) -> None:
        batch = _Batch()
        to_domain_event = self.ledger.mapper.to_domain_event
        disputes = []  # dispute cases and adjustments (replays.disputes.projection)
        of_topic: dict[str, Variant | None] = {}  # a few topics, thousands of events
        for notification in notifications:
            topic = notification.topic
            try:
                variant = of_topic[topic]
            except KeyError:
                variant = of_topic[topic] = (
                    None if topic.startswith(DISPUTE_TOPICS) else variants.for_topic(topic)
                )
            if variant is None:
                if topic.startswith(DISPUTE_TOPICS):
                    disputes.append(notification)
                continue
            domain_event = to_domain_event(notification)
            fold = self._fold(variant)
            before = self._game_before(domain_event, fold)
            self._remember(self._apply(batch, variant, fold, domain_event, before))
        self._write(connection, batch)
        self._forget_finished(batch)
        if disputes:  # after the games: a case's adjustment entries refer to its game's row
            project_disputes(connection, disputes, to_domain_event)

    def rows_of_new_games(self, games: Sequence[Any]) -> _Batch:
        """The rows of games just saved whole (an import), from the games' own events in
        memory: the same :meth:`_gather` as :meth:`process`, without selecting the events
        back or decoding them; :meth:`write` writes them.

        ``games`` pairs each game with all of its events (version 1 on), in order, exactly
        as they were saved; the audit reads them from there too, not from the store. Each
        game is rebuilt (or folded) from its own events alone, so none goes through the
        cache: a later event of a game still running is applied to it as loaded from the
        store."""
        batch = _Batch()
        for game, events in games:
            variant = variants.for_game(game)
            batch.events[game.game_id] = events
            moves = variant.saved_move_rows(game, events) if self.light and events else None
            if moves is not None:  # the game as it ends gives the other rows
                self._gather_saved(batch, variant, game, events, moves)
                continue
            fold = self._fold(variant)
            state = None
            for domain_event in events:
                state = self._gather(batch, variant, fold, domain_event, state)
            if state is not None:
                self._touch(batch, variant, state, created=True)
        return batch

    def _gather_saved(self, batch: _Batch, variant: Variant, game, events, moves) -> None:
        """What :meth:`_gather` gives for each of a saved game's events, from the game as
        it ends (``Variant.saved_move_rows``: its move rows, counted, not replayed)."""
        batch.moves += moves
        for domain_event in events:
            self._closing(batch, variant, game, domain_event)
        self._touch(batch, variant, game, created=True)

    def write(self, connection: sa.Connection, batch: _Batch) -> None:
        """Write rows gathered by :meth:`rows_of_new_games`."""
        self._write(connection, batch)

    def _game_before(self, domain_event, fold=None) -> Any:
        version = domain_event.originator_version
        if version == 1:
            return None
        game = self._games.pop(domain_event.originator_id, None)
        if game is None or game.version != version - 1:
            if fold is None:
                game = self.ledger.get_game(domain_event.originator_id, version=version - 1)
            else:  # its events folded again: a few dozen for a 13-card game
                game = None
                for earlier in self.ledger.events.get(domain_event.originator_id, lte=version - 1):
                    game = fold(game, earlier)
        return game

    def _remember(self, game) -> None:
        self._games[game.id] = game
        if len(self._games) > self.cache_size:
            self._games.popitem(last=False)

    def _forget_finished(self, batch: _Batch) -> None:
        """Drop the batch's finished games from the cache: no move follows the end, and a
        later event (a report, rare: imported, it comes in the same batch) reads the game
        back from the store."""
        for game_id, game in batch.touched.items():
            if batch.variant[game_id].is_over(game):
                self._games.pop(game.id, None)

    def _apply(self, batch: _Batch, variant: Variant, fold, domain_event, before) -> Any:
        """Apply ``domain_event`` to ``before`` (the game, or its light fold, at the version
        before it; None for its first event) with ``fold`` (None: the aggregate's own
        ``mutate``), gather the rows it gives; the game after it."""
        game = self._gather(batch, variant, fold, domain_event, before)
        self._touch(batch, variant, game, created=before is None)
        return game

    @staticmethod
    def _gather(batch: _Batch, variant: Variant, fold, domain_event, before) -> Any:
        """The rows ``domain_event`` gives (its move, the closing rows, the audit flag),
        into ``batch``; the game after it. A new game's events go through here one after
        another (:meth:`rows_of_new_games`), its bookkeeping (:meth:`_touch`) once at the
        end."""
        move = variant.move_row(before, domain_event)
        if move is not None:
            batch.moves.append(move)
        game = domain_event.mutate(before) if fold is None else fold(before, domain_event)
        GameProjection._closing(batch, variant, game, domain_event)
        return game

    @staticmethod
    def _closing(batch: _Batch, variant: Variant, game, domain_event) -> None:
        """The closing rows and the audit flag ``domain_event`` gives ``game`` (as it stands
        after the event), into ``batch``."""
        closing = variant.closing_rows(game, domain_event)
        if closing is not None:
            batch.closing.setdefault(game.game_id, {}).update(closing.game)
            batch.results += closing.results
            batch.entries += closing.entries
        if variant.audits_after(game, domain_event):
            batch.audit.add(game.game_id)

    @staticmethod
    def _touch(batch: _Batch, variant: Variant, game, *, created: bool) -> None:
        """Mark ``game``'s row to be written as it now stands (inserted if ``created``)."""
        batch.touched[game.game_id] = game
        batch.variant[game.game_id] = variant
        if created:
            batch.created.add(game.game_id)

    # -- writing rows ------------------------------------------------------------------
    def _write(self, connection: sa.Connection, batch: _Batch) -> None:
        inserts, updates = [], []
        for game_id, game in batch.touched.items():
            variant = batch.variant[game_id]
            row = {"game_id": game_id, **variant.progress_row(game)}
            row.update(batch.closing.get(game_id, {}))
            if game_id in batch.audit:
                row.update(self._audit_row(game, variant, batch.events.get(game_id)))
            if game_id in batch.created:
                inserts.append({**variant.started_row(game), **row})
            else:
                updates.append(row)
        for rows in _by_columns(inserts).values():
            insert_rows(connection, GAMES, rows)
        for rows in _by_columns(updates).values():
            update_rows(connection, GAMES, "game_id", rows)
        insert_rows(connection, MOVES, batch.moves)
        insert_rows(connection, RESULTS, batch.results)
        insert_rows(connection, ENTRIES, batch.entries)

    def _audit_row(self, game, variant: Variant | None = None, events=None) -> dict:
        """The audit columns of ``game`` as it stands (its events read from the store only
        if needed and not given): from what the write computed, or recomputed with
        ``recompute``."""
        variant = variant or variants.for_game(game)
        if events is None:
            events = self.ledger.events_of(game)
        if self.recompute or not self.verify:
            return variant.audit_columns(game, events, verify=self.verify)
        return variant.written_audit_columns(game, events)

    def remove_new_games(self, connection: sa.Connection, game_ids: Sequence[str]) -> None:
        """Delete the rows of games written whole by :meth:`write` in this transaction
        (their save could not move the position: the catch-up will project them)."""
        for table in (ENTRIES, MOVES, RESULTS, GAMES):  # children first
            connection.execute(table.delete().where(table.c.game_id.in_(game_ids)))

    def discard(self, connection: sa.Connection, originator_id) -> None:
        """Remove a set-aside game's (or match's, or case's) rows: none half-written stay."""
        key = str(originator_id)
        game_id = connection.execute(
            sa.select(GAMES.c.game_id).where(GAMES.c.originator_id == key)
        ).scalar()
        if game_id is not None:
            for table in (ENTRIES, MOVES, RESULTS, GAMES):
                connection.execute(table.delete().where(table.c.game_id == game_id))
        discard_dispute(connection, key)
        self._games.pop(originator_id, None)

    def game_of(self, connection: sa.Connection, notification: Notification) -> str | None:
        key = str(notification.originator_id)
        game_id = connection.execute(
            sa.select(GAMES.c.game_id).where(GAMES.c.originator_id == key)
        ).scalar()
        if game_id is not None:
            return game_id
        case = dispute_case_of(connection, key)
        if case is not None:
            return case
        # Not projected yet (its first event failed): the event itself names the game.
        domain_event = self.ledger.mapper.to_domain_event(notification)
        config = getattr(domain_event, "config", None)
        for source in (config, domain_event):
            if isinstance(source, dict):
                found = source.get("game_id") or source.get("case_id")
            else:
                found = getattr(source, "game_id", None) or getattr(source, "case_id", None)
            if found:
                return str(found)
        return None

    def clear(self, connection: sa.Connection) -> None:
        # Children first: the rows go even where foreign keys are not enforced.
        clear_disputes(connection)
        connection.execute(ENTRIES.delete())
        connection.execute(MOVES.delete())
        connection.execute(RESULTS.delete())
        connection.execute(GAMES.delete())


def _by_columns(rows: list[dict]) -> dict[tuple, list[dict]]:
    """Rows grouped by their columns: one statement per shape."""
    shapes: dict[tuple, list[dict]] = {}
    for row in rows:
        shapes.setdefault(tuple(sorted(row)), []).append(row)
    return shapes


# -- entry points ----------------------------------------------------------------------


@lru_cache(maxsize=8)
def _ledger(url: str):
    from replays.store.application import Ledger

    return Ledger(url, env={"CREATE_TABLE": "no"})


def runner(
    url: str | None = None,
    *,
    ledger=None,
    batch_size: int | None = None,
    verify: bool = True,
    recompute: bool = False,
    hook: Callable[[str, int], None] | None = None,
    light: bool = True,
) -> Runner:
    """The read-model runner for the database at ``url`` (default: the project setting);
    ``light=False``: every event through its aggregate (see :class:`GameProjection`)."""
    url = database_url(url if ledger is None else ledger.url)
    projection = GameProjection(
        ledger or _ledger(url), verify=verify, recompute=recompute, light=light
    )
    options = {} if batch_size is None else {"batch_size": batch_size}
    return Runner(engine_for(url), projection, hook=hook, **options)


class SavedGames:
    """The read models kept up by a writer that saves whole new games (the importer):
    each save's rows come from the games' events still in memory instead of a catch-up
    selecting them back and decoding them.

    :meth:`save` works the rows out, and the statements that write them, before the save
    (outside the store's lock); the save runs them (on PostgreSQL before its events' lock,
    on SQLite after its events) and moves the projection's position in its own
    transaction, right after its events and seals, under the lock it already holds
    (:meth:`Runner.apply_in_save`, in a savepoint): events, seals, rows and position in one
    transaction and one commit (:class:`_SaveRows`). With ``in_save=False`` the same rows
    go in a second transaction after the save's commit (:meth:`saved`,
    :meth:`Runner.apply_saved`), the reference the tests hold the first to.

    Whenever the rows cannot be worked out or written, or the projection is not right
    before the save (another writer's events wait, another runner holds the position),
    the save stores its events all the same and the ordinary catch-up runs at once after
    it (it sets aside a game that fails, as always), so the next save is right after it
    again."""

    def __init__(self, ledger, *, in_save: bool = True) -> None:
        self.ledger = ledger
        self.runner = runner(ledger=ledger)
        self.in_save = in_save
        self.projected = 0  # events projected here

    def save(self, games: Sequence[Any]) -> list:
        """Save ``games`` (all new; raises IntegrityError, nothing stored, if one exists)
        and project them; the save's recordings."""
        if not self.in_save:
            recordings = self.ledger.save(*games)
            self.saved(games, recordings)
            return recordings
        rows = _SaveRows(self, games)  # worked out before the lock
        recordings = self.ledger.save(*games, read_rows=rows)
        if rows.done:
            self.projected += len(recordings)
        elif rows.ours and recordings:
            self._catch_up()
        return recordings

    def saved(self, games: Sequence[Any], recordings: Sequence[Any]) -> bool:
        """Project the ``recordings`` of saving ``games`` (all new) after the save, in a
        transaction of their own; False: left to the catch-up."""
        if not recordings:
            return False
        pairs = _whole_new_games(games, [recording.domain_event for recording in recordings])
        if pairs is None:
            return False  # an event of no game given here, or not a whole new game
        first, last = recordings[0].notification.id, recordings[-1].notification.id
        if last - first + 1 != len(recordings):
            return False
        projection = self.runner.projection
        try:  # gathered before the position's lock is taken, and held only to write
            rows = projection.rows_of_new_games(pairs)
        except Exception:  # the catch-up will meet it again, and set the game aside
            rows = None
        done = rows is not None and self.runner.apply_saved(
            first, last, lambda connection: projection.write(connection, rows)
        )
        if done:
            self.projected += len(recordings)
        else:
            self._catch_up()
        return done

    def _catch_up(self) -> None:
        """The catch-up, now: the next saves find the position right before them again.
        A failure here is the final catch-up's to report (the events are stored)."""
        try:
            self.projected += self.runner.catch_up()
        except Exception:
            self.runner.projection.forget()


def _whole_new_games(games: Sequence[Any], events: Sequence[Any]) -> list | None:
    """Each game paired with its events among ``events`` (in order), or None when an event
    is of no game given or a game's events do not start at version 1."""
    held: dict[Any, list] = {game.id: [] for game in games}
    # A game's events come together and share its id object: the id (a UUID, hashed in
    # Python) is looked up once per game, not once per event.
    originator = found = None
    for domain_event in events:
        if domain_event.originator_id is not originator:
            originator = domain_event.originator_id
            found = held.get(originator)
            if found is None:
                return None
        found.append(domain_event)
    pairs = []
    for game in games:
        found = held[game.id]
        if not found or found[0].originator_version != 1:
            return None
        pairs.append((game, found))
    return pairs


class _SaveRows:
    """One save's read rows, worked out from its games' pending events before the save;
    the save runs them (``Ledger.save(*games, read_rows=...)``).

    On PostgreSQL the rows go in before the events' ``LOCK TABLE`` (:meth:`before_lock`):
    no read row names a notification id, and under the lock every other writer waits.
    Only the position, which must move in notification order, waits for the events to be
    inserted and sealed (:meth:`write`). When it cannot move (the save is not right after
    it, another runner holds it), the rows are taken out again in the same transaction,
    and the catch-up projects those games from the stored events as it would have. On
    SQLite every write takes the one write lock: rows and position both go in after the
    events.

    ``ours``: a save this could project (whole new games, the events it was given), so a
    miss is the catch-up's to make up at once; ``done``: rows and position went in with
    the save."""

    def __init__(self, saver: SavedGames, games: Sequence[Any]) -> None:
        self.saver = saver
        self.done = False
        self.statements: list | None = None
        self.written_before = False  # the rows are in, the position not yet moved
        self.events = [event for game in games for event in game.pending_events]
        self.game_ids = [game.game_id for game in games]
        pairs = _whole_new_games(games, self.events)
        self.ours = pairs is not None
        if pairs is None:
            return
        saver.runner.ensure_position_row()
        projection = saver.runner.projection
        statements = Statements(saver.runner.engine.dialect)
        try:
            projection.write(statements, projection.rows_of_new_games(pairs))
        except Exception:  # the catch-up will meet it again, and set the game aside
            projection.forget()
            return
        self.statements = statements.statements

    def before_lock(self, connection: sa.Connection) -> None:
        """In the save's transaction, before its events: the rows (a savepoint: a failure
        costs the rows only, and leaves them to the catch-up); never raises for their sake."""
        statements = self.statements
        if statements is None:
            return
        try:
            with connection.begin_nested():
                run_statements(connection, statements)
        except Exception:
            self.statements = None
            self.saver.runner.projection.forget()
            return
        self.written_before = True

    def write(self, connection: sa.Connection, recordings: Sequence[Any]) -> None:
        """In the save's transaction, its events inserted and sealed: the position (and the
        rows, unless :meth:`before_lock` wrote them), or nothing (a savepoint rolled back,
        rows written before taken out); never raises for the rows' sake."""
        if self.statements is None:
            return
        if not self._these_events(recordings):
            self._take_back(connection)
            return
        first, last = recordings[0].notification.id, recordings[-1].notification.id
        statements = [] if self.written_before else self.statements
        self.done = self.saver.runner.apply_in_save(
            connection, first, last, lambda on: run_statements(on, statements)
        )
        if not self.done:
            self._take_back(connection)

    def _these_events(self, recordings: Sequence[Any]) -> bool:
        """Whether ``recordings`` are the events the rows were worked out from, with ids
        in one run (a gap: the catch-up's, as after the save); if not, not ``ours``."""
        if not recordings or len(recordings) != len(self.events):
            self.ours = False
            return False
        if any(
            recording.domain_event is not event
            for recording, event in zip(recordings, self.events, strict=True)
        ):
            self.ours = False
            return False
        first, last = recordings[0].notification.id, recordings[-1].notification.id
        if last - first + 1 != len(recordings):
            self.ours = False
            return False
        return True

    def _take_back(self, connection: sa.Connection) -> None:
        """The rows :meth:`before_lock` wrote, out again: every row of these games is
        theirs (their games' rows went in whole, so none stood before), and the position
        does not cover them."""
        if self.written_before:
            self.written_before = False
            self.saver.runner.projection.remove_new_games(connection, self.game_ids)


class _StatusOnly(Projection):
    name = NAME

    def process(self, connection, notifications):  # pragma: no cover - never run
        raise NotImplementedError

    def clear(self, connection):  # pragma: no cover - never run
        raise NotImplementedError


def projection_status(
    url: str | None = None, *, engine: sa.Engine | None = None, failures: bool = True
) -> Status:
    """Position, head of the store, lag and recorded failures of the read models (no
    Ledger needed); ``failures=False`` skips reading the failures (the idle catch-up)."""
    return Runner(engine or engine_for(database_url(url)), _StatusOnly()).status(failures=failures)


def retry(url: str | None = None, *, ledger=None) -> tuple[list[Failure], list[Failure]]:
    """Project every set-aside game again, whole; (cleared, still failing)."""
    return runner(url, ledger=ledger).retry()


def catch_up(
    url: str | None = None, *, limit: int | None = None, progress: bool = False, ledger=None
) -> int:
    """Project every new event (at most ``limit``); return how many were applied.

    Called after writing by the importer, the API and the simulator. When nothing is new
    it costs two indexed reads and no write, and no Ledger is built.
    """
    url = database_url(url if ledger is None else ledger.url)
    if projection_status(url, failures=False).lag == 0:
        return 0
    return runner(url, ledger=ledger).catch_up(limit=limit, progress=progress)


def rebuild(
    url: str | None = None, *, progress: bool = False, ledger=None, keep_failed: bool = False
) -> int:
    """Project every stored event again into empty read models, in one transaction: the old
    rows stay until it commits (see :meth:`Runner.rebuild` for failures)."""
    return runner(url, ledger=ledger).rebuild(progress=progress, keep_failed=keep_failed)


def follow(
    url: str | None = None,
    *,
    interval: float = 1.0,
    stop: Callable[[], bool] = lambda: False,
    ledger=None,
) -> int:
    """Keep the read models current until ``stop()``; poll every ``interval`` seconds."""
    return runner(url, ledger=ledger).follow(interval=interval, stop=stop)


__all__ = [
    "GAME_TOPICS",
    "GameProjection",
    "SavedGames",
    "canonical_settlement",
    "catch_up",
    "follow",
    "projection_status",
    "rebuild",
    "retry",
    "runner",
    "settlement_hash",
    "settlement_rows",
    "started_row",
]
