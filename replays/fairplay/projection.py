"""Keeping the fair-play tables current, and reading a period back from them.

:func:`catch_up` counts every ended game not yet counted: it rebuilds each game's record
from its events (``Variant.record_of``, the record ``rummy-ledger export`` writes), walks it
(:mod:`.facts`), and adds the counts to the day-and-table slices the batch touches, in one
transaction with the games' ``fairplay_games`` rows. Only the days of the new games are
read and written, so a new day costs that day's games; then each month the games fell in has
its pairs that reach a pair signal's floor noted (:func:`note_month_pairs`).
:func:`load_period` adds a period up in the database (one row per player, and per pair a
signal may test), which is what the page and the command review; :func:`load_summary`
reads the day rows back as they are.
"""

from __future__ import annotations

import calendar
import json
import logging
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, date, datetime

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session

from replays.fairplay import tracking
from replays.fairplay.summary import (
    EVIDENCE_KEPT,
    Evidence,
    PairDay,
    Period,
    PlayerDay,
    Summary,
    _evidence,
)
from replays.fairplay.tables import (
    AGREED_COLUMNS,
    DISCARD_COLUMNS,
    EXIT_COLUMNS,
    TIMING_COLUMNS,
    FairplayEvidence,
    FairplayGame,
    FairplayNotedMonth,
    FairplayNotedPairDay,
    FairplayPairDay,
    FairplayPartnerDay,
    FairplayPlayerDay,
    FairplayReview,
    FairplayTableDay,
)
from replays.store.collector import bulk_work, collector_paused
from replays.store.db import engine_for, undecodable

BATCH = 500  # games counted per transaction (whole days: a batch ends where a day does)
CHUNK = 20  # games a worker walks per message (and reads per query)


def pending(session: Session, limit: int | None = None) -> list[str]:
    """Ended games not yet counted, oldest first."""
    query = tracking.uncounted()
    if limit is not None:
        query = query.limit(limit)
    return [game_id for game_id, _, _ in session.execute(query)]


def _pending_days(session: Session, skipped) -> list[tuple[str, str]]:
    """Every ended game not yet counted, oldest first, with its start day: read once for the
    whole catch-up (one anti-join, not one a batch). A game counted before whose
    ``fairplay_games`` row is gone (:func:`.tracking.counted_before`) is not among them:
    its finding goes to ``skipped``."""
    connection = session.connection()
    games = connection.execute(tracking.uncounted()).all()
    again = tracking.counted_before(connection, [(game, origin) for game, origin, _ in games])
    pending = []
    for game_id, _, started in games:
        day = started.date().isoformat() if started is not None else ""
        if game_id in again:
            skipped(tracking.CountedBefore(game_id, day))
        else:
            pending.append((game_id, day))
    return pending


def _batches(games: list[tuple[str, str]]):
    """``games`` in batches of about :data:`BATCH`, cut where a day ends: a day's slices are
    then read and written once a catch-up, not once a batch that reaches into them."""
    batch: list[str] = []
    for place, (game_id, day) in enumerate(games):
        batch.append(game_id)
        following = games[place + 1][1] if place + 1 < len(games) else None
        if (following != day and len(batch) >= BATCH) or len(batch) >= 8 * BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def catch_up(
    ledger,
    url: str | None = None,
    *,
    progress: Callable[[int], None] | None = None,
    jobs: int = 1,
    reviews: bool = True,
    skipped: Callable[[Exception], None] | None = None,
) -> int:
    """Count every ended game not yet counted; return how many were. ``jobs`` > 1 rebuilds
    and walks the games in that many processes (the cost of counting, as ``import --jobs``
    shares the checking); this process adds them up and writes. Then each calendar month
    the new games fall in gets its review worked out and stored (:func:`store_reviews`),
    unless ``reviews`` is false.

    The catch-up then keeps its position (:mod:`.tracking`): an ended game counted by now
    whose ``fairplay_games`` row later goes missing is reported to ``skipped``
    (:class:`~.tracking.CountedBefore`), not counted again.

    A game the walk cannot follow does not stop the catch-up: its finding (game id, move,
    what) goes to ``skipped`` (by default a warning in the log), the game is recorded as
    counted with nothing in it, and is not in the number returned."""
    engine = engine_for(url)
    with Session(engine) as session:
        # Read before the games are: every game ended by then is counted by the end.
        reached = tracking.reach(session.connection())
        games = _pending_days(session, skipped or _warn)
    if games:
        # The collector runs less often while games are counted (the forked workers
        # inherit it): it scanned the batches' millions of young objects again and again,
        # 17 % of a 1,000-game catch-up's CPU.
        with bulk_work():
            done = _count(ledger, engine, games, progress, jobs, reviews, skipped)
    else:
        done = 0
    with engine.begin() as connection:
        tracking.keep_position(connection, reached)
    return done


def _count(ledger, engine, games, progress, jobs, reviews, skipped) -> int:
    batches = list(_batches(games))
    walked = _walked_in_processes(ledger, batches, jobs) if jobs > 1 else _walked(ledger, batches)
    done = 0
    days: set[str] = set()
    for batch in walked:
        add_facts(engine, batch)
        findings = [facts for _, _, _, facts in batch if _unreadable(facts)]
        for finding in findings:
            (skipped or _warn)(finding)
        done += len(batch) - len(findings)
        days.update(day for _, day, _, _ in batch)
        if progress is not None:
            progress(len(batch))
    # The notes read the month's pair days: planned on statistics from before its rows came
    # (a month's first games), the pairs' IN list ran as nested loops, 100 s for 10,000 games.
    _analyse(engine, COUNTED_TABLES)
    note_month_pairs(engine, sorted({day[:7] for day in days if day}))
    _analyse(engine, (FairplayNotedPairDay,))
    if reviews:
        store_reviews(engine, sorted({day[:7] for day in days if day}))
    return done


def _warn(finding: Exception) -> None:
    logging.getLogger(__name__).warning("fair play: skipped %s", finding)


# The tables a catch-up's counting writes (the month's notes are written from them after).
COUNTED_TABLES = (
    FairplayPlayerDay,
    FairplayPartnerDay,
    FairplayPairDay,
    FairplayTableDay,
    FairplayEvidence,
)


def _analyse(engine, models=(*COUNTED_TABLES, FairplayNotedPairDay)) -> None:
    """PostgreSQL: fresh planner statistics for ``models``' tables, just written. A month's
    rows arrive in one catch-up, long before autovacuum's next look, and with the old
    estimates (a few rows a period) the period's sums were planned as nested loops: 1.7 s
    instead of 0.5 s for a month of 2,000 games."""
    if engine.dialect.name != "postgresql":
        return
    with engine.begin() as connection:
        for model in models:
            connection.execute(sa.text(f'ANALYZE "{model.__tablename__}"'))


# A game as counted: (game id, day, table, its facts packed as plain tuples
# (``GameFacts.packed``: what the workers send), None for a record with no 13-card deal,
# or the :class:`~replays.fairplay.facts.Unreadable` finding of a game the walk cannot
# follow: recorded as counted with nothing in it, so a catch-up is never stopped by one
# game nor walks it again; ``rebuild`` walks it anew).
Walked = tuple[str, str, str, object]


