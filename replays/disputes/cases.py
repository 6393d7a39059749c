"""Dispute use cases: open a case on a game at a move, add notes and evidence, close it.

The cases are :class:`domain.dispute.DisputeCase` aggregates stored in the ledger's own
event store (same tables, same notification log, sealed by tamper evidence like the
games); :mod:`replays.disputes.projection` keeps the case list and the adjustment ledger
entries current. Who may take each step is decided here, once, for the site and any other
caller:

- open a case: a dispute officer on any game, or a player on a game they sat in;
- add a note, add evidence, close: dispute officers only;
- read a case: auditors, dispute officers and admins any case; a player the cases they
  opened.

>>> disputes = Disputes(ledger)  # doctest: +SKIP
>>> case = disputes.open_case(officer, "T7-000123", 17, "p3 picked a joker")  # doctest: +SKIP
>>> disputes.close_case(officer, case.case_id, "rejected", reason="legal pick")  # doctest: +SKIP
"""

from __future__ import annotations

import random
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import sqlalchemy as sa
from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import IntegrityError
from sqlalchemy.orm import Session

from domain.dispute import CASE_ID_PATTERN, DisputeCase, DisputeError
from replays.disputes.projection import DisputeCaseRow
from replays.readmodels.models import GameRow

# Red 3 Rummy has no stakes (docs/rules.md §2): ISO 4217's code for "no currency".
NO_CURRENCY = "XXX"
SAVE_ATTEMPTS = 12

__all__ = [
    "CaseNotFound",
    "DisputeCaseRow",
    "DisputeError",
    "Disputes",
    "NotAllowed",
    "case_age",
    "list_cases",
]


class Actor(Protocol):
    """Who takes a step (an :class:`replays.access.accounts.Account`)."""

    role: str
    player_id: str | None

    @property
    def actor(self) -> str: ...


class NotAllowed(PermissionError):
    """The actor's role does not allow this step (the message says which role would)."""


class CaseNotFound(LookupError):
    def __init__(self, case_id: str):
        super().__init__(f"no dispute case {case_id!r}")
        self.case_id = case_id


class GameUnknown(LookupError):
    def __init__(self, game_id: str):
        super().__init__(f"no game {game_id!r} in the ledger")
        self.game_id = game_id


OFFICER, PLAYER = "dispute_officer", "player"
READERS = ("auditor", "dispute_officer", "admin")


def may_read(actor: Actor, case: DisputeCase | DisputeCaseRow) -> bool:
    if actor.role in READERS:
        return True
    return (
        actor.role == PLAYER
        and case.opener_role == PLAYER
        and actor.player_id is not None
        and case.opened_by == actor.player_id
    )


def may_open(actor: Actor, players: tuple[str, ...] | list[str]) -> bool:
    if actor.role == OFFICER:
        return True
    return actor.role == PLAYER and actor.player_id is not None and actor.player_id in players


def _now() -> str:
    return datetime.now(UTC).isoformat()


@dataclass(frozen=True)
class GameFacts:
    game_id: str
    moves: int  # the last move a case may be opened at (0 is the first table)
    players: tuple[str, ...]
    currency: str


