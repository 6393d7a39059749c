"""Period reports: totals, groupings, reconciliation and discrepancies, on both engines.

Rows are written straight into the read-model tables here, so that each check (an
unbalanced ledger, a settlement flagged by the projection...) can be staged exactly;
tests/test_projections.py covers rows produced from real games.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from decimal import Decimal

import pytest
from click.testing import CliRunner

from domain.rummy13.settlement import FEE_ACCOUNT
from replays.readmodels.models import GameRow, LedgerEntryRow, PlayerResultRow
from replays.readmodels.reports import PeriodFilter, ReportError, period_report
from replays.store.db import session_factory
from replays.store.schema import migrate
from web.cli import main

D = Decimal


def _game(session, game_id, day, table, results, *, fee_percent="10", discrepancy=None):
    """A settled game: ``results`` maps player -> (result, points, amount)."""
    gross = sum((D(a) for r, _, a in results.values() if r != "won"), D("0.00"))
    fee = (gross * D(fee_percent) / 100).quantize(D("0.01"))
    winner = next(p for p, (r, _, _) in results.items() if r == "won")
    ended = datetime(day.year, day.month, day.day, 20, 0, tzinfo=UTC)
    session.add(
        GameRow(
            game_id=game_id,
            originator_id=f"00000000-0000-0000-0000-{abs(hash(game_id)) % 10**12:012d}",
            variant="points",
            rules="rummycircle",
            table_id=table,
            currency="INR",
            players=list(results),
            player_count=len(results),
            started_at=ended,
            ended_at=ended,
            ended_on=day,
            point_value=D("1.00"),
            final_point_value=D("1.00"),
            fee_percent=D(fee_percent),
            status="settled",
            round=1,
            moves_count=10,
            version=12,
            winner=winner,
            gross=gross,
            fee=fee,
            net_to_winner=gross - fee,
            settlement_hash="a" * 64,
            recomputed_hash=("b" if discrepancy else "a") * 64,
            discrepancy=bool(discrepancy),
            discrepancy_note=discrepancy,
        )
    )
    session.flush()
    line = 0
    for seat, (player, (result, points, amount)) in enumerate(results.items(), 1):
        session.add(
            PlayerResultRow(
                game_id=game_id,
                player=player,
                seat=seat,
                result=result,
                points=points,
                point_value=D("1.00"),
                amount=D(amount),
            )
        )
        if result != "won":
            line += 1
            session.add(_entry(game_id, line, f"player:{player}", player, debit=amount, day=day))
    session.add(_entry(game_id, line + 1, f"player:{winner}", winner, credit=gross - fee, day=day))
    session.add(_entry(game_id, line + 2, FEE_ACCOUNT, None, credit=fee, day=day))


def _entry(game_id, line, account, player, *, debit="0", credit="0", day, kind="settlement"):
    return LedgerEntryRow(
        game_id=game_id,
        kind=kind,
        line=line,
        account=account,
        player=player,
        debit=D(debit),
        credit=D(credit),
        currency="INR",
        posted_on=day,
    )


@pytest.fixture
def ledger(database_url):
    migrate(database_url)
    Session = session_factory(database_url)
    with Session.begin() as session:
        _game(
            session,
            "G1",
            date(2025, 3, 1),
            "T1",
            {"p1": ("won", 0, "0"), "p2": ("lost", 20, "20.00")},
        )
        _game(
            session,
            "G2",
            date(2025, 3, 1),
            "T2",
            {"p1": ("lost", 30, "30.00"), "p2": ("won", 0, "0"), "p3": ("first_drop", 20, "20.00")},
        )
        _game(
            session,
            "G3",
            date(2025, 3, 2),
            "T1",
            {"p3": ("won", 0, "0"), "p1": ("lost", 5, "5.50")},
        )
        # Outside the period: the day after it ends.
        _game(
            session,
            "G4",
            date(2025, 4, 1),
            "T1",
            {"p1": ("won", 0, "0"), "p2": ("lost", 80, "80.00")},
        )
    return database_url, Session


MARCH = PeriodFilter(date(2025, 3, 1), date(2025, 3, 31))


def _report(Session, f=MARCH):
    with Session() as session:
        return period_report(session, f)


def test_totals_per_table_day_and_player(ledger):
    _, Session = ledger
    report = _report(Session)
    assert report.totals.games == 3
    assert report.totals.gross == D("75.50")  # 20 + 50 + 5.50
    assert report.totals.fees == D("2.00") + D("5.00") + D("0.55")
    assert report.totals.net_paid == report.totals.gross - report.totals.fees
    assert [(t.table, t.totals.games, t.totals.gross) for t in report.by_table] == [
        ("T1", 2, D("25.50")),
        ("T2", 1, D("50.00")),
    ]
    assert [(d.day, d.totals.games) for d in report.by_day] == [
        (date(2025, 3, 1), 2),
        (date(2025, 3, 2), 1),
    ]
    players = {p.player: p for p in report.by_player}
    assert (players["p1"].games, players["p1"].wins, players["p1"].points) == (3, 1, 35)
    assert players["p1"].paid == D("35.50")
    assert players["p1"].received == D("18.00")  # G1: 20 - 2.00 fee
    assert players["p1"].net == D("-17.50")
    assert players["p3"].received == D("4.95")
    assert report.discrepancies == []
    assert report.reconciliation.balanced
    assert report.reconciliation.debits == report.reconciliation.credits == D("75.50")


def test_filters_by_table_player_and_dates(ledger):
    _, Session = ledger
    t1 = _report(Session, PeriodFilter(date(2025, 3, 1), date(2025, 4, 30), table="T1"))
    assert t1.totals.games == 3 and t1.totals.gross == D("105.50")
    p3 = _report(Session, PeriodFilter(date(2025, 3, 1), date(2025, 3, 31), player="p3"))
    assert p3.totals.games == 2
    assert [p.player for p in p3.by_player] == ["p3"]
    one_day = _report(Session, PeriodFilter(date(2025, 3, 2), date(2025, 3, 2)))
    assert one_day.totals.games == 1 and one_day.totals.gross == D("5.50")
    empty = _report(Session, PeriodFilter(date(2024, 1, 1), date(2024, 1, 31)))
    assert empty.totals.games == 0 and empty.totals.gross == D("0.00")
    assert empty.reconciliation.balanced


def test_reversed_period_is_refused():
    with pytest.raises(ReportError, match="before --from"):
        PeriodFilter(date(2025, 3, 2), date(2025, 3, 1))


def test_an_unbalanced_game_is_listed_and_the_period_does_not_reconcile(ledger):
    _, Session = ledger
    with Session.begin() as session:
        session.add(_entry("G2", 9, "player:p9", "p9", debit="0.01", day=date(2025, 3, 1)))
    report = _report(Session)
    kinds = {(d.game_id, d.kind) for d in report.discrepancies}
    assert ("G2", "unbalanced") in kinds
    assert ("G2", "ledger_differs") in kinds  # settlement debits no longer equal gross
    assert not report.reconciliation.balanced
    assert report.reconciliation.unbalanced_games == 1
    assert report.reconciliation.debits - report.reconciliation.credits == D("0.01")


def test_a_balanced_adjustment_is_not_a_discrepancy(ledger):
    _, Session = ledger
    with Session.begin() as session:
        for line, (account, player, debit, credit) in enumerate(
            [("player:p2", "p2", "5.00", "0"), ("player:p1", "p1", "0", "5.00")], 10
        ):
            entry = _entry(
                "G2", line, account, player, debit=debit, credit=credit, day=date(2025, 3, 9)
            )
            entry.kind, entry.dispute_id = "adjustment", "D-1"
            session.add(entry)
    report = _report(Session)
    assert report.discrepancies == []
    players = {p.player: p for p in report.by_player}
    assert players["p1"].received == D("23.00")


def test_flagged_settlements_and_games_without_entries_are_listed(ledger):
    _, Session = ledger
    with Session.begin() as session:
        _game(
            session,
            "G5",
            date(2025, 3, 3),
            "T2",
            {"p1": ("won", 0, "0"), "p2": ("lost", 10, "10.00")},
            discrepancy="gross: recorded 10.00, recomputed 12.00",
        )
        session.query(LedgerEntryRow).filter_by(game_id="G3").delete()
    report = _report(Session)
    assert [(d.game_id, d.kind) for d in report.discrepancies] == [
        ("G3", "ledger_differs"),
        ("G5", "settlement_differs"),
    ]
    assert "recomputed 12.00" in report.discrepancies[1].detail
    assert report.discrepancies[0].detail == "no ledger entries"


def test_cli_formats(ledger, monkeypatch):
    url, _ = ledger
    runner = CliRunner()
    args = ["report", "--from", "2025-03-01", "--to", "2025-03-31", "--url", url]
    out = runner.invoke(main, [*args, "--format", "json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["totals"] == {"games": 3, "gross": "75.50", "fees": "7.55", "net_paid": "67.95"}
    assert data["reconciliation"]["balanced"] is True

    out = runner.invoke(main, [*args, "--format", "csv", "--table", "T2"])
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    assert lines[0].startswith("section,key,games,gross")
    assert lines[1].startswith("total,all,1,50.00,5.00,45.00")
    assert any(line.startswith("player,p3,1,") for line in lines)

    out = runner.invoke(main, args)
    assert out.exit_code == 0, out.output
    assert "Per table" in out.stdout and "No discrepancies." in out.stdout
    assert "balanced" in out.stdout


def test_cli_strict_exit_status_and_bad_dates(ledger):
    url, Session = ledger
    with Session.begin() as session:
        session.add(_entry("G1", 9, "player:p9", "p9", credit="1.00", day=date(2025, 3, 1)))
    runner = CliRunner()
    args = ["report", "--from", "2025-03-01", "--to", "2025-03-31", "--url", url]
    out = runner.invoke(main, [*args, "--strict"])
    assert out.exit_code == 3
    assert "G1" in out.stdout and "unbalanced" in out.stdout and "NOT BALANCED" in out.stdout
    out = runner.invoke(
        main, ["report", "--from", "2025-03-31", "--to", "2025-03-01", "--url", url]
    )
    assert out.exit_code == 2 and "before --from" in out.output
    out = runner.invoke(main, ["report", "--from", "March", "--to", "2025-03-01", "--url", url])
    assert out.exit_code == 2 and "March" in out.output


def test_cli_on_an_unmigrated_database(tmp_path):
    out = CliRunner().invoke(
        main,
        [
            "report",
            "--from",
            "2025-03-01",
            "--to",
            "2025-03-31",
            "--url",
            f"sqlite:///{tmp_path}/x.db",
        ],
    )
    assert out.exit_code == 1
    assert "rummy-ledger db upgrade" in out.output
    assert "Traceback" not in out.output


def test_money_and_rates_are_exact_scaled_integers(database_url):
    from replays.readmodels.models import Fixed, Money, Rate

    assert Money.process_bind_param(D("49.70"), None) == 4970
    assert Money.process_result_value(4970, None) == D("49.70")
    assert Rate.process_result_value(Rate.process_bind_param(D("0.075"), None), None) == D("0.075")
    assert Rate.process_result_value(Rate.process_bind_param(D("1.1"), None), None) == D("1.10")
    with pytest.raises(ValueError, match="more than 2 decimal places"):
        Money.process_bind_param(D("1.005"), None)
    assert Fixed(4).process_result_value(125000, None) == D("12.50")
    # Sums in SQL stay exact on SQLite too (its NUMERIC would be a float).
    migrate(database_url)
    Session = session_factory(database_url)
    with Session.begin() as session:
        for n in range(10):
            day = date(2025, 3, 1)
            _game(session, f"M{n}", day, "T", {"a": ("won", 0, "0"), "b": ("lost", 1, "0.10")})
    report = _report(Session, PeriodFilter(date(2025, 3, 1), date(2025, 3, 1)))
    assert report.totals.gross == D("1.00") and report.totals.fees == D("0.10")