def _walk_record(record: dict) -> Walked:
    from replays.fairplay.facts import Unreadable, game_facts

    try:
        facts = game_facts(record)
        if facts is not None:
            facts = facts.packed()
    except Unreadable as finding:
        facts = finding
    return (
        record["game_id"],
        str(record.get("started_at", ""))[:10],
        str((record.get("table") or {}).get("id", "")),
        facts,
    )


def _walk_games(ledger, game_ids: list[str]) -> list[Walked]:
    """Each game rebuilt from its events (one query for them all), written as its record
    (what ``export`` writes less the settlement, which the walk does not read) and walked."""
    from domain import variants

    return [
        _walk_record(variants.for_game(game).record_of(game).to_dict())
        for game in _games(ledger, game_ids)
    ]


def _unreadable(facts) -> bool:
    from replays.fairplay.facts import Unreadable

    return isinstance(facts, Unreadable)


def _games(ledger, game_ids: list[str]) -> list:
    """The games as ``Ledger.get_game`` gives them (the latest snapshot, then the events
    after it), read in two queries for the lot instead of two round trips a game: on
    PostgreSQL those cost as much as rebuilding the games."""
    from domain.variants.registry import project
    from replays.integrity.store import id_param
    from replays.store.schema import EVENTS_TABLE, SNAPSHOTS_TABLE

    wanted = [ledger.aggregate_id(game_id).bytes for game_id in game_ids]
    with ledger_engine(ledger).connect() as connection:
        if connection.dialect.name == "postgresql":
            # A chunk's few rows come through the index, but with the events table's
            # statistics missing or stale (a store just imported, before autovacuum's look)
            # the planner expected tens of thousands: it started parallel workers for each
            # chunk (30 ms against 0.2 ms at 10,000 games), and its cost estimate (69,000
            # there) grows with the table past the threshold where PostgreSQL compiles a
            # query (JIT, 100,000).
            connection.execute(
                sa.text(
                    "SELECT set_config('max_parallel_workers_per_gather', '0', true), "
                    "set_config('jit', 'off', true)"
                )
            )
        ids = [id_param(connection, originator) for originator in wanted]
        query = _stored_rows(SNAPSHOTS_TABLE, "originator_id IN :ids")
        snapshots = _stored_events(
            connection, query.bindparams(sa.bindparam("ids", expanding=True)), {"ids": ids}
        )
        # Only the events after each game's latest snapshot, each game's read as a range of
        # the (originator_id, originator_version) index. Testing every event against its
        # game's latest snapshot in the database (a subquery a row) read all of a game's
        # hundred events, and the plan's cost passed PostgreSQL's JIT threshold: compiled
        # again for every chunk, 10-30 ms for a few ms of reading (the reading processes'
        # database CPU 0.9 -> 0.2 s a 2,000 games).
        values = {}
        for place, (originator, stored_id) in enumerate(zip(wanted, ids, strict=True)):
            values[f"id{place}"] = stored_id
            values[f"after{place}"] = (
                snapshots[originator][-1].originator_version if originator in snapshots else 0
            )
        ranges = " OR ".join(
            f"(originator_id = :id{place} AND originator_version > :after{place})"
            for place in range(len(ids))
        )
        events = _stored_events(connection, _stored_rows(EVENTS_TABLE, ranges), values)
    from_snapshot = ledger.snapshots.mapper.to_domain_event
    from_event = ledger.mapper.to_domain_event
    games = []
    for game_id, originator in zip(game_ids, wanted, strict=True):
        start = [from_snapshot(snapshots[originator][-1])] if originator in snapshots else []
        stored = events.get(originator, [])
        if not start and not stored:
            games.append(ledger.get_game(game_id))  # raises GameNotFound, as before
            continue
        games.append(project(None, [*start, *map(from_event, stored)]))
    return games


def _stored_rows(table: str, where: str) -> sa.TextClause:
    """The rows of ``table`` (events or snapshots) that ``where`` picks, as
    :func:`_stored_events` reads them."""
    return sa.text(
        f"SELECT originator_id, originator_version, topic, state FROM {table} "
        f"WHERE {where} ORDER BY originator_id, originator_version"
    )


def _stored_events(connection, query: sa.TextClause, values: dict) -> dict[bytes, list]:
    """The rows ``query`` (:func:`_stored_rows`) reads, by originator, versions ascending."""
    from eventsourcing.persistence import StoredEvent

    from replays.integrity.store import raw_id

    found: dict[bytes, list] = {}
    for originator, version, topic, state in connection.execute(query, values):
        key = raw_id(originator)
        found.setdefault(key, []).append(
            StoredEvent(uuid.UUID(bytes=key), version, topic, bytes(state))
        )
    return found


def ledger_engine(ledger):
    """The engine of the ledger's event store."""
    return ledger.recorder.datastore.engine


def _walked(ledger, batches: list[list[str]]):
    for batch in batches:
        # A chunk a read, as the workers read: each game's events are a range of their own
        # in the events query (:func:`_games`), so a batch's would be thousands of them.
        yield [
            walked
            for start in range(0, len(batch), CHUNK)
            for walked in _walk_games(ledger, batch[start : start + CHUNK])
        ]


_WORKER_LEDGER = None


def _walk_chunk(game_ids: list[str]) -> list[Walked]:
    return _walk_games(_WORKER_LEDGER, game_ids)


def _walked_in_processes(ledger, batches: list[list[str]], jobs: int):
    """The batches walked by ``jobs`` forked processes, in order. The workers run ahead of
    this process while it writes (the pool keeps their chunks coming), and read the store
    on connections of their own (``replays.store.db`` forgets the parent's in a child)."""
    import multiprocessing

    from domain.rummy13.solver import load_kept_tables

    global _WORKER_LEDGER
    _WORKER_LEDGER = ledger  # inherited by the forked workers
    load_kept_tables()  # read once here, shared by the workers, not read by each
    chunks = [batch[i : i + CHUNK] for batch in batches for i in range(0, len(batch), CHUNK)]
    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        results = pool.imap(_walk_chunk, chunks)
        for batch in batches:
            walked: list[Walked] = []
            while len(walked) < len(batch):
                walked += next(results)
            yield walked


def add_records(engine, records: list[dict]) -> list:
    """Add ``records`` (not counted before) to the tables, in one transaction; return the
    findings of those the walk could not follow (recorded, nothing counted of them)."""
    walked = [_walk_record(record) for record in records]
    add_facts(engine, walked)
    note_month_pairs(engine, sorted({day[:7] for _, day, _, _ in walked if day}))
    return [facts for _, _, _, facts in walked if _unreadable(facts)]


def add_facts(engine, walked: list[Walked]) -> None:
    """Add games already walked (not counted before) to the tables, in one transaction.
    Slices (day, table) nothing was counted in yet are written as they are; where a
    slice already holds rows (games of one day counted in two catch-ups), the batch's sums
    are added to them in the database (:func:`_merge`) instead of reading the slice back."""
    batch = Summary()
    for _, _, _, facts in walked:
        if facts is not None and not _unreadable(facts):
            batch.add_packed(facts)
    slices = set(batch.tables)
    with Session(engine) as session, session.begin():
        connection = session.connection()
        if connection.dialect.name == "postgresql":
            # Each of the batch's statements runs once: compiling them (JIT, planned for
            # their tens of thousands of evidence rows) cost more than it saved, 0.2 s of
            # the 0.7 s the evidence's trim took in a 500-game batch.
            connection.execute(sa.text("SET LOCAL jit = off"))
        if _counted_in(connection, slices):
            _merge(connection, batch, slices)
        else:
            _write(connection, batch)  # the common case: a new day
        _insert(
            connection,
            FairplayGame.__table__,
            [{"game_id": g, "day": d, "table_id": t} for g, d, t, _ in walked],
        )


