"""Period reports total Pool and Deals matches: prize pools, entry and rejoin fees, prizes,
split shares and fees, each from the ledger lines the family posts (``Variant.entry_kinds``),
beside the 13-card games, on SQLite and PostgreSQL."""

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
    points = list(Simulation(Floor(seed=5, variants=("points",))).games(3))
    return pool + deals + points


def expected(records: list[dict]) -> dict[tuple[str, str], Decimal]:
    """Each kind's total worked out from the records themselves, rule by rule."""
    out: dict[tuple[str, str], Decimal] = {}

    def add(variant, kind, amount):
        out[variant, kind] = out.get((variant, kind), Decimal("0.00")) + Decimal(amount)

    for record in records:
        variant = record["variant"]
        if variant not in ("pool", "deals"):
            continue
        match = parse_match_record(record).build()
        fee = match.config.entry_fee
        add(variant, "entry_fee", fee * len(match.players))
        rejoins = sum(len(d.get("rejoins", ())) for d in record["deals"])
        if rejoins:
            add(variant, "rejoin_fee", fee * rejoins)
        payouts = sum(Decimal(v) for v in match.settlement["payouts"].values())
        add(variant, "split_share" if "split" in record else "prize", payouts)
        add(variant, "fee", match.settlement["fee"])
    return out


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
    lines = {(k.variant, k.kind): k for k in report.by_kind}
    want = expected(records)
    got = {
        key: (line.debits if key[1] in ("entry_fee", "rejoin_fee") else line.credits)
        for key, line in lines.items()
        if key[0] in ("pool", "deals")
    }
    assert got == want
    assert lines["pool", "rejoin_fee"].label == "rejoin fees"
    assert lines["pool", "split_share"].label == "split shares"
    assert lines["points", "settlement"].label == "settlement"
    # Entry and rejoin fees make the prize pools; prizes, shares and fees pay them out.
    gross = {v: t.gross for v, t in _by_variant(database_url)}
    for variant in ("pool", "deals"):
        paid_in = sum(line.debits for (var, _), line in lines.items() if var == variant)
        paid_out = sum(line.credits for (var, _), line in lines.items() if var == variant)
        assert paid_in == paid_out == gross[variant]
    as_json = report.to_dict()["by_kind"]
    assert {"variant": "pool", "kind": "rejoin_fee"}.items() <= next(
        k for k in as_json if k["kind"] == "rejoin_fee"
    ).items()


def _by_variant(url):
    from replays.readmodels.period_views import by_variant

    with engine_for(url).connect() as connection:
        return by_variant(connection, MARCH)


def test_report_command_and_page_list_the_kinds(sqlite_url):
    from auth_support import signed_in

    from replays.store.schema import migrate
    from web import create_app

    migrate(sqlite_url)
    records = matches()
    store_games(records, sqlite_url)
    runner = CliRunner()
    table = runner.invoke(main, ["report", "--from", "2025-03-01", "--to", "2025-03-31"])
    assert table.exit_code == 0, table.output
    assert "Settlement lines by kind" in table.output
    for words in ("entry fees", "rejoin fees", "split shares", "prizes to winners"):
        assert words in table.output, words
    data = json.loads(
        runner.invoke(
            main, ["report", "--from", "2025-03-01", "--to", "2025-03-31", "--format", "json"]
        ).output
    )
    rejoin = next(k for k in data["by_kind"] if k["kind"] == "rejoin_fee")
    assert Decimal(rejoin["debits"]) == expected(records)["pool", "rejoin_fee"]
    csv_text = runner.invoke(
        main, ["report", "--from", "2025-03-01", "--to", "2025-03-31", "--format", "csv"]
    ).output
    assert "kind,pool," in csv_text and "rejoin_fee,rejoin fees" in csv_text
    client = signed_in(create_app({"DATABASE_URL": sqlite_url, "TESTING": True}))
    page = client.get("/reports?from=2025-03-01&to=2025-03-31").get_data(as_text=True)
    assert "Settlement lines by kind" in page and 'data-kind="rejoin_fee"' in page
