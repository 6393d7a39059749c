"""The fair-play catch-up at scale: counting in worker processes writes the same rows as one
process, each calendar month's review is kept and read back as worked out, and a kept review
is not used once games of its period were counted after it (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
import math
from dataclasses import astuple
from functools import cache
from pathlib import Path

import pytest
import sqlalchemy as sa
from fairplay_support import cheating_records
from sqlalchemy.orm import Session

from replays.fairplay import projection
from replays.fairplay.tables import (
    FairplayEvidence,
    FairplayGame,
    FairplayPairDay,
    FairplayPlayerDay,
    FairplayReview,
    FairplayTableDay,
)

MARCH = ("2025-03-01", "2025-03-31")


@cache
def records() -> tuple[dict, ...]:
    return tuple(cheating_records())


def _store(url: str, chosen) -> object:
    from replays.simulation import store_games
    from replays.store.application import Ledger
    from replays.store.schema import migrate

    migrate(url)
    store_games(list(chosen), url)
    return Ledger(url, env={"CREATE_TABLE": "no"})


def _rows(url: str) -> dict[str, list[tuple]]:
    from replays.store.db import engine_for

    kept = {}
    with engine_for(url).connect() as connection:
        for model in (FairplayPlayerDay, FairplayPairDay, FairplayTableDay, FairplayGame):
            columns = list(model.__table__.columns)
            kept[model.__tablename__] = sorted(
                tuple(row) for row in connection.execute(sa.select(*columns))
            )
        e = FairplayEvidence
        kept["evidence"] = sorted(
            tuple(row)
            for row in connection.execute(
                sa.select(e.day, e.table_id, e.signal, e.first, e.second, e.game_id, e.step)
            )
        )
    return kept


def test_workers_count_the_rows_one_process_counts(database_url, monkeypatch):
    from domain.rummy13 import suit_tables

    ledger = _store(database_url, records()[:70])
    monkeypatch.setattr(suit_tables, "_PACKED_WILD", None)  # not read yet in this process
    assert projection.catch_up(ledger, database_url, jobs=2) == 70
    # Read by this process before its workers forked (once, not once a worker).
    assert suit_tables._PACKED_WILD is not None
    in_workers = _rows(database_url)
    assert in_workers["fairplay_games"] and in_workers["fairplay_pair_days"]
    assert projection.rebuild(ledger, database_url) == 70
    assert _rows(database_url) == in_workers
    assert projection.catch_up(ledger, database_url, jobs=2) == 0


def test_the_month_review_is_kept_and_refreshed_as_games_are_counted(database_url):
    from replays.simulation import store_games
    from replays.store.db import engine_for

    ordered = sorted(records(), key=lambda r: r["started_at"])
    early = [r for r in ordered if r["started_at"][:10] <= "2025-03-15"]
    late = [r for r in ordered if r["started_at"][:10] > "2025-03-15"]
    assert early and late
    ledger = _store(database_url, early)
    assert projection.catch_up(ledger, database_url) == len(early)
    engine = engine_for(database_url)
    with Session(engine) as session:
        kept = projection.kept_review(session, *MARCH)
        assert kept is not None
        review, made_at = kept
        assert review.games == len(early) and made_at is not None
        # Read back, it is the review worked out from the tables now: flags, evidence, all.
        assert review.to_dict() == projection.work_out(session, *MARCH).to_dict()
        assert review.flags and all(flag.evidence for flag in review.flags)
        # No other period is kept unless asked for.
        assert session.scalar(sa.select(sa.func.count()).select_from(FairplayReview)) == 1
    # New games stored, not yet counted: the kept review still counts every counted game.
    store_games(late, database_url)
    with Session(engine) as session:
        assert projection.kept_review(session, *MARCH) is not None
    # Counted without refreshing the reviews: the kept one is stale and is not used.
    assert projection.catch_up(ledger, database_url, reviews=False) == len(late)
    with Session(engine) as session:
        assert projection.kept_review(session, *MARCH) is None
    # What a catch-up that counts games does for their months: worked out and kept again.
    projection.store_reviews(engine, ["2025-03"])
    with Session(engine) as session:
        review, _ = projection.kept_review(session, *MARCH)
        assert review.games == len(early) + len(late)
        assert review.to_dict() == projection.work_out(session, *MARCH).to_dict()


@pytest.mark.parametrize(("column", "value"), [("made_at", "zzz"), ("body", "not json{")])
def test_a_kept_review_that_cannot_be_read_is_worked_out_again(database_url, column, value):
    """The kept review is a copy of what the counted rows give: one holding a value of the
    wrong kind (an insider's write) ended `rummy-ledger fairplay` in a traceback. It is
    worked out again from the counted rows: the same review."""
    from click.testing import CliRunner
    from corruption_support import Case, corrupt

    from replays.store.db import engine_for
    from web.cli import main

    ledger = _store(database_url, records()[:30])
    assert projection.catch_up(ledger, database_url) == 30
    args = ["fairplay", "--from", MARCH[0], "--to", MARCH[1], "--json", "--url", database_url]
    before = CliRunner().invoke(main, args)
    assert before.exit_code == 0, before.output
    engine = engine_for(database_url)
    with engine.begin() as connection:
        key = connection.execute(sa.select(FairplayReview.start, FairplayReview.end)).one()
        if connection.dialect.name == "sqlite":
            row = connection.execute(sa.text("SELECT rowid FROM fairplay_reviews")).scalar_one()
        else:
            row = {"start": key.start, "end": key.end, "table_id": "", "fdr": projection.FDR}
        corrupt(connection, Case("fairplay_reviews", column, value, True), row)
    after = CliRunner().invoke(main, args)
    assert after.exit_code == 0, after.output
    assert json.loads(after.stdout) == json.loads(before.stdout)
    with Session(engine) as session:
        assert projection.kept_review(session, *MARCH) is None  # unreadable: not used


def test_month_period_is_the_calendar_month():
    assert projection.month_period("2024-02") == ("2024-02-01", "2024-02-29")
    assert projection.month_period("2025-12") == ("2025-12-01", "2025-12-31")


def test_the_command_counts_in_workers_and_reviews_the_kept_month(database_url):
    import json

    from click.testing import CliRunner

    from replays.store.db import engine_for
    from web.cli import main

    _store(database_url, records()[:50])
    args = ["fairplay", "--from", MARCH[0], "--to", MARCH[1], "--url", database_url, "--json"]
    run = CliRunner().invoke(main, [*args, "--jobs", "2"])
    assert run.exit_code == 0, run.output
    shown = json.loads(run.output)
    assert shown["games"] == 50
    with Session(engine_for(database_url)) as session:
        assert projection.kept_review(session, *MARCH) is not None
        assert shown == projection.work_out(session, *MARCH).to_dict()
    # Another period (and another FDR) is worked out from the sums, not the month's review.
    run = CliRunner().invoke(main, [*args[:2], "2025-03-02", *args[3:], "--fdr", "0.2"])
    assert run.exit_code == 0, run.output
    other = json.loads(run.output)
    assert (other["from"], other["fdr"]) == ("2025-03-02", 0.2)
    bad = CliRunner().invoke(main, [*args, "--jobs", "-1"])
    assert bad.exit_code == 2 and "Traceback" not in bad.output


def test_a_game_the_walk_cannot_follow_is_a_finding_and_the_rest_are_counted(
    database_url, monkeypatch
):
    """A game whose record the walk cannot follow never stops the catch-up (in this process
    or in workers): its finding names the game and the move, it is recorded as counted with
    nothing in it, and every other game is counted as it would be without it."""
    from replays.fairplay import facts as walk

    chosen = records()[:30]
    victim = chosen[7]["game_id"]
    ledger = _store(database_url, chosen)
    assert projection.catch_up(ledger, database_url) == 30
    whole = _rows(database_url)
    follow = walk._walk

    def stumbling(facts, part, *rest):
        if facts.game_id == victim:
            # The deal's open card picked twice: the second finds the open pile empty.
            player = part["moves"][0]["player"]
            pick = {"type": "pick", "from": "open", "player": player, "card": part["deal"]["open"]}
            part = {**part, "moves": [pick, pick]}
        return follow(facts, part, *rest)

    monkeypatch.setattr(walk, "_walk", stumbling)
    for jobs in (1, 2):
        findings = []
        assert projection.rebuild(ledger, database_url, jobs=jobs, skipped=findings.append) == 29
        assert [(f.game_id, f.what.split(" (")[0]) for f in findings] == [
            (victim, "an open pick from an empty pile")
        ]
        kept = _rows(database_url)
        assert kept["fairplay_games"] == whole["fairplay_games"]  # the victim too: not again
        assert kept["fairplay_player_days"] != whole["fairplay_player_days"]
        assert projection.catch_up(ledger, database_url, jobs=jobs, skipped=findings.append) == 0
        assert len(findings) == 1
    monkeypatch.setattr(walk, "_walk", follow)
    assert projection.rebuild(ledger, database_url) == 30
    assert _rows(database_url) == whole


@pytest.mark.parametrize("trim_chunk", [500, 1])
def test_games_of_days_already_counted_are_added_to_their_rows(
    database_url, monkeypatch, trim_chunk
):
    """A catch-up whose games fall on days already counted adds its sums to the kept rows and
    keeps each subject's heaviest evidence: the rows are what ``Summary.add`` makes of the
    two batches, every column of every row (the crowded subjects trimmed in one statement,
    and one a statement)."""
    monkeypatch.setattr(projection, "TRIM_CHUNK", trim_chunk)
    from replays.fairplay.summary import summarise
    from replays.simulation import store_games

    ordered = sorted(records()[:80], key=lambda r: (r["started_at"], r["game_id"]))
    first, second = ordered[::2], ordered[1::2]
    assert {r["started_at"][:10] for r in first} & {r["started_at"][:10] for r in second}
    ledger = _store(database_url, first)
    assert projection.catch_up(ledger, database_url, reviews=False) == len(first)
    store_games(second, database_url)
    assert projection.catch_up(ledger, database_url, reviews=False) == len(second)
    expected = summarise(first)
    expected.add(summarise(second))
    from replays.store.db import engine_for

    with Session(engine_for(database_url)) as session:
        kept = projection.load_summary(session, *MARCH)
    assert dict(kept.players) == dict(expected.players)
    assert dict(kept.pairs) == dict(expected.pairs)
    assert dict(kept.tables) == dict(expected.tables)
    assert {key: sorted(map(astuple, rows)) for key, rows in kept.evidence.items()} == {
        key: sorted(map(astuple, rows)) for key, rows in expected.evidence.items() if rows
    }
    # Some subject had more evidence than is kept across the two batches: the trim ran.
    assert any(len(rows) == 5 for rows in kept.evidence.values())


REVIEW_FIXTURE = Path(__file__).parent / "data" / "fairplay_kept_review.json"
WALK_FIXTURE = Path(__file__).parent / "data" / "fairplay_walk_facts.json.gz"


def _close(got, kept) -> bool:
    """The same JSON, floats to 12 significant digits (the sums are the database's)."""
    if isinstance(kept, dict):
        return (
            isinstance(got, dict)
            and got.keys() == kept.keys()
            and all(_close(got[key], kept[key]) for key in kept)
        )
    if isinstance(kept, list):
        return (
            isinstance(got, list)
            and len(got) == len(kept)
            and all(_close(a, b) for a, b in zip(got, kept, strict=True))
        )
    if isinstance(kept, float):
        return isinstance(got, float | int) and math.isclose(got, kept, rel_tol=1e-12)
    return got == kept


def test_the_kept_reviews_are_those_counted_before_the_counting_was_made_cheaper(database_url):
    """Flags, statistics and evidence moves of the test store's month and of nine of its days
    (FDR 0.5: many flags) as the catch-up kept them before its cost was cut (issue 32;
    ``tests/data/fairplay_kept_review.json``, written by commit 28c5c7e): a cheaper count
    (the facts sent as tuples, evidence that could not be kept never made, rows copied as
    tuples) must keep the same rows."""
    from replays.store.db import engine_for

    ledger = _store(database_url, records())
    assert projection.catch_up(ledger, database_url, jobs=2, reviews=False) == len(records())
    kept = json.loads(REVIEW_FIXTURE.read_text(encoding="utf-8"))
    periods = {"month": (*MARCH, None, 0.5), "days": ("2025-03-04", "2025-03-12", None, 0.5)}
    with Session(engine_for(database_url)) as session:
        for name, period in periods.items():
            got = json.loads(json.dumps(projection.work_out(session, *period).to_dict()))
            assert got["flags"], name
            assert _close(got, kept[name]), name


ROWS_FIXTURE = Path(__file__).parent / "data" / "fairplay_kept_rows.json.gz"


def test_every_kept_row_is_the_one_counted_before_the_counting_was_made_cheaper(database_url):
    """Every row the catch-up keeps (the sums of players, pairs and tables, the games, and the
    evidence with its weight and note) for the 40 games of ``tests/data/
    fairplay_walk_facts.json.gz`` (every 13-card variant, each kind of cheat at strength 1.0),
    as commit 5bb29d5 kept them (``tests/data/fairplay_kept_rows.json.gz``): a walk that asks
    the solver less, or adds up more cheaply, must not move one."""
    import gzip

    from replays.store.db import engine_for

    games = json.loads(gzip.decompress(WALK_FIXTURE.read_bytes()))
    ledger = _store(database_url, [game["record"] for game in games])
    assert projection.catch_up(ledger, database_url, jobs=2, reviews=False) == len(games)
    got = {}
    with engine_for(database_url).connect() as connection:
        for model in (FairplayPlayerDay, FairplayPairDay, FairplayTableDay, FairplayGame):
            columns = model.__table__.columns
            if model is FairplayTableDay:
                # The fixture's columns; the picking counts kept since (0019) are the
                # player rows' added up, checked below.
                columns = (columns.day, columns.table_id, columns.games)
            query = sa.select(*columns)
            got[model.__tablename__] = sorted(list(row) for row in connection.execute(query))
        t, p = FairplayTableDay, FairplayPlayerDay
        picking = sa.select(p.day, p.table_id, sa.func.sum(p.faced), sa.func.sum(p.useful))
        assert sorted(
            tuple(row)
            for row in connection.execute(sa.select(t.day, t.table_id, t.faced, t.useful))
        ) == sorted(tuple(row) for row in connection.execute(picking.group_by(p.day, p.table_id)))
        e = FairplayEvidence
        query = sa.select(
            e.day, e.table_id, e.signal, e.first, e.second, e.game_id, e.step, e.weight, e.note
        )
        got["fairplay_evidence"] = sorted(list(row) for row in connection.execute(query))
    kept = json.loads(gzip.decompress(ROWS_FIXTURE.read_bytes()))
    assert {name: len(rows) for name, rows in got.items()} == {
        name: len(rows) for name, rows in kept.items()
    }
    assert all(kept.values())  # every table holds rows: each kind of count is compared
    for name, rows in kept.items():
        assert got[name] == rows, name