def load_summary(
    session, start: str, end: str, table: str | None = None, *, evidence: bool = True
) -> Summary:
    """The kept statistics of days ``start``..``end`` (one table or all); without
    ``evidence``, fetch a review's evidence afterwards with :func:`fill_evidence` (a month
    keeps far more evidence rows than it flags)."""
    summary = Summary()
    models = (FairplayPlayerDay, FairplayPartnerDay, FairplayPairDay, FairplayTableDay)
    for model in (*models, FairplayEvidence) if evidence else models:
        # Plain rows, not ORM objects: a month's pairs are many, and the page waits on them.
        query = sa.select(*model.__table__.columns).where(model.day >= start, model.day <= end)
        if table is not None:
            query = query.where(model.table_id == table)
        _load(summary, model, session.execute(query))
    return summary


def load_period(session, start: str, end: str, table: str | None = None, meanwhile=None) -> Period:
    """Days ``start``..``end`` (one table or all) added up by the database: the same figures
    as ``load_summary(...).period(...)`` without reading every day's row into Python (a
    month of pairs is many rows, and the page waits on them), and of the pairs only those a
    signal may test: a period inside one calendar month reads the pairs its month noted
    (``fairplay_noted_pair_days``) that reach a floor, and its review asks for the games
    together of the few other pairs its flags show (``Period.together_of``); a longer one
    reads those whose period sums reach a floor and their reverses. No evidence: fetch a
    review's with :func:`fill_evidence`. ``meanwhile``, if given, is called with the period
    once its players are added up (before its pairs are read): work that needs only those
    runs while the database still sums the pairs.

    On PostgreSQL the players, the players at each table and the pairs are summed at once,
    each on a connection of its own: rows committed when each query starts, as any two
    queries of one READ COMMITTED session see them (the page and the command write none of
    them first)."""
    period = Period(start, end, table)
    # Plain Core rows off the connection: the ORM's row handling would cost more than the sums.
    run = session.connection().execute
    # A session bound to one connection (the command reading around unreadable rows, through
    # views on that connection alone: web/unreadable.py) sums on it, one query after another.
    postgresql = session.connection().dialect.name == "postgresql" and isinstance(
        session.get_bind(), sa.Engine
    )
    noted = _noted(session, start, end)
    at_table_query, players_query, pairs_query, tables_query = _period_queries(
        noted, table is not None
    )
    values = {"start": start, "end": end, **({"table": table} if table is not None else {})}
    if noted:
        # The noted pairs come back without those that reach no floor (``_pair_sums``).
        period.together_of = lambda wanted: _games_together(session.connection(), wanted, values)
    if postgresql:
        # The three big sums each on a connection of its own, all at once: this thread adds
        # up the players at each table (the first to arrive) while the database still sums
        # the players and the pairs. ``_rows_aside`` sums each in one process: a parallel
        # plan split the players' rows between its workers by chance, so their float sums
        # (choice and move-time columns) came out in a different order, and a flag's p and
        # q in different last digits, from one look at the same period to the next.
        engine = session.get_bind()
        at_table_rows, players_rows, pairs_rows = (
            aside(_rows_aside, engine, sql, {**constants, **values})
            for sql, constants in _period_sql(engine.dialect, noted, table is not None)
        )

    # Each table's games, discards faced and useful takes in the period, from its day rows
    # (a few hundred): the games the review counts, and each table's rate of useful takes,
    # known before the rows by player and table arrive, so that those are read once. The
    # rates are the same integers as those rows add up to (see ``_pair_sums``), so the bases
    # are the floats ``Period.add_bases`` makes of them from the same rows.
    # The ids in the rows are strings of their own, row by row: made one string each here
    # (``same``), each player's and each table's id is hashed once and found by identity in
    # every dict here and in the review's (a month's tens of thousands of lookups compared
    # their texts). A dict of the period's own, not ``sys.intern``'s of the process: a
    # lookup in a few thousand ids, not in every interned name.
    same = {}.setdefault
    rates: dict[str, tuple[int, int]] = {}
    for where_, games, faced, useful in run(tables_query, values).all():
        where_ = same(where_, where_)
        period.table_games[where_] = int(games)
        if faced:
            rates[where_] = (int(useful), int(faced))
    partners: dict[str, int] = {}
    # Each player's pairs added up over the tables, added to the player rows once those
    # arrive (integers: the same sums in any order).
    pair_sums: dict[str, list[int]] = {}
    at_tables = period.at_tables
    picker_base, feeder_base = period.picker_base, period.feeder_base
    # Sums of integer columns come back as ints from both engines: no conversions (this
    # loop runs once per player and table).
    rows = at_table_rows.result() if postgresql else _fetched(run(at_table_query, values))
    for player, where_, games, faced, seated, fed, given, strong, drops in rows:
        player, where_ = same(player, player), same(where_, where_)
        at_tables[player][where_] = games
        # The bases weighed as ``Period.add_bases`` weighs them (the same products, added
        # in the rows' order), here rather than from a list of the rows made for it.
        rate = rates.get(where_)
        if rate is not None:
            took, n = rate
            picker_base[player] += faced * took / n
            feeder_base[player] += fed * took / n
        own = pair_sums.get(player)
        if own is None:
            pair_sums[player] = [seated, fed, given, strong, drops]
        else:
            own[0] += seated
            own[1] += fed
            own[2] += given
            own[3] += strong
            own[4] += drops
        partners[where_] = partners.get(where_, 0) + seated
    kinds = len(TIMING_COLUMNS)
    exits = 6 + 3 * kinds
    discards = exits + len(EXIT_COLUMNS)
    agreed = discards + len(DISCARD_COLUMNS)
    players = period.players
    for player, *sums in (
        players_rows.result() if postgresql else _fetched(run(players_query, values))
    ):
        cells = sums[6:exits]
        players[same(player, player)] = PlayerDay(
            int(sums[0]),
            int(sums[1]),
            float(sums[2]),
            float(sums[3]),
            int(sums[4]),
            int(sums[5]),
            {
                kind: [int(cells[3 * i]), float(cells[3 * i + 1]), float(cells[3 * i + 2])]
                for i, kind in enumerate(TIMING_COLUMNS)
            },
            [int(n) for n in sums[exits:discards]],
            [int(n) for n in sums[discards:agreed]],
            [int(n) for n in sums[agreed:]],
        )
    for player, (seated, fed, given, strong, drops) in pair_sums.items():
        row = players[player]
        row.partners += seated
        row.fed += fed
        row.given += given
        row.strong += strong
        row.strong_drops += drops
    for where_, seated in partners.items():
        if seated:
            period.table_pairs[where_] = seated // 2  # each pair counted by both
    if meanwhile is not None:
        meanwhile(period)
    # The driver's rows as they are, all at once: iterating the result fetched them one at a
    # time, and even ``.all()`` made a Row of each that the loop below only unpacks. Sums of
    # integer columns come back as ints from both engines: no conversions.
    rows = pairs_rows.result() if postgresql else _fetched(run(pairs_query, values))
    pairs, feed_base = period.pairs, period.feed_base
    for first, second, faced, useful, gain, together, strong, drops, base, *exits in rows:
        pair = (same(first, first), same(second, second))
        pairs[pair] = PairDay(faced, useful, gain, together, exits, strong, drops)
        if faced:
            feed_base[pair] = float(base or 0.0)
    return period


