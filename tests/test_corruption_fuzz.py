"""The corruption fuzzer, verify's side (issue 29): a value of the wrong kind in any column
of any table the project owns, together with a real event edit in another game, is named
by `verify` along with the edit; nothing ends in a traceback.

One store per engine (simulated games of every variant, projected), built once; each case
writes one value into one row, runs verify in this process, and writes the row back. The
cases come from tests/corruption_support.py, enumerated from the schema's metadata.
"""

from __future__ import annotations

import sys

import pytest
import sqlalchemy as sa
from corruption_support import (
    build_store,
    cases,
    corrupt,
    edit_event,
    nullable,
    restore,
    target_row,
    wrong_on,
)

from replays.integrity.evidence import verify_store
from replays.store.db import engine_for


@pytest.fixture(
    scope="module", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def fuzz_store(request, tmp_path_factory):
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('fuzz') / 'ledger.sqlite3'}"
        drop = None
    else:
        from pg_support import postgres_schema_url

        url, drop = postgres_schema_url()
    games = build_store(url)
    victim, edited = games[0], games[-1]
    edit_event(url, edited)
    try:
        yield url, victim, edited
    finally:
        engine_for(url).dispose()
        if drop is not None:
            drop()


def test_every_column_wrong_kind_is_named_with_the_edit(fuzz_store):
    url, victim, edited = fuzz_store
    baseline = verify_store(url)
    assert any(p.game_id == edited and p.event == 3 for p in baseline.problems), baseline.problems
    tried, refused, missed = 0, 0, []
    engine = engine_for(url)
    # PostgreSQL changes a column's type for each value (a table rewrite, twice): one wrong
    # value per column there, two on SQLite.
    for case in cases(url, per_column=2 if url.startswith("sqlite") else 1):
        with engine.begin() as connection:
            row = target_row(connection, case.table, victim)
            try:
                with connection.begin_nested():
                    saved = corrupt(connection, case, row)
            except sa.exc.IntegrityError:
                refused += 1  # the database itself refuses the value (a foreign key)
                continue
        try:
            report = verify_store(url)  # a traceback here fails the test with the case named
        except Exception as error:  # pragma: no cover - the failure names the case
            raise AssertionError(f"{case}: verify raised {error!r}") from error
        finally:
            with engine.begin() as connection:
                restore(connection, case, row, saved)
        tried += 1
        texts = [str(p) for p in report.problems]
        if not any(p.game_id == edited and p.event == 3 for p in report.problems):
            missed.append(f"{case}: the edit in {edited} went unreported")
        # SQLite keeps a NaN as NULL: in a column that allows NULL it is no wrong value.
        nan_as_null = case.value == "NaN" and url.startswith("sqlite") and nullable(case)
        if (
            case.wrong_kind
            and not nan_as_null
            and wrong_on(case, url)
            and not any(
                case.table in text and (case.column in text or "unknown topic" in text)
                for text in texts
            )
        ):
            missed.append(f"{case}: not named; found {texts[:3]}")
    print(f"{tried} (table, column, value) cases, {refused} refused", file=sys.stderr)
    assert not missed, "\n".join(missed[:20]) + f"\n({len(missed)} of {tried})"
    assert verify_store(url).problems == baseline.problems  # every row was written back
