"""``/reports``: the period report as a page, with its downloads, for auditors and admins.

The figures are the report's own (replays.readmodels.reports, tested in test_reports.py); these tests
check the page shows them, links each discrepancy to its audit, answers bad periods in
words, and that the downloads carry the same numbers.
"""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from auth_support import signed_in
from web_support import MISREPORTED, load_games

from replays.readmodels.reports import PeriodFilter, period_report
from replays.store.db import engine_for
from web import create_app

PERIOD = "from=2025-03-01&to=2025-03-31"


@pytest.fixture
def site(database_url):
    load_games(database_url)
    return create_app({"DATABASE_URL": database_url, "TESTING": True})


def _expected(url):
    from datetime import date

    with engine_for(url).connect() as connection:
        return period_report(connection, PeriodFilter(date(2025, 3, 1), date(2025, 3, 31)))


def test_the_page_shows_the_period_totals_reconciliation_and_chart(site):
    expected = _expected(site.config["DATABASE_URL"])
    client = signed_in(site, "auditor")
    response = client.get(f"/reports?{PERIOD}")
    html = response.get_data(as_text=True)
    assert response.status_code == 200
    assert f'<strong class="total-games">{expected.totals.games}</strong>' in html
    assert f'<strong class="total-gross">{expected.totals.gross:,.2f}</strong>' in html
    assert "Reconciled: debits" in html and expected.reconciliation.balanced
    assert 'class="chart-svg period-chart"' in html
    for line in expected.by_day:
        assert f"{line.day.isoformat()}: gross {line.totals.gross:.2f}" in html
    assert '<table class="by-variant">' in html and ">points</th>" in html and ">raise</th>" in html
    # The period's integrity answer: a place the page's script fills from its own URL, and
    # that URL's answer (or the page with the answer in it, for a browser without script).
    assert 'data-status="pending"' in html
    part = client.get(f"/reports/integrity?{PERIOD}").get_data(as_text=True)
    assert 'class="verdict period-verified' in part and 'data-status="pending"' not in part
    inline = client.get(f"/reports?{PERIOD}&integrity=1").get_data(as_text=True)
    assert 'data-status="pending"' not in inline and 'class="verdict period-verified' in inline


def test_each_discrepancy_links_to_its_audit(site):
    client = signed_in(site, "admin")
    html = client.get(f"/reports?{PERIOD}").get_data(as_text=True)
    assert f'<a href="/games/{MISREPORTED}/audit">{MISREPORTED}</a>' in html
    assert 'class="discrepancy"' in html


def test_filters_narrow_the_report(site):
    client = signed_in(site, "auditor")
    html = client.get(f"/reports?{PERIOD}&table=T7").get_data(as_text=True)
    tables = re.findall(r'<table class="by-table">.*?</table>', html, re.S)[0]
    assert ">T7</th>" in tables and ">T9</th>" not in tables
    empty = client.get("/reports?from=2024-01-01&to=2024-01-31").get_data(as_text=True)
    assert "No game was settled in this period" in empty


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("from=March&to=2025-03-31", "'from' must be a day written YYYY-MM-DD, not 'March'"),
        ("from=2025-03-31&to=2025-03-01", "'to' (2025-03-01) is before 'from' (2025-03-31)"),
    ],
)
def test_a_bad_period_is_refused_in_words(site, query, words):
    client = signed_in(site, "auditor")
    response = client.get(f"/reports?{query}")
    assert response.status_code == 400
    assert words in response.get_data(as_text=True).replace("&#39;", "'")


def test_the_downloads_carry_the_same_figures(site):
    expected = _expected(site.config["DATABASE_URL"])
    client = signed_in(site, "auditor")
    as_json = client.get(f"/reports.json?{PERIOD}")
    assert as_json.headers["Content-Disposition"].endswith('report-2025-03-01-2025-03-31.json"')
    data = json.loads(as_json.get_data(as_text=True))
    assert data["totals"]["gross"] == str(expected.totals.gross)
    assert {line["variant"] for line in data["by_variant"]} >= {"points", "raise"}
    # One place for the period's verification, in the JSON as in the CSV (issue 30, item 14).
    assert "integrity" not in data
    verification = data["verification"]
    assert verification["games_checked"] >= expected.totals.games
    assert verification["status"] in ("verified", "not_checkpointed", "broken", "unknown")
    as_csv = client.get(f"/reports.csv?{PERIOD}")
    rows = list(csv.DictReader(io.StringIO(as_csv.get_data(as_text=True))))
    total = next(row for row in rows if row["section"] == "total")
    assert total["gross"] == str(expected.totals.gross)
    assert any(row["section"] == "variant" for row in rows)
    assert any(row["section"] == "discrepancy" and row["key"] == MISREPORTED for row in rows)
    summary = [row for row in rows if row["section"] == "verification" and row["key"] == "period"]
    assert len(summary) == 1
    assert summary[0]["kind"] == verification["status"]
    assert summary[0]["games"] == str(verification["games_checked"])


def test_the_report_link_is_shown_to_auditors_and_admins_only(site):
    auditor = signed_in(site, "auditor").get("/games").get_data(as_text=True)
    officer = signed_in(site, "dispute_officer").get("/games").get_data(as_text=True)
    assert 'href="/reports"' in auditor
    assert 'href="/reports"' not in officer