# The period's queries by their shape (a month's noted pairs or every pair's sums; one table
# or all), the days and the table as parameters (``start``, ``end``, ``table``), and their
# SQL as PostgreSQL's driver takes it: built and compiled once a process, not for every look
# (compiling them was a few milliseconds of a first look each time).
_PERIOD_QUERIES: dict[tuple[bool, bool], tuple] = {}
_PERIOD_SQL: dict[tuple, tuple[tuple[str, dict], ...]] = {}


def _period_queries(noted: bool, one_table: bool) -> tuple:
    """``load_period``'s queries for a period of that shape: the sums by player and table,
    by player, by pair, and by table."""
    shape = (noted, one_table)
    queries = _PERIOD_QUERIES.get(shape)
    if queries is not None:
        return queries
    start, end = sa.bindparam("start", type_=sa.String), sa.bindparam("end", type_=sa.String)
    table = sa.bindparam("table", type_=sa.String)

    def where(model, query):
        query = query.where(model.day >= start, model.day <= end)
        return query.where(model.table_id == table) if one_table else query

    pd, td, nd = FairplayPlayerDay, FairplayTableDay, FairplayPartnerDay
    # What each player's pairs add up to, at each table (the feeding test's bases weigh each
    # table's discards by its own rate; the seating test counts each table's pairs). Not
    # their useful takes: the rates are the tables' own (``tables_query``).
    columns = (nd.games, nd.faced, nd.partners, nd.fed, nd.given, nd.strong, nd.strong_drops)
    at_table_query = where(
        nd, sa.select(nd.player, nd.table_id, *map(sa.func.sum, columns))
    ).group_by(nd.player, nd.table_id)
    timing = [getattr(pd, c) for kind in TIMING_COLUMNS.values() for c in kind]
    players_query = where(
        pd,
        sa.select(
            pd.player,
            *(
                sa.func.sum(column)
                for column in (
                    pd.games,
                    pd.choices,
                    pd.choice_sum,
                    pd.choice_var,
                    pd.faced,
                    pd.useful,
                    *timing,
                    *(getattr(pd, c) for c in EXIT_COLUMNS),
                    *(getattr(pd, c) for c in DISCARD_COLUMNS),
                    *(getattr(pd, c) for c in AGREED_COLUMNS),
                )
            ),
        ).group_by(pd.player),
    )
    tables_query = where(
        td, sa.select(td.table_id, *map(sa.func.sum, (td.games, td.faced, td.useful)))
    ).group_by(td.table_id)
    queries = (at_table_query, players_query, _period_pairs(where, noted), tables_query)
    _PERIOD_QUERIES[shape] = queries
    return queries


def _period_sql(dialect, noted: bool, one_table: bool) -> tuple[tuple[str, dict], ...]:
    """The SQL for ``dialect`` of the sums by player and table, by player, and by pair of a
    period of that shape (``_period_queries``'), compiled once: each with the values of its
    constants (the period's own are given with each look)."""
    key = (dialect.name, dialect.driver, dialect.server_version_info, noted, one_table)
    sql = _PERIOD_SQL.get(key)
    if sql is None:
        compiled = [query.compile(dialect=dialect) for query in _period_queries(noted, one_table)]
        sql = _PERIOD_SQL[key] = tuple((str(c), c.params) for c in compiled[:3])
    return sql


WORK_MEM = "64MB"


def aside(work, *args) -> Future:
    """``work(*args)`` in a thread of its own, started now. Not a pool kept in the module: a
    process forked with one (``--jobs``, a preloading server) would keep its dead threads."""
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fairplay")
    try:
        return executor.submit(work, *args)
    finally:
        executor.shutdown(wait=False)  # the thread ends once ``work`` is done


def _rows_aside(engine, sql: str, values: dict) -> list[tuple]:
    """The rows of ``sql`` (a period's sums by player, by player and table, or by pair, from
    :func:`_compiled`) for ``values`` read on a connection of its own (PostgreSQL)."""
    with engine.connect() as connection:
        # The transaction's settings (``SET LOCAL``) in one statement: one round trip
        # before the sums start, not three. No parallel workers: nearly every pair is its
        # own group, and workers each hashed their share of the groups and the leader hashed
        # them all again, 1.2x the time of one process and three processes' CPU. Planned
        # for this period's days every time: the driver prepares a statement run five times
        # on one connection, and five runs later PostgreSQL plans it once for any days: for
        # a few rows (a sort and nested loops), slower on a month, and adding the float
        # sums up in another order (a flag's p in other last digits) than the first looks
        # did.
        connection.execute(
            sa.text(
                f"SELECT set_config('work_mem', '{WORK_MEM}', true), "
                "set_config('max_parallel_workers_per_gather', '0', true), "
                "set_config('plan_cache_mode', 'force_custom_plan', true)"
            )
        )
        # The sums in binary: their text was parsed back into numbers, hundreds of thousands
        # of them (a twentieth of a first look's instructions). The same values: a float8's
        # text is the shortest that reads back as the same double.
        with connection.connection.driver_connection.cursor(binary=True) as cursor:
            cursor.execute(sql, values)
            return cursor.fetchall()


def _fetched(result) -> list[tuple]:
    """The driver's rows as they are, all at once (no ``Row`` made of each)."""
    try:
        return result.cursor.fetchall()
    finally:
        result.close()


