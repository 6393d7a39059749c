"""Keeping the fair-play tables current, and reading a period back from them.

:func:`catch_up` counts every ended game not yet counted: it rebuilds each game's record
from its events (``Variant.export``, as ``rummy-ledger export`` does), walks it
(:mod:`.facts`), and adds the counts to the day-and-table slices the batch touches, in one
transaction with the games' ``fairplay_games`` rows. Only the days of the new games are
read and written, so a new day costs that day's games. :func:`load_summary` reads a period
back (days added up by :func:`replays.fairplay.signals.review`).
"""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa
from sqlalchemy.orm import Session

from replays.fairplay.summary import Evidence, PairDay, PlayerDay, Summary, summarise
from replays.fairplay.tables import (
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


def fill_evidence(session, result, table: str | None = None) -> None:
    """Give each flag of ``result`` (a review) its heaviest evidence moves of the period."""
    from replays.fairplay.signals import best_evidence, evidence_subject

    e = FairplayEvidence
    for flag in result.flags:
        signal, first, second = evidence_subject(flag)
        query = sa.select(e).where(
            e.day >= result.start,
            e.day <= result.end,
            e.signal == signal,
            e.first == first,
            e.second == second,
        )
        if table is not None:
            query = query.where(e.table_id == table)
        flag.evidence = best_evidence(
            Evidence(r.signal, r.first, r.second, r.game_id, r.step, r.weight, r.note)
            for r in session.scalars(query)
        )


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
                    {kind: list(cell) for kind, cell in row.timing.items()},
                    list(row.exits),
                )
            )
        elif model is FairplayPairDay:
            summary.pairs[(row.day, row.table_id, row.first, row.second)].add(
                PairDay(row.faced, row.useful, row.gain, row.together, list(row.exits))
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
            "timing": r.timing,
            "exits": r.exits,
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
            "exits": r.exits,
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
