"""User accounts of the site: who may sign in, in which role, and sign-in throttling.

Roles (:data:`ROLES`):

- ``player``: linked to one player id; sees only the games that player sat in, and only
  that seat's view of them;
- ``auditor`` and ``dispute_officer``: see every game in full (each opening is written to
  the access log, :mod:`replays.access.access_log`); dispute officers also work dispute cases;
- ``admin``: manages accounts and reads the access log.

Passwords are stored as scrypt hashes (werkzeug's ``scrypt:32768:8:1``, salted), never in
clear. Usernames are compared in lower case. Disabling an account, or changing its
password, rotates its ``session_key``, which ends every session signed in with the old one.

Sign-in throttling (:func:`authenticate`): before a password is checked, the attempt takes
a place in two counters in ``login_throttle``, each one atomic statement (``INSERT ... ON
CONFLICT DO UPDATE ... RETURNING``) committed before the check, so parallel attempts cannot
all read the same old count: one per (username, address), limit
:data:`MAX_FAILURES_PER_USER`, and one per address, limit :data:`MAX_FAILURES_PER_ADDRESS`,
each over a fixed :data:`FAILURE_WINDOW` from its first attempt. An attempt beyond either
limit is refused with :class:`LoginThrottled` without checking the password. A success
gives its place back and clears the (username, address) counter. Because the username's
counter is kept per address, bad tries from one address never lock the real user out from
another; there is deliberately no account-wide lock (one that could not stop the user's own
correct password from a clean address could not stop a spread-out attacker either: the
per-address limit and scrypt's cost bound those). Every attempt that was checked is also
written to ``login_attempts``. Kept in the database, so every process of a deployment
counts the same attempts.

>>> account = add_user("ana", "auditor", "correct horse battery", url=url)  # doctest: +SKIP
>>> authenticate("ana", "correct horse battery", remote_addr="127.0.0.1", url=url)  # doctest: +SKIP
Account(id=1, username='ana', role='auditor', player_id=None, active=True, ...)
"""

from __future__ import annotations

import logging
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, Session, mapped_column
from werkzeug.security import check_password_hash, generate_password_hash

from replays.store.db import Base, StoredText, engine_for, one_statement, session_factory
from replays.store.decoding import Readable, read_around_unreadable

log = logging.getLogger(__name__)

PLAYER, AUDITOR, DISPUTE_OFFICER, ADMIN = "player", "auditor", "dispute_officer", "admin"
ROLES = (PLAYER, AUDITOR, DISPUTE_OFFICER, ADMIN)
# Roles that see every seat of every game (and whose every such look is logged).
FULL_VIEW_ROLES = (AUDITOR, DISPUTE_OFFICER, ADMIN)
ROLE_WORDS = {
    PLAYER: "player",
    AUDITOR: "auditor",
    DISPUTE_OFFICER: "dispute officer",
    ADMIN: "admin",
}

USERNAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_.@-]{0,63}$")
PLAYER_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,63}$")
MIN_PASSWORD = 10
MAX_PASSWORD = 256
PASSWORD_METHOD = "scrypt:32768:8:1"

MAX_FAILURES_PER_USER = 5
MAX_FAILURES_PER_ADDRESS = 20
FAILURE_WINDOW = timedelta(minutes=15)

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


class AccountError(ValueError):
    """A bad account request; ``field`` names the input at fault.

    >>> str(AccountError("must be one of player, auditor", field="role"))
    'role: must be one of player, auditor'
    """

    def __init__(self, reason: str, *, field: str | None = None):
        self.reason = reason
        self.field = field
        super().__init__(f"{field}: {reason}" if field else reason)


class UnreadableAccount(AccountError):
    """The account's stored row holds a value of the wrong kind (an insider's write): a
    sign-in to it is refused, since whether it is active, and whose it is, cannot be read;
    the row is named."""

    def __init__(self, findings: list) -> None:
        self.findings = findings
        super().__init__(f"the account's stored row cannot be read: {findings[0]}")


class LoginThrottled(Exception):
    """Too many failed sign-ins; ``retry_after`` seconds until the next attempt counts."""

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


