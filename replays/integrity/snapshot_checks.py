"""Checking stored snapshots against the events they summarise.

Snapshots are not sealed (they are derived data), yet the application loads games from
them, so pages and audits show what a snapshot says. A snapshot someone edited in the
database would therefore change what everyone sees while every event still matches its
seal. Each snapshot at version *v* is compared with the snapshot the aggregate rebuilt
from its events 1..*v* would give (both encoded by the application's own transcoder).
A mismatch is reported as ``snapshot`` at event *v*; deleting the snapshots is always a
safe repair, since the application then rebuilds the game from its events.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from uuid import UUID

import orjson
import sqlalchemy as sa
from eventsourcing.persistence import StoredEvent

from replays.integrity.report import UNREADABLE
from replays.integrity.store import has_table, id_param, progress_bar, raw_id
from replays.store.decoding import event_class
from replays.store.schema import SNAPSHOTS_TABLE
from replays.store.settings import database_url

if TYPE_CHECKING:
    from replays.integrity.report import Report

SNAPSHOT = "snapshot"


@lru_cache(maxsize=4)
def _ledger(url: str) -> Any:
    from replays.store.application import Ledger

    return Ledger(url, env={"CREATE_TABLE": "no"})


def _snapshot_rows(
    connection: sa.Connection,
    originators: Iterable[bytes] | None,
    skip: frozenset[bytes] = frozenset(),
) -> Iterator[tuple[bytes, list[StoredEvent] | int]]:
    """Stored snapshots grouped by aggregate, versions ascending; for an aggregate in
    ``skip``, only how many it has (nothing made of them: the whole-store verify skips
    nearly every game here, their snapshots compared in the read-model replay)."""
    columns = "originator_id, originator_version, topic, state"
    if originators is None:
        query = sa.text(
            f"SELECT {columns} FROM {SNAPSHOTS_TABLE} ORDER BY originator_id, originator_version"
        )
        rows = connection.execute(query)
    else:
        query = sa.text(
            f"SELECT {columns} FROM {SNAPSHOTS_TABLE} WHERE originator_id = :o "
            "ORDER BY originator_version"
        )
        rows = (
            r
            for o in originators
            for r in connection.execute(query, {"o": id_param(connection, o)})
        )
    current, group, passed = None, [], 0
    for originator, version, topic, state in rows:
        originator = raw_id(originator)
        if originator != current:
            if group or passed:
                yield current, group or passed
            group, passed = [], 0
            current = originator
        if originator in skip:
            passed += 1
            continue
        group.append(StoredEvent(UUID(bytes=originator), version, topic, bytes(state)))
    if group or passed:
        yield current, group or passed


def snapshots_of(
    connection: sa.Connection, originators: list[bytes], *, table_known: bool = False
) -> dict[bytes, list[StoredEvent]]:
    """The stored snapshots of some aggregates (one query), versions ascending.
    ``table_known``: the caller found the snapshots table in this pass already."""
    if not originators or not (table_known or has_table(connection, SNAPSHOTS_TABLE)):
        return {}
    query = sa.text(
        f"SELECT originator_id, originator_version, topic, state FROM {SNAPSHOTS_TABLE} "
        "WHERE originator_id IN :ids ORDER BY originator_id, originator_version"
    ).bindparams(sa.bindparam("ids", expanding=True))
    found: dict[bytes, list[StoredEvent]] = {}
    params = [id_param(connection, o) for o in originators]
    for originator, version, topic, state in connection.execute(query, {"ids": params}):
        originator = raw_id(originator)
        stored = StoredEvent(UUID(bytes=originator), version, topic, bytes(state))
        found.setdefault(originator, []).append(stored)
    return found


def snapshotted(connection: sa.Connection) -> list[bytes]:
    """The aggregates with stored snapshots, in the order :func:`check_snapshots` meets
    them (``verify --jobs`` reads them while its workers replay; its snapshot step then
    reads the snapshots of only the games no replay compared)."""
    if not has_table(connection, SNAPSHOTS_TABLE):
        return []
    query = sa.text(f"SELECT DISTINCT originator_id FROM {SNAPSHOTS_TABLE}")
    return sorted(raw_id(originator) for (originator,) in connection.execute(query))


def check_snapshots(
    connection: sa.Connection,
    url: str | None,
    report: Report,
    names: dict[bytes, str],
    *,
    originators: Iterable[bytes] | None = None,
    skip: frozenset[bytes] = frozenset(),
    progress: bool = False,
) -> int:
    """Compare the snapshots of ``originators`` (default: all) with their events; add a
    problem per snapshot that does not match. Returns how many snapshots were checked."""
    if not has_table(connection, SNAPSHOTS_TABLE):
        return 0
    ledger = _ledger(database_url(url))
    total = None
    if progress and originators is None:
        total = connection.execute(sa.text(f"SELECT count(*) FROM {SNAPSHOTS_TABLE}")).scalar()
    checked = 0
    with progress_bar(total, "snapshots", progress) as bar:
        for originator, snapshots in _snapshot_rows(connection, originators, skip):
            if type(snapshots) is int:  # a game in ``skip``: its count only
                bar.update(snapshots)
                continue
            bar.update(len(snapshots))
            checked += len(snapshots)
            name = names.get(originator, str(UUID(bytes=originator)))
            try:
                mismatch = _first_mismatch(ledger, snapshots)
            except _Unreplayable as error:
                # This game's finding; the other games' snapshots are still checked.
                report.add(UNREADABLE, f"snapshots cannot be checked: {error}", name, error.version)
                continue
            if mismatch is not None:
                report_mismatch(report, name, mismatch)
    return checked


class _Unreplayable(Exception):
    """A game whose events cannot be replayed up to its snapshots: where and why."""

    def __init__(self, version: int, message: str) -> None:
        super().__init__(message)
        self.version = version


def _first_mismatch(ledger: Any, snapshots: list[StoredEvent]) -> tuple[int, str] | None:
    """The first of one game's ``snapshots`` that differs from the game rebuilt from its
    events, and why; :class:`_Unreplayable` when an event (or a snapshot) cannot be read or
    applied, as the read-model replay reports it."""
    from replays.store.application import project_game

    aggregate, version = None, 0
    at, doing = 1, "event {} cannot be replayed"  # what is being read, for a finding
    try:
        events = iter(ledger.events.get(snapshots[0].originator_id))
        for stored in snapshots:
            target = stored.originator_version
            for event in events:
                at = event.originator_version
                aggregate = project_game(aggregate, [event])
                version, at = at, at + 1
                if version >= target:
                    break
            if aggregate is None or version != target:
                return target, f"is beyond the game's {version} events"
            at, doing = target, "the snapshot at event {} cannot be compared"
            why = snapshot_mismatch(ledger, stored, aggregate)
            if why is not None:
                return target, why
            at, doing = version + 1, "event {} cannot be replayed"
    except Exception as error:  # any way an event fails to decode or apply is a finding
        raise _Unreplayable(at, f"{doing.format(at)}: {type(error).__name__}: {error}") from None
    return None


def snapshot_mismatch(ledger: Any, stored: StoredEvent, aggregate: Any) -> str | None:
    """Why the stored snapshot differs from the one ``aggregate`` (the game rebuilt from
    its events up to the snapshot's version) gives, or None when they are the same."""
    if _same_bytes(ledger, stored, aggregate):
        return None
    encode = ledger.mapper.transcoder.encode
    try:
        snapshot = ledger.mapper.to_domain_event(stored)
        stored_state = encode(snapshot.state)
    except Exception as error:  # a snapshot that no longer decodes (or lacks its state)
        return f"cannot be read ({error})"
    expected = type(snapshot).take(aggregate)
    if encode(expected.state) != stored_state or snapshot.topic != expected.topic:
        return "does not match the game rebuilt from its events"
    return None


def report_mismatch(report: Report, game_id: str, mismatch: tuple[int, str]) -> None:
    version, why = mismatch
    report.add(
        SNAPSHOT,
        f"the stored snapshot at event {version} {why}: it was altered (deleting "
        "the game's snapshots is a safe repair; the game then loads from its "
        "events)",
        game_id,
        version,
    )


def _same_bytes(ledger: Any, stored: StoredEvent, aggregate: Any) -> bool:
    """Whether the stored snapshot's state is, as JSON, exactly the bytes the rebuilt
    game's state encodes to (with the same aggregate topic). Then it loads as the rebuilt
    game does, and the full comparison (reviving every card of the stored state, encoding
    both) would find them equal: it runs only when this says no, and decides."""
    mapper = ledger.mapper
    if mapper.cipher or mapper.compressor:
        return False
    try:
        expected = event_class(stored.topic).take(aggregate)  # the allow-list: no import
        state = mapper.transcoder.encode(expected.state)
        if _written_as_rebuilt(stored.state, expected.topic, state):
            return True
        data = orjson.loads(stored.state)
    except Exception:  # the full comparison words the failure
        return False
    if type(data) is not dict or data.get("topic") != expected.topic or "state" not in data:
        return False
    return orjson.dumps(data["state"]) == state


# How the ledger's transcoder writes a snapshot: the moment it was taken (which no replay
# gives back), its topic, its state. The moment's text has no quote or backslash in it.
_TAKEN_AT = b'{"timestamp":{"_type_":"datetime_iso","_data_":"'
_MOMENT_TEXT = re.compile(rb"[0-9:.+TZ-]*")


def _written_as_rebuilt(stored: bytes, topic: str, state: bytes) -> bool:
    """Whether ``stored`` is, byte for byte, a snapshot of ``topic`` whose state is
    ``state`` (the rebuilt game's, encoded), taken at any moment: then :func:`_same_bytes`
    would find it equal, without reading the stored JSON back and writing it again (the
    larger part of comparing a snapshot). Anything else is left to it."""
    tail = b'"},"topic":' + orjson.dumps(topic) + b',"state":' + state + b"}"
    if len(stored) < len(_TAKEN_AT) + len(tail):
        return False
    if not (stored.startswith(_TAKEN_AT) and stored.endswith(tail)):
        return False
    return _MOMENT_TEXT.fullmatch(stored, len(_TAKEN_AT), len(stored) - len(tail)) is not None
