"""What the read side remembers of events it could not project (``projection_failures``).

The runner (:mod:`replays.readmodels.projection_runner`) writes these records when it sets a game
aside; ``projections status``, ``/healthz`` and the staff banner read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from replays.readmodels.models import ProjectionFailure

FAILURES = ProjectionFailure.__table__
REBUILD_SUFFIX = ":rebuild"  # failures found by a rebuild that was rolled back
MAX_ERROR = 2000
MAX_GAME_ID = 200


def event_type(topic: str) -> str:
    """``domain.rummy13.game:Game.Settled`` -> ``Game.Settled``."""
    return topic.rpartition(":")[2] or topic


@dataclass(frozen=True)
class Failure:
    """An event a projection could not apply; its aggregate is set aside until a retry."""

    projection: str
    originator_id: str
    notification_id: int
    game_id: str | None
    event_type: str
    event_version: int
    error: str
    first_seen: datetime | None = None
    last_attempt: datetime | None = None
    attempts: int = 1

    @property
    def during_rebuild(self) -> bool:
        return self.projection.endswith(REBUILD_SUFFIX)

    def describe(self) -> str:
        where = "a rebuild: " if self.during_rebuild else ""
        game = self.game_id or f"aggregate {self.originator_id}"
        return (
            f"{where}game {game} event {self.event_version} ({self.event_type}, "
            f"notification {self.notification_id}) failed to project: {self.error}"
        )

    def to_dict(self) -> dict:
        return {
            "projection": self.projection,
            "game_id": self.game_id,
            "originator_id": self.originator_id,
            "notification_id": self.notification_id,
            "event_type": self.event_type,
            "event_version": self.event_version,
            "error": self.error,
            "first_seen": self.first_seen.isoformat() if self.first_seen else None,
            "last_attempt": self.last_attempt.isoformat() if self.last_attempt else None,
            "attempts": self.attempts,
        }


def read_failures(connection: sa.Connection, projection: str | None = None) -> list[Failure]:
    """Recorded failures (of one projection and its rebuilds, or of all), oldest first."""
    query = sa.select(FAILURES).order_by(FAILURES.c.notification_id, FAILURES.c.projection)
    if projection is not None:
        query = query.where(FAILURES.c.projection.in_((projection, projection + REBUILD_SUFFIX)))
    return [
        Failure(
            projection=row.projection,
            originator_id=row.originator_id,
            notification_id=row.notification_id,
            game_id=row.game_id,
            event_type=row.event_type,
            event_version=row.event_version,
            error=row.error,
            first_seen=row.first_seen,
            last_attempt=row.last_attempt,
            attempts=row.attempts,
        )
        for row in connection.execute(query)
    ]


class RebuildAbandoned(RuntimeError):
    """A rebuild met events that failed to project; it was rolled back, old rows kept."""

    def __init__(self, failures: list[Failure]):
        self.failures = failures
        named = "; ".join(failure.describe() for failure in failures[:5])
        more = f" (and {len(failures) - 5} more)" if len(failures) > 5 else ""
        super().__init__(f"rebuild rolled back, the read models are unchanged: {named}{more}")
