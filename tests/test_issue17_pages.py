"""Defects seen in a browser (issue 17), each pinned through Flask's test client on a real
ledger: the HTML a signed-in user of each role gets."""

from __future__ import annotations

import copy
import json
import re
from decimal import Decimal
from itertools import pairwise
from pathlib import Path

import pytest
from auth_support import csrf_token, signed_in
from web_support import load_games, sample_records

from replays.access import access_log
from web import charts, create_app

DATA = Path(__file__).parent / "data"
RED3 = "R3-EXAMPLE"
WRONG_REPORT = "seed-points-201"  # seed-points-200 with the operator's points for p2 wrong


def _records() -> list[dict]:
    records = sample_records()
    wrong = copy.deepcopy(next(r for r in records if r["game_id"] == "seed-points-200"))
    wrong["game_id"] = WRONG_REPORT
    wrong["reported"] = dict(wrong["reported"], points=dict(wrong["reported"]["points"], p2=62))
    red3 = json.loads((DATA / "red3_example.jsonl").read_text().splitlines()[0])
    return [*records, wrong, red3]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('issue17') / 'ledger.sqlite3'}"
    load_games(url, _records())
    return create_app({"DATABASE_URL": url, "TESTING": True})


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html)).replace("&#39;", "'")


def rows_of(html: str, table_class: str) -> list[str]:
    found = re.search(rf'<table class="[^"]*\b{table_class}\b[^"]*">(.*?)</table>', html, re.S)
    assert found, table_class
    return re.findall(r"<tr\b.*?</tr>", found.group(1), re.S)


def cells(row: str) -> list[str]:
    return re.findall(r"<t[hd]\b[^>]*>.*?</t[hd]>", row, re.S)


# -- the audit pages ---------------------------------------------------------------------


def test_when_only_the_report_differs_the_mark_is_on_the_reported_figure(site):
    html = signed_in(site, "auditor").get(f"/games/{WRONG_REPORT}/audit").get_data(as_text=True)
    row = next(r for r in rows_of(html, "losers") if ">p2<" in r)
    *_, recorded, reported = cells(row)
    assert "differs" not in recorded, recorded
    assert 'class="num differs"' in reported and "62" in reported


def test_red3_audit_rows_line_up_under_their_headers(site):
    html = signed_in(site, "auditor").get(f"/games/{RED3}/audit").get_data(as_text=True)
    tables = re.findall(r'<table class="audit-grid[^"]*">.*?</table>', html, re.S)
    assert tables
    for table in tables:
        rows = re.findall(r"<tr\b.*?</tr>", table, re.S)
        widths = {len(cells(row)) for row in rows}
        assert len(widths) == 1, f"rows of {len(widths)} different widths: {widths}"
        assert "colspan" not in table
    # The scores' own table class (left-aligned second column) is not used on the audit.
    assert "red3-scores" not in "".join(tables)


def test_red3_pages_have_the_badge_summary_dispute_links_and_card_symbols(site):
    auditor = signed_in(site, "auditor")
    for path in (f"/games/{RED3}/replay?move=1", f"/games/{RED3}/audit"):
        html = auditor.get(path).get_data(as_text=True)
        assert 'class="badge integrity' in html, path
        assert f'href="/games/{RED3}">Summary</a>' in html, path
    player = signed_in(site, "player", player="p1")
    html = player.get(f"/games/{RED3}/replay?move=1&seat=p1").get_data(as_text=True)
    assert "Dispute move 1" in html
    assert f"/games/{RED3}/audit" not in html  # a player cannot open the audit
    moves = html[html.index('id="moves"') :]
    assert "picks 9♣ from the stock" in moves and "9C" not in text_of(moves)


def test_histories_and_lists_give_no_money_figures_for_a_game_without_stakes(site):
    player = signed_in(site, "player", player="p1")
    html = player.get("/players/p1").get_data(as_text=True)
    assert "several currencies" not in html
    row = next(r for r in rows_of(html, "history") if RED3 in r)
    assert "0.00" not in row, row
    listing = player.get("/games?player=p1").get_data(as_text=True)
    row = next(r for r in re.findall(r"<tr\b.*?</tr>", listing, re.S) if RED3 in r)
    assert "−0.00" not in row and "-0.00" not in row, row


# -- links a player cannot use ---------------------------------------------------------------


def test_players_get_no_links_to_pages_they_may_not_open(site):
    player = signed_in(site, "player", player="p2")
    html = player.get(f"/games/{WRONG_REPORT}").get_data(as_text=True)
    assert "discrepancy" in text_of(html)
    assert "see the audit" not in html and "/audit" not in html
    staff = signed_in(site, "auditor").get(f"/games/{WRONG_REPORT}").get_data(as_text=True)
    assert "see the audit" in staff


# -- the replay ----------------------------------------------------------------------------


def test_the_caption_and_the_move_list_count_rounds_alike(site):
    client = signed_in(site, "auditor")
    html = client.get("/games/T7-000123/replay").get_data(as_text=True)
    assert "Round <strong>1</strong>" in html  # the deal opens round 1
    moves = html[html.index('id="moves"') :]
    mark = re.search(r'round-mark[^>]*>round (\d+)</li>\s*<li><a [^>]*data-move="(\d+)"', moves)
    assert mark, "a raise game's move list marks its rounds"
    number, move = mark.groups()
    fragment = client.get(f"/games/T7-000123/replay/table?move={move}").get_data(as_text=True)
    assert f"Round <strong>{number}</strong>" in fragment