def _pair_sums(where, rd=FairplayPairDay, read_only: bool = False):
    """Per ordered pair of the period (rows of ``rd``): its sums (``PairDay``'s) and its
    discards faced, each weighted by its table's rate of useful takes over the period
    (``feed_base``). With ``read_only``, only the pairs a review tests: those that reach a
    floor (the games together a flag shows of another pair: :func:`_games_together`).

    The tables' rates are summed from ``fairplay_table_days`` (a row a day and table), not
    from the players' rows (a month's are tens of thousands): the same integers, so the
    same weights, and the pair rows are still read and added up in the same order."""
    td = FairplayTableDay
    # The tables' sums as floats once a table, not converted for each pair row: PostgreSQL
    # divided a float by the NUMERIC that SQLAlchemy's division casts to, so every row
    # made a numeric and converted it back (a tenth of the query). Integers below 2**53
    # are the same floats either way, so the weights are the same floats.
    rates = where(
        td,
        sa.select(
            td.table_id.label("table_id"),
            sa.cast(sa.func.nullif(sa.func.sum(td.faced), 0), sa.Float).label("faced"),
            sa.cast(sa.func.sum(td.useful), sa.Float).label("useful"),
        ).group_by(td.table_id),
    ).subquery()
    weighted = sa.cast(rd.faced, sa.Float) * rates.c.useful / rates.c.faced
    sums = {
        name: sa.func.sum(getattr(rd, name))
        for name in ("faced", "useful", "gain", "together", "strong", "strong_drops")
    }
    exits = {c: sa.func.sum(getattr(rd, c)) for c in EXIT_COLUMNS}
    query = (
        sa.select(
            rd.first.label("first"),
            rd.second.label("second"),
            *(total.label(name) for name, total in sums.items()),
            sa.func.sum(sa.case((rd.faced > 0, weighted), else_=0.0)).label("base"),
            *(total.label(name) for name, total in exits.items()),
        )
        .join(rates, rates.c.table_id == rd.table_id)
        .group_by(rd.first, rd.second)
    )
    if read_only:
        # A month's noted pairs that reach no floor in the period are never tested: not
        # sent nor made into rows. Nearly half of them had games together, which a flag on
        # the reverse pair shows: the review asks for its flags' few (``_games_together``).
        # Games together summing to NULL (an insider's, the column's NOT NULL dropped) still
        # come back: the review stops at them, and the page names the rows (web/unreadable).
        query = query.having(
            sa.or_(reaches_floor_sql({**sums, **exits}), sums["together"].is_(None))
        )
    return where(rd, query)


def _games_together(connection, wanted: list[tuple[str, str]], values: dict) -> dict:
    """The games together in the period (``values``: its days, and its table if given) of
    each of ``wanted`` (pairs in name order), as a month's noted pairs sum them
    (:func:`_pair_sums`' rows: at the tables counted in the period), whatever the sum (an
    insider's negative or NULL as well); a pair without rows left out."""
    rd, td = FairplayNotedPairDay, FairplayTableDay
    tables = sa.select(td.table_id).where(td.day >= values["start"], td.day <= values["end"])
    query = (
        sa.select(rd.first, rd.second, sa.func.sum(rd.together))
        .where(rd.day >= values["start"], rd.day <= values["end"])
        .group_by(rd.first, rd.second)
    )
    if "table" in values:
        tables = tables.where(td.table_id == values["table"])
        query = query.where(rd.table_id == values["table"])
    query = query.where(rd.table_id.in_(tables))
    if connection.dialect.name == "postgresql":
        # The pairs as two arrays joined to: an ``IN`` of row values was planned as a test
        # of every one against each of the month's rows.
        firsts, seconds = (list(side) for side in zip(*wanted, strict=True))
        pairs = (
            sa.func.unnest(
                sa.bindparam("firsts", firsts, type_=ARRAY(sa.String)),
                sa.bindparam("seconds", seconds, type_=ARRAY(sa.String)),
            )
            .table_valued("first", "second")
            .render_derived(name="wanted")
        )
        query = query.join(pairs, sa.and_(pairs.c.first == rd.first, pairs.c.second == rd.second))
    else:
        query = query.where(sa.tuple_(rd.first, rd.second).in_(wanted))
    return {(first, second): together for first, second, together in connection.execute(query)}


def _noted(session, start: str, end: str) -> bool:
    """Whether ``start``..``end`` lies in one calendar month whose noted pairs are current
    (noted after the month's last counted game)."""
    if start[:7] != end[:7]:
        return False
    m, t = FairplayNotedMonth, FairplayTableDay
    first, last = month_period(start[:7])
    # The month's games now (``period_games``) in the same statement: one round trip
    # before the period's sums start, not two.
    games = sa.select(sa.func.coalesce(sa.func.sum(t.games), 0)).where(
        t.day >= first, t.day <= last
    )
    noted = (
        session.connection()
        .execute(sa.select(m.games, games.scalar_subquery()).where(m.month == start[:7]))
        .first()
    )
    return noted is not None and noted[0] == int(noted[1])


def _period_pairs(where, noted: bool):
    """The period's pairs that a signal may test, and their reverses (a flag shows the
    pair's games together, kept on the pair in name order)."""
    if noted:
        # Within a calendar month: only the pairs its month noted can reach a floor.
        return _pair_sums(where, FairplayNotedPairDay, read_only=True)
    # Across months a pair may reach a floor that no month of it reaches alone: the sums of
    # every pair, and those that reach one (either way round) kept.
    sums = _pair_sums(where).cte("pair_sums")
    reached = reaches_floor_sql(sums.c)
    tested = sa.union(
        sa.select(sums.c.first, sums.c.second).where(reached),
        sa.select(sums.c.second, sums.c.first).where(reached),
    ).subquery("tested")
    return sa.select(*sums.c).join(
        tested, sa.and_(tested.c.first == sums.c.first, tested.c.second == sums.c.second)
    )


def reaches_floor_sql(columns):
    """:func:`replays.fairplay.signals.reaches_floor` as SQL over ``columns`` (a pair's sums,
    by ``PairDay``'s names, the exits by :data:`EXIT_COLUMNS`)."""
    from replays.fairplay.signals import PAIR_FLOORS

    def value(name):
        if name == "exits":
            return sum((columns[c] for c in EXIT_COLUMNS[1:]), columns[EXIT_COLUMNS[0]])
        return columns[name]

    return sa.or_(
        *(sa.and_(*(value(name) >= floor for name, floor in floors)) for floors in PAIR_FLOORS)
    )


def note_month_pairs(engine, months: list[str]) -> None:
    """Note the rows of the pairs of each of ``months`` whose month sums reach a floor, each
    pair with its reverse (``fairplay_noted_pair_days``), and the games the month had
    counted then (``fairplay_noted_months``): the month's rows noted anew, in the database."""
    rd, nd, m = FairplayPairDay, FairplayNotedPairDay, FairplayNotedMonth
    sums = {
        name: sa.func.sum(getattr(rd, name))
        for name in ("faced", "useful", "together", "strong", "strong_drops", *EXIT_COLUMNS)
    }
    columns = [c.name for c in rd.__table__.columns]
    with Session(engine) as session, session.begin():
        connection = session.connection()
        for month in months:
            first, last = month_period(month)
            within = (rd.day >= first, rd.day <= last)
            reached = (
                sa.select(rd.first.label("first"), rd.second.label("second"))
                .where(*within)
                .group_by(rd.first, rd.second)
                .having(reaches_floor_sql(sums))
                .cte("reached")
            )
            pairs = sa.union(
                sa.select(reached.c.first, reached.c.second),
                sa.select(reached.c.second, reached.c.first),
            )
            rows = sa.select(*(getattr(rd, c) for c in columns)).where(
                *within, sa.tuple_(rd.first, rd.second).in_(pairs)
            )
            connection.execute(sa.delete(nd).where(nd.day >= first, nd.day <= last))
            connection.execute(sa.insert(nd).from_select(columns, rows))
            connection.execute(sa.delete(m).where(m.month == month))
            games = period_games(session, first, last)
            connection.execute(sa.insert(m), {"month": month, "games": games})


