"""Period reports total Pool and Deals matches: prize pools, rejoin fees, split shares and
fees, each from the ledger kinds the family posts (``Variant.entry_kinds``), on SQLite and
PostgreSQL."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal

from click.testing import CliRunner

from domain.pooldeals.records import parse_match_record
from replays.readmodels.reports import PeriodFilter, period_report
from replays.simulation import Floor, Simulation, store_games
from replays.store.db import engine_for
from web.cli import main

MARCH = PeriodFilter(date(2025, 3, 1), date(2025, 3, 31))


def matches() -> list[dict]:
    pool = [Simulation(Floor(seed=5, variants=("pool",))).game(i) for i in (0, 1, 4, 9)]
    deals = [Simulation(Floor(seed=5, variants=("deals",))).game(i) for i in (0, 14)]
    return pool + deals


def expected(records: list[dict]) -> dict[str, tuple[Decimal, Decimal]]:
    """Each kind's (debits, credits) worked out from the records themselves, rule by rule:
    the first entry fees, a winner's prize and the fee are the settlement's; each rejoin's
    fee and each split share are kinds of their own."""
    out: dict[str, list[Decimal]] = {}

    def add(kind, debit="0", credit="0"):
        line = out.setdefault(kind, [Decimal("0.00"), Decimal("0.00")])
        line[0] += Decimal(debit)
        line[1] += Decimal(credit)

    for record in records:
        match = parse_match_record(record).build()
        fee = match.config.entry_fee
        add("settlement", debit=fee * len(match.players), credit=match.settlement["fee"])
        rejoins = sum(len(d.get("rejoins", ())) for d in record["deals"])
        if rejoins:
            add("rejoin_fee", debit=fee * rejoins)
        payouts = sum(Decimal(v) for v in match.settlement["payouts"].values())
        add("split" if "split" in record else "settlement", credit=payouts)
    return {kind: (d, c) for kind, (d, c) in out.items()}


def test_the_period_report_totals_prize_pools_rejoin_fees_splits_and_fees(database_url):
    from replays.store.schema import migrate

    records = matches()
    assert any("split" in r for r in records)
    assert any(d.get("rejoins") for r in records if r["variant"] == "pool" for d in r["deals"])
    migrate(database_url)
    summary = store_games(records, database_url)
    assert (summary.stored, summary.rejected) == (len(records), [])
    with engine_for(database_url).connect() as connection:
        report = period_report(connection, MARCH)
    assert report.reconciliation.balanced and not report.discrepancies, report.discrepancies
    got = {k.kind: (k.debits, k.credits) for k in report.by_kind}
    assert got == expected(records)
    # Entry and rejoin fees make the prize pools (the gross); prizes, shares and fees pay
    # them out.
    paid_in = sum(d for d, _ in got.values())
    paid_out = sum(c for _, c in got.values())
    assert paid_in == paid_out == report.totals.gross
    assert report.totals.fees == sum(
        Decimal(parse_match_record(r).build().settlement["fee"]) for r in records
    )
    as_json = {k["kind"]: k for k in report.to_dict()["by_kind"]}
    assert Decimal(as_json["rejoin_fee"]["debits"]) == expected(records)["rejoin_fee"][0]


def test_report_command_and_page_list_the_kinds(sqlite_url):
    from auth_support import signed_in

    from replays.store.schema import migrate
    from web import create_app

    migrate(sqlite_url)
    records = matches()
    store_games(records, sqlite_url)
    runner = CliRunner()
    period = ["report", "--from", "2025-03-01", "--to", "2025-03-31"]
    table = runner.invoke(main, period)
    assert table.exit_code == 0, table.output
    assert "Ledger entries by kind" in table.output
    for kind in ("settlement", "rejoin_fee", "split"):
        assert kind in table.output, kind
    data = json.loads(runner.invoke(main, [*period, "--format", "json"]).output)
    rejoin = next(k for k in data["by_kind"] if k["kind"] == "rejoin_fee")
    assert Decimal(rejoin["debits"]) == expected(records)["rejoin_fee"][0]
    csv_text = runner.invoke(main, [*period, "--format", "csv"]).output
    assert "kind,rejoin_fee," in csv_text and "kind,split," in csv_text
    client = signed_in(create_app({"DATABASE_URL": sqlite_url, "TESTING": True}))
    page = client.get("/reports?from=2025-03-01&to=2025-03-31").get_data(as_text=True)
    assert "Ledger entries by kind" in page
    assert 'data-kind="rejoin_fee"' in page and 'data-kind="split"' in page
