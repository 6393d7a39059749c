"""`verify --jobs N` replays the games for the read models and snapshots in N processes,
and reports exactly what one process reports (issue 16), on SQLite and PostgreSQL.

Simulated games are stored and projected through the real ledger; a read row, a
snapshot and an event are then edited with SQL, as an insider would.
"""

from __future__ import annotations

import itertools
import uuid
from datetime import datetime, timedelta

import orjson
import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from sql_support import sql

from replays.integrity.evidence import verify_store
from replays.readmodels.verify_jobs import LAST_RANGE, spans
from replays.store.application import Ledger
from replays.store.db import engine_for
from web.cli import main


def _id(url, game_id):
    oid = Ledger.aggregate_id(game_id)
    return oid.bytes if url.startswith("sqlite") else oid


@pytest.fixture
def games(database_url):
    from replays.readmodels.projections import catch_up
    from replays.simulation import Floor, Simulation, store_games
    from replays.store.schema import migrate

    migrate(database_url)
    records = list(Simulation(Floor(seed=11, tables=3, players=12)).games(8))
    store_games(records, url=database_url, warn=lambda message: None)
    catch_up(database_url)
    return [record["game_id"] for record in records]


def findings(report):
    return [(p.kind, p.game_id, p.event, p.message) for p in report.problems]


