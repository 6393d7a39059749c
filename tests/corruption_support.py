"""Values of the wrong kind for every column the project owns (issue 29's corruption fuzzer).

The columns come from the SQLAlchemy metadata Alembic builds the schema from
(:func:`replays.store.decoding.owned_tables`), so a new column is covered without a change
here. :func:`cases` gives ``(table, column, value, wrong_kind)`` for the tables that hold at
least one row; :func:`corrupt` writes one value into one stored row (on PostgreSQL after
``ALTER COLUMN ... TYPE text``, as an insider can) and :func:`restore` puts the row back.
The pages side reuses them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from replays.integrity.store import id_param, raw_id
from replays.store.db import engine_for
from replays.store.decoding import _kind, owned_tables

# Per column kind, values it must never hold. A value of the column's own kind that is
# merely odd (a negative count) is "not wrong_kind": verify need not name it.
TEXT, BLOB, HUGE, NEGATIVE, NAN, EMPTY = "zzz-not-this", b"\x00\xffblob", "1e999", -7, "NaN", ""
UNKNOWN_TOPIC = "this:s"


class NotUtf8(bytes):
    """Bytes an insider stores as SQLite text (``CAST(x'ff' AS TEXT)``): SQLite keeps them,
    and Python cannot read them back as text. PostgreSQL refuses such text: there they are
    written as bytes are (their latin-1 text)."""


NOT_UTF8 = NotUtf8(b"\xff\xfeno-utf8")
WRONG = {
    "int": (TEXT, BLOB, HUGE, NOT_UTF8, NAN, EMPTY),
    "bool": (TEXT, BLOB, NOT_UTF8, NAN),
    "text": (BLOB, NOT_UTF8),
    "topic": (UNKNOWN_TOPIC, NOT_UTF8, BLOB, EMPTY),
    "bytes": (TEXT, NOT_UTF8, EMPTY),
    "datetime": (TEXT, NOT_UTF8, BLOB, EMPTY, NAN),
    "date": (TEXT, NOT_UTF8, BLOB, HUGE),
    "json": ("not json{", NOT_UTF8, BLOB),
    # A game's players: JSON that parses is wrong too when it is no list of player ids.
    "player_ids": ("not json{", "true", NOT_UTF8, '["p1", 5]', BLOB, "null"),
    "uuid": (TEXT, NOT_UTF8, BLOB),
}


@dataclass(frozen=True)
class Case:
    table: str
    column: str
    value: Any
    wrong_kind: bool

    def __str__(self) -> str:
        return f"{self.table}.{self.column}={self.value!r}"


def cases(url: str, *, per_column: int = 2) -> list[Case]:
    """Up to ``per_column`` wrong values for each column of each non-empty owned table
    (rotating through the kind's list, so every value is used across the columns), plus
    NULL where the schema allows it and a negative number for integer columns."""
    engine = sa.create_engine(url)
    found: list[Case] = []
    with engine.connect() as connection:
        inspector = sa.inspect(connection)
        turn = 0
        for table in owned_tables():
            if not inspector.has_table(table.name):
                continue
            if connection.execute(sa.select(sa.func.count()).select_from(table)).scalar() == 0:
                continue
            for column in table.c:
                kind = _kind(column)
                wrong = WRONG.get(kind, ())
                picked = [
                    wrong[(turn + i) % len(wrong)] for i in range(min(per_column, len(wrong)))
                ]
                turn += 1
                found += [Case(table.name, column.name, value, True) for value in picked]
                if column.nullable:
                    found.append(Case(table.name, column.name, None, False))
                elif kind == "int" and not column.primary_key:
                    found.append(Case(table.name, column.name, NEGATIVE, False))
    engine.dispose()
    return found


def wrong_on(case: Case, url: str) -> bool:
    """Whether the value is still of the wrong kind once written on this engine: on
    PostgreSQL a column changed to text holds any text, bytes included as their text."""
    if url.startswith("sqlite"):
        return case.wrong_kind
    kind = _kind(_table(case.table).c[case.column])
    return case.wrong_kind and not (kind == "text" and isinstance(case.value, bytes))


def nullable(case: Case) -> bool:
    return bool(_table(case.table).c[case.column].nullable)


def _ident(connection: sa.Connection) -> str:
    return "rowid" if connection.dialect.name == "sqlite" else "ctid"


def target_row(connection: sa.Connection, table: str, game_id: str | None) -> Any:
    """The stored row a case corrupts: one of ``game_id``'s where the table has games'
    rows (its events through their aggregate), else the table's first."""
    quote = connection.dialect.identifier_preparer.quote
    ident = _ident(connection)
    columns = {c.name for c in _table(table).c}
    where, params = "", {}
    if game_id is not None and "game_id" in columns:
        where, params = " WHERE game_id = :g", {"g": game_id}
    elif game_id is not None and table.startswith("ledger_") and "originator_id" in columns:
        originator = connection.execute(
            sa.text("SELECT originator_id FROM integrity_games WHERE game_id = :g"), {"g": game_id}
        ).scalar()
        if originator is not None:
            where = " WHERE originator_id = :o"
            params = {"o": id_param(connection, raw_id(originator))}
    if ident == "ctid":  # a ctid moves with every update: the primary key names the row
        keys = [c.name for c in _table(table).primary_key.columns]
        ident = ", ".join(quote(k) for k in keys)
    row = connection.execute(
        sa.text(f"SELECT {ident} FROM {quote(table)}{where} LIMIT 1"), params
    ).first()
    if row is None:
        row = connection.execute(sa.text(f"SELECT {ident} FROM {quote(table)} LIMIT 1")).first()
    if connection.dialect.name == "sqlite":
        return row[0]
    return dict(zip(keys, row, strict=True))


def _table(name: str) -> sa.Table:
    return next(t for t in owned_tables() if t.name == name)


def _where(connection: sa.Connection, row: Any) -> tuple[str, dict]:
    if connection.dialect.name == "sqlite":
        return "rowid = :r", {"r": row}
    quote = connection.dialect.identifier_preparer.quote
    return " AND ".join(f"{quote(k)} = :k{i}" for i, k in enumerate(row)), {
        f"k{i}": v for i, v in enumerate(row.values())
    }


def _pg_type(connection: sa.Connection, table: str, column: str) -> str:
    return connection.execute(
        sa.text(
            "SELECT format_type(a.atttypid, a.atttypmod) FROM pg_attribute a "
            "WHERE a.attrelid = CAST(:t AS regclass) AND a.attname = :c"
        ),
        {"t": table, "c": column},
    ).scalar_one()


def corrupt(connection: sa.Connection, case: Case, row: Any) -> tuple[Any, str | None]:
    """Write ``case.value`` into ``row``; return what :func:`restore` needs (the stored
    value, and on PostgreSQL the column's type before it was changed to text)."""
    quote = connection.dialect.identifier_preparer.quote
    table, column = quote(case.table), quote(case.column)
    where, params = _where(connection, row)
    old = connection.execute(
        sa.text(f"SELECT {column} FROM {table} WHERE {where}"), params
    ).scalar()
    value = case.value
    original_type = None
    if connection.dialect.name == "postgresql":
        original_type = _pg_type(connection, case.table, case.column)
        if value is None:
            connection.execute(sa.text(f"ALTER TABLE {table} ALTER COLUMN {column} DROP NOT NULL"))
        else:
            connection.execute(
                sa.text(f"ALTER TABLE {table} ALTER COLUMN {column} TYPE text USING {column}::text")
            )
            if case.column in row:  # the key's column is text now
                row[case.column] = str(row[case.column])
                where, params = _where(connection, row)
            # The server's own text of the stored value: what casts back to it.
            old = connection.execute(
                sa.text(f"SELECT {column} FROM {table} WHERE {where}"), params
            ).scalar()
            if isinstance(value, bytes):
                value = value.decode("latin-1").replace("\x00", "\\0")
            value = str(value)
    elif value == NAN:
        value = math.nan  # SQLite keeps a NaN as NULL: the closest an insider gets
    stored = "CAST(:v AS TEXT)" if type(value) is NotUtf8 else ":v"
    connection.execute(
        sa.text(f"UPDATE {table} SET {column} = {stored} WHERE {where}"), {"v": value, **params}
    )
    if original_type is not None and case.column in row:
        row[case.column] = value
    return old, original_type


def corrupt_one(url: str, table: str, key: tuple[str, Any], column: str, value: Any) -> None:
    """An insider's value of the wrong kind in ``column`` of the one row of ``table`` whose
    ``key`` column holds ``key``'s value (on PostgreSQL after the column is changed to text,
    as :func:`corrupt` does); left so, for a test that reads it."""
    key_column, key_value = key
    with engine_for(url).begin() as connection:
        if connection.dialect.name == "sqlite":
            row = connection.execute(
                sa.text(f"SELECT rowid FROM {table} WHERE {key_column} = :key"),
                {"key": key_value},
            ).scalar_one()
        else:
            row = {key_column: key_value}
        corrupt(connection, Case(table, column, value, True), row)


def restore(connection: sa.Connection, case: Case, row: Any, saved: tuple[Any, str | None]):
    old, original_type = saved
    quote = connection.dialect.identifier_preparer.quote
    table, column = quote(case.table), quote(case.column)
    where, params = _where(connection, row)
    if original_type is not None and case.value is not None:
        connection.execute(
            sa.text(f"UPDATE {table} SET {column} = :v WHERE {where}"), {"v": old, **params}
        )
        connection.execute(
            sa.text(
                f"ALTER TABLE {table} ALTER COLUMN {column} TYPE {original_type} "
                f"USING {column}::{original_type}"
            )
        )
        return
    connection.execute(
        sa.text(f"UPDATE {table} SET {column} = :v WHERE {where}"), {"v": old, **params}
    )
    if original_type is not None:
        column_obj = _table(case.table).c[case.column]
        if not column_obj.nullable:
            connection.execute(sa.text(f"ALTER TABLE {table} ALTER COLUMN {column} SET NOT NULL"))


def build_store(url: str) -> list[str]:
    """Migrate ``url`` and store simulated games of every variant, projected."""
    from replays.readmodels.projections import catch_up
    from replays.simulation import Floor, Simulation, store_games
    from replays.store.schema import migrate

    migrate(url)
    floor = Floor(
        seed=5, tables=5, players=10, variants=("points", "raise", "red3", "pool", "deals")
    )
    records = list(Simulation(floor).games(5))
    store_games(records, url=url, warn=lambda message: None)
    catch_up(url)
    return [record["game_id"] for record in records]


def _plain_value(column: sa.Column, game_id: str) -> Any:
    """A value of the column's own kind, for a row written only to be corrupted."""
    import uuid
    from datetime import date, datetime
    from decimal import Decimal

    kind = _kind(column)
    if column.name == "game_id":
        return game_id
    if kind == "int":
        python = getattr(column.type, "python_type", int)
        return Decimal("1") if python is Decimal else 1
    return {
        "bool": False,
        "datetime": datetime(2026, 1, 1, 12, 0, 0),
        "date": date(2026, 1, 1),
        "json": [],
        "bytes": b"\x00" * 32,
        "uuid": uuid.uuid4(),
        "number": Decimal("1"),
    }.get(kind, "x")


# Tables a small store leaves empty whose row a plain value cannot make (a signed checkpoint).
_NOT_FILLED = frozenset({"integrity_checkpoints"})


def fill_empty_tables(url: str, game_id: str) -> list[str]:
    """One row of plain values in every owned table the store left empty (accounts,
    tokens, the access log, disputes...), so that each of their columns gets its cases."""
    filled = []
    with engine_for(url).begin() as connection:
        for table in owned_tables():
            if table.name in _NOT_FILLED:
                continue
            if connection.execute(sa.select(sa.func.count()).select_from(table)).scalar():
                continue
            values = {
                c.name: _plain_value(c, game_id)
                for c in table.c
                if not (c.primary_key and c.autoincrement is True and _kind(c) == "int")
            }
            connection.execute(sa.insert(table).values(values))
            filled.append(table.name)
    return filled


def edit_event(url: str, game_id: str) -> None:
    """Change one byte of the game's third stored event, as an insider would."""
    with engine_for(url).begin() as connection:
        originator = connection.execute(
            sa.text("SELECT originator_id FROM integrity_games WHERE game_id = :g"), {"g": game_id}
        ).scalar_one()
        o = id_param(connection, raw_id(originator))
        state = connection.execute(
            sa.text(
                "SELECT state FROM ledger_events WHERE originator_id = :o AND originator_version = 3"
            ),
            {"o": o},
        ).scalar_one()
        edited = bytes(state)[:-1] + b" }"
        connection.execute(
            sa.text(
                "UPDATE ledger_events SET state = :s WHERE originator_id = :o AND originator_version = 3"
            ),
            {"s": edited, "o": o},
        )
