"""A period reviewed from the pairs that may be tested (issue 32): ``load_period`` reads only
the rows of the pairs a month noted as reaching a pair signal's floor
(``fairplay_noted_pair_days``) and the players' sums of their pairs
(``fairplay_partner_days``), and its review is the one worked out from every pair in Python,
for periods inside a month and across two (where a pair may reach a floor that neither month
reaches alone), and for a month counted since its pairs were noted. Counting in batches,
counting at once and the migration from kept rows note the same rows (SQLite and
PostgreSQL)."""

from __future__ import annotations

import math
import re
import threading
import time
from collections import Counter
from dataclasses import replace
from datetime import date, timedelta
from functools import cache

import sqlalchemy as sa
from fairplay_support import cheating_records
from sqlalchemy.orm import Session

from replays.fairplay import projection
from replays.fairplay.facts import Feed, GameFacts, game_facts
from replays.fairplay.signals import player_tests, reaches_floor, review
from replays.fairplay.summary import Summary
from replays.fairplay.tables import (
    FairplayNotedMonth,
    FairplayNotedPairDay,
    FairplayPartnerDay,
)
from replays.store.db import engine_for
from replays.store.schema import migrate

# Two players met only across the end of March: two games each side of it. Neither month
# alone reaches a floor (two games together; three discards faced, one taken to the gain),
# the two together reach seating's and feeding's.
LATE, EARLY = "x-late", "y-early"
TAKER, FEEDER = "a-taker", "z-feeder"


def _boundary_games() -> list[GameFacts]:
    games = []
    for number, day in enumerate(("2025-03-30", "2025-03-31", "2025-04-01", "2025-04-02")):
        feeds = [Feed(LATE, EARLY, number % 2 == 0, 4, 3)]
        if number % 2 == 0:
            feeds.append(Feed(LATE, EARLY, False, 0, 7))
        games.append(GameFacts(f"edge{number}", day, "T-edge", (LATE, EARLY), False, feeds=feeds))
    return games