@pytest.mark.parametrize(("games", "jobs"), [(0, 2), (3, 2), (8, 2), (1000, 2), (1000, 4)])
def test_spans_cover_every_id_once_and_narrow_to_the_end(games, jobs):
    import random

    rng = random.Random(5)
    ids = sorted(rng.randbytes(16) for _ in range(games))
    parts = spans(ids, jobs)
    assert parts[0][0][0] is None and parts[-1][0][1] is None
    for ((_, high), _), ((low, _), held) in itertools.pairwise(parts):
        assert high == low == held[0]
    assert [o for _, held in parts for o in held] == ids
    for (low, high), held in parts:
        assert all((low is None or o >= low) and (high is None or o < high) for o in held)
    sizes = [len(held) for _, held in parts]
    assert all(a >= b for a, b in itertools.pairwise(sizes))
    if games >= 1000:
        # A 2 * jobs-th of what is left each, down to a few games: few ranges in all.
        assert sizes[0] == -(-games // (2 * jobs)) and sizes[-1] <= LAST_RANGE
        assert len(parts) < 2 * jobs * 9


def test_jobs_report_what_one_process_reports(games, database_url):
    one = verify_store(database_url)
    two = verify_store(database_url, jobs=2)
    assert one.ok and two.ok, (one.problems, two.problems)
    assert two.notes == one.notes
    assert f"{len(games)} game(s)' read rows checked against their events" in two.notes


def test_jobs_find_a_forged_row_and_snapshot_as_one_process_does(games, database_url):
    with_snapshot = sql(
        database_url, "SELECT originator_id, originator_version, state FROM ledger_snapshots"
    ).first()
    assert with_snapshot is not None, "the simulated games should have a snapshot"
    data = orjson.loads(bytes(with_snapshot.state))
    data["state"]["_phase"] = "forged"
    sql(
        database_url,
        "UPDATE ledger_snapshots SET state = :s WHERE originator_id = :o "
        "AND originator_version = :v",
        s=orjson.dumps(data),
        o=with_snapshot.originator_id,
        v=with_snapshot.originator_version,
    )
    forged = next(g for g in games if _id(database_url, g) != with_snapshot.originator_id)
    sql(database_url, "UPDATE games SET moves_count = moves_count + 1 WHERE game_id = :g", g=forged)

    one = verify_store(database_url)
    two = verify_store(database_url, jobs=2)
    assert not one.ok
    assert findings(two) == findings(one)
    assert two.notes == one.notes
    kinds = {(kind, game) for kind, game, _, _ in findings(one)}
    assert ("read_model", forged) in kinds
    assert any(kind == "snapshot" for kind, _ in kinds)


def test_jobs_leave_games_whose_events_fail_their_seals_to_the_event_checks(games, database_url):
    _alter_third_event(database_url, games[0])
    one = verify_store(database_url)
    two = verify_store(database_url, jobs=2)
    assert ("altered", games[0], 3) in {(p.kind, p.game_id, p.event) for p in one.problems}
    assert findings(two) == findings(one)


def test_jobs_drop_the_replays_started_before_the_scan_when_it_masks_rows(
    games, database_url, monkeypatch
):
    # The workers start before the scan for malformed values; their connections see no
    # mask, so a store with a masked row is replayed by the main process alone.
    from corruption_support import Case, corrupt, target_row

    from replays.readmodels import verify_jobs

    _alter_third_event(database_url, games[0])
    with engine_for(database_url).begin() as connection:
        corrupt(
            connection,
            Case("integrity_seals", "leaf_hash", "nothex", True),
            target_row(connection, "games", games[1]),
        )
    one = verify_store(database_url)
    made, closed, collected = [], [], []
    init, close = verify_jobs.SpanReplays.__init__, verify_jobs.SpanReplays.close

    def init_and_count(self, *args, **kwargs):
        made.append(self)
        init(self, *args, **kwargs)

    def close_and_count(self):
        closed.append(self)
        close(self)

    monkeypatch.setattr(verify_jobs.SpanReplays, "__init__", init_and_count)
    monkeypatch.setattr(verify_jobs.SpanReplays, "close", close_and_count)
    monkeypatch.setattr(verify_jobs.SpanReplays, "collect", lambda *a, **k: collected.append(a))
    two = verify_store(database_url, jobs=2)
    assert len(made) == 1 and made[0] in closed  # started early, then stopped
    assert not collected
    kinds = {(kind, game) for kind, game, _, _ in findings(one)}
    assert ("altered", games[0]) in kinds and any(kind == "unreadable" for kind, _ in kinds)
    assert findings(two) == findings(one)
    assert two.notes == one.notes


def test_cli_takes_jobs(games, database_url, monkeypatch):
    monkeypatch.setenv("RUMMY_LEDGER_DATABASE_URL", database_url)
    result = CliRunner().invoke(main, ["verify", "--jobs", "2", "--json"])
    assert result.exit_code == 0, result.output
    assert orjson.loads(result.output)["ok"] is True


def memos_of(url):
    return {g for (g,) in sql(url, "SELECT game_id FROM integrity_replay_memos")}


def test_jobs_leave_no_memo_for_a_game_whose_events_fail_their_seals(games, database_url, keys):
    # The workers replay every game while the main pass reads the events, so they replay
    # this one too; the main pass drops its replay and the memo the worker held for it.
    # A space in the event's JSON: its bytes no longer match their seal, but it decodes
    # to the same event, so the worker's replay of it is clean and its rows match.
    row = sql(
        database_url,
        "SELECT id, state FROM ledger_events WHERE originator_id = :o AND originator_version = 4",
        o=_id(database_url, games[1]),
    ).one()
    sql(
        database_url,
        "UPDATE ledger_events SET state = :s WHERE id = :i",
        s=b"{ " + bytes(row.state)[1:],
        i=row.id,
    )
    one = verify_store(database_url)
    sql(database_url, "DELETE FROM integrity_replay_memos")
    two = verify_store(database_url, jobs=2)
    assert ("altered", games[1], 4) in {(p.kind, p.game_id, p.event) for p in two.problems}
    assert findings(two) == findings(one)
    assert two.notes == one.notes
    assert memos_of(database_url) == set(games) - {games[1]}


def test_jobs_workers_take_the_key_directory_of_the_run(games, database_url, tmp_path, monkeypatch):
    # Two runs in one process under different key directories (the first: none at all):
    # each run's workers take the environment the run has.
    monkeypatch.setenv("RUMMY_LEDGER_KEY_DIR", str(tmp_path / "no-keys"))
    assert verify_store(database_url, jobs=2).ok
    assert memos_of(database_url) == set()
    from replays.integrity.signing import init_keys

    init_keys(tmp_path / "keys")
    monkeypatch.setenv("RUMMY_LEDGER_KEY_DIR", str(tmp_path / "keys"))
    assert verify_store(database_url, jobs=2).ok
    assert memos_of(database_url) == set(games)


def _forge_row_snapshot_and_event(url, games):
    """A forged read row, a forged snapshot and an event whose bytes no longer match
    their seal, in three different games."""
    with_snapshot = sql(
        url, "SELECT originator_id, originator_version, state FROM ledger_snapshots"
    ).first()
    data = orjson.loads(bytes(with_snapshot.state))
    data["state"]["_phase"] = "forged"
    sql(
        url,
        "UPDATE ledger_snapshots SET state = :s WHERE originator_id = :o "
        "AND originator_version = :v",
        s=orjson.dumps(data),
        o=with_snapshot.originator_id,
        v=with_snapshot.originator_version,
    )
    others = [g for g in games if _id(url, g) != with_snapshot.originator_id]
    sql(url, "UPDATE games SET moves_count = moves_count + 1 WHERE game_id = :g", g=others[0])
    _alter_third_event(url, others[1])
    return others[0], others[1]


def _alter_third_event(url, game):
    """The game's third event's bytes changed, so they no longer match its seal."""
    row = sql(
        url,
        "SELECT id, state FROM ledger_events WHERE originator_id = :o AND originator_version = 3",
        o=_id(url, game),
    ).one()
    sql(
        url,
        "UPDATE ledger_events SET state = :s WHERE id = :i",
        s=bytes(row.state).replace(b'"player":"', b'"player":"x', 1),
        i=row.id,
    )


@pytest.mark.parametrize("workers_get", ["nothing", "every other range"])
def test_jobs_main_process_replays_the_ranges_no_worker_took(
    games, database_url, keys, monkeypatch, workers_get
):
    # Once its own pass is done, the main process replays the ranges no worker has begun
    # Here the workers get none or half of them: the findings, notes and memos must be
    # one process's all the same.
    from replays.readmodels import verify_jobs

    forged, altered = _forge_row_snapshot_and_event(database_url, games)
    one = verify_store(database_url)
    one_memos = memos_of(database_url)
    sql(database_url, "DELETE FROM integrity_replay_memos")

    take, taken = verify_jobs.SpanReplays._take, []
    init, pools = verify_jobs.SpanReplays.__init__, []

    def init_and_keep(self, *args, **kwargs):
        init(self, *args, **kwargs)
        pools.append(self)

    def workers_take(index):
        # The workers take the even ranges, or none: the rest are left to the main process.
        return workers_get != "nothing" and not index % 2

    def take_and_count(self):
        index = take(self)
        if index is not None:
            taken.append(index)
        return index

    monkeypatch.setattr(verify_jobs, "_worker_takes", workers_take)
    monkeypatch.setattr(verify_jobs.SpanReplays, "_take", take_and_count)
    monkeypatch.setattr(verify_jobs.SpanReplays, "__init__", init_and_keep)
    monkeypatch.setattr(verify_jobs, "LAST_RANGE", 1)  # ranges of a game or two
    two = verify_store(database_url, jobs=2)

    (started,) = pools
    parts = len(started.parts)
    assert parts >= 4
    assert len(taken) == len(set(taken))  # none replayed twice here
    if workers_get == "nothing":
        assert sorted(taken) == list(range(parts))
    else:
        assert set(range(1, parts, 2)) <= set(taken)
    kinds = {(kind, game) for kind, game, _, _ in findings(one)}
    assert ("read_model", forged) in kinds
    assert any(kind == "snapshot" for kind, _ in kinds)
    assert ("altered", altered) in kinds
    assert findings(two) == findings(one)
    assert two.notes == one.notes
    assert memos_of(database_url) == one_memos


def test_jobs_find_a_move_s_altered_time_as_one_process_does(games, database_url):
    """A move row's time is the column whose stored form (without a zone on SQLite) differs
    in type from the events' (zoned UTC): a second more must still be found, row and event
    named, by the workers as by one process."""
    game_id = games[1]
    move_index, version = sql(
        database_url,
        "SELECT move_index, version FROM moves WHERE game_id = :g AND at IS NOT NULL "
        "ORDER BY move_index LIMIT 1 OFFSET 4",
        g=game_id,
    ).one()
    at = sql(
        database_url,
        "SELECT at FROM moves WHERE game_id = :g AND move_index = :m",
        g=game_id,
        m=move_index,
    ).scalar_one()
    later = (at if not isinstance(at, str) else datetime.fromisoformat(at)) + timedelta(seconds=1)
    sql(
        database_url,
        "UPDATE moves SET at = :t WHERE game_id = :g AND move_index = :m",
        t=later,
        g=game_id,
        m=move_index,
    )
    one = verify_store(database_url)
    two = verify_store(database_url, jobs=2)
    assert [(p.kind, p.game_id, p.event) for p in one.problems] == [
        ("read_model", game_id, version)
    ]
    assert one.problems[0].message.startswith(f"moves[{move_index}].at: stored ")
    assert findings(two) == findings(one)


def test_jobs_hand_each_range_out_once_to_n_minus_one_workers_and_the_main_process(
    games, database_url, monkeypatch
):
    # --jobs 2: one worker, the main process the second; each range goes to the worker
    # as it finishes the one before, or to the main process: never to both, none left.
    from replays.readmodels import verify_jobs

    init, pools = verify_jobs.SpanReplays.__init__, []

    def init_and_keep(self, *args, **kwargs):
        init(self, *args, **kwargs)
        pools.append(self)

    monkeypatch.setattr(verify_jobs.SpanReplays, "__init__", init_and_keep)
    one = verify_store(database_url)
    two = verify_store(database_url, jobs=2)
    assert findings(two) == findings(one) and two.notes == one.notes
    (started,) = pools
    assert started.workers == 1 and len(started.processes) == 1
    assert not any(process.is_alive() for process in started.processes)
    given = sorted(started.given)
    assert set(started.given.values()) <= {p.pid for p in started.processes}
    assert not set(given) & started.taken
    assert sorted([*given, *started.taken]) == list(range(len(started.parts)))
    assert len(started.parts) == len(spans(sorted(started.names), 2))


def test_jobs_find_read_rows_of_a_game_with_no_events_as_one_process_does(games, database_url):
    # A game's rows copied under an id no event has: every table names it, in the order
    # one process does (--jobs reads which games have rows before its replays).
    from replays.readmodels.projections import ENTRIES, GAMES, MOVES, RESULTS

    with engine_for(database_url).begin() as connection:
        for table in (GAMES, RESULTS, MOVES, ENTRIES):
            rows = connection.execute(sa.select(table).where(table.c.game_id == games[2]))
            for row in rows.mappings().all():
                copied = {k: v for k, v in row.items() if k != "id"}
                copied["game_id"] = "no-such-game"
                if "originator_id" in copied:
                    copied["originator_id"] = str(uuid.uuid4())
                connection.execute(table.insert().values(**copied))
    one = verify_store(database_url)
    two = verify_store(database_url, jobs=2)
    assert [(p.kind, p.game_id, p.message.split(":")[0]) for p in one.problems] == [
        ("read_model", "no-such-game", label)
        for label in ("games", "player_results", "moves", "ledger_entries")
    ]
    assert findings(two) == findings(one)
    assert two.notes == one.notes


def test_jobs_check_a_snapshot_no_replay_compares_as_one_process_does(games, database_url):
    # A snapshot copied under an aggregate id no event has: no replay passes it, so the
    # snapshot step checks it (with --jobs, among the aggregates with snapshots read while
    # the workers replay, only those no replay compared).
    row = sql(
        database_url,
        "SELECT originator_id, originator_version, topic, state FROM ledger_snapshots",
    ).first()
    stray = uuid.uuid4()
    sql(
        database_url,
        "INSERT INTO ledger_snapshots (originator_id, originator_version, topic, state) "
        "VALUES (:o, :v, :t, :s)",
        o=stray.bytes if database_url.startswith("sqlite") else stray,
        v=row.originator_version,
        t=row.topic,
        s=row.state,
    )
    one = verify_store(database_url)
    two = verify_store(database_url, jobs=2)
    assert [(p.kind, p.game_id) for p in one.problems] == [("snapshot", str(stray))]
    assert findings(two) == findings(one)
    assert two.notes == one.notes


def test_jobs_find_what_the_step_s_end_finds_where_one_process_does(games, database_url):
    # What the read-model step's end finds without a replay (read while the workers
    # replay, added where one process adds it): rows of a game with no events, an
    # adjustment line of a dispute case with no events, a fair-play row of no ended game.
    from replays.readmodels.projections import ENTRIES, GAMES

    with engine_for(database_url).begin() as connection:
        row = connection.execute(sa.select(GAMES).where(GAMES.c.game_id == games[2]))
        copied = {k: v for k, v in row.mappings().one().items() if k != "id"}
        copied["game_id"] = "no-such-game"
        if "originator_id" in copied:
            copied["originator_id"] = str(uuid.uuid4())
        connection.execute(GAMES.insert().values(**copied))
        entry = connection.execute(sa.select(ENTRIES).where(ENTRIES.c.game_id == games[3]))
        line = {k: v for k, v in entry.mappings().first().items() if k != "id"}
        line["dispute_id"] = "no-such-case"
        connection.execute(ENTRIES.insert().values(**line))
    sql(
        database_url,
        "INSERT INTO fairplay_games (game_id, day, table_id) VALUES ('no-such-match', "
        "'2026-01-01', 't')",
    )
    one = verify_store(database_url)
    two = verify_store(database_url, jobs=2)
    assert [(p.game_id, p.message.split(":")[0]) for p in one.problems] == [
        ("no-such-game", "games"),
        (games[3], "ledger_entries[dispute no-such-case]"),
        ("no-such-match", "fairplay_games"),
    ]
    assert findings(two) == findings(one)
    assert two.notes == one.notes
