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
replays.store.decoding.UnknownTopic: ledger_events: unknown topic 'this:s'
>>> event_class("rummy_ledger:Game.Started").__qualname__
'Game.Started'
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import date, datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

import sqlalchemy as sa

from replays.store.db import (
    VALID_UTF8,
    StoredPlayerIds,
    engine_for,
    is_player_ids,
    text_as_stored,
)

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
        field: str = "topic",
    ) -> None:
        super().__init__(table, "topic", topic, "not one of the ledger's events", key, game_id)
        self.topic = topic
        self.field = field  # "topic": the row's; another: that key of the row's state
        self.relocate(game_id, version)

    def relocate(self, game_id: str | None, version: Any) -> None:
        """Name the game and event (once known) instead of the stored row."""
        where = []
        if game_id is not None:
            where.append(f"game {game_id}")
        if version is not None:
            where.append(f"event {version}")
        prefix = ", ".join(where) or f"{self.table}{_key_text(self.key)}"
        inside = "" if self.field == "topic" else f" (its state's {self.field})"
        self.args = (f"{prefix}: unknown topic {shorten(self.topic)}{inside}",)


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


# The keys of a stored state that eventsourcing resolves as topics (importing the module
# they name), and the table whose rows hold such a state: a snapshot's class
# (``Snapshot.mutate``) and the class a game's first event creates
# (``CanInitAggregate.mutate``). Both name one of the ledger's aggregates.
STATE_TOPICS = {"topic": "ledger_snapshots", "originator_topic": "ledger_events"}


def check_state_topics(state: Any, **where: Any) -> None:
    """Raise :class:`UnknownTopic` unless every topic a decoded event's or snapshot's
    ``state`` names (:data:`STATE_TOPICS`) is one of the ledger's aggregates; ``where`` as
    for :func:`event_class`. Whoever decodes stored state calls this before the library
    applies it, so a topic inside the state never imports a module either.

    >>> check_state_topics({"originator_topic": "this:s"}, version=1)
    Traceback (most recent call last):
    ...
    replays.store.decoding.UnknownTopic: event 1: unknown topic 'this:s' (its state's originator_topic)
    """
    if type(state) is not dict:
        return
    for key, table in STATE_TOPICS.items():
        named = state.get(key)
        if named is None:
            continue
        if type(named) is str:
            if named in _AGGREGATE_TOPICS:
                continue
            _allow_list()  # built at first use, and again once a toy variant registers
            if named in _AGGREGATE_TOPICS:
                continue
        raise UnknownTopic(named, **{"table": table, **where}, field=key)


# -- values ----------------------------------------------------------------------------------
def _variant_names() -> tuple[str, ...]:
    """The game types the registry knows: a stored ``variant`` naming any other is a value of
    the wrong kind (pages ask the registry for it, and an unknown name has no rules)."""
    from domain import variants

    return variants.names()


def _variant_list() -> str:
    return ", ".join("'" + name.replace("'", "''") + "'" for name in sorted(_variant_names()))


def _is_int(value: Any) -> bool:
    return type(value) is int or (
        isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value()
    )


def _kind(column: sa.Column) -> str:
    """What a column holds, in the few kinds the checks know."""
    column_type = column.type
    if isinstance(column_type, StoredPlayerIds):
        return "player_ids"  # JSON of one shape: a non-empty list of texts
    impl = getattr(column_type, "impl", column_type)
    impl = impl if isinstance(impl, sa.types.TypeEngine) else impl()
    if column.name == "topic" and isinstance(impl, sa.Text | sa.String):
        return "topic"
    if column.name == "variant" and isinstance(impl, sa.Text | sa.String):
        return "variant"  # a game type's name: one of the registry's, as topics are
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
    if kind in ("text", "topic", "variant"):
        if type(value) is not str:
            return "not text"
        if kind == "topic" and value not in _allow_list():
            return "not one of the ledger's events"
        if kind == "variant" and value not in _variant_names():
            return "not one of the ledger's game types"
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
    if kind == "player_ids":
        return None if is_player_ids(_parsed(value)) else "not a list of player ids"
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


