"""What the fair-play catch-up has counted, kept apart from ``fairplay_games`` so that a
deleted row there is noticed rather than counted again.

The catch-up counts every ended game that has no ``fairplay_games`` row: deleting a row (an
insider's write) would have the next catch-up count the game a second time, its player's
figures and flags inflated, and nothing would say so. So the catch-up also keeps a position
(a ``projection_positions`` row named :data:`NAME`): the notification id up to which the
read models (the ``games`` rows it reads) had been projected when it read the games to count,
kept below the first event of a game the projection set aside (its ``games`` row may end
later, from events at or before that id). Every game that had ended by then was counted then.
So an ended game with no row and no event after the position was counted before
(:func:`counted_before`): the catch-up reports it (:class:`CountedBefore`) and does not count
it again, and ``rummy-ledger verify`` names it (:func:`check`), as it names a row of a game
that is not an ended one.

Still trusted: the position itself (lowered, or deleted, it lets the games after it count
again), and the day rows' sums (a recount of them is ``rummy-ledger fairplay --rebuild``).
"""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from replays.fairplay.tables import FairplayGame
from replays.readmodels.models import GameRow, ProjectionFailure, ProjectionPosition
from replays.readmodels.projections import NAME as READ_MODELS
from replays.store.schema import EVENTS_TABLE

NAME = "fairplay"

POSITIONS = ProjectionPosition.__table__


class CountedBefore(ValueError):
    """An ended game the catch-up counted before whose ``fairplay_games`` row is gone: its
    figures are in the day rows once already, so it is not counted again."""

    def __init__(self, game_id: str, day: str) -> None:
        super().__init__(game_id, day)
        self.game_id, self.day = game_id, day

    def __str__(self) -> str:
        return (
            f"game {self.game_id} ({self.day or 'no start day'}) was counted before, but its "
            "fairplay_games row is gone: not counted again; the fair-play figures of that day "
            "may be wrong (`rummy-ledger fairplay --rebuild` counts every game anew)"
        )


def position(connection: sa.Connection) -> int:
    """The kept position (0: none kept, nothing known counted)."""
    found = connection.execute(
        sa.select(POSITIONS.c.position).where(POSITIONS.c.name == NAME)
    ).scalar_one_or_none()
    return found or 0


def reach(connection: sa.Connection) -> int:
    """The notification id every ended game's ``games`` row is projected up to: the read
    models' position, kept below the first event the projection set aside."""
    projected = connection.execute(
        sa.select(POSITIONS.c.position).where(POSITIONS.c.name == READ_MODELS)
    ).scalar_one_or_none()
    f = ProjectionFailure
    set_aside = connection.execute(
        sa.select(sa.func.min(f.notification_id)).where(f.projection == READ_MODELS)
    ).scalar_one_or_none()
    reached = projected or 0
    return reached if set_aside is None else min(reached, set_aside - 1)


def keep_position(connection: sa.Connection, reached: int) -> None:
    """Keep ``reached`` (:func:`reach`, read before the games were) as the position; nothing
    is written when it is kept already (a catch-up with nothing new writes nothing)."""
    if position(connection) == reached:
        return
    connection.execute(sa.delete(POSITIONS).where(POSITIONS.c.name == NAME))
    connection.execute(
        sa.insert(POSITIONS),
        {"name": NAME, "position": reached, "events_applied": 0, "updated_at": None},
    )


def forget(connection: sa.Connection) -> None:
    """No position: the counts are dropped (``rebuild``)."""
    connection.execute(sa.delete(POSITIONS).where(POSITIONS.c.name == NAME))


def counted_before(
    connection: sa.Connection, games: list[tuple[str, str]], events: str = EVENTS_TABLE
) -> set[str]:
    """Of ``games`` (ended, without a ``fairplay_games`` row: game id and ``games``'s
    originator id), those counted before: no event of theirs after the kept position."""
    kept = position(connection)
    if not kept or not games:
        return set()
    moved = _moved_since(connection, kept, events)
    return {game_id for game_id, originator in games if uuid.UUID(originator) not in moved}


def _moved_since(connection: sa.Connection, kept: int, events: str) -> set[uuid.UUID]:
    """The aggregates with an event after ``kept``: the events stored since the catch-up
    (a few, the games to count now), not the whole store."""
    from replays.integrity.store import raw_id

    query = sa.text(f"SELECT DISTINCT originator_id FROM {events} WHERE id > :kept")
    return {uuid.UUID(bytes=raw_id(o)) for (o,) in connection.execute(query, {"kept": kept})}


def uncounted() -> sa.Select:
    """Ended games without a ``fairplay_games`` row, oldest first: game id, originator id
    and start."""
    g, f = GameRow, FairplayGame
    return (
        sa.select(g.game_id, g.originator_id, g.started_at)
        .outerjoin(f, f.game_id == g.game_id)
        .where(g.ended_at.is_not(None), f.game_id.is_(None))
        .order_by(g.started_at, g.game_id)
    )


def check(connection: sa.Connection, report, kind: str, events: str = EVENTS_TABLE) -> None:
    """``verify``'s findings on ``fairplay_games``, of ``kind`` (the read-model check's): a
    row of a game that is not an ended game (counted from nothing), and an ended game
    counted before whose row is missing."""
    from replays.integrity.store import has_table

    if not has_table(connection, FairplayGame.__tablename__):
        return
    g, f = GameRow, FairplayGame
    extra = (
        sa.select(f.game_id)
        .outerjoin(g, g.game_id == f.game_id)
        .where(sa.or_(g.game_id.is_(None), g.ended_at.is_(None)))
        .order_by(f.game_id)
    )
    for (game_id,) in connection.execute(extra):
        report.add(
            kind,
            "fairplay_games: a game is counted for fair play that is not an ended game",
            game_id,
        )
    kept = position(connection)
    missing = [(game_id, originator) for game_id, originator, _ in connection.execute(uncounted())]
    for game_id in sorted(counted_before(connection, missing, events)):
        report.add(
            kind,
            f"fairplay_games: no row for an ended game the fair-play catch-up counted (no event "
            f"after its position {kept}): its figures are in the day rows, and a catch-up does "
            "not count it again; `rummy-ledger fairplay --rebuild` counts every game anew",
            game_id,
        )
