"""THE decoding boundary: how a value read from the store becomes a Python value, or a finding.

Whoever has write access to the database can put anything in any column: text in a money
column, ``'1e999'``, a date that is not one, JSON that does not parse, a state stored as
TEXT, a topic naming any module on the server's path. Everything the ledger reads from the
tables it owns (the read models, the dispute rows, the integrity tables, ``ledger_events``
and ``ledger_snapshots``) is turned into values here, and a value that cannot be turned
becomes a :class:`CorruptValue` that names the table, the row's key, the column and the
stored value shortened (its ``repr`` cut at 40 characters) — never an exception from deep
inside a decoder that stops ``verify`` or a page.

Three parts:

- **Topics** resolve against an allow-list built from the ledger's own event classes (every
  registered variant's aggregate, dispute cases): :func:`event_class` is a dictionary
  look-up, so a stored topic never imports a module. An unknown topic is an
  :class:`UnknownTopic` (``game G, event N: unknown topic 'this:s'``).
- **Values**: :func:`decode_value` turns one raw value of a column into what that column's
  SQLAlchemy type reads back (the type's own result processor) after checking it is of the
  kind the column holds; :class:`RowDecoder` does a whole row, the fast path first (every
  processor, no checks) and the per-value checks only when that raises.
- **Scans**: :func:`scan_table` and :func:`scan_store` read rows raw (no processors) and
  return every malformed value as a :class:`CorruptValue`: ``verify``'s findings for values
  its fast path could not read, and what a page shows instead of a row it cannot draw.

>>> shorten("x" * 60)
"'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…"
>>> event_class("this:s")
Traceback (most recent call last):
...
replays.store.decoding.UnknownTopic: unknown topic 'this:s'
>>> event_class("rummy_ledger:Game.Started").__qualname__
'Game.Started'
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping
from datetime import date, datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

import sqlalchemy as sa

SHORT = 40  # characters of a stored value's repr a finding quotes


def shorten(value: Any, limit: int = SHORT) -> str:
    """A stored value as a finding quotes it: its ``repr``, cut at ``limit`` characters."""
    try:
        text = repr(value)
    except Exception:  # a value whose repr fails is still named
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _key_text(key: Mapping[str, Any] | None) -> str:
    if not key:
        return ""
    return " " + ", ".join(f"{name}={value!r}" for name, value in key.items())


class CorruptValue(ValueError):
    """A stored value that is not what its column holds: ``table``, ``key`` (the row's key
    columns and their values: game, event version...), ``column``, ``value`` (shortened)
    and why. Its text is the finding ``verify`` prints."""

    def __init__(
        self,
        table: str,
        column: str,
        value: Any,
        why: str,
        key: Mapping[str, Any] | None = None,
        game_id: str | None = None,
    ) -> None:
        self.table = table
        self.column = column
        self.value = shorten(value)
        self.why = why
        self.key = dict(key or {})
        self.game_id = game_id
        super().__init__(f"{table}{_key_text(self.key)}: {column} holds {self.value}, {why}")


class UnknownTopic(CorruptValue):
    """A stored topic that is none of the ledger's own event classes (nothing is imported)."""

    def __init__(
        self,
        topic: Any,
        table: str = "ledger_events",
        key: Mapping[str, Any] | None = None,
        game_id: str | None = None,
        version: Any = None,
    ) -> None:
        super().__init__(table, "topic", topic, "not one of the ledger's events", key, game_id)
        where = []
        if game_id is not None:
            where.append(f"game {game_id}")
        if version is not None:
            where.append(f"event {version}")
        prefix = ", ".join(where)
        self.args = (f"{prefix + ': ' if prefix else ''}unknown topic {shorten(topic)}",)


class Unreadable:
    """What a decoded row holds in place of a value that could not be read: never equal to
    any value (so a comparison with what the events say reports it), and it names itself."""

    __slots__ = ("finding",)

    def __init__(self, finding: CorruptValue) -> None:
        self.finding = finding

    def __repr__(self) -> str:
        return f"unreadable {self.finding.value}"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return False

    def __hash__(self) -> int:
        return id(self)