def fill_evidence(session, result, table: str | None = None) -> None:
    """Give each flag of ``result`` (a review) its heaviest evidence moves of the period."""
    from replays.fairplay.signals import best_evidence, evidence_subject

    subjects = {evidence_subject(flag) for flag in result.flags}
    if not subjects:
        return
    connection = session.connection()
    values = {"start": result.start, "end": result.end}
    if table is not None:
        values["table"] = table
    found: dict[tuple[str, str, str], list[Evidence]] = {subject: [] for subject in subjects}
    if connection.dialect.name == "postgresql":
        # The statement compiled once a process and run on the driver's cursor: made,
        # looked up in SQLAlchemy's cache and its rows made into ``Row`` objects on every
        # look, it cost more than the thousand-odd evidence rows themselves.
        sql, constants = _evidence_sql(connection.dialect, table is not None)
        for name, column in zip(
            ("signal", "first", "second"), zip(*sorted(subjects), strict=True), strict=True
        ):
            values[name] = list(column)
        with connection.connection.driver_connection.cursor() as cursor:
            cursor.execute(sql, {**constants, **values})
            rows = cursor.fetchall()
    else:
        rows = connection.execute(_evidence_query(False, table is not None, subjects), values)
    for row in rows:
        found[row[:3]].append(_evidence(*row))
    for flag in result.flags:
        flag.evidence = best_evidence(found[evidence_subject(flag)])


# ``fill_evidence``'s statement for PostgreSQL by dialect and shape (one table or all).
_EVIDENCE_SQL: dict[tuple, tuple[str, dict]] = {}


def _evidence_sql(dialect, one_table: bool) -> tuple[str, dict]:
    key = (dialect.name, dialect.driver, dialect.server_version_info, one_table)
    sql = _EVIDENCE_SQL.get(key)
    if sql is None:
        compiled = _evidence_query(True, one_table).compile(dialect=dialect)
        sql = _EVIDENCE_SQL[key] = (str(compiled), compiled.params)
    return sql


def _evidence_query(postgresql: bool, one_table: bool, subjects=()):
    """The best evidence rows of each subject (signal, first, second) of a period (days
    ``start``..``end`` and ``table`` as parameters): (signal, first, second, game_id, step,
    weight, note), ranked as ``best_evidence`` ranks them (heaviest first, then game and
    move; the game ids compared byte by byte, as Python compares them), only each subject's
    best ``BEST_EVIDENCE`` (a month's flags have tens of thousands of rows). On PostgreSQL
    the subjects are three array parameters (``signal``, ``first``, ``second``), on
    SQLite ``subjects`` written into the statement."""
    from replays.fairplay.signals import BEST_EVIDENCE

    e = FairplayEvidence
    subject = (e.signal, e.first, e.second)
    # One query for every flag (the page waits on it), split by subject by the caller: each
    # subject's rows found by ``ix_fairplay_evidence_who``, not the period's every row. The
    # subjects are a list joined to, not an ``IN`` of row values: PostgreSQL planned the
    # hundreds of those of a month's flags one by one, longer than it ran the query.
    names = [c.name for c in subject]
    within = [
        e.day >= sa.bindparam("start", type_=sa.String),
        e.day <= sa.bindparam("end", type_=sa.String),
    ]
    if one_table:
        within.append(e.table_id == sa.bindparam("table", type_=sa.String))
    if postgresql:
        # The list as three arrays: one statement whatever the flags.
        wanted = (
            sa.func.unnest(*(sa.bindparam(name, type_=ARRAY(sa.String)) for name in names))
            .table_valued(*names)
            .render_derived(name="wanted")
        )
        # Each subject's few best by a sort of its own rows (a top-N sort of dozens), not
        # one sort of all the subjects' rows, note texts and all (a month's: 80 ms of 90).
        ranked = (
            sa.select(e.game_id, e.step, e.weight, e.note)
            .where(
                e.signal == wanted.c.signal,
                e.first == wanted.c.first,
                e.second == wanted.c.second,
                *within,
            )
            .order_by(e.weight.desc(), e.game_id.collate("C"), e.step)
            .limit(BEST_EVIDENCE)
            .lateral("ranked")
        )
        return sa.select(*wanted.c, *ranked.c).select_from(wanted).join(ranked, sa.true())
    # SQLite has no LATERAL; it compares text byte by byte
    wanted = (
        sa.values(*(sa.column(name, sa.String) for name in names), name="wanted")
        .data(sorted(subjects))
        .cte("wanted")
    )
    place = (
        sa.func.row_number()
        .over(partition_by=subject, order_by=(e.weight.desc(), e.game_id, e.step))
        .label("place")
    )
    query = (
        sa.select(*subject, e.game_id, e.step, e.weight, e.note, place)
        .join(
            wanted,
            sa.and_(
                wanted.c.signal == e.signal,
                wanted.c.first == e.first,
                wanted.c.second == e.second,
            ),
        )
        .where(*within)
    )
    ranked = query.subquery()
    return sa.select(*list(ranked.c)[:-1]).where(ranked.c.place <= BEST_EVIDENCE)


# -- reviews kept -------------------------------------------------------------------------------
FDR = 0.05  # the page's and the command's default


def month_period(month: str) -> tuple[str, str]:
    """``"2025-04"`` as its first and last day.

    >>> month_period("2025-02"), month_period("2024-12"), month_period("9999-12")
    (('2025-02-01', '2025-02-28'), ('2024-12-01', '2024-12-31'), ('9999-12-01', '9999-12-31'))
    """
    first = date.fromisoformat(month + "-01")
    last = first.replace(day=calendar.monthrange(first.year, first.month)[1])
    return first.isoformat(), last.isoformat()


def period_games(session, start: str, end: str, table: str | None = None) -> int:
    """The games counted in days ``start``..``end`` (one table or all): a few hundred day
    rows a month, so cheap enough to ask before every look at a kept review."""
    t = FairplayTableDay
    query = sa.select(sa.func.coalesce(sa.func.sum(t.games), 0)).where(t.day >= start, t.day <= end)
    if table is not None:
        query = query.where(t.table_id == table)
    return int(session.connection().execute(query).scalar_one())


def work_out(session, start: str, end: str, table: str | None = None, fdr: float = FDR):
    """The review of a period from the kept tables (the sums in the database), with the
    evidence of its flags."""
    from replays.fairplay.signals import player_tests, review

    # The one-player signals are tested while the database still sums the pairs.
    tested = []

    def test_players(period: Period) -> None:
        tested.append(player_tests(period.players))

    # A period's pairs are hundreds of thousands of objects alive until the review is made,
    # then freed at once: even ``bulk_work``'s rarer passes walked them (a tenth of a custom
    # period's first look on the page), so the collector makes none meanwhile.
    with collector_paused():
        period = load_period(session, start, end, table, meanwhile=test_players)
        result = review(period, start, end, table=table, fdr=fdr, players_tested=tested[0])
        # Freed while the collector is still off: alive at its end, the period's rows were
        # all walked by the first pass after it (the young generation held every one).
        del period, tested[:]
        fill_evidence(session, result, table)
    return result