def _parsed(value: Any) -> Any:
    """A JSON column's value as parsed: SQLite's text parsed here, PostgreSQL's as its
    driver hands it over (None where the text does not parse)."""
    if type(value) is not str:
        return value
    try:
        return json.loads(value)
    except ValueError:
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
    for extra in ("game_id", "originator_id", "originator_version"):
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
                if why is None and kind not in ("text", "topic", "variant", "int", "bytes", "uuid"):
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


# -- the store's health: a scan in SQL, and a view of the store without the rows it finds ----
_PG_TYPES = {
    "int": ("integer", "bigint", "smallint"),
    "bool": ("boolean",),
    "text": ("character varying", "text", "character"),
    "topic": ("character varying", "text", "character"),
    "variant": ("character varying", "text", "character"),
    "bytes": ("bytea", "uuid"),
    "datetime": ("timestamp without time zone", "timestamp with time zone"),
    "date": ("date",),
    "json": ("json", "jsonb"),
    "player_ids": ("json", "jsonb"),
    "uuid": ("uuid",),
    "number": ("numeric", "double precision", "real"),
}
_TEXT_FORMS = {
    "int": re.compile(r"-?[0-9]{1,18}"),
    "bool": re.compile(r"true|false|t|f|0|1", re.IGNORECASE),
    "bytes": re.compile(r"\\x(?:[0-9a-fA-F]{2})*"),
}


# Event versions and tree positions count from zero: a negative one is no value the ledger
# writes, and the hashes refuse it.
_COUNTED = frozenset({"originator_version", "position", "size", "notification_id"})


# The kinds whose values SQLite keeps as text (and "any", of no kind): such a value may hold
# bytes that are not UTF-8.
_TEXT_KINDS = frozenset(
    {"text", "topic", "variant", "datetime", "date", "json", "player_ids", "uuid", "any"}
)


def _not_utf8(name: str) -> str:
    """A condition true of a text value SQLite holds whose bytes are not UTF-8 (an insider's
    ``CAST(x'ff' AS TEXT)``): Python cannot read it as text, and any read of its row would
    fail. Only values with a byte above 127 (SQLite reads each as a character above 127, so
    the GLOB finds them in C) are handed to Python to decode."""
    return (
        f"(typeof({name}) = 'text' AND {name} GLOB ('*[^' || char(1) || '-' || char(127) || ']*')"
        f" AND NOT {VALID_UTF8}(CAST({name} AS BLOB)))"
    )


def _sqlite_bad(
    name: str,
    kind: str,
    nullable: bool,
    topics: str,
    cheap: bool = False,
    decoded_later: bool = False,
):
    """A condition true of a stored value SQLite holds that is not of ``kind``: evaluated
    in C over the whole table, so the check costs little beside verification itself.

    ``decoded_later``: every value of the column is read as text later by the caller, a
    read that fails on text that is not UTF-8 (the caller then scans again without it), so
    that test is left out here."""
    null = "" if nullable else f" OR {name} IS NULL"

    def typed(*kinds: str) -> str:
        # Asked of a value that is not NULL (below): its typeof is never 'null'. One kind
        # is compared with != rather than tested by IN, which costs SQLite several times as
        # much on every row of the large tables.
        if len(kinds) == 1:
            return f"typeof({name}) != {kinds[0]!r}"
        return f"typeof({name}) NOT IN ({', '.join(repr(k) for k in kinds)})"

    text = typed("text")
    if cheap:  # the kind SQLite keeps, and no more: no date or JSON parsed, no pattern
        condition = {
            "int": typed("integer"),
            "bool": typed("integer"),
            "bytes": typed("blob"),
            "number": typed("integer", "real"),
            "topic": f"{text} OR {name} NOT IN ({topics})",
            "variant": f"{text} OR {name} NOT IN ({_variant_list()})",
        }.get(kind, text)
        condition = condition if kind != "any" else None
    else:
        condition = None
    condition = condition or {
        "int": typed("integer"),
        "bool": f"{typed('integer')} OR {name} NOT IN (0, 1)",
        "text": text,
        "topic": f"{text} OR {name} NOT IN ({topics})",
        "variant": f"{text} OR {name} NOT IN ({_variant_list()})",
        "bytes": typed("blob"),
        "datetime": f"{text} OR {name} NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*' "
        f"OR datetime({name}) IS NULL",
        "date": f"{text} OR {name} NOT GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]' "
        f"OR date({name}) IS NULL",
        "json": f"{text} OR NOT json_valid({name})",
        # A CASE, not ORs: SQLite evaluates both sides of an OR in a selected value, and
        # json_type fails on text that is not JSON.
        "player_ids": f"CASE WHEN {text} OR NOT json_valid({name}) THEN 1 "
        f"WHEN json_type({name}) != 'array' OR json_array_length({name}) = 0 THEN 1 "
        f"ELSE EXISTS (SELECT 1 FROM json_each({name}) WHERE type != 'text') END",
        "uuid": f"{text} OR length({name}) != 32 OR {name} GLOB '*[^0-9a-f]*'",
        "number": typed("integer", "real"),
        "any": "0",  # no kind to hold it to: only its text must be readable (below)
    }.get(kind)
    if condition is None:
        return None
    # The UTF-8 test hands each value to a GLOB (a pattern walk per character): it is left
    # out where the condition is already true of any text with a byte above 127 (a value
    # outside a list of ASCII names, or one with a character that is not a hex digit).
    ascii_only = (
        (kind == "topic" and topics.isascii())
        or (kind == "variant" and _variant_list().isascii())
        or (kind == "uuid" and not cheap)
    )
    if kind in _TEXT_KINDS and not ascii_only and not decoded_later:
        condition = f"{condition} OR {_not_utf8(name)}"
    if name.strip('"') in _COUNTED:
        condition = f"{condition} OR {name} < 0"
    # SQLite's date and JSON functions answer NULL as a malformed value: NULLs are judged
    # by the column's nullability alone.
    return f"(({name} IS NOT NULL AND ({condition})){null})"


