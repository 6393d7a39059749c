"""The bulk writer stores exactly what SQLAlchemy's own binding stores.

``replays.readmodels.bulk`` replaces two bind processors with cheaper ones (SQLite's DATETIME
text, Fixed money remembered per value); these tests write the same rows once through it and
once through ``connection.execute(table.insert(), rows)`` into a twin table, and compare the
raw stored values the driver reads back, on SQLite and PostgreSQL.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.rummy13.rows import _moment
from domain.timestamps import parse_time
from replays.readmodels.bulk import insert_rows, stored_forms, update_rows
from replays.readmodels.models import Fixed

COLUMNS = ("id", "at", "day", "money", "rate", "groups", "note")


def _tables(metadata: sa.MetaData, name: str) -> sa.Table:
    return sa.Table(
        name,
        metadata,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("at", sa.DateTime(timezone=True)),
        sa.Column("day", sa.Date),
        sa.Column("money", Fixed(2)),
        sa.Column("rate", Fixed(6)),
        sa.Column("groups", sa.JSON(none_as_null=True)),
        sa.Column("note", sa.String(32)),
    )


def _raw(connection: sa.Connection, table: sa.Table) -> list[tuple]:
    """The stored values as the driver returns them (no result processors)."""
    text = f"SELECT {', '.join(COLUMNS)} FROM {table.name} ORDER BY id"
    return [tuple(row) for row in connection.exec_driver_sql(text).fetchall()]


ZONES = st.sampled_from([None, UTC, timezone(timedelta(hours=5, minutes=30))])
MOMENTS = st.one_of(
    st.none(),
    st.builds(
        lambda moment, zone, whole: (moment.replace(microsecond=0) if whole else moment).replace(
            tzinfo=zone
        ),
        st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(2200, 1, 1)),
        ZONES,
        st.booleans(),
    ),
)
MONEY = st.one_of(
    st.none(),
    st.sampled_from([Decimal("0"), Decimal("0.00"), Decimal("1.5"), Decimal("1.50")]),
    st.decimals(min_value=-(10**9), max_value=10**9, places=2, allow_nan=False),
)
RATES = st.one_of(
    st.none(),
    st.decimals(min_value=0, max_value=1000, places=6, allow_nan=False),
    st.integers(min_value=0, max_value=1000),
)
GROUPS = st.one_of(
    st.none(),
    st.lists(st.lists(st.sampled_from(["AS", "10H", "JK", "2C"]), max_size=4), max_size=3),
)
ROW = st.fixed_dictionaries(
    {
        "at": MOMENTS,
        "day": st.one_of(st.none(), st.dates(min_value=date(1970, 1, 2))),
        "money": MONEY,
        "rate": RATES,
        "groups": GROUPS,
        "note": st.one_of(st.none(), st.text(alphabet="abcé ♠'\"", max_size=8)),
    }
)


@pytest.fixture
def twin(database_url):
    engine = sa.create_engine(database_url)
    metadata = sa.MetaData()
    fast, reference = _tables(metadata, "bulk_fast"), _tables(metadata, "bulk_reference")
    metadata.create_all(engine)
    try:
        yield engine, fast, reference
    finally:
        metadata.drop_all(engine)
        engine.dispose()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(rows=st.lists(ROW, min_size=1, max_size=12), changes=st.lists(ROW, max_size=12))
def test_bulk_rows_store_what_sqlalchemy_stores(twin, rows, changes):
    engine, fast, reference = twin
    rows = [{"id": number, **row} for number, row in enumerate(rows)]
    changes = [{"id": number, **row} for number, row in enumerate(changes[: len(rows)])]
    with engine.begin() as connection:
        for table in (fast, reference):
            connection.execute(table.delete())
        insert_rows(connection, fast, rows)
        insert_rows(connection, fast, rows[:0])  # nothing to write: nothing happens
        connection.execute(reference.insert(), rows)
        assert _raw(connection, fast) == _raw(connection, reference)
        if connection.dialect.name == "sqlite":
            # verify's expected rows in their stored form: what SQLite hands back.
            names, forms = stored_forms(fast, connection.dialect, rows)
            assert names == list(COLUMNS)
            assert forms == _raw(connection, reference)
        if changes:
            update_rows(connection, fast, "id", changes)
            for change in changes:
                values = {key: value for key, value in change.items() if key != "id"}
                connection.execute(
                    reference.update().where(reference.c.id == change["id"]).values(values)
                )
        assert _raw(connection, fast) == _raw(connection, reference)


def test_bulk_sqlite_datetime_text(sqlite_url):
    """The SQLite text itself: microseconds always written, the offset left out (the
    wall-clock fields, as SQLAlchemy stores them)."""
    engine = sa.create_engine(sqlite_url)
    metadata = sa.MetaData()
    table = _tables(metadata, "bulk_text")
    metadata.create_all(engine)
    moments = [
        datetime(2025, 3, 1, 18, 4, 5, tzinfo=UTC),
        datetime(2025, 3, 1, 18, 4, 5, 120, tzinfo=UTC),
        datetime(2025, 3, 1, 23, 34, 5, tzinfo=timezone(timedelta(hours=5, minutes=30))),
        datetime(999, 1, 2, 3, 4, 5),
    ]
    with engine.begin() as connection:
        insert_rows(connection, table, [{"id": n, "at": at} for n, at in enumerate(moments)])
        stored = [row[1] for row in _raw(connection, table)]
    engine.dispose()
    assert stored == [
        "2025-03-01 18:04:05.000000",
        "2025-03-01 18:04:05.000120",
        "2025-03-01 23:34:05.000000",
        "0999-01-02 03:04:05.000000",
    ]


def test_bulk_money_still_refuses_extra_places(database_url):
    """A remembered amount changes nothing: a value with too many places is refused each
    time, before and after good ones, and nothing of the statement is stored."""
    engine = sa.create_engine(database_url)
    metadata = sa.MetaData()
    table = _tables(metadata, "bulk_refuse")
    metadata.create_all(engine)
    good = [{"id": 1, "money": Decimal("2.50")}, {"id": 2, "money": Decimal("2.5")}]
    with engine.begin() as connection:
        insert_rows(connection, table, good)
    for _ in range(2):
        with (
            pytest.raises(ValueError, match="more than 2 decimal places"),
            engine.begin() as connection,
        ):
            insert_rows(
                connection,
                table,
                [{"id": 3, "money": Decimal("2.50")}, {"id": 4, "money": Decimal("2.505")}],
            )
    with engine.begin() as connection:
        assert [row[3] for row in _raw(connection, table)] == [250, 250]
    engine.dispose()


@settings(max_examples=200, deadline=None)
@given(
    moment=st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(2200, 1, 1)),
    zone=ZONES,
    suffix=st.sampled_from(["Z", "+00:00", "", "+05:30", "-03:00"]),
    space=st.booleans(),
)
def test_move_time_is_parse_time(moment, zone, suffix, space):
    """The move row's quick reading of ``at`` gives parse_time's datetime, tz included."""
    text = moment.isoformat() + suffix
    text = f" {text} " if space else text
    fast, reference = _moment(text), parse_time(text)
    assert fast == reference
    assert fast.utcoffset() == timedelta(0) and fast.isoformat() == reference.isoformat()
    aware = moment.replace(tzinfo=zone)
    assert _moment(aware).isoformat() == parse_time(aware).isoformat()


@pytest.mark.parametrize("bad", ["yesterday", "2025-13-01T00:00:00Z", 12])
def test_move_time_refuses_as_parse_time(bad):
    with pytest.raises(ValueError, match="is not an ISO-8601 time"):
        _moment(bad)
    assert _moment(None) is None