class UserRow(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    username: Mapped[str] = mapped_column(StoredText(64), unique=True)
    role: Mapped[str] = mapped_column(StoredText(16))
    player_id: Mapped[str | None] = mapped_column(StoredText(64))
    password_hash: Mapped[str] = mapped_column(StoredText(255))
    session_key: Mapped[str] = mapped_column(StoredText(32))
    active: Mapped[bool] = mapped_column(sa.Boolean, default=True)
    created_at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True))
    disabled_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    last_login_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))

    __table_args__ = (sa.Index("ix_users_player_id", "player_id"),)


class LoginAttemptRow(Base):
    """One sign-in attempt (the throttle counts the failures)."""

    __tablename__ = "login_attempts"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    username: Mapped[str] = mapped_column(StoredText(64))
    remote_addr: Mapped[str] = mapped_column(StoredText(64))
    at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True))
    succeeded: Mapped[bool] = mapped_column(sa.Boolean)

    __table_args__ = (
        sa.Index("ix_login_attempts_username_at", "username", "at"),
        sa.Index("ix_login_attempts_remote_addr_at", "remote_addr", "at"),
    )


class LoginThrottleRow(Base):
    """A throttle counter: sign-in attempts (failed or in flight) in the current window of
    one (username, address) (``scope`` "user") or one address (``scope`` "address",
    ``username`` empty)."""

    __tablename__ = "login_throttle"

    scope: Mapped[str] = mapped_column(StoredText(8), primary_key=True)
    username: Mapped[str] = mapped_column(StoredText(64), primary_key=True)
    remote_addr: Mapped[str] = mapped_column(StoredText(64), primary_key=True)
    attempts: Mapped[int] = mapped_column(sa.Integer)
    window_start: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True))


@dataclass(frozen=True)
class Account:
    """A signed-in (or listed) user, without the password hash."""

    id: int
    username: str
    role: str
    player_id: str | None
    active: bool
    created_at: datetime
    disabled_at: datetime | None
    session_key: str

    @property
    def full_view(self) -> bool:
        """Whether this account sees every seat of every game."""
        return self.role in FULL_VIEW_ROLES

    @property
    def role_words(self) -> str:
        return ROLE_WORDS.get(self.role, self.role)

    @property
    def actor(self) -> str:
        """The name written into events and the access log: a player's pseudonymous player id
        (events never hold personal data), otherwise the staff username."""
        return self.player_id if self.role == PLAYER and self.player_id else self.username


@lru_cache(maxsize=1)
def _dummy_hash() -> str:
    """Checked when the username is unknown, so a wrong name costs as long as a wrong
    password (and does not reveal which usernames exist)."""
    return generate_password_hash("not the password of anyone", method=PASSWORD_METHOD)


def _now() -> datetime:
    return datetime.now(UTC)


def normalise_username(username: object) -> str:
    if not isinstance(username, str):
        raise AccountError("must be text", field="username")
    name = username.strip().lower()
    if not USERNAME_PATTERN.match(name):
        raise AccountError(
            f"{username!r} is not a username (1-64 letters, digits, '_', '.', '@', '-', "
            "starting with a letter or digit)",
            field="username",
        )
    return name


def check_password(password: object, username: str = "") -> str:
    """The password if it is acceptable, else :class:`AccountError` saying why."""
    if not isinstance(password, str):
        raise AccountError("must be text", field="password")
    if len(password) < MIN_PASSWORD:
        raise AccountError(f"must be at least {MIN_PASSWORD} characters long", field="password")
    if len(password) > MAX_PASSWORD:
        raise AccountError(f"must be at most {MAX_PASSWORD} characters long", field="password")
    if not password.strip():
        raise AccountError("must not be only spaces", field="password")
    if username and password.strip().lower() == username.lower():
        raise AccountError("must not be the username", field="password")
    return password


def hash_password(password: str) -> str:
    return generate_password_hash(password, method=PASSWORD_METHOD)


