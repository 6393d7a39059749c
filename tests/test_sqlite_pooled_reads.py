"""A read that fails part-way must not leave its pooled SQLite connection in the past.

A stored value its column's type cannot decode raises while the rows are iterated, and the
exception's traceback keeps the half-read cursor alive until the garbage collector runs.
The pooled connection then kept that statement's read open (WAL mode): its next user saw
the database as it was before (a corrupt value just written was not found, so `audit`
could not name it), and its next write failed with "database is locked"."""

from __future__ import annotations

import gc
import uuid

import pytest
import sqlalchemy as sa

from replays.store.db import engine_for

METADATA = sa.MetaData()
THINGS = sa.Table(
    "things",
    METADATA,
    sa.Column("n", sa.Integer, primary_key=True),
    sa.Column("key", sa.Uuid),
)


@pytest.fixture
def engine(tmp_path):
    engine = engine_for(f"sqlite:///{tmp_path / 'pooled.sqlite3'}")
    METADATA.create_all(engine)
    with engine.begin() as connection:
        connection.execute(
            THINGS.insert(),
            [{"n": n, "key": uuid.uuid4()} for n in range(50)],
        )
        # Row 25's key is no id: decoding it fails half-way through a read of all rows.
        connection.execute(sa.text("UPDATE things SET key = 'not-an-id' WHERE n = 25"))
    yield engine
    engine.dispose()


def _failed_read(engine) -> BaseException:
    """Read every row until the bad one, and keep the error (a traceback holds it)."""
    with engine.connect() as connection:
        try:
            for _ in connection.execute(sa.select(THINGS).order_by(THINGS.c.n)):
                pass
        except ValueError as error:
            return error
    raise AssertionError("the bad key was read without an error")


def test_a_pooled_connection_sees_writes_made_after_a_failed_read(engine):
    gc.disable()  # as between two collections: the failed read's traceback is alive
    try:
        kept = _failed_read(engine)
        assert kept.__traceback__ is not None
        # The failed read's connection is the one in the pool: ``pooled`` gets it back,
        # ``other`` is new and writes.
        with engine.connect() as pooled, engine.connect() as other:
            with other.begin():
                other.execute(sa.insert(THINGS).values(n=100, key=uuid.uuid4()))
            seen = pooled.execute(sa.text("SELECT count(*) FROM things")).scalar()
            assert seen == 51, "the pooled connection reads the database as it was"
            pooled.execute(sa.text("UPDATE things SET n = 101 WHERE n = 100"))  # and writes
            pooled.commit()
    finally:
        gc.enable()


def test_a_result_read_in_full_is_untouched_by_the_closing(engine):
    with engine.connect() as connection:
        rows = connection.execute(sa.select(THINGS.c.n).where(THINGS.c.n < 10)).all()
    assert [n for (n,) in rows] == list(range(10))
