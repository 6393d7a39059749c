"""The SQLite driver binds bytes, memoryviews and None as given (replays/store/db.py
registers adapters so that it skips its adapter search): the same stored values."""

from __future__ import annotations

import sqlite3

import pytest

import replays.store.db  # noqa: F401  (registers the adapters)

VALUES = [b"", b"\x00\xffseal", memoryview(b"state bytes"), None]


@pytest.mark.parametrize("value", VALUES, ids=["empty", "bytes", "memoryview", "none"])
def test_the_adapter_gives_the_value_itself(value):
    adapter = sqlite3.adapters[(type(value), sqlite3.PrepareProtocol)]
    assert adapter(value) is value


def test_stored_values_are_the_driver_own_binding():
    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE TABLE t (n INTEGER PRIMARY KEY, v)")
    connection.executemany("INSERT INTO t (v) VALUES (?)", [(value,) for value in VALUES])
    stored = [row[0] for row in connection.execute("SELECT v FROM t ORDER BY n")]
    kinds = [row[0] for row in connection.execute("SELECT typeof(v) FROM t ORDER BY n")]
    assert stored == [b"", b"\x00\xffseal", b"state bytes", None]
    assert kinds == ["blob", "blob", "blob", "null"]