def _check_role(role: object, player: object) -> tuple[str, str | None]:
    if role not in ROLES:
        raise AccountError(f"{role!r} is not a role ({', '.join(ROLES)})", field="role")
    if isinstance(player, str):
        player = player.strip() or None
    if role == PLAYER:
        if player is None:
            raise AccountError("a player account needs --player PLAYER_ID", field="player")
        if not isinstance(player, str) or not PLAYER_ID_PATTERN.match(player):
            raise AccountError(f"{player!r} is not a player id", field="player")
    elif player is not None:
        raise AccountError(
            f"only player accounts are linked to a player, not {role}", field="player"
        )
    return role, player


def add_user(
    username: str, role: str, password: str, *, player: str | None = None, url: str | None = None
) -> Account:
    """Create an account; :class:`AccountError` for a bad field or a taken username."""
    name = normalise_username(username)
    role, player = _check_role(role, player)
    check_password(password, name)
    row = UserRow(
        username=name,
        role=role,
        player_id=player,
        password_hash=hash_password(password),
        session_key=secrets.token_hex(16),
        active=True,
        created_at=_now(),
    )
    try:
        with session_factory(url).begin() as session:
            session.add(row)
            session.flush()
            return _account(row)
    except sa.exc.IntegrityError:
        raise AccountError(f"{name!r} already exists", field="username") from None


def get_user(user_id: int, *, url: str | None = None) -> Account | None:
    """The account ``user_id``; None when there is none, or (fail closed: its session
    ends) when its stored row holds a value of the wrong kind, which is logged."""
    query = sa.select(UserRow.__table__).where(UserRow.id == user_id)

    def read(connection: sa.Connection) -> Account | None:
        row = connection.execute(query).first()
        return None if row is None else _account(row)

    where = {UserRow.__tablename__: ("id = :user_id", {"user_id": user_id})}
    # Asked on every signed-in request, on the primary: one statement, no transaction.
    with one_statement(url) as connection:
        account, unreadable = read_around_unreadable(connection, read, [UserRow.__table__], where)
    if unreadable:
        log.warning("account %s: %s", user_id, unreadable[0])
    return account


def find_user(username: str, *, url: str | None = None) -> Account | None:
    try:
        name = normalise_username(username)
    except AccountError:
        return None
    with session_factory(url)() as session:
        row = session.scalar(sa.select(UserRow).where(UserRow.username == name))
        return None if row is None else _account(row)


def list_users(*, url: str | None = None, role: str | None = None) -> Readable:
    query = sa.select(UserRow).order_by(UserRow.username)
    if role is not None:
        query = query.where(UserRow.role == role)

    def read(connection: sa.Connection) -> list[Account]:
        with Session(bind=connection) as session:
            return [_account(row) for row in session.scalars(query)]

    with engine_for(url).connect() as connection:
        return Readable(*read_around_unreadable(connection, read, [UserRow.__table__]))


def _change(username: str, url: str | None, change) -> Account:
    name = normalise_username(username)
    with session_factory(url).begin() as session:
        row = session.scalar(sa.select(UserRow).where(UserRow.username == name))
        if row is None:
            raise AccountError(f"no account {name!r}", field="username")
        change(row)
        return _account(row)


def disable_user(username: str, *, url: str | None = None) -> Account:
    """Disable an account: it can no longer sign in, and its sessions end at once."""

    def disable(row: UserRow) -> None:
        if row.active:
            row.active = False
            row.disabled_at = _now()
        row.session_key = secrets.token_hex(16)

    return _change(username, url, disable)


def enable_user(username: str, *, url: str | None = None) -> Account:
    def enable(row: UserRow) -> None:
        row.active = True
        row.disabled_at = None

    return _change(username, url, enable)


def set_password(username: str, password: str, *, url: str | None = None) -> Account:
    """Replace the password; sessions signed in with the old one end."""
    name = normalise_username(username)
    check_password(password, name)

    def change(row: UserRow) -> None:
        row.password_hash = hash_password(password)
        row.session_key = secrets.token_hex(16)

    return _change(name, url, change)