def kept_review(session, start: str, end: str, table: str | None = None, fdr: float = FDR):
    """``(review, made_at)`` kept for the period, or None when none is kept, the one kept
    no longer counts every game of the period (games were counted since) or it cannot be
    read (a value of the wrong kind: logged, and the review is worked out again)."""
    r = FairplayReview
    try:
        row = (
            session.connection()
            .execute(
                sa.select(r.games, r.made_at, r.body).where(
                    r.start == start, r.end == end, r.table_id == (table or ""), r.fdr == fdr
                )
            )
            .first()
        )
        if row is None or row.games != period_games(session, start, end, table):
            return None
        if not isinstance(row.made_at, datetime):  # a column changed to text reads as text
            raise ValueError(f"made_at holds {row.made_at!r}")
        return review_from_json(row.body), row.made_at
    except (ValueError, TypeError, KeyError, AttributeError, sa.exc.DBAPIError) as error:
        if isinstance(error, sa.exc.DBAPIError) and not undecodable(error):
            raise  # the database itself, not the kept row's values
        # A copy of what the counted rows give, holding a value of the wrong kind (an
        # insider's write): worked out again from them rather than stopping the review.
        logging.getLogger(__name__).warning(
            "fair play: the kept review of %s..%s cannot be read (%r): worked out again",
            start,
            end,
            error,
        )
        return None


def keep_review(session, result, made_at: datetime | None = None) -> datetime:
    """Keep ``result`` (a review) in ``fairplay_reviews``, replacing the period's last one."""
    r = FairplayReview
    made_at = made_at or datetime.now(UTC)
    key = (
        r.start == result.start,
        r.end == result.end,
        r.table_id == (result.table or ""),
        r.fdr == result.fdr,
    )
    connection = session.connection()
    connection.execute(sa.delete(r).where(*key))
    connection.execute(
        sa.insert(r),
        {
            "start": result.start,
            "end": result.end,
            "table_id": result.table or "",
            "fdr": result.fdr,
            "games": result.games,
            "made_at": made_at,
            "body": review_to_json(result),
        },
    )
    return made_at


def store_reviews(engine, months: list[str]) -> None:
    """Work out and keep the review of each of ``months`` (all tables, the default FDR):
    what the page shows first, read back instead of worked out while it waits."""
    for month in months:
        start, end = month_period(month)
        try:
            with Session(engine) as session, session.begin():
                keep_review(session, work_out(session, start, end))
        except sa.exc.IntegrityError:
            continue  # the page kept one at the same moment (checked by its games when read)


def review_to_json(result) -> str:
    return json.dumps(
        {
            "start": result.start,
            "end": result.end,
            "table": result.table,
            "fdr": result.fdr,
            "tested": result.tested,
            "games": result.games,
            "players": result.players,
            "flags": [
                {
                    "signal": f.signal,
                    "players": list(f.players),
                    "observed": f.observed,
                    "expected": f.expected,
                    "statistic": f.statistic,
                    "p": f.p,
                    "games": f.games,
                    "q": f.q,
                    "evidence": [_evidence_row(e) for e in f.evidence],
                }
                for f in result.flags
            ],
        }
    )


def _evidence_row(e: Evidence) -> list:
    """``list(astuple(e))`` without its deep copy (a review's hundreds of flags' evidence)."""
    return [e.signal, e.first, e.second, e.game_id, e.step, e.weight, e.note]


def review_from_json(text: str):
    from replays.fairplay.signals import Flag, Review

    data = json.loads(text)
    flags = [
        Flag(
            f["signal"],
            tuple(f["players"]),
            f["observed"],
            f["expected"],
            f["statistic"],
            f["p"],
            f["games"],
            f["q"],
            [Evidence(*e) for e in f["evidence"]],
        )
        for f in data.pop("flags")
    ]
    return Review(flags=flags, **data)


def rebuild(ledger, url: str | None = None, **kwargs) -> int:
    """Drop the counts and count every ended game again."""
    engine = engine_for(url)
    with Session(engine) as session, session.begin():
        for model in (
            FairplayEvidence,
            FairplayNotedMonth,
            FairplayNotedPairDay,
            FairplayPairDay,
            FairplayPartnerDay,
            FairplayPlayerDay,
            FairplayTableDay,
            FairplayGame,
            FairplayReview,
        ):
            session.execute(sa.delete(model))
        tracking.forget(session.connection())
    return catch_up(ledger, url, **kwargs)


# -- rows <-> summary ----------------------------------------------------------------------------
def _slice_filter(model, slices):
    days = sorted({day for day, _ in slices})
    return sa.and_(model.day.in_(days), sa.tuple_(model.day, model.table_id).in_(sorted(slices)))


def _load(summary: Summary, model, rows) -> None:
    for row in rows:
        if model is FairplayPlayerDay:
            summary.players[(row.day, row.table_id, row.player)].add(
                PlayerDay(
                    row.games,
                    row.choices,
                    row.choice_sum,
                    row.choice_var,
                    row.faced,
                    row.useful,
                    {
                        kind: [getattr(row, name) for name in names]
                        for kind, names in TIMING_COLUMNS.items()
                    },
                    [getattr(row, name) for name in EXIT_COLUMNS],
                    [getattr(row, name) for name in DISCARD_COLUMNS],
                    [getattr(row, name) for name in AGREED_COLUMNS],
                )
            )
        elif model is FairplayPartnerDay:
            summary.players[(row.day, row.table_id, row.player)].add(
                PlayerDay(
                    partners=row.partners,
                    fed=row.fed,
                    given=row.given,
                    strong=row.strong,
                    strong_drops=row.strong_drops,
                )
            )
        elif model is FairplayPairDay:
            summary.pairs[(row.day, row.table_id, row.first, row.second)].add(
                PairDay(
                    row.faced,
                    row.useful,
                    row.gain,
                    row.together,
                    [getattr(row, name) for name in EXIT_COLUMNS],
                    row.strong,
                    row.strong_drops,
                )
            )
        elif model is FairplayTableDay:
            summary.tables[(row.day, row.table_id)] += row.games
        else:
            summary.evidence[(row.day, row.table_id, row.signal, row.first, row.second)].append(
                Evidence(
                    row.signal, row.first, row.second, row.game_id, row.step, row.weight, row.note
                )
            )


def _counted_in(connection, slices) -> bool:
    """Whether any of ``slices`` already holds counted games (each counted game's slice has
    its ``fairplay_table_days`` row)."""
    if not slices:
        return False
    t = FairplayTableDay
    found = connection.execute(sa.select(t.day).where(_slice_filter(t, slices)).limit(1))
    return found.first() is not None


TRIM_CHUNK = 500  # evidence subjects trimmed by one statement (_merge)


