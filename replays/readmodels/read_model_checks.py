"""The read models checked against the events: every 13-card game's rows in ``games``,
``player_results``, ``moves`` and ``ledger_entries`` (its settlement lines) recomputed
from its stored events and compared field by field with what is stored.

The rows are rebuilt with the projection's own row builders (:mod:`replays.readmodels.projections`),
so this check and the projection cannot drift apart. Only events the projection has
reached (up to its position, read in the same snapshot as the rows) are replayed: a
game the projection has not caught up with yet is not a finding.

Findings are :class:`~replays.integrity.report.Problem` of kind ``read_model`` (the rows
differ, are missing or have no events) or ``unreadable`` (an event that cannot be decoded
or replayed, so its game's rows cannot be checked), each naming the game; for example
``player_results[p2].amount: stored 12.00, from events 10.00``.
"""

from __future__ import annotations

import itertools
import re
import uuid
import weakref
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from functools import lru_cache
from operator import itemgetter
from types import NoneType
from typing import Any

import sqlalchemy as sa
from eventsourcing.persistence import Notification

from domain import variants
from domain.timestamps import parse_time, z_text_or_time  # noqa: F401 (tests read times so)
from domain.variant_base import MOVE_AT, MOVE_COLUMNS, SETTLEMENT_KIND, GameRows, move_of_fields
from replays.disputes.projection import adjustment_rows
from replays.integrity.replaying import replayer_for
from replays.integrity.report import UNREADABLE, Report
from replays.integrity.snapshot_checks import report_mismatch, snapshot_mismatch, snapshots_of
from replays.integrity.store import (
    StoredRow,
    _stored,
    game_id_from_state,
    has_table,
    id_param,
    plain_rows,
)
from replays.readmodels.bulk import bind_processors, sqlite_datetime_text, stored_forms
from replays.readmodels.projections import ENTRIES, GAMES, MOVES, NAME, RESULTS
from replays.store.db import as_stored
from replays.store.decoding import shorten
from replays.store.schema import DISPUTE_EVENTS, SNAPSHOTS_TABLE

READ_MODEL = "read_model"
_MOVE_KEY = itemgetter(MOVE_COLUMNS.index("move_index"))
BATCH_GAMES = 200
# Row keys: what names a row of each table within its game.
_ENTRY_KEY = ("kind", "line")
_IGNORED = {"id"}


@dataclass
class Expected:
    """The rows one game's events give."""

    game_id: str
    game: dict[str, Any]
    results: dict[str, dict] = field(default_factory=dict)
    entries: dict[tuple, dict] = field(default_factory=dict)
    # The event the settlement rows (results, settlement lines) come from, so a finding
    # on them names it (a move row carries its own event, in its ``version`` column).
    settled_version: int | None = None
    replayed_all: bool = True  # see expected_rows
    # The move rows as their values (``Variant.move_fields``), where the variant gives
    # them: on SQLite most games' moves are settled in their stored form, made straight
    # from these, and :attr:`moves` makes the rows' dicts only when something asks.
    move_fields: list[tuple] | None = None
    _moves: dict[int, dict] | None = field(default=None, repr=False)

    @property
    def moves(self) -> dict[int, dict]:
        """The move rows by their ``move_index``."""
        if self._moves is None:
            rows = map(move_of_fields, self.move_fields or ())
            self._moves = {row["move_index"]: row for row in rows}
        return self._moves

    @moves.setter
    def moves(self, rows: dict[int, dict]) -> None:
        self._moves, self.move_fields = rows, None


class Unreplayable(Exception):
    """A game's events cannot be decoded or replayed; ``version`` says which one."""

    def __init__(self, version: int, message: str):
        super().__init__(message)
        self.version = version


_POSITIONS = sa.table("projection_positions", sa.column("name"), sa.column("position"))
_WHERE_POSITION = f"projection_positions name={NAME!r}"


def _stored_position(connection: sa.Connection) -> Any:
    """The projection's position as stored (read raw), or None where it has no row."""
    query = sa.select(_POSITIONS.c.position).where(_POSITIONS.c.name == NAME)
    return connection.execute(query).scalar_one_or_none()


def _readable(position: Any) -> bool:
    return type(position) is int and position >= 0


def _last_event(connection: sa.Connection, events: str) -> int:
    if not has_table(connection, events):
        return 0
    last = connection.execute(sa.text(f"SELECT max(id) FROM {events}")).scalar()
    return last if type(last) is int else 0


def _has_read_rows(connection: sa.Connection) -> bool:
    return connection.execute(sa.select(GAMES.c.game_id).limit(1)).first() is not None


@dataclass(frozen=True)
class Reach:
    """How far the read rows are checked: ``position``, the notification id up to which
    the projection wrote them, as stored where it can be; ``finding``, what is wrong
    with the stored one (None: nothing)."""

    position: int
    finding: str | None = None
    # Games with read rows whose events all come after a position moved back: their rows
    # were not checked (the finding says why), and they are not games with no events.
    beyond: frozenset[str] = frozenset()


def projection_reach(connection: sa.Connection, events: str = "ledger_events") -> Reach:
    """The projection's position against the events. One that cannot be (no row, a value
    of the wrong kind or below 0, where read rows are stored) is a finding, and the read
    rows are checked against every event instead; one behind read rows it cannot have
    written (of games whose events all come after it: the projection writes its rows and
    its position in one transaction) or beyond the last event is a finding. Behind it,
    the rows of the games past it are not checked (:attr:`Reach.beyond`), as in a lag."""
    stored = _stored_position(connection)
    if _readable(stored):
        last = _last_event(connection, events)
        if stored > last:
            return Reach(
                stored,
                f"{_WHERE_POSITION}: position {stored} lies beyond the last stored event "
                f"(row {last}): the projection cannot have read events that are not "
                "stored; it was changed outside the projection, or events at the end "
                "were deleted",
            )
        beyond = _rows_beyond(connection, stored, events) if stored < last else []
        if not beyond:
            return Reach(stored)
        shown = ", ".join(beyond[:5]) + (f" and {len(beyond) - 5} more" if len(beyond) > 5 else "")
        return Reach(
            stored,
            f"{_WHERE_POSITION}: position {stored} is behind the read rows of "
            f"{len(beyond)} game(s) whose events all come after it ({shown}; the events "
            f"end at stored row {last}), although the projection writes its rows and its "
            "position together: it was moved back, or those rows were written outside "
            "the projection; their rows were not checked",
            frozenset(beyond),
        )
    if not _has_read_rows(connection):
        return Reach(0)
    last = _last_event(connection, events)
    if stored is None:  # no row, or one hidden for a value of the wrong kind (named)
        value = "no readable position (its row was deleted or holds a value of the wrong kind)"
    else:
        value = f"position {shorten(stored, 40)} is not a notification id"
    return Reach(
        last,
        f"{_WHERE_POSITION}: {value}, although read rows are stored: it was changed "
        "outside the projection; the read rows were checked against every event (to "
        f"stored row {last})",
    )


def projection_position(connection: sa.Connection, events: str = "ledger_events") -> int:
    """The notification id the read rows are checked up to (:func:`projection_reach`)."""
    return projection_reach(connection, events).position


def _rows_beyond(connection: sa.Connection, position: int, events: str) -> list[str]:
    """The games with read rows whose events all come after ``position`` (by their first
    events: what names a game), sorted."""
    firsts = connection.execute(
        sa.text(f"SELECT state FROM {events} WHERE id > :position AND originator_version = 1"),
        {"position": position},
    )
    later = {game_id_from_state(state) for (state,) in firsts if isinstance(state, bytes)}
    later.discard(None)
    if not later:
        return []
    stored = {game_id for (game_id,) in connection.execute(sa.select(GAMES.c.game_id))}
    return sorted(later & stored)


# -- rebuilding one game's rows ----------------------------------------------------------------
def _unreplayable(row: StoredRow, error: Exception) -> Unreplayable:
    return Unreplayable(
        row.version,
        f"stored row {row.notification_id} ({row.topic}) cannot be replayed: "
        f"{type(error).__name__}: {error}",
    )


@dataclass
class SnapshotsToCheck:
    """One game's stored snapshots (versions ascending), each compared with the game as the
    replay for its read rows passes its version: the comparison of
    :mod:`replays.integrity.snapshot_checks`, without rebuilding the game a second time.
    ``done`` is False when the replay did not reach every snapshot (events beyond the
    projection, a replay that stopped): the caller checks those the usual way."""

    stored: list[Any]
    mismatch: tuple[int, str] | None = None
    done: bool = False


