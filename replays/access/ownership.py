"""Which operator a game belongs to: the one whose token created it through the API.

Operators are kept apart by this table alone. A token names its operator
(:mod:`replays.access.tokens`); ``POST /api/v1/games`` records the game's owner in the same
transaction as the game's first save (:func:`save_owned_game`), so a game the API created
always has its owner and a crash can leave neither behind without the other. Every other
API call on a game first asks :func:`owner_of`: another operator's game answers exactly as
a game that does not exist. Games stored by ``rummy-ledger import`` (or the simulator)
have no owner, so no operator reaches them through the API.

The owner is not in the game's events: it is an access rule of this deployment, not a fact
of the game. Kept out, the events (and so the integrity tree, exports and re-imports) are
the same whichever way a game arrived, and moving a game to another operator never
rewrites history. Nor is it a projection: ``projections rebuild`` cannot recompute it from
the events, so it never touches this table.
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from eventsourcing.persistence import IntegrityError
from sqlalchemy.orm import Mapped, mapped_column

from replays.store.application import GameExists
from replays.store.db import Base, StoredText, engine_for, session_factory
from replays.store.decoding import read_around_unreadable


class GameOwner(Base):
    __tablename__ = "game_owners"

    game_id: Mapped[str] = mapped_column(StoredText(64), primary_key=True)
    operator: Mapped[str] = mapped_column(StoredText(64), index=True)
    created_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True))


def save_owned_game(ledger, game, operator: str) -> None:
    """Save a new ``game`` and record ``operator`` as its owner, in one transaction.

    Raises :class:`replays.store.application.GameExists` (and stores nothing) when the id is
    taken. The owner row is written after the events because the save's first statement
    takes the store's write lock (``BEGIN IMMEDIATE`` on SQLite), which must open the
    transaction.
    """
    try:
        with ledger.recorder.transaction(commit=True) as session:
            ledger._save(game, creating=True)
            session.add(
                GameOwner(game_id=game.game_id, operator=operator, created_at=datetime.now(UTC))
            )
            session.flush()
    except IntegrityError:
        # An owner row with no game (written by hand): the id is taken all the same, and
        # the game's events went with the rolled-back transaction.
        raise GameExists(f"game {game.game_id} is already recorded", game.game_id) from None


class UnreadableOwner(ValueError):
    """The game's owner row holds a value of the wrong kind (an insider's write): whose game
    it is cannot be read, so no operator reaches it (fail closed); the row is named."""

    def __init__(self, game_id: str, findings: list) -> None:
        self.game_id = game_id
        self.findings = findings
        super().__init__(f"the owner of game {game_id} cannot be read: {findings[0]}")


def owner_of(game_id: str, *, url: str | None = None) -> str | None:
    """The operator owning ``game_id``, or None (imported, or no such game);
    :class:`UnreadableOwner` when its owner row cannot be read."""
    query = sa.select(GameOwner.operator).where(GameOwner.game_id == game_id)

    def read(connection: sa.Connection) -> str | None:
        operator = connection.execute(query).scalar()
        if not isinstance(operator, str | None):  # SQLite reads a BLOB back as bytes
            raise ValueError(f"game_owners {game_id!r}: operator is not text")
        return operator

    where = {GameOwner.__tablename__: ("game_id = :game_id", {"game_id": game_id})}
    with engine_for(url).connect() as connection:
        operator, unreadable = read_around_unreadable(
            connection, read, [GameOwner.__table__], where
        )
    if unreadable and operator is None:
        raise UnreadableOwner(game_id, unreadable)
    return operator


def hand_over(game_id: str, operator: str, *, url: str | None = None) -> str | None:
    """Make ``operator`` the owner of the stored game ``game_id`` (an imported one, or one
    moving to another operator); the previous owner, or None.

    :class:`replays.access.tokens.TokenError` for a bad operator name,
    :class:`replays.store.application.GameNotFound` when no such game is stored."""
    from replays.access.tokens import OPERATOR_PATTERN, TokenError
    from replays.store.application import GameNotFound, Ledger

    if not isinstance(operator, str) or not OPERATOR_PATTERN.match(operator):
        raise TokenError(f"{operator!r} is not an operator name")
    ledger = Ledger(url=url)
    if not ledger.recorder.select_events(ledger.aggregate_id(game_id), limit=1):
        raise GameNotFound(game_id)
    with session_factory(url).begin() as session:
        row = session.get(GameOwner, game_id)
        previous = None if row is None else row.operator
        if row is None:
            session.add(GameOwner(game_id=game_id, operator=operator, created_at=datetime.now(UTC)))
        else:
            row.operator = operator
        return previous
