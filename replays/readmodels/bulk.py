"""Many read-model rows in one ``executemany``, with SQLAlchemy's own column types.

``connection.execute(table.insert(), rows)`` spends longer per row in SQLAlchemy (building
the parameters of each row through the compiled statement) than the database takes to
store it: half a projection batch's time went there (docs/benchmarks.md, issue 16). Here
each statement is compiled once per table, columns and dialect; each row becomes one tuple
through the columns' bind processors (:class:`~replays.readmodels.models.Fixed` money, JSON,
dates: exactly the values SQLAlchemy would bind), and the driver receives them all in one
``executemany`` on the connection's own transaction.

Two bind processors are replaced by cheaper ones giving the same values (tests/test_bulk.py
compares the stored rows with SQLAlchemy's own binding): SQLite's DATETIME text, formatted by
``datetime.isoformat`` instead of a ``%`` format over a dict of fields, and
:class:`~replays.readmodels.models.Fixed` money, remembered per distinct Decimal (a batch
repeats a few point values and amounts thousands of times).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from decimal import Decimal
from functools import lru_cache
from operator import itemgetter
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.sqlite import DATETIME as SQLITE_DATETIME

from domain.timestamps import utc_z_text
from replays.readmodels.models import Fixed

_SQLITE_DATETIME_FORMAT = SQLITE_DATETIME._storage_format  # "YYYY-MM-DD HH:MM:SS.ffffff"
_MEMO_SIZE = 4096  # distinct money values remembered per statement's column


def sqlite_datetime_text(text: str) -> str:
    """SQLite's DATETIME text of the time whose :func:`~domain.timestamps.format_time`
    text (``...Z``, microseconds as six digits or none) is ``text``: its fields, as
    written (``2025-03-18T13:59:41Z`` is ``2025-03-18 13:59:41.000000``). Such a text has
    one ``T`` and one ``Z``: two replacements cost less than slicing it up (verify makes
    this text for every move)."""
    return text.replace("T", " ").replace("Z", ".000000" if len(text) == 20 else "")


def _sqlite_datetime(original):
    """SQLite's DATETIME text of a datetime (its wall-clock fields, the offset left out, as
    SQLAlchemy stores it); anything else (a date, a subclass) through ``original``."""
    exact = datetime

    def process(value):
        if type(value) is exact:
            if value.tzinfo is UTC:
                # The same fields from the text the move's event was written with (most
                # move times are UTC): no isoformat for each row.
                return sqlite_datetime_text(utc_z_text(value))
            return value.isoformat(" ", "microseconds")[:26]
        return original(value)

    return process


def _memo(original):
    """``original`` (a pure function of the value) remembered per distinct Decimal."""
    memo: dict[Decimal, Any] = {}

    def process(value):
        if type(value) is not Decimal:
            return original(value)
        try:
            return memo[value]
        except KeyError:
            pass
        except TypeError:  # a signalling NaN is not hashable: the original refuses it
            return original(value)
        result = original(value)
        if len(memo) < _MEMO_SIZE:
            memo[value] = result
        return result

    return process


def _faster(kind: Any, dialect: Any, original):
    """The cheaper processor with the same result as ``original`` for a value of type
    ``kind``, or ``original`` itself."""
    if isinstance(kind, Fixed):
        return _memo(original)
    if isinstance(kind, sa.DateTime) and dialect.name == "sqlite":
        implementation = kind.dialect_impl(dialect)
        if (
            type(implementation) is SQLITE_DATETIME
            and implementation._storage_format == _SQLITE_DATETIME_FORMAT
        ):
            return _sqlite_datetime(original)
    return original


class _Compiled:
    """One statement compiled for a dialect: its text, the row key of each parameter in
    order, and the bind processors of the few parameters that have one."""

    def __init__(self, statement: sa.Executable, dialect: Any, keys: tuple[str, ...]) -> None:
        compiled = statement.compile(dialect=dialect, column_keys=list(keys))
        self.text = compiled.string
        processors = compiled._bind_processors
        self.positional = compiled.positiontup is not None
        binds = compiled.binds
        self.names = list(compiled.positiontup if self.positional else binds)
        self.keys = [binds[name].key for name in self.names]
        self.processed = [
            (index, _faster(binds[name].type, dialect, processors[name]))
            for index, name in enumerate(self.names)
            if processors.get(name) is not None
        ]

    def parameters(self, rows: Sequence[dict], prefix: str = "") -> list:
        keys = [key[len(prefix) :] for key in self.keys] if prefix else self.keys
        # itemgetter picks a row's values in C; only the processed columns (money, JSON,
        # dates) go through Python one by one.
        pick = itemgetter(*keys) if len(keys) > 1 else (lambda row: (row[keys[0]],))
        bound = _bound(rows, pick, self.processed)
        if self.positional:
            return bound
        return [dict(zip(self.names, values, strict=True)) for values in bound]


def _bound(rows: Sequence[dict], pick, processed: list) -> list[tuple]:
    """Each row's values picked by ``pick``, those at the places in ``processed`` (money,
    JSON, dates) through their processors."""
    if not processed:
        return [pick(row) for row in rows]
    out = []
    for row in rows:
        values = list(pick(row))
        for index, process in processed:
            value = values[index]
            if value is not None:
                values[index] = process(value)
        out.append(tuple(values))
    return out


@lru_cache(maxsize=64)
def _insert(table: sa.Table, dialect: Any, keys: tuple[str, ...]) -> _Compiled:
    """``table``'s INSERT of the columns ``keys``, without the ``RETURNING`` of a serial id
    (nothing reads it; ``inline``) and, on PostgreSQL, with every bind's type cast (the
    dialect leaves a few uncast, a boolean among them): the form :func:`rows_at_once` can
    send as one statement over arrays. Until both held, a save's ``games`` and
    ``ledger_entries`` rows each went in as a statement of their own."""
    compiled = _Compiled(table.insert().inline(), dialect, keys)
    if dialect.name == "postgresql" and compiled.positional is False:
        compiled.text = _cast_binds(compiled.text, table, dialect)
    return compiled


def _cast_binds(text: str, table: sa.Table, dialect: Any) -> str:
    """An INSERT's ``%(column)s`` binds, where the dialect wrote them uncast, cast to the
    column's type (the cast the server applies on assignment anyway: same values)."""

    def cast(found: re.Match) -> str:
        name = found.group(1)
        if name not in table.c:
            return found.group(0)
        return f"%({name})s::{dialect.type_compiler_instance.process(table.c[name].type)}"

    return re.sub(r"%\((\w+)\)s(?!::)", cast, text)


