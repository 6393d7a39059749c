"""Any stored game as a timeline of steps: store a whole record, read the game back, the
table after any step, every table at once, the audit. The same for every variant.

A variant's timeline is its steps in order (``Variant.timeline``) and the aggregate version
once each was played (``Variant.version_after``): a step is a deal or a move together with
what follows it by itself (a round's scores, the match's end), so every table shown is one
the players really saw. The 13-card pages keep their own move-based reads
(``Ledger.state_at``); these serve every variant through the registry.

Nothing here names a variant: the variant of a stored game comes from its first event
(``Ledger.variant_of``), that of a record from the registry.
"""

from __future__ import annotations

from typing import Any

from domain import variants
from domain.variants import Variant
from replays.store.application import GameExists, GameNotFound, Ledger


class NotOfVariant(LookupError):
    """A stored game that is not of the variant asked for."""


class StepOutOfRange(LookupError):
    """Asking for the table after a step the game does not have."""


def store_record(ledger: Ledger, record: Any) -> Any:
    """Store a whole parsed record atomically: built in memory first (raising the first broken
    rule), then every event in one save, so a rejected record stores nothing.
    :class:`~replays.store.application.GameExists` when the game id is taken."""
    from eventsourcing.persistence import IntegrityError

    game = variants.for_parsed(record).build(record)
    try:
        ledger.save(game)
    except IntegrityError:
        raise GameExists(f"game {game.game_id} is already recorded", game.game_id) from None
    return game


def game_of(
    ledger: Ledger, game_id: str, variant: Variant | None = None, *, version: int | None = None
) -> Any:
    """The stored game as it stood at aggregate ``version`` (latest when None); with
    ``variant``, :class:`NotOfVariant` unless the game is one of its games."""
    game = ledger.get_game(game_id, version=version)
    if variant is not None and not variant.owns(game):
        raise NotOfVariant(f"game {game_id} is not a {variant.name} game")
    return game


def latest_version(ledger: Ledger, game_id: str) -> int | None:
    """The game's latest event version from one indexed read (None: no such game)."""
    last = ledger.recorder.select_events(ledger.aggregate_id(game_id), desc=True, limit=1)
    return last[0].originator_version if last else None


def state_at_step(ledger: Ledger, game_id: str, step: int, *, game: Any = None) -> Any:
    """The table after ``step`` steps (0: just started); ``game``: the latest game, when the
    caller has it already (it tells the versions; only the events up to the step are read)."""
    game = game if game is not None else game_of(ledger, game_id)
    variant = variants.for_game(game)
    steps = len(variant.timeline(game))
    if not 0 <= step <= steps:
        raise StepOutOfRange(f"game {game_id} has {steps} steps: there is no step {step}")
    if step == steps:
        return variant.table_state(game)
    version = variant.version_after(game, step)
    return variant.table_state(game_of(ledger, game_id, version=version))


def states_after_steps(ledger: Ledger, game_id: str) -> tuple[Any, list[Any]]:
    """The game and the table after every step, from one read of its events.

    ``states[k]`` is the table after step ``k + 1`` (``states[0]``: after the first step)."""
    events = list(ledger.events.get(ledger.aggregate_id(game_id)))
    if not events:
        raise GameNotFound(game_id)
    game = None
    for domain_event in events:
        game = domain_event.mutate(game)
    variant = variants.for_game(game)
    wanted = {
        variant.version_after(game, step): step
        for step in range(1, len(variant.timeline(game)) + 1)
    }
    states: list[Any] = [None] * len(wanted)
    replayed = None
    for domain_event in events:
        replayed = domain_event.mutate(replayed)
        step = wanted.get(replayed.version)
        if step is not None:
            states[step - 1] = variant.table_state(replayed)
    return game, states


def audit_stored(ledger: Ledger, game_id: str, variant: Variant | None = None) -> Any:
    """Audit the stored game ``game_id`` from its events (GameNotFound / NotOfVariant)."""
    game = game_of(ledger, game_id, variant)
    return variants.for_game(game).audit(game, ledger.events_of(game))


__all__ = [
    "NotOfVariant",
    "StepOutOfRange",
    "audit_stored",
    "game_of",
    "latest_version",
    "state_at_step",
    "states_after_steps",
    "store_record",
]
