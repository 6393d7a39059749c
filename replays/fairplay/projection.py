"""Keeping the fair-play tables current, and reading a period back from them.

:func:`catch_up` counts every ended game not yet counted: it rebuilds each game's record
from its events (``Variant.export``, as ``rummy-ledger export`` does), walks it
(:mod:`.facts`), and adds the counts to the day-and-table slices the batch touches, in one
transaction with the games' ``fairplay_games`` rows. Only the days of the new games are
read and written, so a new day costs that day's games. :func:`load_period` adds a period up
in the database (one row per player and per pair comes back), which is what the page and
the command review; :func:`load_summary` reads the day rows back as they are.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa
from sqlalchemy.orm import Session

from replays.fairplay.summary import Evidence, PairDay, Period, PlayerDay, Summary, summarise
from replays.fairplay.tables import (
    EXIT_COLUMNS,
    TIMING_COLUMNS,
    FairplayEvidence,
    FairplayGame,
    FairplayPairDay,
    FairplayPlayerDay,
    FairplayTableDay,
)
from replays.readmodels.models import GameRow
from replays.store.db import engine_for

BATCH = 500


def pending(session: Session, limit: int | None = None) -> list[str]:
    """Ended games not yet counted, oldest first."""
    query = (
        sa.select(GameRow.game_id)
        .outerjoin(FairplayGame, FairplayGame.game_id == GameRow.game_id)
        .where(GameRow.ended_at.is_not(None), FairplayGame.game_id.is_(None))
        .order_by(GameRow.started_at, GameRow.game_id)
    )
    if limit is not None:
        query = query.limit(limit)
    return list(session.scalars(query))


def catch_up(
    ledger, url: str | None = None, *, progress: Callable[[int], None] | None = None
) -> int:
    """Count every ended game not yet counted; return how many were."""
    from domain import variants

    engine = engine_for(url)
    done = 0
    while True:
        with Session(engine) as session:
            game_ids = pending(session, BATCH)
        if not game_ids:
            return done
        records = []
        for game_id in game_ids:
            game = ledger.get_game(game_id)
            records.append(variants.for_game(game).export(game))
        add_records(engine, records)
        done += len(game_ids)
        if progress is not None:
            progress(len(game_ids))


def add_records(engine, records: list[dict]) -> None:
    """Add ``records`` (not counted before) to the tables, in one transaction."""
    batch = summarise(records)
    slices = set(batch.tables)
    with Session(engine) as session, session.begin():
        kept = _read(session, slices)
        kept.add(batch)
        _delete(session, slices)
        _write(session, kept)
        session.add_all(
            FairplayGame(
                game_id=record["game_id"],
                day=str(record.get("started_at", ""))[:10],
                table_id=str((record.get("table") or {}).get("id", "")),
            )
            for record in records
        )


def load_summary(
    session, start: str, end: str, table: str | None = None, *, evidence: bool = True
) -> Summary:
    """The kept statistics of days ``start``..``end`` (one table or all); without
    ``evidence``, fetch a review's evidence afterwards with :func:`fill_evidence` (a month
    keeps far more evidence rows than it flags)."""
    summary = Summary()
    models = (FairplayPlayerDay, FairplayPairDay, FairplayTableDay)
    for model in (*models, FairplayEvidence) if evidence else models:
        # Plain rows, not ORM objects: a month's pairs are many, and the page waits on them.
        query = sa.select(*model.__table__.columns).where(model.day >= start, model.day <= end)
        if table is not None:
            query = query.where(model.table_id == table)
        _load(summary, model, session.execute(query))
    return summary


def load_period(session, start: str, end: str, table: str | None = None) -> Period:
    """Days ``start``..``end`` (one table or all) added up by the database: the same figures
    as ``load_summary(...).period(...)`` without reading every day's row into Python (a
    month of pairs is many rows, and the page waits on them). No evidence: fetch a review's
    with :func:`fill_evidence`."""
    period = Period(start, end, table)
    # Plain Core rows off the connection: the ORM's row handling would cost more than the sums.
    run = session.connection().execute

    def where(model, query):
        query = query.where(model.day >= start, model.day <= end)
        return query if table is None else query.where(model.table_id == table)

    pd, rd, td = FairplayPlayerDay, FairplayPairDay, FairplayTableDay
    timing = [getattr(pd, c) for kind in TIMING_COLUMNS.values() for c in kind]
    query = sa.select(
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
            )
        ),
    ).group_by(pd.player)
    kinds = len(TIMING_COLUMNS)
    for player, *sums in run(where(pd, query)):
        cells = sums[6 : 6 + 3 * kinds]
        period.players[player] = PlayerDay(
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
            [int(n) for n in sums[6 + 3 * kinds :]],
        )
    query = sa.select(pd.player, pd.table_id, sa.func.sum(pd.games)).group_by(
        pd.player, pd.table_id
    )
    for player, where_, games in run(where(pd, query)):
        period.at_tables[player][where_] = int(games)
    query = sa.select(td.table_id, sa.func.sum(td.games)).group_by(td.table_id)
    for where_, games in run(where(td, query)):
        period.table_games[where_] = int(games)
    # Each table's rate of useful takes over the period, then each pair's discards faced
    # weighted by it: summed in the database, so only one row per pair comes back.
    rates = where(
        pd,
        sa.select(
            pd.table_id.label("table_id"),
            sa.func.sum(pd.faced).label("faced"),
            sa.func.sum(pd.useful).label("useful"),
        ).group_by(pd.table_id),
    ).subquery()
    weighted = sa.cast(rd.faced, sa.Float) * rates.c.useful / sa.func.nullif(rates.c.faced, 0)
    query = (
        sa.select(
            rd.first,
            rd.second,
            sa.func.sum(rd.faced),
            sa.func.sum(rd.useful),
            sa.func.sum(rd.gain),
            sa.func.sum(rd.together),
            sa.func.sum(rd.strong),
            sa.func.sum(rd.strong_drops),
            sa.func.sum(sa.case((rd.faced > 0, weighted), else_=0.0)),
            *(sa.func.sum(getattr(rd, c)) for c in EXIT_COLUMNS),
        )
        .join(rates, rates.c.table_id == rd.table_id)
        .group_by(rd.first, rd.second)
    )
    for first, second, faced, useful, gain, together, strong, drops, base, *exits in run(
        where(rd, query)
    ):
        # Sums of integer columns come back as ints from both engines: no conversions (this
        # loop runs once per pair of the period).
        period.pairs[(first, second)] = PairDay(faced, useful, gain, together, exits, strong, drops)
        if faced:
            period.feed_base[(first, second)] = float(base or 0.0)
    return period


def fill_evidence(session, result, table: str | None = None) -> None:
    """Give each flag of ``result`` (a review) its heaviest evidence moves of the period."""
    from replays.fairplay.signals import best_evidence, evidence_subject

    e = FairplayEvidence
    subjects = {evidence_subject(flag) for flag in result.flags}
    if not subjects:
        return
    # One query for every flag (the page waits on it), split by subject here.
    query = sa.select(e.signal, e.first, e.second, e.game_id, e.step, e.weight, e.note).where(
        e.day >= result.start,
        e.day <= result.end,
        e.signal.in_(sorted({signal for signal, _, _ in subjects})),
        e.first.in_(sorted({first for _, first, _ in subjects})),
        sa.tuple_(e.signal, e.first, e.second).in_(sorted(subjects)),
    )
    if table is not None:
        query = query.where(e.table_id == table)
    found: dict[tuple[str, str, str], list[Evidence]] = {subject: [] for subject in subjects}
    for r in session.execute(query):
        found[(r.signal, r.first, r.second)].append(Evidence(*r))
    for flag in result.flags:
        flag.evidence = best_evidence(found[evidence_subject(flag)])


def rebuild(ledger, url: str | None = None, **kwargs) -> int:
    """Drop the counts and count every ended game again."""
    engine = engine_for(url)
    with Session(engine) as session, session.begin():
        for model in (
            FairplayEvidence,
            FairplayPairDay,
            FairplayPlayerDay,
            FairplayTableDay,
            FairplayGame,
        ):
            session.execute(sa.delete(model))
    return catch_up(ledger, url, **kwargs)


# -- rows <-> summary ----------------------------------------------------------------------------
def _slice_filter(model, slices):
    days = sorted({day for day, _ in slices})
    return sa.and_(model.day.in_(days), sa.tuple_(model.day, model.table_id).in_(sorted(slices)))


def _read(session: Session, slices) -> Summary:
    summary = Summary()
    if not slices:
        return summary
    for model in (FairplayPlayerDay, FairplayPairDay, FairplayTableDay, FairplayEvidence):
        query = sa.select(*model.__table__.columns).where(_slice_filter(model, slices))
        _load(summary, model, session.execute(query))
    return summary


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


def _delete(session: Session, slices) -> None:
    for model in (FairplayPlayerDay, FairplayPairDay, FairplayTableDay, FairplayEvidence):
        session.execute(sa.delete(model).where(_slice_filter(model, slices)))


def _write(session: Session, summary: Summary) -> None:
    rows: list[dict] = [
        {
            "day": day,
            "table_id": table,
            "player": player,
            "games": r.games,
            "choices": r.choices,
            "choice_sum": r.choice_sum,
            "choice_var": r.choice_var,
            "faced": r.faced,
            "useful": r.useful,
            **_timing_columns(r.timing),
            **dict(zip(EXIT_COLUMNS, r.exits, strict=True)),
        }
        for (day, table, player), r in summary.players.items()
    ]
    if rows:
        session.execute(sa.insert(FairplayPlayerDay), rows)
    rows = [
        {
            "day": day,
            "table_id": table,
            "first": first,
            "second": second,
            "faced": r.faced,
            "useful": r.useful,
            "gain": r.gain,
            "together": r.together,
            "strong": r.strong,
            "strong_drops": r.strong_drops,
            **dict(zip(EXIT_COLUMNS, r.exits, strict=True)),
        }
        for (day, table, first, second), r in summary.pairs.items()
    ]
    if rows:
        session.execute(sa.insert(FairplayPairDay), rows)
    rows = [{"day": d, "table_id": t, "games": n} for (d, t), n in summary.tables.items()]
    if rows:
        session.execute(sa.insert(FairplayTableDay), rows)
    rows = [
        {
            "day": day,
            "table_id": table,
            "signal": e.signal,
            "first": e.first,
            "second": e.second,
            "game_id": e.game_id,
            "step": e.step,
            "weight": e.weight,
            "note": e.note[:200],
        }
        for (day, table, _signal, _first, _second), kept in summary.evidence.items()
        for e in kept
    ]
    if rows:
        session.execute(sa.insert(FairplayEvidence), rows)


def _timing_columns(timing: dict[str, list[float]]) -> dict[str, float]:
    columns = {}
    for kind, names in TIMING_COLUMNS.items():
        cell = timing.get(kind, (0, 0.0, 0.0))
        columns.update(zip(names, (int(cell[0]), float(cell[1]), float(cell[2])), strict=True))
    return columns