@lru_cache(maxsize=64)
def _update(table: sa.Table, dialect: Any, key: str, columns: tuple[str, ...]) -> _Compiled:
    statement = (
        table.update()
        .where(table.c[key] == sa.bindparam(f"b_{key}"))
        .values(
            {column: sa.bindparam(f"b_{column}", type_=table.c[column].type) for column in columns}
        )
    )
    return _Compiled(statement, dialect, ())


def insert_rows(connection: sa.Connection, table: sa.Table, rows: Sequence[dict]) -> None:
    """INSERT ``rows`` (dicts with the same keys) into ``table``, one executemany."""
    if not rows:
        return
    compiled = _insert(table, connection.dialect, tuple(rows[0]))
    connection.exec_driver_sql(compiled.text, compiled.parameters(rows))


@lru_cache(maxsize=64)
def _columns(table: sa.Table, dialect: Any) -> tuple[list[str], Any, list]:
    """A table's column names, a picker of them and their (cheaper) bind processors by
    place: the processors an INSERT of every column binds with, without compiling one."""
    names = [column.name for column in table.c]
    processed = []
    for index, column in enumerate(table.c):
        process = column.type._cached_bind_processor(dialect)
        if process is not None:
            processed.append((index, _faster(column.type, dialect, process)))
    return names, itemgetter(*names), processed


def bind_processors(table: sa.Table, dialect: Any) -> list:
    """The (place, processor) pairs :func:`stored_forms` binds ``table``'s values with."""
    return _columns(table, dialect)[2]