def _pg_bad(name: str, kind: str, nullable: bool, actual: tuple[str, str], topics: str):
    """The condition for PostgreSQL, where a column holds another type only once an
    insider changed it (``ALTER COLUMN ... TYPE text``): then every row is read in Python
    (None: the column's own type keeps its values right)."""
    data_type, is_nullable = actual
    if data_type not in _PG_TYPES.get(kind, (data_type,)):
        return "TRUE"  # re-read in Python: :func:`_parses`
    conditions = []
    if name.strip('"') in _COUNTED:
        conditions.append(f"{name} < 0")
    if not nullable and is_nullable == "YES":
        conditions.append(f"{name} IS NULL")
    if kind == "topic":
        conditions.append(f"{name} NOT IN ({topics})")
    if kind == "variant":
        conditions.append(f"{name} NOT IN ({_variant_list()})")
    if kind == "number" and data_type == "numeric":
        conditions.append(f"{name} = 'NaN'")
    if kind == "player_ids":
        # json or jsonb: the functions of the column's own type. A CASE, so that the
        # elements are only listed of an array.
        of = data_type
        conditions.append(
            f"({name} IS NOT NULL AND CASE WHEN {of}_typeof({name}) = 'array' "
            f"THEN {of}_array_length({name}) = 0 OR EXISTS (SELECT 1 FROM "
            f"{of}_array_elements({name}) AS e(v) WHERE {of}_typeof(e.v) != 'string') "
            "ELSE TRUE END)"
        )
    return f"({' OR '.join(conditions)})" if conditions else None


def _parses(kind: str, text: Any) -> bool:
    """Whether a value of a column whose type was changed to text reads back as ``kind``."""
    if type(text) is not str:
        return _check(kind, text, "postgresql") is None
    form = _TEXT_FORMS.get(kind)
    if form is not None:
        return form.fullmatch(text) is not None
    if kind in ("text", "topic", "variant"):
        if kind == "variant":
            return text in _variant_names()
        return kind == "text" or text in _allow_list()
    try:
        if kind == "datetime":
            datetime.fromisoformat(text)
        elif kind == "date":
            date.fromisoformat(text)
        elif kind == "json":
            json.loads(text)
        elif kind == "player_ids":
            return is_player_ids(json.loads(text))
        elif kind == "uuid":
            UUID(text)
        elif kind == "number":
            return math.isfinite(Decimal(text))
    except (ValueError, ArithmeticError):
        return False
    return True