# -- topics ----------------------------------------------------------------------------------
_TOPICS: dict[str, type] = {}
_AGGREGATE_TOPICS: dict[str, type] = {}
_BUILT_FOR: tuple = ()


def _aggregates() -> tuple[type, ...]:
    # Imported here: the registry fills as the families register, and a toy variant a test
    # registers later is seen at the next look-up.
    from domain.dispute import DisputeCase
    from domain.variants import registry

    return tuple(dict.fromkeys([*(v.aggregate for v in registry.all()), DisputeCase]))


def _event_classes(aggregate: type) -> Iterator[type]:
    """Every event class an aggregate declares (nested, its bases' included), snapshots too."""
    seen: set[int] = set()
    todo = [aggregate]
    while todo:
        owner = todo.pop()
        for base in owner.__mro__:
            for value in vars(base).values():
                if isinstance(value, type) and id(value) not in seen:
                    seen.add(id(value))
                    # An event class: it names its topic and mutates an aggregate.
                    if isinstance(getattr(value, "TOPIC", None), str) and callable(
                        getattr(value, "mutate", None)
                    ):
                        yield value
                        todo.append(value)


def _allow_list() -> dict[str, type]:
    global _BUILT_FOR
    aggregates = _aggregates()
    if aggregates != _BUILT_FOR:
        topics: dict[str, type] = {}
        for aggregate in aggregates:
            _AGGREGATE_TOPICS[aggregate.TOPIC] = aggregate
            for cls in _event_classes(aggregate):
                topics.setdefault(cls.TOPIC, cls)
        _TOPICS.clear()
        _TOPICS.update(topics)
        _BUILT_FOR = aggregates
    return _TOPICS


def known_topics() -> frozenset[str]:
    """The topics the ledger may store: its own event classes' (snapshots included)."""
    return frozenset(_allow_list())


def aggregate_topics() -> frozenset[str]:
    """The aggregates' own topics (what a snapshot's state names as its class)."""
    _allow_list()
    return frozenset(_AGGREGATE_TOPICS)


def event_class(topic: Any, **where: Any) -> type:
    """The ledger's event class of ``topic``; :class:`UnknownTopic` otherwise (``where``:
    ``table``, ``key``, ``game_id``, ``version`` for the finding). Never imports."""
    try:
        return _TOPICS[topic]
    except (KeyError, TypeError):
        pass
    try:
        return _allow_list()[topic]
    except (KeyError, TypeError):
        raise UnknownTopic(topic, **where) from None


def aggregate_class(topic: Any, **where: Any) -> type:
    """The aggregate class a snapshot's state names; :class:`UnknownTopic` otherwise."""
    _allow_list()
    try:
        return _AGGREGATE_TOPICS[topic]
    except (KeyError, TypeError):
        raise UnknownTopic(topic, table=where.pop("table", "ledger_snapshots"), **where) from None


# -- values ----------------------------------------------------------------------------------
def _is_int(value: Any) -> bool:
    return type(value) is int or (
        isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value()
    )


def _kind(column: sa.Column) -> str:
    """What a column holds, in the few kinds the checks know."""
    column_type = column.type
    impl = getattr(column_type, "impl", column_type)
    impl = impl if isinstance(impl, sa.types.TypeEngine) else impl()
    if column.name == "topic" and isinstance(impl, sa.Text | sa.String):
        return "topic"
    for kind, types in (
        ("bool", sa.Boolean),
        ("int", sa.Integer),
        ("datetime", sa.DateTime),
        ("date", sa.Date),
        ("json", sa.JSON),
        ("uuid", sa.Uuid),
        ("bytes", sa.LargeBinary),
        ("number", sa.Numeric | sa.Float),
        ("text", sa.String),
    ):
        if isinstance(impl, types):
            return kind
    if type(impl).__name__ in ("BINARY", "BLOB", "VARBINARY", "BYTEA"):
        return "bytes"
    return "any"