def end_sessions(user_id: int, *, url: str | None = None) -> None:
    """Rotate the account's session key: every session signed in with it ends (sign-out uses
    this, so a copied session cookie dies with the sign-out)."""
    with session_factory(url).begin() as session:
        row = session.get(UserRow, user_id)
        if row is not None:
            row.session_key = secrets.token_hex(16)


def load_session_user(session_id: str, *, url: str | None = None) -> Account | None:
    """The active account a session cookie names (``"<id>:<session_key>"``), else None."""
    user_id, _, key = (session_id or "").partition(":")
    if not user_id.isdecimal() or not key:
        return None
    account = get_user(int(user_id), url=url)
    if account is None or not account.active:
        return None
    if not secrets.compare_digest(account.session_key, key):
        return None
    return account


def still_signed_in(account: Account) -> sa.Exists:
    """A condition, for a statement on the primary, that holds while ``account`` as a replica
    read it is still the account its session cookie signs in: the same row, active, with the
    same session key (so neither signed out nor disabled since), role and player.

    A page a read replica serves reads the account there (a primary round trip saved) and
    has it confirmed on the primary with this before the page is shown: in the statement
    that writes its access-log line, or by :func:`confirm_signed_in`."""
    table = UserRow.__table__
    return sa.exists().where(
        table.c.id == account.id,
        table.c.session_key == account.session_key,
        table.c.active.is_(True),
        table.c.username == account.username,
        table.c.role == account.role,
        table.c.player_id.is_not_distinct_from(account.player_id),
    )


def confirm_signed_in(account: Account, *, url: str | None = None) -> bool:
    """Whether ``account`` (read from a replica) still signs its session in on ``url`` (the
    primary): one statement, :func:`still_signed_in`."""
    with one_statement(url) as connection:
        return bool(connection.execute(sa.select(still_signed_in(account))).scalar())


def authenticate(
    username: str,
    password: str,
    *,
    remote_addr: str | None = None,
    url: str | None = None,
    now: datetime | None = None,
) -> Account | None:
    """The account if ``password`` is right for an active ``username``, else None.

    Raises :class:`LoginThrottled` when too many attempts failed lately for that username
    from that address, or from that address at all, without checking the password. Every
    checked attempt is recorded.
    """
    now = now or _now()
    typed = (username or "").strip().lower()[:64] if isinstance(username, str) else ""
    address = (remote_addr or "unknown")[:64]
    factory = session_factory(url)
    # Committed before the (slow, scrypt) check: parallel attempts each see the others.
    with factory.begin() as session:
        refused = _take_place(session, typed, address, now)
    if refused is not None:
        raise refused  # after the commit: refused attempts still count
    stored_hash, active = _sign_in_row(typed, url) if typed else (None, False)
    password_text = password if isinstance(password, str) else ""
    if stored_hash is None:
        check_password_hash(_dummy_hash(), password_text)
        ok = False
    else:
        ok = check_password_hash(stored_hash, password_text) and active
    with factory.begin() as session:
        session.add(LoginAttemptRow(username=typed, remote_addr=address, at=now, succeeded=ok))
        if not ok:
            return None
        _give_place_back(session, typed, address)
        row = session.scalar(sa.select(UserRow).where(UserRow.username == typed))
        row.last_login_at = now
        return _account(row)


def _sign_in_row(username: str, url: str | None) -> tuple[str | None, bool]:
    """The stored password hash of ``username`` (None: no such account) and whether the
    account is active. Fail closed: a row holding a value of the wrong kind is
    :class:`UnreadableAccount`, never a sign-in, and is logged (a column whose type an
    insider changed is read cast back to its type, as every reader of the store does)."""
    query = sa.select(UserRow).where(UserRow.username == username)

    def read(connection: sa.Connection) -> tuple[str, bool] | None:
        with Session(bind=connection) as session:
            row = session.scalar(query)
            if row is None:
                return None
            account = _account(row)
            if not isinstance(row.password_hash, str):
                raise ValueError(f"users row {row.id!r}: password_hash is not text")
            return row.password_hash, account.active

    where = {UserRow.__tablename__: ("username = :username", {"username": username})}
    with engine_for(url).connect() as connection:
        found, unreadable = read_around_unreadable(connection, read, [UserRow.__table__], where)
    if unreadable and found is None:
        log.warning("sign-in to %r refused: %s", username, unreadable[0])
        raise UnreadableAccount(unreadable)
    if unreadable:  # a column's type changed; the row itself reads back as its type
        log.warning("sign-in to %r: %s", username, unreadable[0])
    return found or (None, False)