class Corruption:
    """What :func:`find_corrupt` found: the findings, and per table the stored rows that
    hold them (SQLite's ``rowid``, PostgreSQL's ``ctid``) and the columns whose type an
    insider changed. :meth:`mask` hides those rows from this connection."""

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        self.findings: list[CorruptValue] = []
        self.rows: dict[str, list[Any]] = {}
        self.altered: dict[str, dict[str, str]] = {}
        self.masked: list[str] = []

    def __bool__(self) -> bool:
        return bool(self.findings or self.altered)

    def mask(self, connection: sa.Connection) -> None:
        """Temporary views, each named as its table and shadowing it on this connection
        (both engines look in the temporary schema first): the table without the rows that
        hold a finding, a changed column cast back to its type. Whatever reads the store
        through this connection then reads only values of the right kind, and every check
        goes on (the rows left out are missing to them: they report that as well)."""
        schema = "main"
        if self.dialect == "postgresql":
            schema = connection.exec_driver_sql("SELECT current_schema()").scalar_one()
        tables = {table.name: table for table in owned_tables()}
        ident = "rowid" if self.dialect == "sqlite" else "ctid"
        quote = connection.dialect.identifier_preparer.quote
        for name in sorted(set(self.rows) | set(self.altered)):
            table = tables[name]
            altered = self.altered.get(name, {})
            columns = ", ".join(
                f"CAST({quote(c.name)} AS {altered[c.name]}) AS {quote(c.name)}"
                if c.name in altered
                else quote(c.name)
                for c in table.c
            )
            source = f"{quote(schema)}.{quote(name)}"
            bad = self.rows.get(name)
            where = ""
            if bad:
                marks = ", ".join(
                    f"'{value}'" if ident == "ctid" else str(int(value)) for value in bad
                )
                where = f" WHERE {ident} NOT IN ({marks})"
            connection.exec_driver_sql(
                f"CREATE TEMP VIEW {quote(name)} AS SELECT {columns} FROM {source}{where}"
            )
            self.masked.append(name)

    def unmask(self, connection: sa.Connection) -> None:
        """Drop the views; a connection that cannot (its transaction failed, and rolling
        back does not help) is discarded from the pool rather than reused with them."""
        quote = connection.dialect.identifier_preparer.quote
        try:
            while self.masked:
                connection.exec_driver_sql(f"DROP VIEW IF EXISTS {quote(self.masked[-1])}")
                self.masked.pop()
        except Exception:
            try:
                connection.rollback()
                while self.masked:
                    connection.exec_driver_sql(f"DROP VIEW IF EXISTS {quote(self.masked[-1])}")
                    self.masked.pop()
            except Exception:
                connection.invalidate()
                self.masked.clear()

    def __iter__(self):
        return iter(self.findings)

    def named(self) -> list[CorruptValue]:
        """The findings, or when there are none, one per table whose columns' type an
        insider changed (every value of them still of the right kind), naming the columns."""
        return self.findings or [
            CorruptValue(
                table,
                ", ".join(sorted(columns)),
                "(column type changed)",
                "not of the column's type",
            )
            for table, columns in self.altered.items()
        ]


@contextmanager
def without_unreadable(
    connection: sa.Connection,
    tables: Iterable[sa.Table],
    where: Mapping[str, tuple[str, Mapping[str, Any]]] | None = None,
) -> Iterator[list[CorruptValue]]:
    """The rows of ``tables`` holding a value of the wrong kind hidden from ``connection``
    (:meth:`Corruption.mask`) while the block reads through it; yields what was found
    (:meth:`Corruption.named`), empty when nothing was."""
    corruption = find_corrupt(connection, tables, where=where)
    corruption.mask(connection)
    try:
        yield corruption.named()
    finally:
        corruption.unmask(connection)


def read_around_unreadable(
    connection: sa.Connection,
    read: Callable[[sa.Connection], Any],
    tables: Iterable[sa.Table],
    where: Mapping[str, tuple[str, Mapping[str, Any]]] | None = None,
) -> tuple[Any, list[CorruptValue]]:
    """``read(connection)`` and the findings it was read without: the usual read first, and
    only when it fails are ``tables`` (``where``: the rows it could have read) looked at for
    values of the wrong kind, the rows holding one hidden (:func:`without_unreadable`) and
    the read done again. The error is raised again when nothing of the wrong kind is found:
    a bug or the database itself."""
    try:
        return read(connection), []
    except Exception:
        connection.rollback()
        with without_unreadable(connection, tables, where) as found:
            if not found:
                raise
            return read(connection), found


