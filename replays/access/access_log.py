"""The access log: who opened which game, at which move, in which view, and when.

Every opening of a game in a privileged view (the full table, another player's seat, the
audit page and its downloads) by an auditor, dispute officer or admin is written here by
the site (:mod:`web.auth`). The log is append-only: this module has no update or delete,
and the migration adds database triggers that refuse ``UPDATE``, ``DELETE`` (and on
PostgreSQL ``TRUNCATE``) on the table, so not even a stray SQL statement can rewrite it.

Admins browse it with filters (:func:`browse`) and export it as CSV (:func:`csv_lines`).

>>> record_access(url, username="ana", role="auditor", game_id="T7-000123", move=17,
...               view="full", page="replay")  # doctest: +SKIP
"""

from __future__ import annotations

import csv
import io
import select
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, Session, mapped_column

from domain.timestamps import after_day
from replays.store.db import Base, StoredText, engine_for, one_statement

BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
CSV_COLUMNS = ("id", "at", "username", "role", "game_id", "move", "view", "page", "remote_addr")


# What a line's commit waits for on a primary with a synchronous standby (PostgreSQL's
# synchronous_commit): "on", the standby has flushed it to disk (every commit's default);
# "remote_write", the standby has received and written it (to its OS, not yet flushed).
# Either way the primary has flushed it and a failover keeps it; "remote_write" loses it
# only if the primary is lost and the standby's OS fails in the same instant
# (docs/deploying.md, "The access log's commit"). Nothing weaker is offered.
COMMIT_LEVELS = ("on", "remote_write")


class AccessLogError(ValueError):
    """A filter that cannot be understood; the message names the field."""


class AccessLogRow(Base):
    __tablename__ = "access_log"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(sa.DateTime(timezone=True))
    username: Mapped[str] = mapped_column(StoredText(64))
    role: Mapped[str] = mapped_column(StoredText(16))
    game_id: Mapped[str] = mapped_column(StoredText(64))
    move: Mapped[int | None] = mapped_column(sa.Integer)
    # full, seat:<player>, audit, audit.json, audit.csv, case
    view: Mapped[str] = mapped_column(StoredText(80))
    page: Mapped[str] = mapped_column(StoredText(64))
    remote_addr: Mapped[str | None] = mapped_column(StoredText(64))

    __table_args__ = (
        sa.Index("ix_access_log_at", "at"),
        sa.Index("ix_access_log_game_id_at", "game_id", "at"),
        sa.Index("ix_access_log_username_at", "username", "at"),
    )


TABLE = AccessLogRow.__table__


def record_access(url: str | None, **line) -> bool:
    """Append one line, one INSERT committed on its own, and wait for its commit; the
    arguments are :func:`send_access`'s. Returns whether the line was written.

    >>> record_access(url, username="ana", role="auditor", game_id="T7-000123", move=17,
    ...               view="full", page="replay")  # doctest: +SKIP
    True
    """
    return send_access(url, **line).result()


def send_access(
    url: str | None,
    *,
    username: str,
    role: str,
    game_id: str,
    move: int | None,
    view: str,
    page: str,
    remote_addr: str | None = None,
    at: datetime | None = None,
    only_if: sa.Exists | None = None,
    commit: str = "on",
) -> SentLine:
    """:func:`record_access` without the wait: the line's INSERT is sent now and
    :meth:`SentLine.result` waits for its commit (and says whether it was written).

    On PostgreSQL the statement goes out on a pooled connection without waiting for the
    answer (libpq's asynchronous command processing, on the calling thread), so the caller
    goes on with its work while the primary commits the line (and, with a synchronous
    standby, while the standby flushes it); the connection is the line's until
    :meth:`SentLine.result` (or :meth:`SentLine.close`). A writer thread did this before:
    its answer then waited for the interpreter's lock, up to 5 ms a time (the switch
    interval), behind the page drawn meanwhile, in the page's wait. Other databases write
    the line now. A database error is raised by :meth:`SentLine.result`, not here.

    ``only_if``: a condition checked in the same statement (the line is written only while
    it holds; :func:`replays.access.accounts.still_signed_in` for an account a replica
    read), so that checking it costs the primary no round trip of its own.

    ``commit``: the PostgreSQL ``synchronous_commit`` this line's commit waits for (see
    :data:`COMMIT_LEVELS`); set for this statement's transaction alone."""
    if commit not in COMMIT_LEVELS:
        raise ValueError(f"access log commit {commit!r}: give one of {', '.join(COMMIT_LEVELS)}")
    values = {
        "at": at or datetime.now(UTC),
        "username": username[:64],
        "role": role[:16],
        "game_id": game_id[:64],
        "move": move,
        "view": view[:80],
        "page": page[:64],
        "remote_addr": (remote_addr or "")[:64] or None,
    }
    relaxed = commit != "on" and (url or "").startswith("postgresql")
    if only_if is None and not relaxed:
        statement = TABLE.insert().values(**values)
    else:
        # INSERT ... SELECT <the values> WHERE ...: no row when the condition does not hold.
        row = sa.select(
            *(sa.literal(value, TABLE.c[name].type).label(name) for name, value in values.items())
        )
        if only_if is not None:
            row = row.where(only_if)
        if relaxed:
            # SET LOCAL, in the statement: no round trip of its own, and over at its commit.
            row = row.where(sa.func.set_config("synchronous_commit", commit, True).is_not(None))
        statement = TABLE.insert().from_select(list(values), row)
    statement = statement.returning(TABLE.c.id)
    engine = engine_for(url)
    if engine.dialect.driver == "psycopg":
        return _PendingLine(engine, statement)
    try:
        with one_statement(url) as connection:
            return SentLine(written=connection.execute(statement).first() is not None)
    except Exception as error:  # raised where the caller waits, as on PostgreSQL
        return SentLine(error=error)


