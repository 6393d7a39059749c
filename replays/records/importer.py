"""Import game records into the ledger: each record becomes its game's events, all or nothing.

Every record is parsed (:mod:`replays.records.codec`), played through the aggregate in memory
(every move checked against the rules) and, when its shuffle seed is revealed, its deal is
checked against the seed; only then are its events stored, in one save. So a rejected
record stores nothing.

Re-importing is idempotent: a game id already in the store is compared with the incoming
record in canonical form (the stored game exported as a record): identical is *already
recorded*; anything else is a *conflict*, and the stored game is left untouched.

Games are saved in batches (one transaction per batch, see ``bench``); a batch that meets
an existing game falls back to saving its games one at a time to find which. A batch also
closes once its games hold ``BATCH_EVENTS`` events: a save keeps its games, their events
and their rows in memory several times over, and a Red 3 match or a long pool has ten to
twenty times a points game's events, so fifty of them made one import's peak memory grow
with the mix of games (``docs/benchmarks.md``, memory).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from eventsourcing.persistence import IntegrityError

from domain import variants
from domain.errors import RuleViolation
from domain.records import RecordError
from domain.rummy13.game import Game
from domain.rummy13.records import GameRecord
from replays.records.codec import bounded_lines, explain, read_records, record_of
from replays.store.application import GameExists, GameNotFound, Ledger
from replays.store.collector import bulk_work

IMPORTED = "imported"
ALREADY = "already recorded"
REJECTED = "rejected"
CONFLICT = "conflict"

BATCH = 50
# How long a save keeps trying through a lost database connection (a failover takes
# seconds; pg_auto_failover's defaults, about 30).
RETRY_SECONDS = 90.0

log = logging.getLogger("replays.importer")
BATCH_EVENTS = 2_500  # about a batch of fifty points games; five Red 3 matches


@dataclass(frozen=True)
class Outcome:
    """What happened to one record; ``message`` is ``GAME: move N (player type card): why``."""

    game_id: str | None
    status: str
    reason: str | None = None
    line: int | None = None

    @property
    def message(self) -> str:
        name = self.game_id or f"line {self.line}"
        return f"{name}: {self.reason}" if self.reason else f"{name}: {self.status}"

    @property
    def failed(self) -> bool:
        return self.status in (REJECTED, CONFLICT)


@dataclass
class ImportSummary:
    imported: int = 0
    already: int = 0
    rejected: int = 0  # conflicts included
    failures: list[Outcome] = field(default_factory=list)
    followers: dict[str, int | None] = field(default_factory=dict)

    def add(self, outcome: Outcome) -> None:
        if outcome.status == IMPORTED:
            self.imported += 1
        elif outcome.status == ALREADY:
            self.already += 1
        else:
            self.rejected += 1
            self.failures.append(outcome)

    @property
    def ok(self) -> bool:
        return self.rejected == 0

    def line(self) -> str:
        conflicts = sum(1 for outcome in self.failures if outcome.status == CONFLICT)
        return (
            f"{self.imported} imported, {self.already} already recorded, "
            f"{self.rejected} rejected" + (f" ({conflicts} conflicts)" if conflicts else "")
        )


class RecordConflict(Exception):
    """A different record under a game id that is already stored."""


def build_game(record: GameRecord) -> Game:
    """The record's game, played (and settled) in memory by its variant, after its deals
    are checked against a revealed shuffle seed; raises on any broken rule."""
    return variants.for_parsed(record).build_checked(record)


def check_shuffle(record: GameRecord) -> None:
    """A record's deals against its revealed seed (refused as ``BadDeal``/``RecordError``)."""
    variants.for_parsed(record).check_deals(record)


def compare_with_stored(ledger: Ledger, record: GameRecord) -> str:
    """ALREADY when the stored game is exactly this record; raises RecordConflict if not."""
    stored = record_of(ledger.get_game(record.game_id)).canonical()
    if stored == record.canonical():
        return ALREADY
    raise RecordConflict(
        f"conflict: a different game {record.game_id} is already recorded; "
        "the stored game was left untouched"
    )