@cache
def facts() -> tuple[GameFacts, ...]:
    """The simulated month's games moved to 2025-03-15 .. 2025-04-14 (a day a dozen games, in
    their order), and the two players met only across the months' boundary."""
    walked = [f for f in map(game_facts, cheating_records()) if f is not None]
    first = date(2025, 3, 15)
    moved = [
        replace(game, day=(first + timedelta(days=place * 31 // len(walked))).isoformat())
        for place, game in enumerate(walked)
    ]
    return (*moved, *_boundary_games())


def _count(url: str, batches: list[list[GameFacts]]) -> None:
    migrate(url)
    engine = engine_for(url)
    for batch in batches:
        projection.add_facts(engine, [(f.game_id, f.day, f.table, f.packed()) for f in batch])
        projection.note_month_pairs(engine, sorted({f.day[:7] for f in batch}))


def _kept(url: str) -> dict[str, list[tuple]]:
    with engine_for(url).connect() as connection:
        return {
            model.__tablename__: sorted(
                tuple(row) for row in connection.execute(sa.select(*model.__table__.columns))
            )
            for model in (FairplayNotedPairDay, FairplayNotedMonth, FairplayPartnerDay)
        }


def _same(got, expected) -> None:
    rows, direct_rows = got.to_dict(), expected.to_dict()
    for flag in rows["flags"] + direct_rows["flags"]:
        flag["p"] = round(math.log10(flag["p"] or 1e-300), 6)
        flag["q"] = round(flag["q"], 9)
    assert rows == direct_rows


def test_a_period_reviews_from_its_noted_pairs_as_from_every_pair(database_url):
    games = facts()
    # Out of order and in overlapping batches: days counted twice take the merge path.
    _count(database_url, [list(games[1::2]), list(games[::2])])
    direct = Summary()
    for game in games:
        direct.add_game(game)
    one_table = sorted({where for _, where in direct.tables} - {"T-edge"})[0]
    with Session(engine_for(database_url)) as session:
        n = FairplayNotedPairDay
        noted = set(session.execute(sa.select(n.first, n.second)))
        assert noted and (LATE, EARLY) not in noted and (EARLY, LATE) not in noted
        periods = [
            ("2025-03-16", "2025-03-30", None, 0.05),  # inside March: its noted pairs
            ("2025-03-20", "2025-04-05", None, 0.05),  # across the boundary
            ("2025-03-01", "2025-04-30", None, 0.5),
            ("2025-03-29", "2025-04-02", "T-edge", 0.5),
            ("2025-04-02", "2025-04-12", one_table, 0.5),
        ]
        seen_edge = False
        for start, end, table, fdr in periods:
            mine = projection.load_period(session, start, end, table)
            theirs = direct.period(start, end, table)
            tested = {key for key, row in theirs.pairs.items() if reaches_floor(row)}
            assert tested <= mine.pairs.keys() <= theirs.pairs.keys()
            if (LATE, EARLY) in tested:
                seen_edge = True
                assert mine.pairs[(LATE, EARLY)].together == 4
                assert mine.pairs[(LATE, EARLY)].faced == 6
            from_sql = review(mine, start, end, table=table, fdr=fdr)
            projection.fill_evidence(session, from_sql, table)
            from_records = review(theirs, start, end, table=table, fdr=fdr)
            assert from_sql.tested == from_records.tested > 0
            if fdr == 0.5 and table is None:
                assert from_sql.flags
            _same(from_sql, from_records)
            # The kept-table way (every pair read back, added up in Python) agrees too.
            kept = projection.load_summary(session, start, end, table)
            _same(review(kept, start, end, table=table, fdr=fdr), from_records)
        assert seen_edge, "the pair met across the boundary is tested"
        edge = [f for f in review(direct, "2025-03-29", "2025-04-02").flags if LATE in f.players]
        assert {f.signal for f in edge} <= {"seating", "feeding"}


def _fed_games() -> list[GameFacts]:
    """The month's games and two in which one player takes every discard of another."""
    table = Counter(game.table for game in facts()).most_common(1)[0][0]
    feeds = [Feed(FEEDER, TAKER, True, 9, step) for step in (4, 8, 12)]
    return [
        *facts(),
        *(
            GameFacts(f"fed{day}", f"2025-03-{day}", table, (FEEDER, TAKER), False, feeds=feeds)
            for day in (20, 21)
        ),
    ]


def test_a_flag_shows_the_games_together_of_its_reverse_read_for_it_alone(database_url):
    # A period inside a month reads only the pairs that reach a floor; the games together a
    # flag shows of a pair that reaches none (kept on the pair in name order) are asked for
    # once the flags are known: as every pair's sums give them, and whatever an insider
    # wrote in that pair's rows (a negative sum), none once its rows are gone.
    # Two games in which one player takes every discard of another: a feeding flag on a pair
    # whose reverse (in name order) had those two games together and reaches no floor.
    games = _fed_games()
    _count(database_url, [games])
    direct = Summary()
    for game in games:
        direct.add_game(game)
    start, end, fdr = "2025-03-16", "2025-03-30", 0.5
    theirs = direct.period(start, end)
    engine = engine_for(database_url)
    asked: list[tuple[str, str]] = []

    def looked_at():
        with Session(engine) as session:
            period = projection.load_period(session, start, end)
            ask = period.together_of
            assert ask is not None
            period.together_of = lambda wanted: asked.extend(wanted) or ask(wanted)
            result = review(period, start, end, fdr=fdr)
            projection.fill_evidence(session, result)
        return result

    _same(looked_at(), review(theirs, start, end, fdr=fdr))
    assert asked and not any(reaches_floor(theirs.pairs[pair]) for pair in asked)
    first, second = (TAKER, FEEDER)
    assert (first, second) in asked and theirs.pairs[first, second].together == 2

    def shown() -> set:
        return {
            flag.games
            for flag in looked_at().flags
            if flag.signal != "seating" and sorted(flag.players) == [first, second]
        }

    n = FairplayNotedPairDay
    rows = sa.and_(n.first == first, n.second == second, n.day >= start, n.day <= end)
    assert shown() == {theirs.pairs[first, second].together}
    with engine.begin() as connection:
        count = connection.execute(sa.select(sa.func.count()).where(rows)).scalar_one()
        connection.execute(sa.update(n).where(rows).values(together=-1))
    assert shown() == {-count}
    with engine.begin() as connection:
        connection.execute(sa.delete(n).where(rows))
    assert shown() == {0}


def test_the_one_player_signals_are_tested_before_the_pairs_are_read(database_url):
    # The page tests the players while the database still sums the pairs: the same review.
    _count(database_url, [list(facts())])
    start, end = "2025-03-16", "2025-03-30"
    with Session(engine_for(database_url)) as session:
        seen = []
        period = projection.load_period(
            session, start, end, meanwhile=lambda p: seen.append((len(p.players), len(p.pairs)))
        )
        assert seen == [(len(period.players), 0)] and period.pairs
        whole = review(period, start, end, fdr=0.5)
        tested = player_tests(period.players)
        assert whole.flags and review(period, start, end, fdr=0.5, players_tested=tested) == whole
        untested = review(period, start, end, fdr=0.5, players_tested=([], [], []))
        assert untested.tested == whole.tested - sum(map(len, tested)) < whole.tested
        projection.fill_evidence(session, whole)
        _same(projection.work_out(session, start, end, fdr=0.5), whole)


def test_two_first_looks_at_once_both_answer_and_one_review_is_kept(database_url, monkeypatch):
    # Two staff open the same custom period at once: both work out its review, and the second
    # to keep it meets the first's row, on PostgreSQL at its INSERT (it waits there for the
    # other's commit), which once answered 500. Both answer; the period keeps one review.
    from web import create_app
    from web.views import fairplay as page

    _count(database_url, [list(facts())])
    start, end = "2025-03-16", "2025-03-30"
    app = create_app({"DATABASE_URL": database_url, "TESTING": True})
    worked_out, others = page.work_out, []

    def another_look_keeps_it_first(session, *period, **options):
        result = worked_out(session, *period, **options)
        kept = threading.Event()

        def other_look() -> None:
            with Session(engine_for(database_url)) as theirs:
                projection.keep_review(theirs, result)
                kept.set()
                time.sleep(0.5)  # this look's DELETE and INSERT now wait on the row
                theirs.commit()

        others.append(threading.Thread(target=other_look))
        others[-1].start()
        assert kept.wait(30)
        return result

    monkeypatch.setattr(page, "work_out", another_look_keeps_it_first)
    with app.test_request_context():
        shown = page._review(start, end, None)
    for other in others:
        other.join()
    assert len(others) == 1 and shown.result.flags and not shown.kept
    with Session(engine_for(database_url)) as session:
        kept = projection.kept_review(session, start, end, None)
    assert kept is not None and kept[0] == shown.result


def test_a_month_counted_since_its_pairs_were_noted_is_read_whole(database_url):
    """A catch-up stopped after counting a batch and before noting its month's pairs: the
    month's noted rows are not current, and its periods read every pair instead."""
    games = facts()
    march = [game for game in games if game.day[:7] == "2025-03"]
    _count(database_url, [march[: len(march) // 2]])
    later = march[len(march) // 2 :]
    projection.add_facts(
        engine_for(database_url), [(f.game_id, f.day, f.table, f.packed()) for f in later]
    )
    direct = Summary()
    for game in march:
        direct.add_game(game)
    with Session(engine_for(database_url)) as session:
        for start, end in (("2025-03-16", "2025-03-30"), ("2025-03-01", "2025-03-31")):
            mine = projection.load_period(session, start, end)
            theirs = direct.period(start, end)
            tested = {key for key, row in theirs.pairs.items() if reaches_floor(row)}
            assert tested <= mine.pairs.keys()
            from_sql = review(mine, start, end, fdr=0.5)
            projection.fill_evidence(session, from_sql)
            assert from_sql.flags
            _same(from_sql, review(theirs, start, end, fdr=0.5))


def test_counting_at_once_and_the_migration_note_the_pairs_counting_in_batches_does(
    database_url, second_url
):
    from alembic import command

    from replays.store.schema import alembic_config

    games = list(facts())
    _count(database_url, [games[start : start + 50] for start in range(0, len(games), 50)])
    _count(second_url, [games])
    batches = _kept(database_url)
    assert all(batches.values())
    assert _kept(second_url) == batches
    # The migration fills both tables from the kept pair rows as counting does.
    config = alembic_config(database_url)
    for revision, step in (("0015", command.downgrade), ("head", command.upgrade)):
        with engine_for(database_url).begin() as connection:
            config.attributes["connection"] = connection
            step(config, revision)
    assert _kept(database_url) == batches


def test_a_pair_whose_games_together_are_all_null_is_reviewed_by_the_command(
    database_url, monkeypatch
):
    # An insider drops the column's NOT NULL and blanks a flagged pair's games together: the
    # command still reviews the period (once a TypeError on PostgreSQL), as the page does.
    import json

    from click.testing import CliRunner

    from web.cli import main

    games = _fed_games()
    _count(database_url, [games])
    engine = engine_for(database_url)
    with Session(engine) as session:
        clean = projection.work_out(session, "2025-03-16", "2025-03-30", fdr=0.5)
    assert any({TAKER, FEEDER} <= set(flag.players) for flag in clean.flags)
    n = FairplayNotedPairDay
    with engine.begin() as connection:
        name = n.__tablename__
        if connection.dialect.name == "postgresql":
            connection.execute(sa.text(f"ALTER TABLE {name} ALTER COLUMN together DROP NOT NULL"))
        else:  # SQLite alters no constraint: the table is made again without it
            sql = connection.execute(
                sa.text("SELECT sql FROM sqlite_master WHERE name = :t"), {"t": name}
            ).scalar_one()
            loose = sql.replace("together INTEGER NOT NULL", "together INTEGER")
            assert loose != sql
            connection.execute(sa.text(f"ALTER TABLE {name} RENAME TO kept"))
            connection.execute(sa.text(loose))
            connection.execute(sa.text(f"INSERT INTO {name} SELECT * FROM kept"))
            connection.execute(sa.text("DROP TABLE kept"))
        pair = sa.or_(
            sa.and_(n.first == TAKER, n.second == FEEDER),
            sa.and_(n.first == FEEDER, n.second == TAKER),
        )
        blanked = connection.execute(sa.update(n).where(pair).values(together=None)).rowcount
    assert blanked
    args = ["fairplay", "--from", "2025-03-16", "--to", "2025-03-30", "--url", database_url]
    for extra in ([], ["--json"], ["--fdr", "0.5"]):
        run = CliRunner().invoke(main, [*args, *extra])
        assert run.exit_code == 0, run.output
        assert "Traceback" not in run.output and run.exception is None
        assert "fairplay_noted_pair_days" in run.output  # the rows left out are named
    run = CliRunner().invoke(main, [*args, "--json", "--fdr", "0.5"])
    shown = json.loads(run.stdout)
    assert any("fairplay_noted_pair_days" in doubt for doubt in shown["doubts"])
    # The rest is reviewed: the players' own signals still flag; the feeding flag on the
    # blanked pair is gone with its rows.
    assert shown["flags"] and shown["games"] == clean.games
    assert not any({TAKER, FEEDER} <= set(flag["players"]) for flag in shown["flags"])
    # Thousands of blanked rows are not thousands of lines: the first few, then a count.
    from web.commands import fairplay as command

    monkeypatch.setattr(command, "NAMED_AT_MOST", 3)
    run = CliRunner().invoke(main, [*args, "--json"])
    assert run.exit_code == 0 and run.stderr.count("left out, cannot be read") == 3
    assert (
        json.loads(run.stdout)["doubts"][-1]
        == f"{blanked - 3} more rows cannot be read and are left out"
    )
    # The page draws the same review around them, the rows named in its banner (on
    # PostgreSQL too: its sums on the one connection that hides the rows).
    from auth_support import signed_in

    from replays.access.accounts import DISPUTE_OFFICER
    from web import create_app

    app = create_app({"DATABASE_URL": database_url, "TESTING": True})
    page = signed_in(app, DISPUTE_OFFICER).get("/fairplay?from=2025-03-16&to=2025-03-30")
    html = page.get_data(as_text=True)
    assert page.status_code == 200 and "fairplay_noted_pair_days" in html
    flags = json.loads(CliRunner().invoke(main, [*args, "--json"]).stdout)["flags"]
    shown_keys = re.findall(r'<section class="fairplay-flag" data-key="([^"]+)"', html)
    assert shown_keys and shown_keys == [flag["key"] for flag in flags]