def record_views(
    url: str | None,
    views: list[tuple[str, int | None, str]],
    *,
    username: str,
    role: str,
    page: str,
    remote_addr: str | None,
    at: datetime,
) -> None:
    """Append a line for each ``(game_id, move, view)`` of ``views``, in that order, all
    by one account at one moment from one page, committed together: the fair-play page's
    flags shown (dozens a month). On PostgreSQL one INSERT of the lines as arrays: a line
    a statement, even pipelined, was twice the time."""
    if not views:
        return
    shared = {
        "at": at,
        "username": username[:64],
        "role": role[:16],
        "page": page[:64],
        "remote_addr": (remote_addr or "")[:64] or None,
    }
    engine = engine_for(url)
    with engine.begin() as connection:
        if engine.dialect.name == "postgresql":
            game_ids, moves, names = zip(*views, strict=True)
            values = {
                **shared,
                "game_ids": [game_id[:64] for game_id in game_ids],
                "moves": list(moves),
                "views": [view[:80] for view in names],
            }
            connection.execute(_views_statement(), values)
        else:
            rows = [
                {**shared, "game_id": game_id[:64], "move": move, "view": view[:80]}
                for game_id, move, view in views
            ]
            connection.execute(TABLE.insert(), rows)


_VIEWS: list[sa.Insert] = []


def _views_statement() -> sa.Insert:
    """:func:`record_views`' INSERT on PostgreSQL: the lines' own values as three arrays
    read in order (``WITH ORDINALITY``: the ids follow ``views``' order), built once."""
    if not _VIEWS:
        from sqlalchemy.dialects.postgresql import ARRAY

        lines = (
            sa.func.unnest(
                sa.bindparam("game_ids", type_=ARRAY(sa.String)),
                sa.bindparam("moves", type_=ARRAY(sa.Integer)),
                sa.bindparam("views", type_=ARRAY(sa.String)),
            )
            .table_valued("game_id", "move", "view", with_ordinality="n")
            .render_derived(name="line")
        )
        shared = ("at", "username", "role", "page", "remote_addr")
        row = sa.select(
            *(sa.bindparam(name, type_=TABLE.c[name].type).label(name) for name in shared),
            lines.c.game_id,
            lines.c.move,
            lines.c.view,
        ).order_by(lines.c.n)
        _VIEWS.append(TABLE.insert().from_select([*shared, "game_id", "move", "view"], row))
    return _VIEWS[0]


class SentLine:
    """A line sent by :func:`send_access`: :meth:`result` waits for its commit."""

    def __init__(self, *, written: bool = False, error: Exception | None = None):
        self._written, self._error = written, error

    def result(self) -> bool:
        """Whether the line was written (``only_if`` held), once committed; raises what the
        database answered instead."""
        if self._error is not None:
            raise self._error
        return self._written

    def close(self) -> None:
        """Done with the line, written or not (an error is not raised)."""