def expected_rows(
    ledger,
    rows: list[StoredRow],
    *,
    reach: int | None = None,
    snapshots: SnapshotsToCheck | None = None,
    watch=None,
) -> Expected:
    """Replay one game's stored events (versions 1..n, in order) into the rows the
    projection would have written for them, with its variant's own row builders.

    One replay serves the other per-game checks too: the read rows come from the first
    ``reach`` rows (default all: what the projection has reached), and the replay goes on
    through the rest for ``snapshots`` (compared as their versions pass) and ``watch``
    (called as ``watch(row, event, game)`` once each event is applied; the deal check).
    ``Expected.replayed_all`` says whether the replay got to the last row: an event past
    ``reach`` that cannot be replayed is not a read-model finding, so it only stops there.
    """
    variant = variants.for_topic(rows[0].topic) if rows else None
    if variant is None:
        raise Unreplayable(1, "the game has no first event of a known variant")
    reach = len(rows) if reach is None else reach
    replayer = replayer_for(ledger.mapper)
    decode, apply = replayer.event, replayer.apply
    move_fields = variant.move_fields  # None: the move rows as dicts
    closing_rows, audits_after = variant.closing_rows, variant.audits_after
    closing_events = variant.closing_events  # None: every event may close the game
    # Whether an event of a type is one of ``closing_events``, by its type: an isinstance
    # of these event classes (their metaclass is not ``type``) costs several times a
    # lookup, and every event is asked.
    closes = _CLOSING_TYPES.setdefault(closing_events, {})
    auditor = variant.audit_watch()
    game = None
    events, moves, closing = [], [], GameRows()
    audit, settled_version = False, None
    pending = snapshots.stored if snapshots is not None else ()
    compared = 0
    # The version of the next snapshot to compare; None once none is left to compare (all
    # compared, or one found to differ): most events are no snapshot's.
    due = pending[0].originator_version if pending else None
    expected: Expected | None = None
    replayed_all = True
    originator, originator_id = None, None
    for index, row in enumerate(rows):
        if index == reach:
            expected = _finish(
                variant, game, events, moves, closing, audit, settled_version, rows, auditor, index
            )
        within = index < reach
        try:
            if row.originator != originator:  # a game's rows share one id: made once
                originator, originator_id = row.originator, row.originator_id
            if row.defect is not None:
                raise Unreplayable(row.version, f"stored row {row.notification_id}: {row.defect}")
            event = decode(originator_id, row.version, row.topic, row.state)
            if within:
                if move_fields is not None:
                    move = move_fields(game, event, _read_time)
                else:
                    move = variant.move_row(game, event)
                if move is not None:
                    moves.append(move)
                if auditor is not None:
                    auditor.before(game, event)
            game = apply(event, game)
            if within:
                events.append(event)
                kind = type(event)
                ends = closes.get(kind)
                if ends is None:
                    ends = closes[kind] = closing_events is None or isinstance(
                        event, closing_events
                    )
                if ends:
                    closed = closing_rows(game, event)
                    if closed is not None:
                        settled_version = row.version  # results and entries name this event
                        closing.game.update(closed.game)
                        closing.results += closed.results
                        closing.entries += closed.entries
                    audit = audit or audits_after(game, event)
        except Unreplayable:
            if within:
                raise
            replayed_all = False
            break
        except Exception as error:  # any way an event fails to decode or apply is a finding
            if within:
                raise _unreplayable(row, error) from None
            replayed_all = False
            break
        if due is not None and row.version == due:
            while (
                compared < len(pending)
                and snapshots.mismatch is None
                and pending[compared].originator_version == row.version
            ):
                why = snapshot_mismatch(ledger, pending[compared], game)
                if why is not None:
                    snapshots.mismatch = (row.version, why)
                compared += 1
            left = compared < len(pending) and snapshots.mismatch is None
            due = pending[compared].originator_version if left else None
        if watch is not None:
            watch(row, event, game)
    if expected is None:
        expected = _finish(
            variant, game, events, moves, closing, audit, settled_version, rows, auditor, len(rows)
        )
    if snapshots is not None:
        snapshots.done = replayed_all and (
            snapshots.mismatch is not None or compared == len(pending)
        )
    expected.replayed_all = replayed_all
    return expected


# By a variant's ``closing_events``: whether each event type met is one of them.
_CLOSING_TYPES: dict[tuple[type, ...] | None, dict[type, bool]] = {}


def _finish(
    variant, game, events, moves, closing, audit, settled_version, rows, auditor, upto
) -> Expected:
    """The rows of the game as it stands after its first ``upto`` rows."""
    if game is None:
        raise Unreplayable(1, "the game has no first event")
    columns = {**variant.started_row(game), **variant.progress_row(game), **closing.game}
    if audit:
        try:
            if auditor is not None:
                columns.update(auditor.columns(game))
            else:
                columns.update(variant.audit_columns(game, events))
        except Exception as error:  # the audit replays the rules: a failure is a finding
            raise _unreplayable(rows[upto - 1], error) from None
    expected = Expected(game.game_id, columns)
    expected.results = {r["player"]: r for r in closing.results}
    expected.entries = {tuple(e[k] for k in _ENTRY_KEY): e for e in closing.entries}
    expected.settled_version = settled_version
    if variant.move_fields is not None:
        expected.move_fields = moves
    else:
        expected.moves = {m["move_index"]: m for m in moves}
    return expected


# A move's ``at`` as ``Variant.move_fields`` gives it to verify: text in
# :func:`format_time`'s form kept as it is (its stored form is made from it), anything
# else read as the projection reads it (the same time, or the same error).
_read_time = z_text_or_time


# -- comparing -------------------------------------------------------------------------------
def _normal(value: Any) -> Any:
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value
    if isinstance(value, tuple):
        return [_normal(v) for v in value]
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


def _same(stored: Any, computed: Any) -> bool:
    if type(stored) is type(computed) and stored == computed:
        # Equal values of one type stay equal once normalised (most fields, most games).
        return True
    stored, computed = _normal(stored), _normal(computed)
    if isinstance(stored, Decimal) or isinstance(computed, Decimal):
        if stored is None or computed is None:
            return stored is computed
        try:
            return Decimal(str(stored)) == Decimal(str(computed))
        except InvalidOperation:
            return False
    if isinstance(stored, date) and isinstance(computed, date):
        return stored == computed
    return stored == computed