def _check(kind: str, value: Any, dialect: str) -> str | None:
    """Why ``value`` is not of ``kind`` as stored on ``dialect`` (None: it is)."""
    if kind == "int":
        return None if _is_int(value) else "not an integer"
    if kind == "bool":
        return None if value in (0, 1) and type(value) in (int, bool) else "not a boolean"
    if kind == "text" or kind == "topic":
        if type(value) is not str:
            return "not text"
        if kind == "topic" and value not in _allow_list():
            return "not one of the ledger's events"
        return None
    if kind == "bytes":
        ok = isinstance(value, bytes | memoryview | bytearray) or (
            dialect != "sqlite" and isinstance(value, UUID)
        )
        return None if ok else "not bytes"
    if kind == "datetime" or kind == "date":
        if isinstance(value, date):
            return None
        if type(value) is not str:
            return f"not a {'time' if kind == 'datetime' else 'date'}"
        try:
            (datetime if kind == "datetime" else date).fromisoformat(value)
        except ValueError:
            return f"not a {'time' if kind == 'datetime' else 'date'}"
        return None
    if kind == "json":
        if type(value) is not str:
            return None if isinstance(value, dict | list) else "not JSON"
        try:
            json.loads(value)
        except ValueError:
            return "not JSON"
        return None
    if kind == "uuid":
        if isinstance(value, UUID):
            return None
        try:
            UUID(value) if type(value) is str else UUID(bytes=bytes(value))
        except (TypeError, ValueError, AttributeError):
            return "not an id"
        return None
    if kind == "number":
        if isinstance(value, Decimal | int | float) and not isinstance(value, bool):
            return None if math.isfinite(value) else "not a finite number"
        return "not a number"
    return None


def decode_value(
    column: sa.Column,
    value: Any,
    dialect: sa.engine.Dialect,
    key: Mapping[str, Any] | None = None,
    game_id: str | None = None,
) -> Any:
    """One stored value of ``column`` as its type reads it back; :class:`CorruptValue` when
    it is not of the column's kind (NULL where the column allows none included) or its
    type's own reading of it fails."""
    table = column.table.name
    if value is None:
        if column.nullable:
            return None
        raise CorruptValue(
            table, column.name, value, "NULL where a value is required", key, game_id
        )
    why = _check(_kind(column), value, dialect.name)
    if why is not None:
        raise CorruptValue(table, column.name, value, why, key, game_id)
    process = column.type.dialect_impl(dialect).result_processor(dialect, None)
    if process is None:
        return value
    try:
        return process(value)
    except Exception as error:  # whatever a type's reading raises, the value is the cause
        raise CorruptValue(
            table, column.name, value, f"unreadable ({type(error).__name__})", key, game_id
        ) from None


def row_key(table: sa.Table, row: Mapping[str, Any]) -> dict[str, Any]:
    """The values that say which row this is: its primary key, and its game where it has one."""
    names = [c.name for c in table.primary_key.columns]
    for extra in ("game_id", "originator_version"):
        if extra in table.c and extra not in names:
            names.append(extra)
    return {name: _plain(row.get(name)) for name in names}


def _plain(value: Any) -> Any:
    if isinstance(value, bytes | memoryview | bytearray):
        value = bytes(value)
        return UUID(bytes=value).hex if len(value) == 16 else value.hex()[:32]
    if isinstance(value, UUID):
        return value.hex
    return value if isinstance(value, int | str) or value is None else shorten(value)


