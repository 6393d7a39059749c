"""Operator API tokens: issued once, stored only as a hash, revocable.

A token reads ``rlk_<token_id>_<secret>``. The ``token_id`` is public (it names the token in
listings and revocations); the whole text is shown once when created and only its SHA-256
is stored, so a copy of the database cannot be used to call the API. The secret carries
256 random bits, which is why a fast hash is enough (no password stretching needed).

>>> token_hash("rlk_0123456789ab_secret")[:16]
'304275616be2c594'
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, Session, mapped_column

from replays.store.db import Base, StoredText, engine_for, session_factory
from replays.store.decoding import Readable, read_around_unreadable

TOKEN_PREFIX = "rlk"
OPERATOR_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,63}$")


class TokenError(ValueError):
    """A bad operator name or an unknown token id."""


class UnreadableToken(TokenError):
    """The token's stored row holds a value of the wrong kind (an insider's write): the
    token is refused, since whether it was revoked cannot be read, and the row is named."""

    def __init__(self, findings: list) -> None:
        self.findings = findings
        super().__init__(f"the token's stored row cannot be read: {findings[0]}")


class ApiToken(Base):
    __tablename__ = "api_tokens"

    token_id: Mapped[str] = mapped_column(StoredText(16), primary_key=True)
    operator: Mapped[str] = mapped_column(StoredText(64), index=True)
    token_hash: Mapped[str] = mapped_column(StoredText(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True))
    revoked_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))


@dataclass(frozen=True)
class IssuedToken:
    token_id: str
    operator: str
    token: str  # shown once, never stored


@dataclass(frozen=True)
class TokenInfo:
    token_id: str
    operator: str
    created_at: datetime
    revoked_at: datetime | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_token(operator: str, *, url: str | None = None) -> IssuedToken:
    """Issue a new token for ``operator``; the returned text is the only copy."""
    if not isinstance(operator, str) or not OPERATOR_PATTERN.match(operator):
        raise TokenError(
            f"{operator!r} is not an operator name (1-64 letters, digits, '_', '.', ':', '@', '-')"
        )
    token_id = secrets.token_hex(6)
    token = f"{TOKEN_PREFIX}_{token_id}_{secrets.token_urlsafe(32)}"
    with session_factory(url).begin() as session:
        session.add(
            ApiToken(
                token_id=token_id,
                operator=operator,
                token_hash=token_hash(token),
                created_at=datetime.now(UTC),
            )
        )
    return IssuedToken(token_id=token_id, operator=operator, token=token)


def authenticate(token: str | None, *, url: str | None = None) -> TokenInfo | None:
    """The active token matching ``token``, or None (unknown, malformed or revoked)."""
    if not token or not token.startswith(TOKEN_PREFIX + "_") or len(token) > 200:
        return None
    digest = token_hash(token)
    where = {ApiToken.__tablename__: ("token_hash = :digest", {"digest": digest})}
    listing = _readable(sa.select(ApiToken).where(ApiToken.token_hash == digest), url, where)
    if listing.unreadable and not listing:
        raise UnreadableToken(listing.unreadable)
    info = listing[0] if listing else None
    return info if info is not None and info.active else None


@dataclass(frozen=True)
class Revocation:
    """A revoked token: its id, its operator (None when its stored row cannot be read) and
    the findings that row held before it was revoked."""

    token_id: str
    operator: str | None
    unreadable: list


def revoke_token(token_id: str, *, url: str | None = None) -> Revocation:
    """Revoke one token by its id (or its full text); revoking twice is harmless.

    A token whose stored row holds a value of the wrong kind is revoked all the same: the
    write sets one column of a row found by its key, so it cannot reach another token, and a
    revoke is what makes a token refused (an unreadable ``revoked_at`` is replaced by the
    time of this revoke, which reads back). The findings come back with it."""
    if token_id.startswith(TOKEN_PREFIX + "_"):
        token_id = token_id.split("_")[1]
    table = ApiToken.__table__
    where = {table.name: ("token_id = :token_id", {"token_id": token_id})}
    listing = _readable(sa.select(ApiToken).where(ApiToken.token_id == token_id), url, where)
    if not listing and not listing.unreadable:
        raise TokenError(f"no token with id {token_id!r}")
    unreadable_revocation = any(f.column == "revoked_at" for f in listing.unreadable)
    still_active = sa.true() if unreadable_revocation else table.c.revoked_at.is_(None)
    with engine_for(url).begin() as connection:
        connection.execute(
            sa.update(table)
            .where(table.c.token_id == token_id, still_active)
            .values(revoked_at=datetime.now(UTC))
        )
    operator = listing[0].operator if listing else None
    return Revocation(token_id, operator, listing.unreadable)


@dataclass(frozen=True)
class OperatorRevocation:
    """How many tokens of an operator were revoked, and the findings their rows held."""

    count: int
    unreadable: list


def revoke_operator(operator: str, *, url: str | None = None) -> OperatorRevocation:
    """Revoke every active token of ``operator``. A token whose stored row holds a value of
    the wrong kind is revoked all the same, as :func:`revoke_token` does, and named."""
    table = ApiToken.__table__
    where = {table.name: ("operator = :operator", {"operator": operator})}
    listing = _readable(
        sa.select(ApiToken).where(ApiToken.operator == operator, ApiToken.revoked_at.is_(None)),
        url,
        where,
    )
    unreadable_revocations = [
        f.key.get("token_id") for f in listing.unreadable if f.column == "revoked_at"
    ]
    with engine_for(url).begin() as connection:
        revoked = connection.execute(
            sa.update(table)
            .where(
                table.c.operator == operator,
                table.c.revoked_at.is_(None) | table.c.token_id.in_(unreadable_revocations),
            )
            .values(revoked_at=datetime.now(UTC))
        )
    return OperatorRevocation(revoked.rowcount, listing.unreadable)


def list_tokens(*, url: str | None = None, operator: str | None = None) -> Readable:
    query = sa.select(ApiToken).order_by(ApiToken.created_at, ApiToken.token_id)
    if operator is not None:
        query = query.where(ApiToken.operator == operator)

    return _readable(query, url)


def _readable(query: sa.Select, url: str | None, where: dict | None = None) -> Readable:
    """The tokens ``query`` selects, without (and naming) the token rows holding a value of
    the wrong kind (``where``: those the query could have read)."""

    def read(connection: sa.Connection) -> list[TokenInfo]:
        with Session(bind=connection) as session:
            return [_info(row) for row in session.scalars(query)]

    with engine_for(url).connect() as connection:
        return Readable(*read_around_unreadable(connection, read, [ApiToken.__table__], where))


def _info(row: ApiToken) -> TokenInfo:
    """The row as read, refused when a value is not of its column's kind: on PostgreSQL a
    column an insider changed to text reads back as whatever text it holds."""
    texts, times = (row.token_id, row.operator), (row.created_at, row.revoked_at)
    if not all(isinstance(v, str) for v in texts) or not (
        isinstance(times[0], datetime) and isinstance(times[1], datetime | None)
    ):
        raise ValueError(f"api_tokens row {row.token_id!r} holds a value of the wrong kind")
    return TokenInfo(
        token_id=row.token_id,
        operator=row.operator,
        created_at=row.created_at,
        revoked_at=row.revoked_at,
    )