class Readable(list):
    """The rows that could be read (a list of them), and in ``unreadable`` a finding for each
    row left out because it holds a value of the wrong kind (:func:`find_corrupt`)."""

    def __init__(self, rows: list, unreadable: list[CorruptValue]) -> None:
        super().__init__(rows)
        self.unreadable = unreadable


def unreadable_findings(
    tables: Iterable[str] = (), url: str | None = None, originator: UUID | None = None
) -> list[CorruptValue]:
    """The values of the wrong kind in the stored events and snapshots (and ``tables``) on
    ``url`` (:func:`find_corrupt`); none when they cannot be looked at. ``originator``: only
    that game's events and snapshots are looked at (an operator is told of their own game's
    rows alone)."""
    from replays.store.schema import EVENTS_TABLE, SNAPSHOTS_TABLE

    names = {EVENTS_TABLE, SNAPSHOTS_TABLE, *tables}
    wanted = [t for t in owned_tables() if t.name in names]
    try:
        with engine_for(url).connect() as connection:
            where = None
            if originator is not None:
                key = originator.bytes if connection.dialect.name == "sqlite" else originator
                one_game = ("originator_id = :originator", {"originator": key})
                where = {EVENTS_TABLE: one_game, SNAPSHOTS_TABLE: one_game}
            return list(find_corrupt(connection, wanted, where=where))
    except Exception:
        return []


def in_one_line(findings: list[CorruptValue]) -> str:
    """The first three findings, for a message that is never a traceback."""
    more = f" (and {len(findings) - 3} more)" if len(findings) > 3 else ""
    return "; ".join(str(finding) for finding in findings[:3]) + more


def unreadable_summary(error: Exception, tables: Iterable[str] = ()) -> str:
    """What made a read of the stored events (and of ``tables``) fail, in one line: the
    first values of the wrong kind in them, else the error itself."""
    findings = unreadable_findings(tables)
    return (
        in_one_line(findings) if findings else f"{error.__class__.__name__}: {shorten(str(error))}"
    )