class _PendingLine(SentLine):
    """The line's INSERT on the wire of a pooled psycopg connection, its answer unread."""

    def __init__(self, engine: sa.Engine, statement) -> None:
        super().__init__()
        self._engine, self._fairy = engine, None
        try:
            import psycopg

            compiled = statement.compile(dialect=engine.dialect)
            self._fairy = engine.raw_connection()
            connection = self._fairy.driver_connection
            if connection.pgconn.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                raise psycopg.InterfaceError("the pooled connection is inside a transaction")
            # Bound by psycopg's own client-side quoting; one simple-protocol Query message
            # is its own transaction, committed when the statement is done.
            query = psycopg.ClientCursor(connection).mogrify(str(compiled), compiled.params)
            self._pgconn = connection.pgconn
            self._pgconn.send_query(query.encode(connection.info.encoding))
            while self._pgconn.flush():
                _wait(self._pgconn.socket, select.POLLOUT)
        except Exception as error:
            self._fail(error)

    def _fail(self, error: Exception) -> None:
        import psycopg

        self._error = error
        if self._fairy is not None:
            if isinstance(error, psycopg.OperationalError):
                # A lost connection (a failover): as SQLAlchemy does on one, every connection
                # the pool made before now is replaced when next checked out.
                self._engine.pool._invalidate(self._fairy, error)
            if self._fairy.is_valid:  # its state is not known: never handed out again
                self._fairy.invalidate(error)
            self._fairy.close()
            self._fairy = None

    def _finish(self) -> None:
        if self._fairy is None:
            return
        import psycopg

        try:
            written, failed = False, None
            while True:
                while self._pgconn.is_busy():
                    _wait(self._pgconn.socket, select.POLLIN)
                    self._pgconn.consume_input()
                answer = self._pgconn.get_result()
                if answer is None:
                    break
                if answer.status == psycopg.pq.ExecStatus.TUPLES_OK:
                    written = written or answer.ntuples > 0
                elif failed is None:
                    message = (answer.error_message or b"").decode(errors="replace").strip()
                    failed = psycopg.DatabaseError(message or "the access log line failed")
            if failed is not None:
                raise failed
            self._written = written
            self._fairy.close()  # back to the pool, idle
            self._fairy = None
        except Exception as error:
            self._fail(error)

    def result(self) -> bool:
        self._finish()
        return super().result()

    def close(self) -> None:
        self._finish()


def _wait(socket: int, event: int) -> None:
    poller = select.poll()
    poller.register(socket, event | select.POLLERR | select.POLLHUP)
    poller.poll()


@dataclass(frozen=True)
class AccessFilter:
    """What an admin narrows the log to; every field optional.

    >>> AccessFilter.from_args({"user": "ana", "from": "2025-03-01"}).date_from
    datetime.date(2025, 3, 1)
    """

    username: str | None = None
    game_id: str | None = None
    view: str | None = None
    date_from: date | None = None
    date_to: date | None = None

    @classmethod
    def from_args(cls, args) -> AccessFilter:
        def text(name: str, limit: int = 80) -> str | None:
            value = (args.get(name) or "").strip()
            if len(value) > limit:
                raise AccessLogError(f"'{name}' is longer than {limit} characters")
            return value or None

        def day(name: str) -> date | None:
            value = text(name)
            if value is None:
                return None
            try:
                return date.fromisoformat(value)
            except ValueError:
                raise AccessLogError(
                    f"'{name}' must be a date like 2025-03-01, not {value!r}"
                ) from None

        found = cls(
            username=(text("user", 64) or "").lower() or None,
            game_id=text("game", 64),
            view=text("view"),
            date_from=day("from"),
            date_to=day("to"),
        )
        if found.date_from and found.date_to and found.date_from > found.date_to:
            raise AccessLogError("'from' is after 'to'")
        return found

    def as_args(self) -> dict[str, str]:
        args = {
            "user": self.username,
            "game": self.game_id,
            "view": self.view,
            "from": self.date_from.isoformat() if self.date_from else None,
            "to": self.date_to.isoformat() if self.date_to else None,
        }
        return {name: value for name, value in args.items() if value}

    def query(self) -> sa.Select:
        c = TABLE.c
        query = sa.select(TABLE)
        if self.username:
            query = query.where(c.username == self.username)
        if self.game_id:
            query = query.where(c.game_id == self.game_id)
        if self.view:
            query = query.where(c.view == self.view)
        if self.date_from:
            query = query.where(c.at >= datetime.combine(self.date_from, time.min, tzinfo=UTC))
        if self.date_to and (end := after_day(self.date_to)) is not None:
            query = query.where(c.at < end)
        return query


@dataclass
class AccessPage:
    rows: list
    total: int
    page: int
    pages: int