def stored_forms(table: sa.Table, dialect: Any, rows: Sequence[dict]) -> tuple[list[str], list]:
    """What :func:`insert_rows` binds for ``rows`` (each holding every column of ``table``;
    KeyError otherwise): the table's columns in order and each row's values in that order,
    its stored form where the driver stores values as bound (SQLite). ``verify`` compares
    a stored row with its expected one in this form (one place knows it)."""
    names, pick, processed = _columns(table, dialect)
    return names, _bound(rows, pick, processed)


def update_rows(connection: sa.Connection, table: sa.Table, key: str, rows: Sequence[dict]) -> None:
    """UPDATE ``table`` SET the rows' other columns WHERE ``key`` matches, one
    executemany (every row has the same keys)."""
    if not rows:
        return
    columns = tuple(column for column in rows[0] if column != key)
    compiled = _update(table, connection.dialect, key, columns)
    connection.exec_driver_sql(compiled.text, compiled.parameters(rows, prefix="b_"))


class Statements:
    """Stands in for a connection while a projection writes rows: keeps each statement
    and its parameters (plain values) instead of running them, to be run later by
    :func:`run_statements` (an import works a save's rows out before the store's lock and
    only runs them under it). On PostgreSQL an insert of many rows becomes one statement
    over arrays (:func:`rows_at_once`)."""

    def __init__(self, dialect: Any) -> None:
        self.dialect = dialect
        self.statements: list[tuple[str, Any]] = []
        self.arrays = dialect.name == "postgresql"

    def exec_driver_sql(self, statement: str, parameters: Any = None) -> None:
        if self.arrays:
            at_once = rows_at_once(statement, parameters)
            if at_once is not None:
                statement, parameters = at_once
        self.statements.append((statement, parameters))

    def __getattr__(self, name: str) -> Any:
        # Anything else (a read, an ORM statement) cannot be deferred: the save's rows
        # are left to the catch-up.
        raise NotDeferrable(name)


class NotDeferrable(Exception):
    """A projection's write that is not a plain driver statement."""


def run_statements(connection: Any, statements: Sequence[tuple[str, Any]]) -> None:
    """Run statements kept by :class:`Statements` on ``connection``, in order."""
    for statement, parameters in statements:
        connection.exec_driver_sql(statement, parameters)


_INSERT = re.compile(r"INSERT INTO (\w+) \(([\w, ]+)\) VALUES \((.+)\)", re.DOTALL)
_BIND = re.compile(r"%\((\w+)\)s::([A-Z][A-Z ]*(?:\(\d+(?:, \d+)?\))?)")


def rows_at_once(statement: str, parameters: Any) -> tuple[str, tuple] | None:
    """PostgreSQL: an INSERT of many rows (one execution a row, as psycopg runs an
    executemany) as one ``INSERT ... SELECT * FROM unnest(...)`` over a typed array a
    column, with the same values in the same order; None when the statement is not a plain
    INSERT whose every bind has its type cast (the form SQLAlchemy's psycopg dialect
    writes), or has too few rows to matter.

    An import writes every read-model row of its games: run row by row, the server's
    per-statement work and psycopg's per-row messages were most of the time for them."""
    if not isinstance(parameters, list) or len(parameters) < 2:
        return None
    if not all(type(row) is dict for row in parameters):
        return None
    found = _INSERT.fullmatch(statement)
    if found is None:
        return None
    binds = list(_BIND.finditer(found.group(3)))
    if ", ".join(bind.group(0) for bind in binds) != found.group(3):
        return None  # an uncast bind, an expression, a RETURNING: row by row, as before
    columns = [column.strip() for column in found.group(2).split(",")]
    if len(columns) != len(binds):
        return None
    names = [bind.group(1) for bind in binds]
    arrays = ", ".join(f"%b::{bind.group(2)}[]" for bind in binds)
    return (
        f"INSERT INTO {found.group(1)} ({found.group(2)}) SELECT * FROM unnest({arrays})",
        tuple([row[name] for row in parameters] for name in names),
    )
