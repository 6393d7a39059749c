"""Red 3 matches in the ledger: stored as events beside the 13-card games, read back, audited.

A match lives in the same event store as the 13-card games (the same :class:`Ledger`, the
same uuid5 of its game id, so one id names one game across the ledger). These use cases
are the Red 3 side of ``import``, ``export``, ``audit`` and the replay viewer.

The audit itself is pure and lives in :mod:`domain.red3.audit` (re-exported here).
"""

from __future__ import annotations

from domain.red3.audit import Red3Audit, audit_events
from domain.red3.game import Red3Match
from domain.red3.records import Red3Record
from domain.red3.state import Red3TableState


class NotARed3Match(LookupError):
    """A game id that names a 13-card game (or nothing Red 3)."""


class StepOutOfRange(LookupError):
    """Asking for the table after a step the match does not have."""


def record_match(ledger, record: Red3Record) -> Red3Match:
    """Store a whole record atomically: built in memory first (raising the first broken
    rule), then every event in one save, so a rejected record stores nothing.
    :class:`~replays.store.application.GameExists` when the game id is taken."""
    from eventsourcing.persistence import IntegrityError

    from replays.store.application import GameExists

    match = record.build()
    try:
        ledger.save(match)
    except IntegrityError:
        raise GameExists(f"game {match.game_id} is already recorded", match.game_id) from None
    return match


def get_match(ledger, game_id: str, *, version: int | None = None) -> Red3Match:
    """The stored match as it stood at aggregate ``version`` (latest when None)."""
    match = ledger.get_game(game_id, version=version)
    if not isinstance(match, Red3Match):
        raise NotARed3Match(f"game {game_id} is not a Red 3 match")
    return match


def is_red3(ledger, game_id: str) -> bool:
    """Whether the stored game ``game_id`` is a Red 3 match (reads its first event only)."""
    first = ledger.recorder.select_events(ledger.aggregate_id(game_id), limit=1)
    return bool(first) and first[0].topic == Red3Match.Started.TOPIC


def state_at(ledger, game_id: str, step: int, *, match: Red3Match | None = None) -> Red3TableState:
    """The table after ``step`` steps (deals and moves; 0 = just started)."""
    match = match or get_match(ledger, game_id)
    if not 0 <= step <= len(match.steps):
        raise StepOutOfRange(
            f"match {game_id} has {len(match.steps)} steps: there is no step {step}"
        )
    if step == len(match.steps):
        return match.table_state()
    version = match.step_versions[step - 1] if step else 1
    return get_match(ledger, game_id, version=version).table_state()


def latest_version(ledger, game_id: str) -> int | None:
    """The match's latest event version from one indexed read (None: no such game)."""
    last = ledger.recorder.select_events(ledger.aggregate_id(game_id), desc=True, limit=1)
    return last[0].originator_version if last else None


def replay_states(ledger, game_id: str) -> tuple[Red3Match, list[Red3TableState]]:
    """The match and the table after every step, from one read of its events.

    ``states[k]`` is the table after step ``k + 1`` (``states[0]``: just after the first
    deal). A step is a deal or a move together with what follows it by itself (a round's
    scores, the match's end), so every state is one the table really showed.
    """
    events = list(ledger.events.get(ledger.aggregate_id(game_id)))
    if not events:
        from replays.store.application import GameNotFound

        raise GameNotFound(game_id)
    match = None
    states: list[Red3TableState] = []
    follows = (Red3Match.RoundScored, Red3Match.MatchEnded)
    for index, domain_event in enumerate(events):
        match = domain_event.mutate(match)
        if not isinstance(match, Red3Match):
            raise NotARed3Match(f"game {game_id} is not a Red 3 match")
        after = events[index + 1] if index + 1 < len(events) else None
        if index > 0 and not isinstance(after, follows):
            states.append(match.table_state())
    return match, states


def audit_match(ledger, game_id: str) -> Red3Audit:
    """Audit the stored match ``game_id`` (GameNotFound / NotARed3Match otherwise)."""
    match = get_match(ledger, game_id)
    events = ledger.events.get(match.id)
    return audit_events(events)


__all__ = [
    "NotARed3Match",
    "Red3Audit",
    "StepOutOfRange",
    "audit_events",
    "audit_match",
    "get_match",
    "is_red3",
    "latest_version",
    "record_match",
    "replay_states",
    "state_at",
]
