"""`verify`'s read-model replay asks less of each event and each store (issue 33): what it
skips must be what the full work would find nothing in.

- a variant's events are not read where no topic the store pass read can be that
  variant's (``read_model_checks._may_hold``, SQLite's LIKE as the query spells it);
- ``Variant.closing_events``: the only events ``closing_rows`` and ``audits_after``
  answer anything for;
- a game's move rows in their stored form made in one tuple a row (``_move_forms``), the
  same as the loop over the bound columns gives;
- a move's time read in one call (``z_text_or_time``).
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest
import sqlalchemy as sa

from replays.integrity.evidence import verify_store
from replays.store.db import engine_for

TOPICS = [
    "rummy_ledger:Game.Started",
    "rummy_ledger:Game.Picked",
    "rummy_ledger:DisputeCase.CaseOpened",
    "rummy_ledger.red3:Red3Match.Started",
    "rummy_ledger.red3:Red3Match.Discarded",
    "RUMMY_LEDGER.RED3:red3match.Picked",  # LIKE folds ASCII letters
    "rummyXledger.red3:Red3Match.Started",  # "_" is any one character
    "rummy_ledger.red3XRed3Match.Started",  # ":" is not
    "rummy_ledger.pooldeals:Match.Started",
    "rummy_ledger.pooldeals:Match",  # the prefix's last dot missing
    "xrummy_ledger.pooldeals:Match.Started",
    "rummy_ledger.pooldeals:Match.\n",
    "rummy_ledger.pooldeals:Mätch.Started",  # non-ASCII letters do not fold
    "rummy_ledger.pooldeals:MATCH.Started",
    "",
]


def test_a_variants_events_are_read_where_sqlites_like_may_find_one():
    from domain import variants
    from replays.readmodels.read_model_checks import _may_hold

    connection = sqlite3.connect(":memory:")
    prefixes = variants.topic_prefixes()
    assert len(prefixes) >= 3
    for prefix in prefixes:
        for topic in TOPICS:
            (found,) = connection.execute("SELECT ? LIKE ?", (topic, prefix + "%")).fetchone()
            assert _may_hold({topic}, prefix) is bool(found), (prefix, topic)
        assert _may_hold(set(TOPICS), prefix)
        assert not _may_hold(set(), prefix)
        # What is not text as read could match anything: the events are read.
        for value in (b"rummy", 7, None, "rummy_ledger:Game\udcff"):
            assert _may_hold({value}, prefix), (prefix, value)


def _stored_thirteen_card_games(url):
    from replays.readmodels.projections import catch_up
    from replays.simulation import Floor, Simulation, store_games
    from replays.store.schema import migrate

    migrate(url)
    floor = Floor(seed=5, tables=2, players=8, variants=("points", "raise"))
    records = list(Simulation(floor).games(4))
    store_games(records, url=url, warn=lambda message: None)
    catch_up(url)


def _findings(report):
    return [str(p) for p in report.problems], list(report.notes)


def _topics_read(monkeypatch):
    from replays.readmodels import read_model_checks as checks

    read: list[str] = []
    reader = checks._events_by_aggregate

    def counted(connection, position, events, topics, **kwargs):
        read.append(topics)
        return reader(connection, position, events, topics, **kwargs)

    monkeypatch.setattr(checks, "_events_by_aggregate", counted)
    return read


@pytest.mark.parametrize(
    "topic",
    [
        None,
        "rummy_ledger.red3:Red3Match.Discarded",
        "RUMMY_LEDGER.POOLDEALS:match.Started",
        "rummy_ledger+red3:Red3Match.Started",
    ],
)
def test_verify_reads_a_variants_events_only_where_one_may_be_there(
    database_url, monkeypatch, topic
):
    from domain import variants
    from replays.readmodels import read_model_checks as checks

    _stored_thirteen_card_games(database_url)
    if topic is not None:
        # An insider gives a 13-card game's event another variant's topic.
        with engine_for(database_url).begin() as connection:
            target = connection.execute(
                sa.text(
                    "SELECT id FROM ledger_events WHERE topic LIKE '%Discarded' "
                    "ORDER BY id LIMIT 1 OFFSET 3"
                )
            ).scalar_one()
            connection.execute(
                sa.text("UPDATE ledger_events SET topic = :t WHERE id = :i"),
                {"t": topic, "i": target},
            )
    read = _topics_read(monkeypatch)
    found = _findings(verify_store(database_url))
    prefixes = variants.topic_prefixes()
    wanted = [p for p in prefixes if topic is not None and checks._may_hold({topic}, p)]
    assert [p for p in read if p in prefixes] == [
        prefixes[0],
        *[p for p in wanted if p != prefixes[0]],
    ]
    # Every variant's events read, as before: the same findings, word for word.
    read.clear()
    monkeypatch.setattr(checks, "_may_hold", lambda topics, prefix: True)
    assert _findings(verify_store(database_url)) == found
    assert [p for p in read if p in prefixes] == list(prefixes)
    assert found[0] or topic is None or topic.startswith("rummy_ledger+")


def test_closing_events_are_the_only_events_that_close_a_game(sqlite_url):
    from domain import variants
    from replays.integrity.replaying import replayer_for
    from replays.readmodels import read_model_checks as checks
    from replays.readmodels.projections import catch_up
    from replays.simulation import Floor, Simulation, store_games
    from replays.store.schema import EVENTS_TABLE, migrate

    migrate(sqlite_url)
    floor = Floor(seed=3, variants=("points", "raise", "red3", "pool", "deals"))
    store_games(list(Simulation(floor).games(10)), url=sqlite_url, warn=lambda message: None)
    catch_up(sqlite_url)
    replayer = replayer_for(checks.ledger_for(sqlite_url).mapper)
    closed: dict[str, int] = {}
    with engine_for(sqlite_url).connect() as connection:
        position = checks.projection_position(connection)
        for prefix in variants.topic_prefixes():
            for rows in checks._events_by_aggregate(connection, position, EVENTS_TABLE, prefix):
                variant, game = variants.for_topic(rows[0].topic), None
                assert variant.closing_events, variant
                for row in rows:
                    event = replayer.event(row.originator_id, row.version, row.topic, row.state)
                    game = replayer.apply(event, game)
                    rows_given = variant.closing_rows(game, event)
                    audits = variant.audits_after(game, event)
                    if not isinstance(event, variant.closing_events):
                        assert rows_given is None and audits is False, (variant, event)
                    elif rows_given is not None:
                        closed[prefix] = closed.get(prefix, 0) + 1
    assert set(closed) == set(variants.topic_prefixes())


def _move_fields(url):
    from test_read_model_verify import _stored_and_replayed

    _, stored, replayed = _stored_and_replayed(url)
    return stored, [e.move_fields for _, e in replayed if e.move_fields]


def _forms_by_the_loop(reader, fields, game_id=None):
    """What ``_SqliteTable.move_forms`` gave before it made each row in one tuple: each
    bound place of each row through its processor, one by one."""
    from replays.readmodels import read_model_checks as checks
    from replays.readmodels.bulk import bind_processors, sqlite_datetime_text

    _, documents = reader.guards
    forms = []
    try:
        for row in fields:
            values = list(row)
            for place, process in bind_processors(reader.table, reader.dialect):
                value = values[place]
                if value is None:
                    continue
                if place == checks.MOVE_AT:
                    if type(value) is str:
                        value = sqlite_datetime_text(value)
                    elif type(value) is not datetime or value.tzinfo not in (None, UTC):
                        return None
                    else:
                        value = process(value)
                else:
                    value = process(value)
                    if place in documents and ("NaN" in value or "Infinity" in value):
                        return None
                values[place] = value
            forms.append(tuple(values))
    except (ValueError, TypeError, ArithmeticError):
        return None
    if game_id is None:
        return forms
    return None if any(f[0] != game_id for f in forms) else [f[1:] for f in forms]


def test_move_forms_in_one_tuple_a_row_are_the_loops(sqlite_url):
    from replays.readmodels import read_model_checks as checks

    _, games = _move_fields(sqlite_url)
    with engine_for(sqlite_url).connect() as connection:
        reader = checks._SqliteTable(connection, checks.MOVES)
    fields = games[0]
    game_id, first = fields[0][0], fields[0]
    at = checks.parse_time(first[-1])
    odd = {
        "as replayed": fields,
        "a time as a datetime": [(*first[:-1], at), *fields[1:]],
        "a naive time": [(*first[:-1], at.replace(tzinfo=None))],
        "a time in another zone": [(*first[:-1], at.astimezone(timezone(timedelta(hours=5))))],
        "no time": [(*first[:-1], None)],
        "a time as a number": [(*first[:-1], 12)],
        "groups": [(*first[:7], [["AS", "2S", "3S"]], *first[8:])],
        "groups with a NaN": [(*first[:7], [[float("nan")]], *first[8:])],
        "a point value not money": [(*first[:9], "x", first[10])],
        "a point value as money": [(*first[:9], Decimal("1.25"), first[10])],
        "another game's row": [*fields[:-1], ("elsewhere", *fields[-1][1:])],
    }
    for name, candidate in odd.items():
        for game in (None, game_id):
            assert reader.move_forms(candidate, game) == _forms_by_the_loop(
                reader, candidate, game
            ), (name, game)
    assert reader.move_forms(odd["a naive time"]) is not None
    assert reader.move_forms(odd["a time in another zone"]) is None
    assert reader.move_forms(odd["another game's row"], game_id) is None
    # A row of another length is no row of the table: compared as dicts.
    assert reader.move_forms([(*first, "more")]) is None
    assert reader.move_forms([first[:-1]]) is None
    for fields in games:
        assert reader.move_forms(fields, fields[0][0]) == [f[1:] for f in reader.move_forms(fields)]
        assert reader.move_forms(fields) == _forms_by_the_loop(reader, fields)


def test_a_move_time_read_in_one_call_is_z_text_or_parse_time():
    from domain.timestamps import parse_time, z_text, z_text_or_time

    moment = datetime(2025, 3, 18, 13, 59, 41, 250, tzinfo=UTC)
    for value in (
        "2025-03-18T13:59:41Z",
        "2025-03-18T13:59:41.000250Z",
        "2025-02-30T13:59:41Z",
        "2025-03-18T13:59:41+00:00",
        "2025-03-18 13:59:41",
        "2025-03-18T13:59:41+05:00",
        moment,
        moment.replace(tzinfo=None),
        None,
        "",
        "yesterday",
        12,
    ):
        try:
            expected = z_text(value) or parse_time(value)
        except Exception as error:  # the same error either way
            with pytest.raises(type(error)):
                z_text_or_time(value)
            continue
        found = z_text_or_time(value)
        assert found == expected and type(found) is type(expected), value