class RowDecoder:
    """Decode raw rows of one table as its columns' types read them back.

    The fast path runs every column's result processor with no checks (what the reads did
    before); only a row on which that raises is decoded value by value, each unreadable
    value replaced by an :class:`Unreadable` and its :class:`CorruptValue` kept in
    ``findings``. Values that processors pass through unchanged (texts, integers on
    SQLite) are not checked on the fast path: a comparison with what the events say
    reports a wrong one, as it reports any edited value.
    """

    def __init__(self, table: sa.Table, dialect: sa.engine.Dialect, names: Iterable[str]):
        self.table = table
        self.dialect = dialect
        self.names = list(names)
        self.columns = [table.c[name] for name in self.names]
        self.processors = []
        for index, column in enumerate(self.columns):
            process = column.type.dialect_impl(dialect).result_processor(dialect, None)
            if process is not None:
                self.processors.append((index, process))
        self.findings: list[CorruptValue] = []

    def __call__(self, raw: Iterable[Any]) -> dict[str, Any]:
        values = list(raw)
        try:
            for index, process in self.processors:
                values[index] = process(values[index])
        except Exception:
            return self.slow(raw)
        return dict(zip(self.names, values, strict=True))

    def slow(self, raw: Iterable[Any]) -> dict[str, Any]:
        raw = dict(zip(self.names, raw, strict=True))
        key = row_key(self.table, raw)
        game_id = raw.get("game_id") if isinstance(raw.get("game_id"), str) else None
        decoded = {}
        for column in self.columns:
            try:
                decoded[column.name] = decode_value(
                    column, raw[column.name], self.dialect, key, game_id
                )
            except CorruptValue as finding:
                self.findings.append(finding)
                decoded[column.name] = Unreadable(finding)
        return decoded


# -- scans -----------------------------------------------------------------------------------
def owned_tables() -> list[sa.Table]:
    """Every table the project owns: the models' and the event store's (Alembic's target)."""
    from replays.store.schema import target_metadata

    return [table for metadata in target_metadata() for table in metadata.sorted_tables]


def scan_table(
    connection: sa.Connection,
    table: sa.Table,
    where: str = "",
    params: Mapping[str, Any] | None = None,
) -> list[CorruptValue]:
    """Every malformed value of ``table`` (``where``: a plain SQL condition on its rows),
    read raw: no type processor runs, so nothing here can raise on a stored value."""
    dialect = connection.dialect
    quote = dialect.identifier_preparer.quote
    names = [column.name for column in table.c]
    kinds = [(column, _kind(column)) for column in table.c]
    query = f"SELECT {', '.join(quote(n) for n in names)} FROM {quote(table.name)}"
    if where:
        query += f" WHERE {where}"
    findings: list[CorruptValue] = []
    for raw in connection.execute(sa.text(query), dict(params or {})):
        row = dict(zip(names, raw, strict=True))
        key = None
        for column, kind in kinds:
            value = row[column.name]
            if value is None:
                why = None if column.nullable else "NULL where a value is required"
            else:
                why = _check(kind, value, dialect.name)
                if why is None and kind not in ("text", "topic", "int", "bytes", "uuid"):
                    try:
                        decode_value(column, value, dialect)
                    except CorruptValue as finding:
                        why = finding.why
            if why is not None:
                key = key if key is not None else row_key(table, row)
                game = row.get("game_id") if isinstance(row.get("game_id"), str) else None
                if kind == "topic" and why.startswith("not one of"):
                    findings.append(UnknownTopic(value, table.name, key, game))
                else:
                    findings.append(CorruptValue(table.name, column.name, value, why, key, game))
    return findings


def scan_store(
    connection: sa.Connection, tables: Iterable[sa.Table] | None = None
) -> list[CorruptValue]:
    """Every malformed value in the tables the project owns (those the database has)."""
    inspector = sa.inspect(connection)
    findings: list[CorruptValue] = []
    for table in owned_tables() if tables is None else tables:
        if inspector.has_table(table.name):
            findings.extend(scan_table(connection, table))
    return findings


__all__ = [
    "CorruptValue",
    "RowDecoder",
    "UnknownTopic",
    "Unreadable",
    "aggregate_class",
    "aggregate_topics",
    "decode_value",
    "event_class",
    "known_topics",
    "owned_tables",
    "row_key",
    "scan_store",
    "scan_table",
    "shorten",
]