def _show(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


_PICKERS: dict[tuple, Any] = {}


def _picker(computed: dict, stored: dict):
    """The compared columns of a pair of rows (those computed, stored and not ignored) as
    one ``itemgetter``, with the places among them where ``computed`` holds a ``datetime``
    or None (the events' times, see :func:`_rows_equal`); made once per pair of column lists;
    None for fewer than two columns."""
    key = (tuple(computed), tuple(stored))
    try:
        return _PICKERS[key]
    except KeyError:
        pass
    columns = [c for c in computed if c not in _IGNORED and c in stored]
    if len(_PICKERS) > 256:  # the column lists of a few tables: never many
        _PICKERS.clear()
    # A time missing from this first row (None) may be there in the next.
    times = tuple(i for i, c in enumerate(columns) if type(computed[c]) in (datetime, NoneType))
    found = _PICKERS[key] = (itemgetter(*columns), times) if len(columns) > 1 else None
    return found


def _rows_equal(stored: dict, computed: dict) -> bool:
    """True when every compared column is equal and of one type: what :func:`_compare_row`
    finds column by column, in two comparisons of tuples (most rows of most games). False
    says only that the columns must be read one by one."""
    picker = _picker(computed, stored)
    if picker is None:
        return False
    pick, times = picker
    found, values = pick(stored), pick(computed)
    if found == values and tuple(map(type, found)) == tuple(map(type, values)):
        return True
    if not times:
        return False
    # The events give UTC times with their zone; a database that keeps times without
    # one hands them back naive (SQLite: every move row's ``at``). With those times as
    # :func:`_same` reads them (naive UTC), an equal row is settled here too. Only the
    # places where the table's first row had a time (or nothing) are looked at: a time
    # elsewhere leaves the row to the column-by-column reading.
    values = list(values)
    for place in times:
        value = values[place]
        if type(value) is datetime and value.tzinfo is not None:
            values[place] = value.astimezone(UTC).replace(tzinfo=None)
    return found == tuple(values) and tuple(map(type, found)) == tuple(map(type, values))


def _compare_row(
    report: Report,
    game_id: str,
    where: str,
    stored: dict,
    computed: dict,
    event: int | None = None,
) -> None:
    if _rows_equal(stored, computed):
        return
    for column, value in computed.items():
        if column in _IGNORED or column not in stored:
            continue
        found = stored[column]
        if (found is value or found == value) and type(found) is type(value):
            continue  # _same's first test, without the call
        if not _same(found, value):
            report.add(
                READ_MODEL,
                f"{where}.{column}: stored {_show(found)}, from events {_show(value)}",
                game_id,
                event,
            )


def _no_event(row: dict) -> int | None:
    return None


def _row_event(row: dict) -> int | None:
    """The event a move row was projected from (its ``version`` column)."""
    version = row.get("version")
    return version if isinstance(version, int) else None


def _compare_table(
    report: Report,
    game_id: str,
    table: str,
    stored: dict,
    computed: dict,
    label,
    event_of=_no_event,
) -> None:
    """Rows keyed alike, field by field; ``event_of(row)`` names the event a row comes
    from where one does (so that a resealed edit can be named: replays.integrity.locate)."""
    unsettled = getattr(stored, "unsettled", None)  # rows compared in their stored form (SQLite)
    for key in computed if unsettled is None else unsettled(computed):
        row = computed[key]
        found = stored.get(key)
        if found is not None and _rows_equal(found, row):
            continue  # the row's name and event are needed only to report it
        where = f"{table}[{label(key)}]"
        if found is None:
            report.add(READ_MODEL, f"{where}: missing, the events give one", game_id, event_of(row))
        else:
            _compare_row(report, game_id, where, found, row, event_of(row))
    # In the order the rows were read: a set's order would change with the process's
    # string hashing, and the same store would give a report in another order.
    for key in [key for key in stored if key not in computed]:
        report.add(
            READ_MODEL,
            f"{table}[{label(key)}]: stored, but the game's events give no such row",
            game_id,
            event_of(stored[key]),
        )


@dataclass
class _StoredRows:
    games: dict[str, dict] = field(default_factory=dict)
    results: dict[str, dict] = field(default_factory=dict)
    moves: dict[str, dict] = field(default_factory=dict)
    entries: dict[str, dict] = field(default_factory=dict)
    # Per game, the settlement lines' keys stored more than once: ``ledger_entries`` has
    # no key of its own but an id, so an insider's copy of a line is a row of its own
    # (a payout paid twice), which the dicts above would read as one.
    twice: dict[str, list] = field(default_factory=dict)


def _dicts(connection: sa.Connection, query) -> Iterator[dict]:
    """The rows as dicts (``Row._asdict`` costs about as much again as the read)."""
    result = connection.execute(query)
    keys = list(result.keys())
    for row in result:
        yield dict(zip(keys, row, strict=True))


def _sqlite_dicts(
    connection: sa.Connection, table: sa.Table, game_ids: list[str], extra: str = ""
) -> Iterator[dict]:
    """``SELECT *`` of a read-model table for some games, straight from SQLite's cursor,
    each value passed through its column's own SQLAlchemy result processor (so the values
    are the ones :func:`_dicts` gives: ``tests/test_read_model_verify.py`` compares them).
    SQLAlchemy's rows cost twice the read itself here."""
    rows = _SqliteTable(connection, table)
    return map(rows.processed, rows.select(connection, game_ids, extra))


class _SqliteTable:
    """A read-model table read from SQLite's cursor: each stored row kept as the driver
    gives it, made into the dict :func:`_dicts` would give only when it is looked at
    (:meth:`processed`), since most rows are settled in their stored form (:meth:`same`).

    A processor's answer is kept per stored value, except for JSON (a list, which may be
    changed): money and times repeat within a batch of games, and each money value costs
    a few Decimal operations."""

    def __init__(self, connection: sa.Connection, table: sa.Table) -> None:
        dialect = connection.dialect
        self.table, self.dialect = table, dialect
        self.names, self.places, processors, self.binders = _columns_of(table, dialect)
        # The answers kept are this reading's own (a batch of games).
        self.processors = [(i, process, {} if kept else None) for i, process, kept in processors]
        self.plans: dict[tuple, Any] = {}
        self.guards = _written_guards(table, self.binders)

    def select(
        self, connection: sa.Connection, game_ids: list[str], extra: str = ""
    ) -> list[tuple]:
        quote = self.dialect.identifier_preparer.quote
        marks = ",".join("?" * len(game_ids))
        query = (
            f"SELECT {', '.join(quote(n) for n in self.names)} FROM {quote(self.table.name)} "
            f"WHERE {quote('game_id')} IN ({marks}){extra}"
        )
        return connection.connection.dbapi_connection.execute(query, game_ids).fetchall()

    def processed(self, raw: tuple) -> dict:
        values = list(raw)
        for index, process, seen in self.processors:
            value = values[index]
            # Only ints and texts are kept: 1, 1.0 and True are one key of a dict.
            kind = type(value)
            if seen is None or (kind is not int and kind is not str):
                values[index] = process(value)
                continue
            try:
                values[index] = seen[value]
            except KeyError:
                values[index] = seen[value] = process(value)
        return dict(zip(self.names, values, strict=True))

    def _plan(self, computed: dict):
        """How to put ``computed``'s compared columns (those :func:`_picker` compares)
        in their stored form: the stored row's places, the computed row's keys, and the
        stored-form function of each column that has one; None where a column has no
        stored form this check trusts (its rows are then read as dicts)."""
        key = tuple(computed)
        try:
            return self.plans[key]
        except KeyError:
            pass
        columns = [c for c in key if c not in _IGNORED and c in self.places]
        plan = None
        if len(columns) > 1 and all(self.binders[c] is not _UNTRUSTED for c in columns):
            bound = tuple((i, self.binders[c]) for i, c in enumerate(columns) if self.binders[c])
            places = [self.places[c] for c in columns]
            plan = (itemgetter(*places), itemgetter(*columns), bound)
        if len(self.plans) > 64:  # the column lists of one table: never many
            self.plans.clear()
        self.plans[key] = plan
        return plan

    def same(self, raw: tuple, computed: dict) -> bool:
        """True when the stored row holds, value for value and of the same type, what
        ``computed``'s columns are stored as (the bind processors the projection writes
        with). Then the row read back is equal to ``computed`` as :func:`_same` compares
        (each stored form is one the column's reading turns back into an equal value),
        so :func:`_compare_row` would find nothing. False says only that the row must be
        read as a dict and compared column by column."""
        try:
            plan = self.plans[tuple(computed)]  # the plan made for the table's first row
        except KeyError:
            plan = self._plan(computed)
        if plan is None:
            return False
        pick_stored, pick_computed, bound = plan
        values = pick_computed(computed)
        if bound:
            values = list(values)
            if not _in_stored_form(values, bound):
                return False
            values = tuple(values)
        found = pick_stored(raw)
        return found == values and tuple(map(type, found)) == tuple(map(type, values))

    def move_forms(self, fields: list[tuple], game_id: str | None = None) -> list[tuple] | None:
        """Each of ``fields`` (a move row's values in ``MOVE_COLUMNS`` order) as
        :meth:`written` gives its row, made straight from the values: a time kept as its
        ``...Z`` text (``read_model_checks._read_time``) put in SQLite's DATETIME text
        without a datetime. None when the table's columns are not those, or a row is one
        :meth:`written` would not trust or a value cannot be bound. With ``game_id``, each
        form without its first value (the rows as :func:`_moves_as_json` writes them), and
        None as well when a row is another game's."""
        if self.guards is None or tuple(self.names) != MOVE_COLUMNS:
            return None
        zoned, documents = self.guards
        if zoned != ["at"]:
            return None
        processed = bind_processors(self.table, self.dialect)
        if documents != [_MOVE_GROUPS] or [place for place, _ in processed] != _MOVE_BOUND:
            return None  # not the table the projection defines: its rows compared as dicts
        return _move_forms(fields, game_id, *(process for _, process in processed))

    def written(self, rows: list[dict]) -> list[tuple | None] | None:
        """Each of ``rows`` as the projection stores it (:func:`bulk.stored_forms`, the
        writer's own binding), in the table's column order, so that a stored row equal to
        it is settled by one comparison of tuples; None in place of a row whose stored form
        may read back as a value :func:`_same` finds different (a time in another zone
        than UTC, JSON with a NaN), and None for all when the rows do not cover the table's
        columns or cannot be bound (then :meth:`same` settles them one by one).

        An equal stored row reads back equal: each trusted column's stored form reads back
        as the value bound (money as the same Decimal, UTC times as their naive fields),
        and values of the plain columns that are equal stay equal in :func:`_same`."""
        if self.guards is None or not rows:
            return None
        try:
            found = stored_forms(self.table, self.dialect, rows)
        except (ValueError, TypeError, ArithmeticError, KeyError):
            return None  # a value the writer refuses: compared column by column
        if found[0] != self.names:
            return None
        zoned, documents = self.guards
        forms: list[tuple | None] = found[1]
        if zoned or documents:
            for index, row in enumerate(rows):
                for name in zoned:
                    value = row[name]
                    if value is not None and (
                        type(value) is not datetime or value.tzinfo not in (None, UTC)
                    ):
                        forms[index] = None
                for place in documents:
                    text = forms[index][place] if forms[index] is not None else None
                    if text is not None and ("NaN" in text or "Infinity" in text):
                        forms[index] = None
        return forms


def _in_stored_form(values: list, bound) -> bool:
    """``values`` with each of ``bound``'s places (place, stored-form function) put in its
    stored form, None left as it is; False where a value has none (:data:`_NO_FORM`)."""
    for index, store in bound:
        value = values[index]
        if value is not None:
            value = store(value)
            if value is _NO_FORM:
                return False
            values[index] = value
    return True


def _written_guards(table: sa.Table, binders: dict) -> tuple[list[str], list[int]] | None:
    """For :meth:`_SqliteTable.written`: the table's time columns (each row's time checked
    for its zone) and the places of its JSON columns (each text checked for NaN), or None
    when a column's stored form is not one the comparison of tuples can trust."""
    from replays.readmodels.models import Fixed

    zoned, documents = [], []
    for place, column in enumerate(table.c):
        binder = binders[column.name]
        if binder is None or isinstance(column.type, Fixed):
            continue
        if binder is _UNTRUSTED:
            return None
        if isinstance(column.type, sa.DateTime):
            zoned.append(column.name)
        elif isinstance(column.type, sa.JSON):
            documents.append(place)
        else:
            return None  # dates, booleans: their bound forms accept other kinds of value
    return zoned, documents


_MOVE_GROUPS = MOVE_COLUMNS.index("groups")
# The places of MOVE_COLUMNS the projection's writer binds through a processor: the
# groups (JSON), the point value (money) and the time.
_MOVE_BOUND = [_MOVE_GROUPS, MOVE_COLUMNS.index("point_value"), MOVE_AT]


def _move_forms(fields: list[tuple], game_id: str | None, document, money, moment):
    """:meth:`_SqliteTable.move_forms` for the table as the projection defines it (its
    bound places :data:`_MOVE_BOUND`, the groups its one JSON column), each row in one
    tuple display (every move of every game verify replays comes through here)."""
    forms: list[tuple] = []
    append = forms.append
    # Most of a game's moves hold the very Decimal of the move before (the game's point
    # value): its stored form is made once for them (a Decimal is immutable).
    last_value = last_form = None
    try:
        for row in fields:
            # A row's values by name, or ValueError: not a row of the table (compared as dicts).
            game, index, version, player, kind, card, source, groups, played, value, at = row
            if groups is not None:
                groups = document(groups)
                if "NaN" in groups or "Infinity" in groups:
                    return None
            if value is not None:
                if value is not last_value:
                    last_value, last_form = value, money(value)
                value = last_form
            if at is not None:
                if type(at) is str:
                    at = sqlite_datetime_text(at)
                elif type(at) is not datetime or at.tzinfo not in (None, UTC):
                    return None
                else:
                    at = moment(at)
            if game_id is None:
                append(
                    (game, index, version, player, kind, card, source, groups, played, value, at)
                )
            elif game != game_id:
                return None  # a row of another game: the dicts say
            else:
                append((index, version, player, kind, card, source, groups, played, value, at))
    except (ValueError, TypeError, ArithmeticError):
        return None  # a value the writer refuses: compared column by column
    return forms


_COLUMNS: weakref.WeakKeyDictionary[Any, dict[sa.Table, tuple]] = weakref.WeakKeyDictionary()


def _columns_of(table: sa.Table, dialect) -> tuple:
    """A table's column names, their places, result processors (with whether an answer
    may be kept per stored value) and stored forms on ``dialect``: made once per table and
    dialect, not for each batch of games (a few milliseconds a table, which each of the
    ``--jobs`` ranges paid again). Processors and stored forms are pure functions of the
    value (a stored form's memo is bounded)."""
    by_table = _COLUMNS.get(dialect)
    if by_table is None:
        by_table = _COLUMNS[dialect] = {}
    found = by_table.get(table)
    if found is not None:
        return found
    columns = list(table.c)
    names = [column.name for column in columns]
    places = {name: index for index, name in enumerate(names)}
    processors = []
    binders: dict[str, Any] = {}
    for index, column in enumerate(columns):
        kind = as_stored(column.type)
        process = kind.dialect_impl(dialect).result_processor(dialect, None)
        if process is not None:
            processors.append((index, process, not isinstance(kind, sa.JSON)))
        binders[column.name] = _stored_form(kind, dialect)
    found = by_table[table] = (names, places, tuple(processors), binders)
    return found


_NO_FORM = object()  # a value whose stored form is not trusted: the row is read as a dict
_UNTRUSTED = object()  # a column type without a trusted stored form
# How SQLAlchemy keeps a time on SQLite unless told otherwise (``2025-03-18 13:59:41.000000``).
_DATETIME = (
    "%(year)04d-%(month)02d-%(day)02d %(hour)02d:%(minute)02d:%(second)02d.%(microsecond)06d"
)


def _stored_form(kind: sa.types.TypeEngine, dialect) -> Any:
    """For a column type, None (values are stored as they are: texts, integers), a
    function giving a value's stored form (or :data:`_NO_FORM`), or :data:`_UNTRUSTED`.

    A stored form is trusted only where reading it back gives a value :func:`_same`
    finds equal to the one bound: money (a scaled integer read back as the same Decimal),
    times in UTC (SQLite keeps a time's wall-clock fields and no offset, and the
    comparison reads both sides as naive UTC: an aware time is put in UTC first), dates,
    booleans, and JSON made only of lists, texts, integers, booleans and None (which JSON
    gives back as they were)."""
    from sqlalchemy.dialects.sqlite import DATETIME

    from replays.readmodels.bulk import _memo
    from replays.readmodels.models import Fixed

    implementation = kind.dialect_impl(dialect)
    bind = implementation.bind_processor(dialect)
    if bind is None:
        # Stored as it is, and trusted only where it is read back as it is too.
        return None if implementation.result_processor(dialect, None) is None else _UNTRUSTED
    if isinstance(kind, Fixed):
        return _guarded(_memo(bind), (Decimal, int))
    if isinstance(kind, sa.DateTime):
        if type(implementation) is not DATETIME or implementation._storage_format != _DATETIME:
            return _UNTRUSTED

        def moment(value: Any) -> Any:
            if type(value) is not datetime:
                return _NO_FORM
            zone = value.tzinfo
            if zone is None:
                # SQLite's DATETIME text: the fields with six places of microseconds.
                return value.isoformat(" ", "microseconds")
            if zone is not UTC:
                value = value.astimezone(UTC)
            # The same text with the zone's "+00:00" after it, cut off (cheaper than
            # making the naive time first: every move row has a time).
            return value.isoformat(" ", "microseconds")[:-6]

        return moment
    if isinstance(kind, sa.Date):
        return _guarded(bind, (date,))
    if isinstance(kind, sa.Boolean):
        return _guarded(bind, (bool,))
    if isinstance(kind, sa.JSON):

        def document(value: Any) -> Any:
            return bind(value) if _plain_json(value) else _NO_FORM

        return document
    return _UNTRUSTED


def _guarded(bind, kinds: tuple[type, ...]):
    def store(value: Any) -> Any:
        if type(value) not in kinds:
            return _NO_FORM
        try:
            return bind(value)
        except (ValueError, TypeError, ArithmeticError):
            return _NO_FORM

    return store


def _plain_json(value: Any) -> bool:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True
    # A list of such values (a game's players, a meld's cards) in one test of their types.
    return kind is list and (
        _FLAT_JSON.issuperset(map(type, value)) or all(map(_plain_json, value))
    )


_FLAT_JSON = frozenset((str, int, bool, NoneType))


class _LazyRows(dict):
    """A dict whose values are made when looked up (its ``__getitem__``), ``get``,
    ``values`` and ``items`` included."""

    def get(self, key, default=None):
        try:
            return self[key]
        except KeyError:
            return default

    def values(self):
        return [self[key] for key in self]

    def items(self):
        return [(key, self[key]) for key in self]


class _StoredTable(_LazyRows):
    """One game's rows of one table on SQLite, by their key, as the driver gave them:
    each made into its dict (:meth:`_SqliteTable.processed`) only when looked at."""

    def __init__(self, reader: _SqliteTable) -> None:
        super().__init__()
        self.reader = reader
        self.made: dict = {}

    def __getitem__(self, key):
        try:
            return self.made[key]
        except KeyError:
            found = self.made[key] = self.reader.processed(super().__getitem__(key))
            return found

    def same(self, key, computed: dict) -> bool:
        raw = dict.get(self, key)
        return raw is not None and self.reader.same(raw, computed)

    def unsettled(self, computed: dict) -> list:
        """The keys of ``computed`` whose rows :meth:`same` does not settle (a table's
        rows in one call: a game has a row per move)."""
        same, stored = self.reader.same, dict.get
        forms = self.reader.written(list(computed.values()))
        if forms is None:
            return [
                key
                for key, row in computed.items()
                if (raw := stored(self, key)) is None or not same(raw, row)
            ]
        # Most games: every stored row is its written form, found in one comparison of
        # lists (a missing row, None, is equal to no form).
        if list(map(stored, itertools.repeat(self), computed)) == forms:
            return []
        return [
            key
            for (key, row), form in zip(computed.items(), forms, strict=True)
            if (raw := stored(self, key)) is None or (raw != form and not same(raw, row))
        ]

    def holds(self, fields: list[tuple]) -> bool:
        """Whether the game's stored move rows are, one for one, ``fields`` (each row's
        values in the table's column order, ``Variant.move_fields``) in their stored form
        (:meth:`_SqliteTable.move_forms`), and no other rows: then :func:`_compare_table`
        would find nothing. False says only that the rows must be compared as dicts."""
        if len(fields) != dict.__len__(self):
            return False
        forms = self.reader.move_forms(fields)
        if forms is None:
            return False
        keys = list(map(_MOVE_KEY, fields))
        if len(set(keys)) != len(keys):
            return False  # two rows under one key: the dicts say which is compared
        return list(map(dict.get, itertools.repeat(self), keys)) == forms


def _stored_rows(connection: sa.Connection, game_ids: list[str]) -> _StoredRows:
    found = _StoredRows()
    if connection.dialect.name == "sqlite":
        _sqlite_stored_rows(connection, game_ids, found)
        return found
    for row in _table_rows(connection, GAMES, game_ids):
        found.games[row["game_id"]] = row
    for row in _table_rows(connection, RESULTS, game_ids):
        found.results.setdefault(row["game_id"], {})[row["player"]] = row
    for row in _table_rows(connection, MOVES, game_ids):
        found.moves.setdefault(row["game_id"], {})[row["move_index"]] = row
    for row in _table_rows(connection, ENTRIES, game_ids, without_disputes=True):
        lines, key = found.entries.setdefault(row["game_id"], {}), tuple(row[k] for k in _ENTRY_KEY)
        if key in lines:
            found.twice.setdefault(row["game_id"], []).append(key)
        lines[key] = row
    return found


def _sqlite_stored_rows(
    connection: sa.Connection, game_ids: list[str], found, *, moves: bool = True
) -> None:
    """:func:`_stored_rows` on SQLite: the rows as the driver gives them, keyed as there
    (the key columns have no processor on SQLite: texts and integers as stored); the
    ``moves`` rows only with ``moves``."""
    games = _SqliteTable(connection, GAMES)
    found.games = _StoredTable(games)
    at = games.places["game_id"]
    for raw in games.select(connection, game_ids):
        dict.__setitem__(found.games, raw[at], raw)
    texts = None
    if moves:
        reader = _SqliteTable(connection, MOVES)
        texts = _moves_as_json(connection, reader, game_ids)
        if texts is not None:
            found.moves = _MovesByGame(connection, reader, texts)
    for table, keys, extra, into in (
        (RESULTS, ("player",), "", found.results),
        (MOVES, ("move_index",), "", found.moves if moves and texts is None else None),
        (ENTRIES, _ENTRY_KEY, ' AND "dispute_id" IS NULL', found.entries),
    ):
        if into is not None:
            twice = found.twice if table is ENTRIES else None
            _read_into(
                connection, _SqliteTable(connection, table), keys, game_ids, extra, into, twice
            )


def _read_into(
    connection, reader: _SqliteTable, keys, game_ids: list[str], extra: str, into, twice=None
):
    """The rows of ``game_ids`` in ``reader``'s table into ``into``: a :class:`_StoredTable`
    per game, keyed by the ``keys`` columns; a key met again goes into ``twice`` (per game)
    when given."""
    at = reader.places["game_id"]
    key_of = itemgetter(*(reader.places[k] for k in keys))
    for raw in reader.select(connection, game_ids, extra):
        game = into.get(raw[at])
        if game is None:
            game = into[raw[at]] = _StoredTable(reader)
        key = key_of(raw)
        if twice is not None and dict.__contains__(game, key):
            twice.setdefault(raw[at], []).append(key)
        dict.__setitem__(game, key, raw)


def _moves_as_json(connection, reader: _SqliteTable, game_ids: list[str]) -> dict | None:
    """Each game's ``moves`` rows as one JSON text, by game id: a JSON array of the rows,
    each the array of its values after ``game_id`` as stored (SQLite's ``json_array``
    keeps an integer a number, a text a string, NULL null). SQLite hands each column value
    to Python at about a thousand instructions (the driver lets go of the interpreter lock
    for each), and a game has a row of eleven per move; one text a game costs a tenth of
    that. None where the table's columns are not ``MOVE_COLUMNS`` or SQLite cannot write
    a value as JSON (a BLOB): the rows are then read as they are."""
    if tuple(reader.names) != MOVE_COLUMNS:
        return None
    quote = reader.dialect.identifier_preparer.quote
    query = (
        f"SELECT {quote('game_id')}, json_group_array(json_array("
        f"{', '.join(quote(n) for n in MOVE_COLUMNS[1:])})) FROM {quote(MOVES.name)} "
        f"WHERE {quote('game_id')} IN ({_marks(game_ids)}) GROUP BY {quote('game_id')}"
    )
    found = _json_rows(connection, query, game_ids)
    return None if found is None else dict(found)


def _marks(game_ids: list[str]) -> str:
    return ",".join("?" * len(game_ids))


def _json_rows(connection, query: str, game_ids: list[str]) -> list | None:
    """The rows of ``query`` (over ``game_ids``) from SQLite's cursor; None where SQLite
    cannot write a value as JSON (a BLOB)."""
    import sqlite3

    try:
        return connection.connection.dbapi_connection.execute(query, game_ids).fetchall()
    except sqlite3.Error:
        return None


class _MovesByGame(_LazyRows):
    """The ``moves`` rows of a batch of games on SQLite as :func:`_moves_as_json` gives
    them (game id: its rows as one JSON text), so that :meth:`holds` settles a game whose
    stored rows are its expected rows with one comparison of texts. Looked up by game id,
    a game's rows are read from the table as they are (:class:`_StoredTable`), once."""

    def __init__(self, connection, reader: _SqliteTable, texts: dict) -> None:
        super().__init__(texts)
        self.connection, self.reader = connection, reader
        self.tables: dict = {}

    def __getitem__(self, game_id):
        table = self.tables.get(game_id)
        if table is None:
            if not dict.__contains__(self, game_id):
                raise KeyError(game_id)
            read: dict = {}
            _read_into(self.connection, self.reader, ("move_index",), [game_id], "", read)
            table = self.tables[game_id] = read.get(game_id, _StoredTable(self.reader))
        return table

    def holds(self, game_id: str, fields: list[tuple]) -> bool:
        """Whether the game's stored move rows are, one for one, ``fields`` in their stored
        form and no other rows: what :meth:`_StoredTable.holds` would say of them, read from
        the text. Equal texts are equal rows: JSON reads back one way, with a number apart
        from a string, so the stored rows are the forms (each ``move_index`` once), in some
        order. False says only that the rows must be read (:meth:`__getitem__`)."""
        import orjson

        text = dict.get(self, game_id)
        if text is None or not fields:
            return False
        # Without their game id, each row's (None: one is another game's, or untrusted).
        forms = self.reader.move_forms(fields, game_id)
        if forms is None:
            return False
        keys = list(map(_MOVE_KEY, fields))
        if len(set(keys)) != len(keys):
            return False  # two rows under one key: the dicts say which is compared
        try:
            written = orjson.dumps(forms)
        except TypeError:  # orjson's JSONEncodeError too: a value JSON cannot hold
            return False
        # Read as bytes where :class:`_BatchRows` read the texts (no decoding of each).
        return written == (text if type(text) is bytes else text.encode())


# -- a batch's rows as one JSON text a game (SQLite) -------------------------------------------
# The tables whose rows :class:`_BatchRows` reads as one text a game, in the text's order,
# each with how its rows are ordered in it (the index SQLite reads them by): a game's
# ``games`` row; its ``player_results`` rows by player (their primary key); its settlement
# lines in the order written (their ``game_id`` index leads to the rows by rowid).
_HEAD_TABLES = ((GAMES, False), (RESULTS, True), (ENTRIES, False))
_PLAIN_FORMS = frozenset((str, int, NoneType))


def _head_columns(table: sa.Table) -> list[str]:
    """The columns of ``table`` the text holds: those :func:`_compare_row` compares."""
    return [column.name for column in table.c if column.name not in _IGNORED]


def _batch_rows(connection: sa.Connection, game_ids: list[str]):
    """The stored read rows of a batch of games, for :func:`compare_game`: on SQLite a
    :class:`_BatchRows` (one query, one text a game), else (or where that query fails)
    :func:`_stored_rows`."""
    if connection.dialect.name == "sqlite":
        found = _BatchRows.read(connection, game_ids)
        if found is not None:
            return found
    return _stored_rows(connection, game_ids)


class _BatchRows:
    """A batch's read rows on SQLite as SQLite writes them out as JSON: for each game that
    has a ``games`` row, one text of that row, its ``player_results`` rows and its
    settlement lines (``head``), and one of its move rows (as :func:`_moves_as_json`).
    SQLite hands each column value to Python at about a thousand instructions, and a game
    has some 150 of them in these tables; a text a game costs a fraction of that.

    :meth:`settles` compares a game's head with the same rows made from its events in
    their stored form: equal texts are equal rows (see :meth:`_head_forms`), so the
    comparison column by column would find nothing. A game it does not settle is compared
    as before: the batch's rows are then read as :func:`_stored_rows` reads them (once,
    when first asked for: most batches never are)."""

    def __init__(self, connection, game_ids: list[str], heads: dict, moves) -> None:
        self.connection, self.game_ids = connection, game_ids
        self.heads, self.moves = heads, moves
        dialect = connection.dialect
        self.forms = [_RowForms(table, dialect, by_key) for table, by_key in _HEAD_TABLES]
        self._rows: _StoredRows | None = None

    @classmethod
    def read(cls, connection, game_ids: list[str]) -> _BatchRows | None:
        """The batch's texts; None where the tables are not those the projection defines
        (their columns) or SQLite cannot write a value as JSON (a BLOB)."""
        moves = _SqliteTable(connection, MOVES)
        if tuple(moves.names) != MOVE_COLUMNS or not game_ids:
            return None
        quote = connection.dialect.identifier_preparer.quote

        def rows_of(table: sa.Table, columns) -> str:
            listed = ", ".join(f"t.{quote(c)}" for c in columns)
            where = f"t.{quote('game_id')} = g.{quote('game_id')}"
            if table is ENTRIES:
                where += f" AND t.{quote('dispute_id')} IS NULL"
            return (
                f"(SELECT json_group_array(json_array({listed})) FROM {quote(table.name)} "
                f"AS t WHERE {where})"
            )

        games = ", ".join(f"g.{quote(c)}" for c in _head_columns(GAMES))
        head = " || ',' || ".join(
            [f"json_array({games})"]
            + [rows_of(table, _head_columns(table)) for table, _ in _HEAD_TABLES[1:]]
        )
        # As bytes (a BLOB), the form orjson writes: no UTF-8 decoding of each text.
        query = (
            f"SELECT g.{quote('game_id')}, CAST('[' || {head} || ']' AS BLOB), "
            f"CAST({rows_of(MOVES, MOVE_COLUMNS[1:])} AS BLOB) FROM {quote(GAMES.name)} AS g "
            f"WHERE g.{quote('game_id')} IN ({_marks(game_ids)})"
        )
        found = _json_rows(connection, query, game_ids)
        if found is None or len(found) != len(set(game_ids)):
            # A game without its ``games`` row: its other rows are in no text (and must
            # still be compared), so the batch is read as before.
            return None
        heads = {game_id: text for game_id, text, _ in found}
        texts = {game_id: text for game_id, _, text in found}
        return cls(connection, game_ids, heads, _MovesByGame(connection, moves, texts))

    def settles(self, expected: Expected) -> bool:
        """Whether the game's stored ``games`` row, ``player_results`` rows and
        settlement lines are, one for one, those ``expected`` holds (and no others)."""
        import orjson

        text = self.heads.get(expected.game_id)
        if text is None:
            return False
        games, results, entries = self.forms
        game = games.row(expected.game)
        if game is None:
            return False
        found = [game, results.rows(expected.results), entries.rows(expected.entries)]
        if found[1] is None or found[2] is None:
            return False
        values = itertools.chain(game, *found[1], *found[2])
        if not _PLAIN_FORMS.issuperset(map(type, values)):
            return False
        try:
            return orjson.dumps(found) == text
        except TypeError:  # orjson's JSONEncodeError too: a value JSON cannot hold
            return False

    def _read(self) -> _StoredRows:
        if self._rows is None:
            self._rows = _StoredRows()
            _sqlite_stored_rows(self.connection, self.game_ids, self._rows, moves=False)
        return self._rows

    @property
    def games(self) -> dict:
        return self._read().games

    @property
    def results(self) -> dict:
        return self._read().results

    @property
    def entries(self) -> dict:
        return self._read().entries

    @property
    def twice(self) -> dict:
        return self._read().twice


class _RowForms:
    """Rows of one table made from the events in their stored form, as SQLite's
    ``json_array`` of the stored row gives them (the columns :func:`_head_columns`
    names, in the table's order) for :meth:`_BatchRows.settles`.

    A row has a form only where :meth:`_SqliteTable.same` would trust one: each column's
    stored form reads back as a value :func:`_same` finds equal (the table's binders), and
    the row has every column the text holds (a column it lacks is not compared, so its
    stored value cannot be settled). :meth:`_BatchRows.settles` also checks that each
    value of a form is a text, an integer or None, which JSON writes one way each (no
    float: two floats may be written alike, and orjson writes NaN as null), so that equal
    texts are equal values of the same types."""

    def __init__(self, table: sa.Table, dialect, by_key: bool) -> None:
        binders = _columns_of(table, dialect)[3]
        columns = _head_columns(table)
        self.by_key = by_key
        self.pick = None  # no form for any row: a column without a trusted stored form
        if all(binders[c] is not _UNTRUSTED for c in columns):
            self.pick = itemgetter(*columns)
            self.bound = tuple((i, _kept(binders[c])) for i, c in enumerate(columns) if binders[c])

    def row(self, computed: dict) -> list | None:
        """``computed`` in its stored form, or None."""
        if self.pick is None:
            return None
        try:
            values = list(self.pick(computed))
        except KeyError:  # a column the row lacks is not compared: nothing is settled
            return None
        return values if _in_stored_form(values, self.bound) else None

    def rows(self, computed: dict) -> list | None:
        """Each row of ``computed`` (by its key) in its stored form, in the order the text
        holds the stored rows: by their keys (``by_key``), or as they are (the order
        written)."""
        rows = computed.values()
        if self.by_key:
            try:
                rows = [computed[key] for key in sorted(computed)]
            except TypeError:  # keys that do not sort: the rows compared one by one
                return None
        found = []
        for row in rows:
            form = self.row(row)
            if form is None:
                return None
            found.append(form)
        return found


# Values whose stored form :func:`_kept` remembers: immutable, and equal values of one of
# these types have one stored form (money scaled to the same integer, a day written by its
# fields, a naive or UTC time by its fields). Exact types only: ``True == 1 == Decimal(1)``
# are one dict key; and only times naive or in UTC, as the events give them (a zone whose
# offset is unknown compares as naive, but is put in UTC as a local time).
_KEPT_KINDS = frozenset((Decimal, date, datetime))
_KEPT_ZONES = (None, UTC)


def _kept(store):
    """``store`` (a column's stored-form function) remembering its answer per value of
    :data:`_KEPT_KINDS`: a batch's settlement rows repeat their amounts, and a game's
    lines their time and day (a :class:`_RowForms` is made for one batch of games)."""
    forms: dict = {}

    def kept(value: Any) -> Any:
        kind = type(value)
        if kind not in _KEPT_KINDS or (kind is datetime and value.tzinfo not in _KEPT_ZONES):
            return store(value)
        try:
            return forms[value]
        except KeyError:
            form = forms[value] = store(value)
            return form
        except TypeError:  # a signalling NaN is not hashable: its form is made each time
            return store(value)

    return kept


def _table_rows(
    connection: sa.Connection, table: sa.Table, game_ids: list[str], *, without_disputes=False
) -> Iterator[dict]:
    """A read-model table's rows of some games, as dicts (``without_disputes``: only the
    rows no dispute added). On SQLite from the driver's cursor (:func:`_sqlite_dicts`)."""
    if connection.dialect.name == "sqlite":
        extra = ' AND "dispute_id" IS NULL' if without_disputes else ""
        return _sqlite_dicts(connection, table, game_ids, extra)
    query = sa.select(table).where(table.c.game_id.in_(game_ids))
    if without_disputes:
        query = query.where(table.c.dispute_id.is_(None))
    return _dicts(connection, query)


def compare_game(report: Report, expected: Expected, stored: _StoredRows | _BatchRows) -> None:
    game_id = expected.game_id
    # The games row, results and settlement lines in one comparison of texts (SQLite).
    settles = getattr(stored, "settles", None)
    head = settles is not None and settles(expected)

    def settled(row: dict) -> int | None:
        return expected.settled_version

    if not head:
        same = getattr(stored.games, "same", None)
        found = stored.games
        row = None if same is not None and same(game_id, expected.game) else found.get(game_id)
        if row is None and game_id not in stored.games:
            report.add(
                READ_MODEL, "games: no row, although the projection has reached its events", game_id
            )
        elif row is not None:
            _compare_row(report, game_id, "games", row, expected.game)
        _compare_table(
            report,
            game_id,
            "player_results",
            stored.results.get(game_id, {}),
            expected.results,
            str,
            settled,
        )
    fields = expected.move_fields
    quick = getattr(stored.moves, "holds", None)  # the rows as JSON texts (SQLite)
    if fields is None or quick is None or not quick(game_id, fields):
        moves = stored.moves.get(game_id, {})
        if fields is None or not (isinstance(moves, _StoredTable) and moves.holds(fields)):
            _compare_table(report, game_id, "moves", moves, expected.moves, str, _row_event)
    if not head:
        _compare_table(
            report,
            game_id,
            "ledger_entries",
            stored.entries.get(game_id, {}),
            expected.entries,
            lambda key: f"{key[0]} line {key[1]}",
            settled,
        )
        for kind, line in stored.twice.get(game_id, ()):
            report.add(
                READ_MODEL,
                f"ledger_entries[{kind} line {line}]: stored twice, the game's events give one",
                game_id,
                expected.settled_version,
            )


# -- the passes ------------------------------------------------------------------------------
def _events_by_aggregate(
    connection: sa.Connection,
    position: int,
    events: str,
    topics: str,
    *,
    span: tuple[bytes | None, bytes | None] | None = None,
    only: list[bytes] | None = None,
) -> Iterator[list[StoredRow]]:
    """Every aggregate's events (those whose topic starts with ``topics``: one variant's)
    that the projection has reached, one aggregate at a time; only the aggregates whose
    ids lie in ``span`` (from, to: 16 bytes or None for open) or are ``only``, if given."""
    where, params = "", {"position": position, "topics": topics + "%"}
    matches = "topic LIKE :topics"
    if f"topic LIKE '{topics}%'" == DISPUTE_EVENTS:
        # Spelled as the partial index of dispute events is, so that the planner uses it.
        matches, params = DISPUTE_EVENTS, {"position": position}
    if span is not None and span[0] is not None:
        where += " AND originator_id >= :low"
        params["low"] = id_param(connection, span[0])
    if span is not None and span[1] is not None:
        where += " AND originator_id < :high"
        params["high"] = id_param(connection, span[1])
    query = (
        "SELECT id, originator_id, originator_version, topic, state FROM "
        f"{events} WHERE id <= :position AND {matches}{where} "
        + ("AND originator_id IN :only " if only is not None else "")
        + "ORDER BY originator_id, originator_version"
    )
    if only is not None:
        query = sa.text(query).bindparams(sa.bindparam("only", expanding=True))
        params["only"] = [id_param(connection, o) for o in only]
        result = connection.execution_options(yield_per=2000).execute(query, params)
    elif connection.dialect.name == "sqlite":
        result = plain_rows(connection, query, params)
    else:
        result = connection.execution_options(yield_per=2000).execute(sa.text(query), params)
    current: list[StoredRow] = []
    for raw in result:
        row = _stored(raw)
        if current and row.originator != current[0].originator:
            yield current
            current = []
        current.append(row)
    if current:
        yield current


def _may_hold(topics: set, prefix: str) -> bool:
    """Whether :func:`_events_by_aggregate`'s ``topic LIKE 'prefix%'`` could match one of
    ``topics`` (every topic value of the events table): False spares its read, a walk of
    the whole table's index that finds nothing (a store without that variant's games).
    As SQLite's LIKE reads the pattern (``_`` any one character, ASCII letters in either
    case; PostgreSQL's LIKE, case-sensitive, matches fewer); a value that is not text, or
    text that is not UTF-8 as read, could match anything."""
    like = _like_prefix(prefix)
    for topic in topics:
        if type(topic) is not str or (not topic.isascii() and _SURROGATE.search(topic)):
            return True
        if like.match(topic):
            return True
    return False


_SURROGATE = re.compile("[\\ud800-\\udfff]")


@lru_cache(maxsize=16)
def _like_prefix(prefix: str) -> re.Pattern:
    parts = []
    for char in prefix:
        if char == "_":
            parts.append(".")
        elif char == "%":
            parts.append(".*")
        elif char.isascii() and char.isalpha():
            parts.append(f"[{char.lower()}{char.upper()}]")
        else:
            parts.append(re.escape(char))
    return re.compile("".join(parts), re.DOTALL)


_READ_MODELS_SEEN: set[str] = set()


def has_read_models(connection: sa.Connection) -> bool:
    """Whether the read-model tables exist (once found, remembered per database: pages
    ask on every view)."""
    url = connection.engine.url.render_as_string(hide_password=False)
    if url in _READ_MODELS_SEEN:
        return True
    inspector = sa.inspect(connection)
    found = all(inspector.has_table(t.name) for t in (GAMES, RESULTS, MOVES, ENTRIES))
    if found:
        _READ_MODELS_SEEN.add(url)
    return found


def ledger_for(url: str | None):
    """The application that decodes stored events (one per database, cached)."""
    from replays.readmodels.projections import _ledger
    from replays.store.settings import database_url

    return _ledger(database_url(url))


def _name(ledger, rows: list[StoredRow], names: dict[bytes, str]) -> str:
    from replays.integrity.store import game_id_from_state

    known = names.get(rows[0].originator)
    if known:
        return known
    if rows[0].version == 1:
        found = game_id_from_state(rows[0].state)
        if found:
            return found
    return str(uuid.UUID(bytes=rows[0].originator))


@dataclass
class SnapshotTally:
    """The stored snapshots the read-model pass compared on its way (each game's replay
    for its rows passes its snapshots' versions): verify's snapshot step then checks only
    the games not in ``done``."""

    done: set[bytes] = field(default_factory=set)
    checked: int = 0
    counts: dict[bytes, int] = field(default_factory=dict)  # snapshots compared, by game


# A batch of games replayed together: their snapshots and stored rows read in one query.
BATCH_EVENTS = 20_000


def check_read_models(
    connection: sa.Connection,
    ledger,
    report: Report,
    *,
    names: dict[bytes, str] | None = None,
    skip: frozenset[bytes] = frozenset(),
    events: str = "ledger_events",
    bar=None,
    snapshots: SnapshotTally | None = None,
    memos=None,
    deals=None,
    topics: set | None = None,
) -> int:
    """Every game's read rows against its events (the whole store). Returns the number of
    games checked. ``names`` maps aggregate ids to game ids where known (the chain heads).
    With ``snapshots``, each replayed game's stored snapshots are compared on the way;
    with ``memos``, each clean replay is remembered for the game's badge; ``topics``
    (every topic value in ``events``, read in this view), when known, spares the read of
    a variant's events where none of them is that variant's (:func:`_may_hold`).
    (:mod:`replays.readmodels.verify_jobs` does the same over several processes.)"""
    names = names or {}
    position = projection_position(connection, events)
    checked, seen = replay_games(
        connection,
        ledger,
        report,
        names=names,
        skip=skip,
        position=position,
        events=events,
        bar=bar,
        snapshots=snapshots,
        memos=memos,
        deals=deals,
        topics=topics,
    )
    finish_store_check(connection, ledger, report, seen, position, events)
    return checked


def finish_store_check(
    connection, ledger, report: Report, seen: set[str], position, events, held=None, ends=None
):
    """What the whole-store check does once every game was replayed: rows of games with
    no events (``held``: :func:`games_with_rows`, when read already), then
    :func:`check_store_ends` (``ends``: its findings, when checked already into a report
    of their own)."""
    reach = projection_reach(connection, events)
    if reach.finding is not None:
        report.add(READ_MODEL, reach.finding)
    _orphans(connection, report, seen | reach.beyond, held)
    if ends is None:
        check_store_ends(connection, ledger, report, position, events)
    else:
        report.problems += ends.problems


def check_store_ends(connection, ledger, report: Report, position, events) -> None:
    """The findings of the whole-store check's end that no game's replay decides: the
    dispute adjustment lines, and the games fair play counted
    (:func:`replays.fairplay.tracking.check`: a missing or extra ``fairplay_games`` row,
    two queries)."""
    from replays.fairplay import tracking

    check_adjustments(connection, ledger, report, position, events)
    tracking.check(connection, report, READ_MODEL, events)


def replay_games(
    connection: sa.Connection,
    ledger,
    report: Report,
    *,
    names: dict[bytes, str],
    skip: frozenset[bytes],
    position: int,
    events: str,
    bar=None,
    snapshots: SnapshotTally | None = None,
    span: tuple[bytes | None, bytes | None] | None = None,
    only: list[bytes] | None = None,
    troubled: set[bytes] | None = None,
    counted: set[bytes] | None = None,
    memos=None,
    deals=None,
    topics: set | None = None,
) -> tuple[int, set[str]]:
    """The games' replays and row comparisons (of the aggregates in ``span`` or ``only``
    when given): how many games were checked, and the game ids met; the aggregates any
    finding was made about go into ``troubled``, those checked into ``counted``, when
    given. ``memos`` (a :class:`replays.integrity.replay_memos.MemoWriter`) remembers each
    clean replay for the games' badges. ``deals`` (a
    :class:`replays.integrity.deal_checks.DeferredDeals`): each game's deal is checked
    as its replay passes its events; a game whose deal is found wanting is then left
    alone, as one the store pass found something about."""
    seen: set[str] = set()
    waiting: list[list[StoredRow]] = []
    waiting_events = 0
    checked = 0
    # Asked once per pass, not per batch (an inspection costs as much as a small batch).
    snapshot_table = snapshots is not None and has_table(connection, SNAPSHOTS_TABLE)

    def deal_found(rows: list[StoredRow]) -> None:
        # As when the store pass found the deal wanting: the game's rows and snapshots
        # are not checked (their findings would say nothing new).
        seen.add(_name(ledger, rows, names))
        if snapshots is not None:
            snapshots.done.add(rows[0].originator)

    def replay_waiting() -> None:
        nonlocal checked, waiting_events
        found = {}
        if snapshot_table:
            originators = [rows[0].originator for rows in waiting]
            found = snapshots_of(connection, originators, table_known=True)
        batch: list[tuple[bytes, Expected]] = []
        remembered = []
        for rows in waiting:
            originator = rows[0].originator
            stored = found.get(originator)
            check = SnapshotsToCheck(stored) if stored else None
            watch = None
            if deals is not None:
                watch = deals.watch(rows)
                if watch is None and deals.apart(connection, originator):
                    deal_found(rows)
                    continue
            try:
                expected = expected_rows(ledger, rows, snapshots=check, watch=watch)
            except Unreplayable as error:
                if watch is not None and deals.settle(rows, None, report):
                    deal_found(rows)
                    continue
                game_id = _name(ledger, rows, names)
                seen.add(game_id)
                message = f"read rows cannot be checked: {error}"
                report.add(UNREADABLE, message, game_id, error.version)
                if troubled is not None:
                    troubled.add(originator)
                continue
            if watch is not None and deals.settle(
                rows, watch if expected.replayed_all else None, report
            ):
                deal_found(rows)
                continue
            if check is not None and check.done:
                snapshots.done.add(originator)
                snapshots.checked += len(stored)
                snapshots.counts[originator] = len(stored)
                if check.mismatch is not None:
                    name = names.get(originator, str(uuid.UUID(bytes=originator)))
                    report_mismatch(report, name, check.mismatch)
                    if troubled is not None:
                        troubled.add(originator)
            seen.add(expected.game_id)
            batch.append((originator, expected))
            if memos is not None and expected.replayed_all and (check is None or check.done):
                remembered.append((expected.game_id, rows, stored, expected))
            checked += 1
            if counted is not None:
                counted.add(originator)
        waiting.clear()
        waiting_events = 0
        if batch:
            stored_rows = _batch_rows(connection, [e.game_id for _, e in batch])
            for originator, expected in batch:
                found = len(report.problems)
                compare_game(report, expected, stored_rows)
                if troubled is not None and len(report.problems) > found:
                    troubled.add(originator)
            if remembered:
                memos.write(connection, report, remembered)

    aggregates = itertools.chain.from_iterable(
        _events_by_aggregate(connection, position, events, prefix, span=span, only=only)
        for prefix in variants.topic_prefixes()
        if topics is None or _may_hold(topics, prefix)
    )
    for rows in aggregates:
        if bar is not None:
            bar.update(len(rows))
        if rows[0].originator in skip:
            # Its events already failed their seals: rows replayed from them say nothing.
            seen.add(_name(ledger, rows, names))
            continue
        if rows[0].version != 1:
            # The game's first events are gone: the event checks report that.
            seen.add(_name(ledger, rows, names))
            continue
        waiting.append(rows)
        waiting_events += len(rows)
        if len(waiting) >= BATCH_GAMES or waiting_events >= BATCH_EVENTS:
            replay_waiting()
    if waiting:
        replay_waiting()
    return checked, seen


# -- dispute adjustments -----------------------------------------------------------------------
def _adjustments_of(ledger, rows: list[StoredRow]) -> tuple[str, str, list[dict]]:
    """A dispute case's game id, case id and the adjustment lines its events give (the
    same lines :mod:`replays.disputes.projection` writes)."""
    from domain.dispute import adjustment_entries
    from replays.disputes.projection import _when

    to_domain_event = ledger.mapper.to_domain_event
    case_id = game_id = currency = None
    lines: list[dict] = []
    for row in rows:
        if row.defect is not None:
            raise Unreplayable(row.version, f"stored row {row.notification_id}: {row.defect}")
        try:
            event = to_domain_event(
                Notification(
                    id=row.notification_id,
                    originator_id=uuid.UUID(bytes=row.originator),
                    originator_version=row.version,
                    topic=row.topic,
                    state=row.state,
                )
            )
            kind = type(event).__name__
            if kind == "CaseOpened":
                case_id, game_id, currency = event.case_id, event.game, event.currency
            elif kind == "CaseClosed":
                when = _when(getattr(event, "at", None), event)
                entries = adjustment_entries(event.amount, event.credited, event.debited)
                lines = adjustment_rows(game_id, case_id, currency, when, entries)
        except Exception as error:  # any way an event fails to decode or apply is a finding
            raise Unreplayable(
                row.version,
                f"stored row {row.notification_id} ({row.topic}) cannot be replayed: "
                f"{type(error).__name__}: {error}",
            ) from None
    return game_id or "", case_id or "", lines


def check_adjustments(
    connection: sa.Connection,
    ledger,
    report: Report,
    position: int,
    events: str,
    *,
    game_id: str | None = None,
) -> None:
    """Each dispute adjustment line in ``ledger_entries`` against its case's events (only
    ``game_id``'s cases and lines when given)."""
    from replays.disputes.projection import DISPUTE_TOPICS

    expected: dict[str, tuple[str, list[dict]]] = {}
    unreadable = False
    for rows in _events_by_aggregate(connection, position, events, DISPUTE_TOPICS):
        try:
            case_game, case_id, lines = _adjustments_of(ledger, rows)
        except Unreplayable as error:
            unreadable = True
            if game_id is None:
                message = f"dispute adjustments cannot be checked: {error}"
                report.add(UNREADABLE, message, None, error.version)
            continue
        if case_id and game_id in (None, case_game):
            expected[case_id] = (case_game, lines)
    stored: dict[str, dict] = {}
    query = sa.select(ENTRIES).where(ENTRIES.c.dispute_id.is_not(None))
    if game_id is not None:
        query = query.where(ENTRIES.c.game_id == game_id)
    for row in connection.execute(query):
        data = row._asdict()
        stored.setdefault(row.dispute_id, {})[row.line] = data
    for case_id, (case_game, lines) in expected.items():
        computed = {line["line"]: line for line in lines}
        _compare_table(
            report,
            case_game,
            f"ledger_entries[dispute {case_id}]",
            stored.pop(case_id, {}),
            computed,
            lambda key: f"line {key}",
        )
    if game_id is not None and unreadable:
        # A case whose events cannot be read might be this game's: its lines are not
        # "without events" (the whole-store pass names the unreadable case).
        return
    for case_id, lines in stored.items():
        report.add(
            READ_MODEL,
            f"ledger_entries[dispute {case_id}]: adjustment lines for a dispute case with no "
            "events",
            next(iter(lines.values()))["game_id"],
        )


def games_with_rows(connection: sa.Connection) -> list[tuple[str, list[str]]]:
    """The game ids each read-model table holds rows for (a game's settlement lines, in
    ``ledger_entries``), each with what :func:`_orphans` says of a game with no events.
    ``verify --jobs`` reads them before its replays, in the main pass's view, so that
    the step's end, which no other process shares, does not wait for them."""
    held = []
    for table, label in ((GAMES, "games"), (RESULTS, "player_results"), (MOVES, "moves")):
        found = connection.execute(sa.select(table.c.game_id).distinct())
        held.append((f"{label}: rows stored for a game with no events", [g for (g,) in found]))
    settlement = sa.select(ENTRIES.c.game_id).where(ENTRIES.c.kind == SETTLEMENT_KIND).distinct()
    found = connection.execute(settlement)
    held.append(
        ("ledger_entries: settlement lines for a game with no events", [g for (g,) in found])
    )
    return held


def _orphans(
    connection: sa.Connection,
    report: Report,
    seen: set[str],
    held: list[tuple[str, list[str]]] | None = None,
) -> None:
    """Rows of games that have no events (within the projection's reach); ``held``: what
    :func:`games_with_rows` gave in this view, when read already."""
    for message, game_ids in games_with_rows(connection) if held is None else held:
        for game_id in game_ids:
            if game_id not in seen:
                report.add(READ_MODEL, message, game_id)


@dataclass
class Riders:
    """Checks riding along one game's read-model replay (``verify --game``, the badge):
    ``rows`` are all the game's stored events (one aggregate, versions in order), of which
    the read rows come from those the projection reached; ``snapshots`` are compared as
    the replay passes them and ``watch`` sees every event applied. ``carried``: the one
    replay answered them (else the caller checks them the usual way); ``snapshot_failed``:
    a snapshot differs, and (as when the snapshot step runs first) nothing else was
    checked."""

    rows: list[StoredRow]
    snapshots: SnapshotsToCheck | None = None
    watch: Any = None
    carried: bool = False
    snapshot_failed: bool = False
    # A remembered replay (replays.integrity.replay_memos.GameMemo): when it answers,
    # ``recalled`` holds the deal check's notes and nothing is replayed; otherwise the
    # replay's rows are kept in ``expected`` for the caller to remember once it is clean.
    memo: Any = None
    recalled: list[str] | None = None
    expected: Expected | None = None


def check_game_read_models(
    connection: sa.Connection,
    ledger,
    report: Report,
    game_id: str,
    originators: Iterable[bytes],
    events: str = "ledger_events",
    *,
    riders: Riders | None = None,
) -> bool:
    """One game's read rows against its events (for ``verify --game`` and the pages).
    Returns False when its rows could not be checked."""
    position = projection_position(connection, events)
    prefixes = variants.topic_prefixes()
    if riders is not None:
        reach = _reach(riders.rows, position, prefixes)
        if reach:
            return _check_game_riding(
                connection, ledger, report, game_id, events, position, riders, reach
            )
    query = sa.text(
        "SELECT id, originator_id, originator_version, topic, state FROM "
        f"{events} WHERE originator_id = :o AND id <= :position ORDER BY originator_version"
    )
    rows = [
        _stored(raw)
        for originator in originators
        for raw in connection.execute(
            query, {"o": id_param(connection, originator), "position": position}
        )
    ]
    rows = [row for row in rows if row.topic.startswith(prefixes)]
    check_adjustments(connection, ledger, report, position, events, game_id=game_id)
    if not rows:
        stored = _stored_rows(connection, [game_id])
        if stored.games or stored.results or stored.moves or stored.entries:
            report.add(
                READ_MODEL, "read rows are stored for a game with no projected events", game_id
            )
        return True
    if rows[0].version != 1:
        return False
    try:
        expected = expected_rows(ledger, rows)
    except Unreplayable as error:
        report.add(UNREADABLE, f"read rows cannot be checked: {error}", game_id, error.version)
        return False
    compare_game(report, expected, _stored_rows(connection, [expected.game_id]))
    return True


def _reach(rows: list[StoredRow], position: int, prefixes: tuple[str, ...]) -> int:
    """How many of a game's rows its read rows come from, when those are the rows a
    one-game read-model check would read (one aggregate's events up to the projection's
    position, all of a variant, from event 1 on, and nothing after them reached); else 0
    (the check then reads its rows itself)."""
    if not rows or rows[0].version != 1:
        return 0
    first = rows[0].originator
    reach = 0
    for row in rows:
        if row.originator != first or not row.topic.startswith(prefixes):
            return 0
        if row.notification_id <= position:
            if reach != row.version - 1:
                return 0
            reach += 1
    return reach


def _check_game_riding(
    connection, ledger, report, game_id, events, position, riders: Riders, reach: int
) -> bool:
    memo = riders.memo
    if memo is not None and memo.recall(reach) is not None:
        return _check_game_recalled(connection, ledger, report, game_id, events, position, riders)
    failed = None
    snapshots = riders.snapshots
    try:
        expected = expected_rows(
            ledger, riders.rows, reach=reach, snapshots=snapshots, watch=riders.watch
        )
    except Unreplayable as error:
        failed, expected = error, None
    riders.expected = expected
    riders.carried = expected is not None and expected.replayed_all
    if riders.carried and snapshots is not None and snapshots.mismatch is not None:
        report_mismatch(report, game_id, snapshots.mismatch)
        riders.snapshot_failed = True
        return True
    if riders.carried and snapshots is not None and snapshots.done:
        report.notes.append(f"{len(snapshots.stored)} snapshot(s) checked against their events")
    check_adjustments(connection, ledger, report, position, events, game_id=game_id)
    if failed is not None:
        report.add(UNREADABLE, f"read rows cannot be checked: {failed}", game_id, failed.version)
        return False
    _compare_stored(connection, report, expected, memo if riders.carried else None)
    return True


def _check_game_recalled(connection, ledger, report, game_id, events, position, riders) -> bool:
    """The one-game check where the same events (and snapshots) were replayed before and
    found clean (``riders.memo``): the read rows are compared with the remembered rows,
    or not at all when they are the very rows found to match them before."""
    memo = riders.memo
    riders.carried, riders.recalled = True, memo.found.notes
    snapshots = riders.snapshots
    if snapshots is not None:
        snapshots.done = True
        report.notes.append(f"{len(snapshots.stored)} snapshot(s) checked against their events")
    check_adjustments(connection, ledger, report, position, events, game_id=game_id)
    if not memo.rows_match():
        _compare_stored(connection, report, memo.expected(_ENTRY_KEY), memo)
    return True


def _compare_stored(connection, report: Report, expected: Expected, memo) -> None:
    """The game's stored read rows against ``expected``; rows found equal are noted in
    ``memo`` (when there is one) so that the next check of the same rows need not compare."""
    found = len(report.problems)
    compare_game(report, expected, _stored_rows(connection, [expected.game_id]))
    if memo is not None and not any(p.kind == READ_MODEL for p in report.problems[found:]):
        memo.matched()