class Disputes:
    """The dispute use cases over one :class:`~replays.store.application.Ledger`.

    ``after_write`` runs after each stored step (by default the read-model projection
    catches up, so the case list shows the step at once; the step's integrity seals were
    written with it)."""

    def __init__(self, ledger, *, after_write: Callable[[], Any] | None = None):
        self.ledger = ledger
        if after_write is None:
            from replays.store.followers import catch_up_followers

            def after_write():
                catch_up_followers(ledger.url)

        self.after_write = after_write

    # -- reading ---------------------------------------------------------------------------
    def get_case(self, case_id: str) -> DisputeCase:
        if not isinstance(case_id, str) or not CASE_ID_PATTERN.match(case_id):
            raise CaseNotFound(str(case_id)[:80])
        try:
            case = self.ledger.repository.get(DisputeCase.create_id(case_id))
        except AggregateNotFoundError:
            raise CaseNotFound(case_id) from None
        if not isinstance(case, DisputeCase):
            raise CaseNotFound(case_id)
        return case

    def read_case(self, actor: Actor, case_id: str) -> DisputeCase:
        case = self.get_case(case_id)
        if not may_read(actor, case):
            # Said the same way as an unknown case: a player learns nothing of others' cases.
            raise CaseNotFound(case_id)
        return case

    def game_facts(self, game_id: str) -> GameFacts:
        """The last move (the replay's, :meth:`Variant.last_move_number`), players and
        currency of a stored game (any variant; a variant without money has no currency)."""
        if not isinstance(game_id, str) or not game_id.strip() or len(game_id) > 64:
            raise GameUnknown(str(game_id)[:80])
        variant = self.ledger.variant_of(game_id)
        if variant is None:
            raise GameUnknown(game_id)
        game = self.ledger.get_game(game_id)
        currency = game.config.currency if variant.has_money else NO_CURRENCY
        last = variant.last_move_number(game)
        return GameFacts(game_id, last, variant.players(game), currency)

    # -- writing ---------------------------------------------------------------------------
    def open_case(
        self,
        actor: Actor,
        game_id: str,
        move: int,
        description: str,
        *,
        at: Any = None,
    ) -> DisputeCase:
        """Open a case; :class:`NotAllowed` unless an officer, or a player of that game."""
        facts = self.game_facts(game_id)
        if not may_open(actor, facts.players):
            if actor.role == PLAYER:
                # The same answer as for a game that does not exist.
                raise GameUnknown(game_id)
            raise NotAllowed("only a dispute officer, or a player of the game, opens a case")
        for _attempt in range(SAVE_ATTEMPTS):
            case = DisputeCase.open(
                "DC-" + secrets.token_hex(4).upper(),
                game=facts.game_id,
                move=move,
                moves=facts.moves,
                players=facts.players,
                currency=facts.currency,
                description=description,
                opened_by=actor.actor,
                opener_role=actor.role,
                at=at or _now(),
            )
            try:
                self.ledger.save(case)
            except IntegrityError:
                continue  # the random case id was taken: draw another
            self.after_write()
            return case
        raise DisputeError("could not find a free case id; try again")  # pragma: no cover

    def open_from_flag(self, actor: Actor, flag: dict, *, at: Any = None) -> DisputeCase:
        """Open a case at a fair-play flag's heaviest evidence move and record the flag
        (its signal, players, strength and every evidence move) in the case's events."""
        if actor.role != OFFICER:
            raise NotAllowed("only a dispute officer opens a case from a fair-play flag")
        evidence = list(flag.get("evidence") or ())
        if not evidence:
            raise DisputeError("the flag has no evidence move to open the case at", field="flag")
        at = at or _now()
        description = f"Fair-play review: {flag.get('label', flag.get('signal'))}, " + " + ".join(
            flag.get("players", ())
        )
        case = self.open_case(
            actor, evidence[0]["game_id"], evidence[0]["move"], description, at=at
        )
        return self._step(actor, case.case_id, lambda c: c.attach_flag(flag, by=actor.actor, at=at))

    def add_note(self, actor: Actor, case_id: str, text: str, *, at: Any = None) -> DisputeCase:
        at = at or _now()
        return self._step(actor, case_id, lambda case: case.add_note(text, by=actor.actor, at=at))

    def add_evidence(
        self, actor: Actor, case_id: str, link: str, *, label: str = "", at: Any = None
    ) -> DisputeCase:
        at = at or _now()
        return self._step(
            actor,
            case_id,
            lambda case: case.add_evidence(link, by=actor.actor, at=at, label=label),
        )

    def close_case(
        self,
        actor: Actor,
        case_id: str,
        decision: str,
        *,
        reason: str,
        amount: Any = None,
        credited: str | None = None,
        debited: str | None = None,
        at: Any = None,
    ) -> DisputeCase:
        at = at or _now()
        return self._step(
            actor,
            case_id,
            lambda case: case.close(
                decision,
                by=actor.actor,
                reason=reason,
                at=at,
                amount=amount,
                credited=credited,
                debited=debited,
            ),
        )

    def _step(self, actor: Actor, case_id: str, command: Callable[[DisputeCase], None]):
        """Run one officer's command on the latest case; retried when another officer's step
        was stored first (then the command is checked again against the newer case)."""
        if actor.role != OFFICER:
            self.read_case(actor, case_id)  # unknown to those who may not read it
            raise NotAllowed("only a dispute officer works on a case")
        for attempt in range(SAVE_ATTEMPTS):
            case = self.get_case(case_id)
            command(case)
            try:
                self.ledger.save(case)
            except IntegrityError:
                # Another officer's step landed first: back off a random while, so writers
                # racing for one case do not keep colliding in step.
                time.sleep(random.uniform(0.005, 0.02) * (attempt + 1))
                continue
            self.after_write()
            return case
        raise DisputeError(
            f"case {case_id} kept changing while this step was being recorded; try again",
            case_id=case_id,
        )


# -- the case list (read model) ------------------------------------------------------------


def list_cases(
    session: Session,
    *,
    status: str | None = "open",
    game_id: str | None = None,
    actor: Actor | None = None,
    limit: int = 500,
) -> list[DisputeCaseRow]:
    """Cases from the read model, oldest open first; only those ``actor`` may read."""
    query = sa.select(DisputeCaseRow)
    if status:
        query = query.where(DisputeCaseRow.status == status)
    if game_id:
        query = query.where(DisputeCaseRow.game_id == game_id)
    if actor is not None and actor.role not in READERS:
        if actor.role != PLAYER or actor.player_id is None:
            return []
        query = query.where(
            DisputeCaseRow.opener_role == PLAYER, DisputeCaseRow.opened_by == actor.player_id
        )
    query = query.order_by(DisputeCaseRow.opened_at, DisputeCaseRow.case_id).limit(limit)
    return list(session.scalars(query))


def case_age(opened_at: datetime | None, now: datetime | None = None) -> str:
    """How long a case has been open, in the largest whole unit.

    >>> from datetime import timedelta
    >>> t = datetime(2025, 3, 1, tzinfo=UTC)
    >>> case_age(t, t + timedelta(days=3, hours=5)), case_age(t, t + timedelta(minutes=7))
    ('3 days', '7 minutes')
    """
    if opened_at is None:
        return "unknown"
    now = now or datetime.now(UTC)
    if opened_at.tzinfo is None:
        opened_at = opened_at.replace(tzinfo=UTC)
    seconds = max(0, int((now - opened_at).total_seconds()))
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            count = seconds // size
            return f"{count} {unit}" + ("s" if count != 1 else "")
    return "just now"


def game_players(session: Session, game_id: str) -> list[str] | None:
    """The players of a game from the read model (None for an unknown game); a stored value
    that is no list of their ids fails the read (:class:`~replays.store.db.StoredPlayerIds`)."""
    return session.scalar(sa.select(GameRow.players).where(GameRow.game_id == game_id))