def find_corrupt(
    connection: sa.Connection,
    tables: Iterable[sa.Table] | None = None,
    where: Mapping[str, tuple[str, Mapping[str, Any]]] | None = None,
    cheap: frozenset[str] = frozenset(),
    only: Mapping[str, Iterable[str]] | None = None,
    decoded_later: Mapping[str, Iterable[str]] | None = None,
) -> Corruption:
    """Every value of the owned tables that is not of its column's kind (NULLs where none is
    allowed, unknown topics), found by SQL conditions evaluated in the database, so a clean
    store costs one pass of C over each table. ``where``: per table name, a plain SQL
    condition and its parameters limiting the rows (one game's), or the table is skipped
    when ``where`` is given and names it not. ``cheap``: tables checked only for the kind
    SQLite keeps; ``only``: per table, the only columns checked; ``decoded_later``: per
    table, the columns whose every value the caller reads as text afterwards (on SQLite,
    a read that fails on text that is not UTF-8), not tested for UTF-8 here."""
    dialect = connection.dialect
    name = dialect.name
    quote = dialect.identifier_preparer.quote
    found = Corruption(name)
    topics = ", ".join("'" + t.replace("'", "''") + "'" for t in sorted(_allow_list()))
    actual: dict[tuple[str, str], tuple[str, str]] = {}
    if name == "postgresql":
        for table_name, column_name, data_type, nullable in connection.execute(
            sa.text(
                "SELECT table_name, column_name, data_type, is_nullable "
                "FROM information_schema.columns WHERE table_schema = current_schema()"
            )
        ):
            actual[(table_name, column_name)] = (data_type, nullable)
    if name == "postgresql":
        existing = {table_name for table_name, _ in actual}
    else:
        existing = set(
            connection.exec_driver_sql(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
            ).scalars()
        )
    for table in owned_tables() if tables is None else tables:
        if where is not None and table.name not in where:
            continue
        if table.name not in existing:
            continue
        checks = []
        wanted = None if only is None or table.name not in only else set(only[table.name])
        for column in table.c:
            kind = _kind(column)
            if wanted is not None and column.name not in wanted:
                # A column whose type an insider changed is always read with care: every
                # value of it reaches the readers as text.
                changed = name == "postgresql" and actual.get(
                    (table.name, column.name), ("", "NO")
                )[0] not in _PG_TYPES.get(kind, ())
                if not changed:
                    continue
            column_name = quote(column.name)
            if name == "sqlite":
                condition = _sqlite_bad(
                    column_name,
                    kind,
                    column.nullable,
                    topics,
                    table.name in cheap,
                    decoded_later is not None and column.name in decoded_later.get(table.name, ()),
                )
            else:
                condition = _pg_bad(
                    column_name,
                    kind,
                    column.nullable,
                    actual.get((table.name, column.name), ("", "NO")),
                    topics,
                )
                if condition == "TRUE":
                    found.altered.setdefault(table.name, {})[column.name] = column.type.compile(
                        dialect
                    )
            if condition is not None:
                checks.append((column, kind, condition))
        if not checks:
            continue
        ident = "rowid" if name == "sqlite" else "ctid::text"
        names = [c.name for c in table.c]
        flags = ", ".join(condition for _, _, condition in checks)
        query = (
            f"SELECT {ident}, {', '.join(quote(n) for n in names)}, {flags} "
            f"FROM {quote(table.name)} WHERE ({' OR '.join(c for _, _, c in checks)})"
        )
        params: Mapping[str, Any] = {}
        if where is not None and where[table.name][0]:
            query += f" AND ({where[table.name][0]})"
            params = where[table.name][1]
        # The rows read are those holding a bad value: text that is not UTF-8 among them,
        # which the usual reading cannot return at all.
        with text_as_stored(connection):
            bad_rows = list(connection.execute(sa.text(query), dict(params)))
        for raw in bad_rows:
            not_utf8 = {n for n, v in zip(names, raw[1:], strict=False) if _undecodable(v)}
            if not_utf8:
                raw = [_escaped(v) for v in raw]
            row = dict(zip(names, raw[1 : 1 + len(names)], strict=True))
            hits = raw[1 + len(names) :]
            bad = []
            for (column, kind, condition), hit in zip(checks, hits, strict=True):
                value = row[column.name]
                if not hit:
                    continue
                if condition == "TRUE":
                    if value is None:
                        if column.nullable:
                            continue
                    elif _parses(kind, value) and not (
                        column.name in _COUNTED and str(value).startswith("-")
                    ):
                        continue
                bad.append((column, kind, value))
            if not bad:
                continue
            found.rows.setdefault(table.name, []).append(raw[0])
            key = row_key(table, row)
            game = row.get("game_id") if isinstance(row.get("game_id"), str) else None
            for column, kind, value in bad:
                if value is None:
                    why = "NULL where a value is required"
                elif column.name in not_utf8 and kind in _TEXT_KINDS:
                    why = "not UTF-8 text"
                elif kind == "topic" and isinstance(value, str):
                    found.findings.append(UnknownTopic(value, table.name, key, game))
                    continue
                else:
                    why = f"not {_WHAT.get(kind, kind)}"
                found.findings.append(CorruptValue(table.name, column.name, value, why, key, game))
    return found


_BAD_BYTE = re.compile("[\udc80-\udcff]")


def _undecodable(value: Any) -> bool:
    """Whether ``value`` is text read from bytes that are not UTF-8 (:func:`text_as_stored`)."""
    return type(value) is str and _BAD_BYTE.search(value) is not None


def _escaped(value: Any) -> Any:
    """``value`` with each byte that was not UTF-8 written ``\\xff``: text any output takes."""
    if not _undecodable(value):
        return value
    return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


_WHAT = {
    "int": "an integer",
    "bool": "a boolean",
    "text": "text",
    "bytes": "bytes",
    "datetime": "a time",
    "date": "a date",
    "json": "JSON",
    "player_ids": "a list of player ids",
    "uuid": "an id",
    "number": "a finite number",
}


__all__ = [
    "CorruptValue",
    "Corruption",
    "Readable",
    "RowDecoder",
    "UnknownTopic",
    "Unreadable",
    "aggregate_class",
    "aggregate_topics",
    "check_state_topics",
    "decode_value",
    "event_class",
    "find_corrupt",
    "in_one_line",
    "known_topics",
    "owned_tables",
    "read_around_unreadable",
    "row_key",
    "scan_store",
    "scan_table",
    "shorten",
    "unreadable_findings",
    "unreadable_summary",
]