class Importer:
    """Feeds records to a :class:`Ledger`, a batch of games per save."""

    def __init__(
        self,
        ledger: Ledger,
        *,
        batch: int = BATCH,
        projector: Any = None,
        batch_events: int = BATCH_EVENTS,
    ):
        """``batch``: games a save at most; ``batch_events``: a save closes once its games
        hold this many events, whatever their number. ``projector``: a :class:`~replays.readmodels.projections.SavedGames` that
        projects each save from the games in memory (None: the read models are left to a
        catch-up)."""
        self.ledger = ledger
        self.batch = batch
        self.batch_events = batch_events
        self.projector = projector
        self._pending: list[tuple[GameRecord, Game, int | None]] = []
        self._pending_events = 0

    def _save(self, *games: Game) -> None:
        """One save of new games (raises IntegrityError, nothing stored, if one exists),
        with their read-model rows when a projector is given."""
        if self.projector is None:
            self.ledger.save(*games)
        else:
            self.projector.save(games)

    def add(self, record: GameRecord, line: int | None = None) -> list[Outcome]:
        """Check one record; returns the outcomes now known (a batch may be flushed)."""
        try:
            game = build_game(record)
        except (RecordError, RuleViolation) as error:
            return [Outcome(record.game_id, REJECTED, explain(error, record), line)]
        except Exception as error:  # one record's crash never costs the batch
            reason = f"could not be played ({type(error).__name__}: {error})"
            return [Outcome(record.game_id, REJECTED, reason, line)]
        if any(pending.game_id == record.game_id for pending, _, _ in self._pending):
            # The same id twice in one batch: settle the first before judging the second.
            outcomes = self.flush()
            return outcomes + self._save_one(record, game, line)
        self._pending.append((record, game, line))
        self._pending_events += len(game.pending_events)
        if len(self._pending) >= self.batch or self._pending_events >= self.batch_events:
            return self.flush()
        return []

    def flush(self) -> list[Outcome]:
        pending, self._pending = self._pending, []
        self._pending_events = 0
        if not pending:
            return []
        return self._riding_through(pending)

    def _riding_through(self, pending: list) -> list[Outcome]:
        """The batch's outcomes, through a lost database connection (a failover, a restart):
        the batch is tried again on a new connection until :data:`RETRY_SECONDS` have
        passed. A save is one transaction, so a failed attempt stored all of its games or
        none; which, the next attempt finds in the store (a game stored by an earlier
        attempt of this batch is this record's, compared equal: imported, once)."""
        from replays.store.replicas import is_connection_error

        deadline = time.monotonic() + RETRY_SECONDS
        wait = 0.25
        ours: set[str] = set()
        while True:
            try:
                return self._flush(pending, ours)
            except Exception as error:
                if not is_connection_error(error) or time.monotonic() + wait > deadline:
                    raise
                log.warning(
                    "database connection lost saving %d game(s) (%s); trying again in %.2f s",
                    len(pending),
                    str(error).splitlines()[0][:200] if str(error) else type(error).__name__,
                    wait,
                )
            time.sleep(wait)
            wait = min(wait * 2, 2.0)
            ours.update(record.game_id for record, _, _ in pending)
            # A failed save has taken its games' pending events: each is built again.
            pending = [(record, build_game(record), line) for record, _, line in pending]

    def _flush(self, pending: list, ours: set[str]) -> list[Outcome]:
        # Games already recorded are compared, not saved: a save that fails on them would
        # have encoded the whole batch first, and held it through the fallback below.
        stored = self.ledger.stored_games(record.game_id for record, _, _ in pending)
        outcomes: dict[int, list[Outcome]] = {}
        for index, (record, _, line) in enumerate(pending):
            if record.game_id in stored:
                outcomes[index] = self._compare(record, line, ours)
        new = [(index, entry) for index, entry in enumerate(pending) if index not in outcomes]
        if new and not self._saved(*(game for _, (_, game, _) in new)):
            # Recorded since the look above (another importer): nothing of the batch was
            # stored, and the failed save has taken the games' pending events, so each is
            # built again and saved alone to find which.
            for index, (record, _, line) in new:
                outcomes[index] = self._save_one(record, build_game(record), line)
        for index, (record, _, line) in new:
            outcomes.setdefault(index, [Outcome(record.game_id, IMPORTED, line=line)])
        return [outcome for index in sorted(outcomes) for outcome in outcomes[index]]

    def _saved(self, *games: Game) -> bool:
        """One save of new games; False (nothing stored) when one of them exists."""
        try:
            self._save(*games)
        except IntegrityError:
            return False
        return True

    def _compare(
        self, record: GameRecord, line: int | None, ours: set[str] = frozenset()
    ) -> list[Outcome]:
        """The outcome of a record whose game id is already recorded (``ours``: the games
        an earlier attempt of this batch may have stored, whose equal copy is imported)."""
        try:
            found = compare_with_stored(self.ledger, record)
            if found == ALREADY and record.game_id in ours:
                found = IMPORTED
            return [Outcome(record.game_id, found, line=line)]
        except RecordConflict as conflict:
            return [Outcome(record.game_id, CONFLICT, str(conflict), line)]
        except (GameNotFound, RecordError, RuleViolation) as error:
            return [Outcome(record.game_id, CONFLICT, f"conflict: {error}", line)]

    def _save_one(self, record: GameRecord, game: Game, line: int | None) -> list[Outcome]:
        if self._saved(game):
            return [Outcome(record.game_id, IMPORTED, line=line)]
        return self._compare(record, line)