USER_SCOPE, ADDRESS_SCOPE = "user", "address"


def _take_place(session, username: str, address: str, now: datetime) -> LoginThrottled | None:
    """Count this attempt in its address's and its (username, address)'s counters; the
    :class:`LoginThrottled` to raise when either is past its limit."""
    for scope, key, limit, label in (
        (ADDRESS_SCOPE, "", MAX_FAILURES_PER_ADDRESS, f"from {address}"),
        (USER_SCOPE, username, MAX_FAILURES_PER_USER, f"for {username!r} from {address}"),
    ):
        attempts, window_start = _count(session, scope, key, address, now)
        if attempts > limit:
            retry = max(1, int((_aware(window_start) + FAILURE_WINDOW - now).total_seconds()) + 1)
            minutes = -(-retry // 60)
            return LoginThrottled(
                f"too many failed sign-ins {label}: try again in {minutes} minute"
                + ("s" if minutes != 1 else ""),
                retry,
            )
    return None


def _count(session, scope: str, username: str, address: str, now: datetime) -> tuple:
    """One atomic upsert: add this attempt to the counter (starting a new window when the
    old one is over); the count and window start after it."""
    t = LoginThrottleRow.__table__
    dialect = session.get_bind().dialect.name
    if dialect == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    at = sa.bindparam("now", now, type_=t.c.window_start.type)
    over = t.c.window_start <= sa.bindparam(
        "since", now - FAILURE_WINDOW, type_=t.c.window_start.type
    )
    statement = (
        insert(t)
        .values(scope=scope, username=username, remote_addr=address, attempts=1, window_start=at)
        .on_conflict_do_update(
            index_elements=[t.c.scope, t.c.username, t.c.remote_addr],
            set_={
                "attempts": sa.case((over, 1), else_=t.c.attempts + 1),
                "window_start": sa.case((over, at), else_=t.c.window_start),
            },
        )
        .returning(t.c.attempts, t.c.window_start)
    )
    return tuple(session.execute(statement).one())


def _give_place_back(session, username: str, address: str) -> None:
    """A success is no failure: it leaves the address's count as it found it and clears
    the username's failures from this address."""
    t = LoginThrottleRow.__table__
    session.execute(
        sa.update(t)
        .where(t.c.scope == ADDRESS_SCOPE, t.c.username == "", t.c.remote_addr == address)
        .where(t.c.attempts > 0)
        .values(attempts=t.c.attempts - 1)
    )
    session.execute(
        sa.delete(t).where(
            t.c.scope == USER_SCOPE, t.c.username == username, t.c.remote_addr == address
        )
    )


def _aware(moment: datetime) -> datetime:
    """SQLite hands back naive datetimes; they were written as UTC."""
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


_KINDS = (
    ("username", str),
    ("role", str),
    ("player_id", str | None),
    ("active", bool),
    ("created_at", datetime),
    ("disabled_at", datetime | None),
    ("last_login_at", datetime | None),
    ("session_key", str),
)


def _account(row: UserRow) -> Account:
    """The row as an account, refused (``ValueError``) when a value is not of its column's
    kind: SQLite reads a BLOB back as bytes, and on PostgreSQL a column an insider changed
    to text reads back as whatever text it holds."""
    for name, kind in _KINDS:
        if not isinstance(getattr(row, name), kind):
            raise ValueError(f"users row {row.id!r} holds a value of the wrong kind in {name}")
    return Account(
        id=row.id,
        username=row.username,
        role=row.role,
        player_id=row.player_id,
        active=row.active,
        created_at=row.created_at,
        disabled_at=row.disabled_at,
        session_key=row.session_key,
    )
