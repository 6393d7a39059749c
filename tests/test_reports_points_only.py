"""Period reports total the games without stakes (Red 3 today): how many ended in the
period and each player's points, beside (never inside) the money totals."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from click.testing import CliRunner

from replays.readmodels.period_views import by_variant
from replays.readmodels.projections import catch_up
from replays.readmodels.reports import PeriodFilter, period_report
from replays.records.importer import import_lines
from replays.store.application import Ledger
from replays.store.db import session_factory
from replays.store.schema import migrate
from web.cli import main

DATA = Path(__file__).parent / "data"
DAY = date(2025, 3, 1)


def _load(url: str) -> None:
    migrate(url)
    lines = (DATA / "red3_example.jsonl").read_text().splitlines()[:1]
    games = (DATA / "games.jsonl").read_text().splitlines()
    ledger = Ledger(url, env={"CREATE_TABLE": "no"})
    assert import_lines(ledger, lines + games, follow=False).rejected == 0
    catch_up(url, ledger=ledger)


def test_a_period_totals_red3_matches_in_points(database_url):
    _load(database_url)
    with session_factory(database_url)() as session:
        report = period_report(session, PeriodFilter(DAY, DAY))
        (line,) = report.points_only
        assert (line.variant, line.games, line.points) == ("red3", 1, {"p1": 10, "p2": 175})
        # Its points are not money: the money totals count only the games with stakes.
        money = by_variant(session, PeriodFilter(DAY, DAY))
        assert "red3" not in [name for name, _ in money]
        assert report.totals.games == sum(totals.games for _, totals in money)
        assert report.to_dict()["points_only"] == [
            {"variant": "red3", "games": 1, "points": {"p1": 10, "p2": 175}}
        ]
        only_p2 = period_report(session, PeriodFilter(DAY, DAY, player="p2")).points_only
        assert only_p2[0].games == 1
        elsewhere = period_report(session, PeriodFilter(date(2025, 3, 2), date(2025, 3, 2)))
        assert elsewhere.points_only == []


def test_the_report_command_prints_the_points_only_games(database_url):
    _load(database_url)
    args = ["report", "--from", "2025-03-01", "--to", "2025-03-01", "--url", database_url]
    result = CliRunner().invoke(main, args)
    assert "Games without stakes (points only)" in result.output, result.output
    assert "red3" in result.output and "175" in result.output