def import_record(ledger: Ledger, record: GameRecord) -> Outcome:
    """Import one parsed record (the ingest API and tests use this directly)."""
    importer = Importer(ledger, batch=1)
    outcomes = importer.add(record) or importer.flush()
    return outcomes[0]


def import_lines(
    ledger: Ledger,
    lines: Iterable[str | bytes],
    *,
    batch: int = BATCH,
    on_outcome: Callable[[Outcome], None] | None = None,
    follow: bool = True,
    warn: Callable[[str], None] | None = None,
    progress: bool = False,
) -> ImportSummary:
    """Import every record of a JSON Lines stream; returns the counts and the failures."""
    with bulk_work():
        return _import_lines(ledger, lines, batch, on_outcome, follow, warn, progress)


def _import_lines(ledger, lines, batch, on_outcome, follow, warn, progress) -> ImportSummary:
    summary = ImportSummary()
    projector = None
    if follow:
        from replays.readmodels.projections import SavedGames

        projector = SavedGames(ledger)
    importer = Importer(ledger, batch=batch, projector=projector)
    if hasattr(lines, "readline"):  # a file: never read an unbounded line into memory
        lines = bounded_lines(lines)

    def report(outcomes: list[Outcome]) -> None:
        for outcome in outcomes:
            summary.add(outcome)
            if on_outcome is not None:
                on_outcome(outcome)

    for number, parsed in read_records(lines):
        if isinstance(parsed, RecordError):
            report([Outcome(parsed.game_id, REJECTED, parsed.detail, number)])
            continue
        report(importer.add(parsed, number))
    report(importer.flush())
    if follow and summary.imported:
        from replays.store.followers import catch_up_followers

        summary.followers = catch_up_followers(ledger.url, warn, progress=progress)
        if summary.followers.get("projected") is not None:
            summary.followers["projected"] += projector.projected
    return summary


def progress_wanted(stream=sys.stderr) -> bool:
    """Progress bars only on a terminal: piped output and CI logs stay clean."""
    return hasattr(stream, "isatty") and stream.isatty()


__all__ = [
    "ALREADY",
    "CONFLICT",
    "IMPORTED",
    "REJECTED",
    "GameExists",
    "ImportSummary",
    "Importer",
    "Outcome",
    "build_game",
    "check_shuffle",
    "import_lines",
    "import_record",
]
