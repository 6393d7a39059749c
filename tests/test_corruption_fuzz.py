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
from corruption_support import cases, corrupt, nullable, restore, target_row

from replays.integrity.evidence import verify_store
from replays.store.db import engine_for

pytestmark = pytest.mark.filterwarnings("ignore")


def _store(url):
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


def _edit_event(url, game_id):
    """Change one byte of the game's third stored event, as an insider would."""
    with engine_for(url).begin() as connection:
        originator = connection.execute(
            sa.text("SELECT originator_id FROM integrity_games WHERE game_id = :g"), {"g": game_id}
        ).scalar_one()
        from replays.integrity.store import id_param, raw_id

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
    games = _store(url)
    victim, edited = games[0], games[-1]
    _edit_event(url, edited)
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
    for case in cases(url):
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
            and not any(
                case.table in text and (case.column in text or "unknown topic" in text)
                for text in texts
            )
        ):
            missed.append(f"{case}: not named; found {texts[:3]}")
    print(f"{tried} (table, column, value) cases, {refused} refused", file=sys.stderr)
    assert not missed, "\n".join(missed[:20]) + f"\n({len(missed)} of {tried})"
    assert verify_store(url).problems == baseline.problems  # every row was written back