def _merge(connection, summary: Summary, slices) -> None:
    """``summary`` added to slices that already hold rows, as ``Summary.add`` would add it:
    the sums row by row (an upsert through a staging table: the kept rows never travel to
    this process and back), the evidence kept by weight, :data:`EVIDENCE_KEPT` a subject."""
    rows = _rows(summary)
    for model in (FairplayPlayerDay, FairplayPartnerDay, FairplayPairDay, FairplayTableDay):
        _add_up(connection, model.__table__, *rows[model])
    names, evidence = rows[FairplayEvidence]
    _insert(connection, FairplayEvidence.__table__, evidence, names)
    # The heaviest of each subject's evidence, the earliest of equals first (the rows kept
    # before this batch have the lower ids), as ``Summary._keep`` keeps them. Only the
    # subjects now holding more than that are ranked, found first (a few of the days'
    # tens of thousands of rows): ranking every row of the slices, each matched in the
    # database against the list of slices, cost 0.5 s of PostgreSQL's time a 500-game batch.
    e = FairplayEvidence
    subject = (e.day, e.table_id, e.signal, e.first, e.second)
    days = sorted({day for day, _ in slices})
    crowded = connection.execute(
        sa.select(*subject)
        .where(e.day.in_(days))
        .group_by(*subject)
        .having(sa.func.count() > EVIDENCE_KEPT)
    )
    crowded = sorted(tuple(row) for row in crowded if (row.day, row.table_id) in slices)
    if not crowded:
        return
    place = (
        sa.func.row_number()
        .over(partition_by=subject, order_by=(e.weight.desc(), e.id))
        .label("place")
    )
    # TRIM_CHUNK subjects a statement: five parameters each stay well inside SQLite's limit
    # on a statement's parameters however many subjects a batch crowds.
    for start in range(0, len(crowded), TRIM_CHUNK):
        chosen = sa.tuple_(*subject).in_(crowded[start : start + TRIM_CHUNK])
        ranked = sa.select(e.id, place).where(chosen).subquery()
        lighter = sa.select(ranked.c.id).where(ranked.c.place > EVIDENCE_KEPT)
        connection.execute(sa.delete(e).where(e.id.in_(lighter)))


def _add_up(connection, table: sa.Table, names: tuple[str, ...], rows: list[tuple]) -> None:
    """``rows`` (tuples of the columns ``names``) added to ``table``'s rows of the same key,
    or inserted where there is none: copied into a staging table, then one ``INSERT ... ON
    CONFLICT DO UPDATE`` (both engines)."""
    if not rows:
        return
    staging = sa.table(f"{table.name}_batch", *(sa.column(c.name) for c in table.columns))
    connection.execute(
        sa.text(
            f'CREATE TEMPORARY TABLE "{staging.name}" AS SELECT * FROM "{table.name}" WHERE 1 = 0'
        )
    )
    _insert(connection, staging, rows, names)
    columns = ", ".join(f'"{c.name}"' for c in table.columns)
    keys = ", ".join(f'"{c.name}"' for c in table.primary_key)
    sums = ", ".join(
        f'"{c.name}" = "{table.name}"."{c.name}" + excluded."{c.name}"'
        for c in table.columns
        if not c.primary_key
    )
    # ``WHERE 1 = 1``: SQLite reads an ``ON`` after a bare ``FROM`` as a join's.
    connection.execute(
        sa.text(
            f'INSERT INTO "{table.name}" ({columns}) SELECT {columns} FROM "{staging.name}" '
            f"WHERE 1 = 1 ON CONFLICT ({keys}) DO UPDATE SET {sums}"
        )
    )
    connection.execute(sa.text(f'DROP TABLE "{staging.name}"'))


def _rows(summary: Summary) -> dict:
    """The rows of ``summary``, by model: ``(column names, rows as tuples in that order)``.
    Tuples, not a dict a row: ``COPY`` takes them as they are (90 rows a game)."""
    rows = {}
    timing_names = [name for names in TIMING_COLUMNS.values() for name in names]
    rows[FairplayPlayerDay] = (
        (
            "day",
            "table_id",
            "player",
            "games",
            "choices",
            "choice_sum",
            "choice_var",
            "faced",
            "useful",
            *timing_names,
            *EXIT_COLUMNS,
            *DISCARD_COLUMNS,
            *AGREED_COLUMNS,
        ),
        [
            (
                day,
                table,
                player,
                r.games,
                r.choices,
                r.choice_sum,
                r.choice_var,
                r.faced,
                r.useful,
                *_timing_cells(r.timing),
                *r.exits,
                *r.discards,
                *r.agreed,
            )
            for (day, table, player), r in summary.players.items()
        ],
    )
    rows[FairplayPartnerDay] = (
        (
            "day",
            "table_id",
            "player",
            "games",
            "faced",
            "useful",
            "partners",
            "fed",
            "given",
            "strong",
            "strong_drops",
        ),
        [
            (
                day,
                table,
                player,
                r.games,
                r.faced,
                r.useful,
                r.partners,
                r.fed,
                r.given,
                r.strong,
                r.strong_drops,
            )
            for (day, table, player), r in summary.players.items()
        ],
    )
    rows[FairplayPairDay] = (
        (
            "day",
            "table_id",
            "first",
            "second",
            "faced",
            "useful",
            "gain",
            "together",
            "strong",
            "strong_drops",
            *EXIT_COLUMNS,
        ),
        [
            (
                day,
                table,
                first,
                second,
                r.faced,
                r.useful,
                r.gain,
                r.together,
                r.strong,
                r.strong_drops,
                *r.exits,
            )
            for (day, table, first, second), r in summary.pairs.items()
        ],
    )
    # Each table's discards faced and useful takes: its players' added up.
    picking: dict[tuple[str, str], list[int]] = {}
    for (day, table, _), r in summary.players.items():
        cell = picking.get((day, table))
        if cell is None:
            cell = picking[(day, table)] = [0, 0]
        cell[0] += r.faced
        cell[1] += r.useful
    rows[FairplayTableDay] = (
        ("day", "table_id", "games", "faced", "useful"),
        [(d, t, n, *picking.get((d, t), (0, 0))) for (d, t), n in summary.tables.items()],
    )
    rows[FairplayEvidence] = (
        ("day", "table_id", "signal", "first", "second", "game_id", "step", "weight", "note"),
        [
            (day, table, e.signal, e.first, e.second, e.game_id, e.step, e.weight, e.note[:200])
            for (day, table, _signal, _first, _second), kept in summary.evidence.items()
            for e in kept
        ],
    )
    return rows


def _write(connection, summary: Summary) -> None:
    """``summary`` into slices that hold no rows yet."""
    for model, (names, rows) in _rows(summary).items():
        _insert(connection, model.__table__, rows, names)


def _insert(
    connection, table: sa.TableClause, rows: list, names: tuple[str, ...] | None = None
) -> None:
    """``rows`` into ``table`` on the transaction's connection: PostgreSQL's ``COPY`` (a
    month is hundreds of thousands of pair rows, and ``COPY`` takes them in one stream, no
    statement per row), else one ``executemany``. ``rows`` are dicts, or tuples of the
    columns ``names``."""
    if not rows:
        return
    if names is None:
        names = tuple(rows[0])
        rows = [tuple(row[name] for name in names) for row in rows]
    driver = connection.connection.driver_connection
    if connection.dialect.name == "postgresql" and hasattr(driver, "cursor"):
        columns = ", ".join(f'"{name}"' for name in names)
        with (
            driver.cursor() as cursor,
            cursor.copy(f'COPY "{table.name}" ({columns}) FROM STDIN') as copy,
        ):
            for row in rows:
                copy.write_row(row)
        return
    connection.execute(table.insert(), [dict(zip(names, row, strict=True)) for row in rows])


def _timing_cells(timing: dict[str, list[float]]) -> list:
    cells: list = []
    for kind in TIMING_COLUMNS:
        n, total, squares = timing.get(kind, (0, 0.0, 0.0))
        cells += [int(n), float(total), float(squares)]
    return cells