def browse(
    session: Session | sa.Connection, filters: AccessFilter, page: int = 1, per_page: int = 50
) -> AccessPage:
    """One page of the log, newest first."""
    query = filters.query()
    total = session.execute(sa.select(sa.func.count()).select_from(query.subquery())).scalar()
    pages = max(1, -(-(total or 0) // per_page))
    page = min(max(1, page), pages)
    rows = session.execute(
        query.order_by(TABLE.c.id.desc()).limit(per_page).offset((page - 1) * per_page)
    ).all()
    return AccessPage(list(rows), total or 0, page, pages)


def csv_lines(url: str | None, filters: AccessFilter, *, batch: int = 1000) -> Iterator[str]:
    """The filtered log as CSV text, header first, oldest first, streamed in batches."""
    out = io.StringIO()
    writer = csv.writer(out)

    def flush() -> str:
        text = out.getvalue()
        out.seek(0)
        out.truncate()
        return text

    writer.writerow(CSV_COLUMNS)
    yield flush()
    after = 0
    query = filters.query()
    while True:
        with engine_for(url).connect() as connection:
            rows = connection.execute(
                query.where(TABLE.c.id > after).order_by(TABLE.c.id).limit(batch)
            ).all()
        for row in rows:
            writer.writerow(
                [
                    row.id,
                    _aware(row.at).isoformat(),
                    _safe(row.username),
                    row.role,
                    _safe(row.game_id),
                    "" if row.move is None else row.move,
                    _safe(row.view),
                    row.page,
                    row.remote_addr or "",
                ]
            )
        if rows:
            after = rows[-1].id
            yield flush()
        if len(rows) < batch:
            return


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _safe(text: str | None) -> str:
    """Keep a spreadsheet from reading a cell as a formula (CSV injection)."""
    text = text or ""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


# -- viewing sessions ----------------------------------------------------------------------

# Pages as the people reading the log know them; rows written before the log named pages
# this way hold the endpoint, and read the same through :func:`page_name`.
PAGE_NAMES = {
    "games.game": "game summary",
    "replays.replay": "replay",
    "replays.table_fragment": "replay",  # a step of the replay fetched by its script
    "replays.table_image": "table picture",
    "audit.audit": "audit page",
    "audit.audit_json": "audit download (JSON)",
    "audit.audit_csv": "audit download (CSV)",
    "disputes.case": "dispute case",
    "disputes.close": "dispute case",
    "disputes.add_note": "dispute case",
    "disputes.add_evidence": "dispute case",
}
# Steps through one game further apart than this start a new viewing session.
SESSION_GAP = timedelta(minutes=30)


def page_name(page: str) -> str:
    """``replays.table_fragment`` → ``replay``; a name already in words stays."""
    return PAGE_NAMES.get(page, page)


@dataclass
class ViewingSession:
    """One person's run of requests on one game in one view: a replay stepped through with
    the arrow keys is one session, however many moves it showed."""

    username: str
    role: str
    game_id: str
    view: str
    first_at: datetime
    last_at: datetime
    first_id: int
    last_id: int
    requests: int
    moves: list[int]
    pages: list[str]
    remote_addr: str | None

    @property
    def moves_text(self) -> str:
        """Which moves the session showed, in words that count them right: "0–143 (5
        moves)" read as 144 moves, so a range is written only when every move in it was
        viewed, and otherwise the count comes first.

        >>> def text(moves): return ViewingSession("u", "auditor", "g", "full", None, None,
        ...     1, 1, 1, moves, [], None).moves_text
        >>> text([17]), text([3, 4, 5, 4]), text([0, 12, 60, 143, 99])
        ('move 17', 'moves 3–5 (3 moves)', '5 moves viewed, between move 0 and 143')
        """
        if not self.moves:
            return "—"
        seen = sorted(set(self.moves))
        if len(seen) == 1:
            return f"move {seen[0]}"
        if seen[-1] - seen[0] + 1 == len(seen):
            return f"moves {seen[0]}–{seen[-1]} ({len(seen)} moves)"
        return f"{len(seen)} moves viewed, between move {seen[0]} and {seen[-1]}"

    @property
    def moves_list(self) -> str:
        """Every move viewed, for the cell's tooltip (the first 40)."""
        seen = sorted(set(self.moves))
        more = f" and {len(seen) - 40} more" if len(seen) > 40 else ""
        return ", ".join(str(move) for move in seen[:40]) + more


def sessions(rows) -> list[ViewingSession]:
    """Group log rows (any order) into viewing sessions, newest first. Consecutive rows of
    the same user, game and view no more than :data:`SESSION_GAP` apart are one session."""
    grouped: list[ViewingSession] = []
    open_by_key: dict[tuple, ViewingSession] = {}
    for row in sorted(rows, key=lambda r: r.id):
        at = _aware(row.at)
        key = (row.username, row.game_id, row.view)
        current = open_by_key.get(key)
        if current is None or at - current.last_at > SESSION_GAP:
            current = ViewingSession(
                row.username, row.role, row.game_id, row.view, at, at, row.id, row.id,
                0, [], [], row.remote_addr,
            )  # fmt: skip
            grouped.append(current)
            open_by_key[key] = current
        current.last_at, current.last_id = at, row.id
        current.requests += 1
        if row.move is not None:
            current.moves.append(row.move)
        name = page_name(row.page)
        if name not in current.pages:
            current.pages.append(name)
    return sorted(grouped, key=lambda s: s.last_id, reverse=True)