def test_the_last_move_shows_the_payout_and_penalties_and_no_next_value(site):
    client = signed_in(site, "auditor")
    total = len(next(r for r in sample_records() if r["game_id"] == "T7-000123")["moves"])
    html = client.get(f"/games/T7-000123/replay/table?move={total}").get_data(as_text=True)
    words = text_of(html)
    assert "Gross 49.70 − fee 4.97 (10 %) = net 44.73 INR to p1" in words
    assert ", next" not in words
    hand = re.search(r'data-player="p2">.*?</article>', html, re.S).group(0)
    assert "Penalty 20 (first drop)" in text_of(hand)
    before = client.get("/games/T7-000123/replay/table?move=2").get_data(as_text=True)
    assert ", next" in text_of(before)  # while the game runs, the next value is shown


def test_the_point_value_axis_labels_every_step():
    ticks = charts.nice_ticks(Decimal("0.05"), Decimal("0.10"))
    assert [str(t) for t in ticks] == ["0.05", "0.06", "0.07", "0.08", "0.09", "0.10"]
    drawn = charts.point_value_chart([Decimal("0.05"), Decimal("0.10")], [])
    labels = re.findall(r'class="y-tick">([^<]+)<', drawn)
    assert labels == ["0.05", "0.06", "0.07", "0.08", "0.09", "0.10"]
    steps = {Decimal(b) - Decimal(a) for a, b in pairwise(labels)}
    assert len(steps) == 1


def test_running_total_ticks_are_round_figures():
    drawn = charts.running_total_chart([("g1", Decimal("-427.88")), ("g2", Decimal("-855.76"))])
    labels = re.findall(r'class="y-tick">([^<]+)<', drawn)
    assert labels == ["−1,000", "−800", "−600", "−400", "−200", "0"]


# -- disputes ------------------------------------------------------------------------------


def _post(client, page: str, action: str, data: dict):
    token = csrf_token(client.get(page).get_data(as_text=True))
    return client.post(action, data={"csrf_token": token, **data})


def test_dispute_pages(site):
    officer = signed_in(site, "dispute_officer")
    empty = text_of(officer.get("/disputes?game=T4-000020").get_data(as_text=True))
    assert "No open cases" in empty and "0 open cases" not in empty

    player = signed_in(site, "player", player="p3")
    opened = _post(
        player,
        "/disputes/new?game=T2-000451&move=1",
        "/disputes/new",
        {"game": "T2-000451", "move": "1", "description": "my show was read wrongly"},
    )
    assert opened.status_code == 302
    case_url = opened.headers["Location"]
    page = officer.get(case_url).get_data(as_text=True)
    # The close form chooses nothing for the officer.
    select = re.search(r'<select[^>]*name="decision".*?</select>', page, re.S).group(0)
    chosen = re.findall(r'<option selected value="([^"]*)"', select)
    assert chosen in ([], [""]), chosen
    # The hands as scored: p3's wrong show in its groups, with why it is not a declaration.
    assert "The hands as scored" in page
    wrong = re.search(r'<article class="final-hand" data-player="p3">.*?</article>', page, re.S)
    assert wrong and "wrong show" in text_of(wrong.group(0))
    assert '<ul class="notes">' in wrong.group(0) or "Penalty 80" in text_of(wrong.group(0))

    refused = _post(
        officer, case_url, f"{case_url}/close", {"decision": "adjusted", "reason": "checked"}
    )
    assert refused.status_code == 400
    words = text_of(refused.get_data(as_text=True))
    assert "None" not in words and "give the amount, like 12.50" in words


# -- the access log ------------------------------------------------------------------------


def test_the_access_log_reads_as_viewing_sessions_in_page_names(site):
    auditor = signed_in(site, "auditor")
    for move in range(4):
        assert auditor.get(f"/games/T4-000020/replay/table?move={move}").status_code == 200
    admin = signed_in(site, "admin")
    html = admin.get("/admin/access-log?game=T4-000020").get_data(as_text=True)
    rows = rows_of(html, "access-log")[1:]
    assert len(rows) == 1, "four steps through one replay are one session"
    words = text_of(rows[0])
    assert "0–3 (4 moves)" in words and "replay" in words
    assert "replays.table_fragment" not in html
    assert access_log.page_name("replays.table_fragment") == "replay"


def test_adjustment_entries_number_on_and_link_their_case(site):
    player = signed_in(site, "player", player="p2")
    opened = _post(
        player,
        "/disputes/new?game=T3-000010&move=1",
        "/disputes/new",
        {"game": "T3-000010", "move": "1", "description": "the table froze"},
    )
    case_url = opened.headers["Location"]
    case_id = case_url.rsplit("/", 1)[1]
    officer = signed_in(site, "dispute_officer")
    closed = _post(
        officer,
        case_url,
        f"{case_url}/close",
        {"decision": "adjusted", "reason": "outage", "amount": "12.50", "credited": "p2"},
    )
    assert closed.status_code == 302
    html = signed_in(site, "auditor").get("/games/T3-000010/audit").get_data(as_text=True)
    rows = rows_of(html, "entries")[1:]
    numbers = [re.search(r"<td>(\d+)</td>", row).group(1) for row in rows if "<td>" in row]
    assert numbers == [str(n) for n in range(1, len(numbers) + 1)], numbers
    adjustments = [row for row in rows if 'data-kind="adjustment"' in row]
    assert adjustments and all(f'href="/disputes/{case_id}"' in row for row in adjustments)
