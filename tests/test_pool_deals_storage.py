"""Pool and Deals matches in the ledger, on SQLite and PostgreSQL: imported (all or nothing),
exported, projected (games, results, moves, balanced ledger entries), in period reports,
replayed step by step, snapshotted, seed-checked by verify, and played over the live API."""

from __future__ import annotations

import copy
import json
from datetime import date
from decimal import Decimal

import pytest
import sqlalchemy as sa
from match_player import config, planned_deal, play_match
from test_api_http import call, events, server  # noqa: F401 - the live server fixture

from domain.pooldeals.match import Match
from domain.pooldeals.records import match_record_of
from replays.access import tokens
from replays.readmodels.models import GameRow, LedgerEntryRow, MoveRow, PlayerResultRow
from replays.readmodels.projections import catch_up
from replays.readmodels.reports import PeriodFilter, period_report
from replays.records.exporter import export_lines
from replays.records.importer import import_lines
from replays.store.application import Ledger
from replays.store.db import engine_for
from replays.store.schema import migrate
from replays.store.timeline import state_at_step, states_after_steps

SIX = tuple(f"p{i}" for i in range(1, 7))


def split_match() -> Match:
    """docs/rules.md §3's split example as a match: 91.67, 41.67, 16.66."""
    match = Match.start(config("ST-SPLIT", "pool", pool=101, players=SIX, table_id="T9"))
    planned_deal(
        match, "p1", {"p2": "wrong", "p3": "first", "p4": "wrong", "p5": "wrong", "p6": "wrong"}
    )
    planned_deal(
        match, "p2", {"p1": "middle", "p3": "wrong", "p4": "middle", "p5": "middle", "p6": "middle"}
    )
    match.agree_split(["p1", "p2", "p3"])
    return match


def rejoin_match() -> Match:
    match = Match.start(config("ST-REJOIN", "pool", pool=101, fee_percent="10", table_id="T9"))
    planned_deal(match, "p1", {"p2": "middle", "p3": "first"})
    planned_deal(match, "p2", {"p1": "first", "p3": "middle"})
    planned_deal(match, "p3", {"p1": "first", "p2": "wrong"})
    match.rejoin("p2")
    planned_deal(match, "p1", {"p2": "middle", "p3": "wrong"})
    return match


def deals_match() -> Match:
    match = Match.start(
        config("ST-DEALS", "deals", deals=2, players=("p1", "p2"), fee_percent="5", table_id="T9")
    )
    planned_deal(match, "p1", {"p2": "first"})
    planned_deal(match, "p2", {"p1": "first"})
    planned_deal(match, "p1", {"p2": "middle"})
    return match


def records() -> list[dict]:
    played = [split_match(), rejoin_match(), deals_match()]
    played += [play_match(config(f"ST-RND-{i}", "pool", pool=201, seed=i), seed=i) for i in (1, 2)]
    return [json.loads(json.dumps(match_record_of(m).to_dict())) for m in played]


def ledger_for(url: str) -> Ledger:
    migrate(url)
    return Ledger(url, env={"CREATE_TABLE": "no"})


def rows(url, model, **where):
    with engine_for(url).connect() as connection:
        query = sa.select(model.__table__)
        for column, value in where.items():
            query = query.where(model.__table__.c[column] == value)
        return [dict(row._mapping) for row in connection.execute(query)]


def test_matches_import_export_and_project_with_balanced_entries(database_url):
    ledger = ledger_for(database_url)
    lines = [json.dumps(record) for record in records()]
    summary = import_lines(ledger, lines, follow=False)
    assert summary.ok and summary.imported == 5, summary.line()
    again = import_lines(ledger, lines, follow=False)
    assert again.imported == 0 and again.ok  # the same records: already recorded

    exported = {json.loads(line)["game_id"]: json.loads(line) for line in export_lines(ledger)}
    for record in records():
        out = exported[record["game_id"]]
        assert {k: v for k, v in out.items() if k != "settlement"} == record
    assert exported["ST-SPLIT"]["settlement"]["payouts"] == {
        "p1": "91.67",
        "p2": "41.67",
        "p3": "16.66",
    }

    catch_up(database_url)
    games = {row["game_id"]: row for row in rows(database_url, GameRow)}
    split = games["ST-SPLIT"]
    assert (split["variant"], split["status"], split["round"]) == ("pool", "settled", 2)
    assert (split["gross"], split["fee"], split["net_to_winner"]) == (
        Decimal("150.00"),
        Decimal("0.00"),
        Decimal("150.00"),
    )
    assert not any(row["discrepancy"] for row in games.values())
    rejoin = games["ST-REJOIN"]
    assert (rejoin["gross"], rejoin["fee"], rejoin["winner"]) == (
        Decimal("100.00"),
        Decimal("10.00"),
        "p1",
    )
    results = {r["player"]: r for r in rows(database_url, PlayerResultRow, game_id="ST-SPLIT")}
    assert {p: (r["result"], r["points"], r["amount"]) for p, r in results.items()} == {
        "p1": ("split", 40, Decimal("91.67")),
        "p2": ("split", 80, Decimal("41.67")),
        "p3": ("split", 100, Decimal("16.66")),
        "p4": ("lost", 120, Decimal("0.00")),
        "p5": ("lost", 120, Decimal("0.00")),
        "p6": ("lost", 120, Decimal("0.00")),
    }
    for game_id in games:
        entries = rows(database_url, LedgerEntryRow, game_id=game_id)
        debits = sum(e["debit"] for e in entries)
        assert debits == sum(e["credit"] for e in entries) == games[game_id]["gross"]
    rejoined = rows(database_url, LedgerEntryRow, game_id="ST-REJOIN", player="p2")
    assert sorted((e["kind"], e["debit"]) for e in rejoined) == [
        ("rejoin_fee", Decimal("25.00")),  # the entry fee again
        ("settlement", Decimal("25.00")),
    ]
    shares = rows(database_url, LedgerEntryRow, game_id="ST-SPLIT", kind="split")
    assert sorted(e["credit"] for e in shares) == [
        Decimal("16.66"),
        Decimal("41.67"),
        Decimal("91.67"),
    ]
    moves = rows(database_url, MoveRow, game_id="ST-DEALS")
    assert sorted(m["move_index"] for m in moves) == list(range(len(moves)))
    assert {m["round"] for m in moves} == {1, 2, 3}

    with engine_for(database_url).connect() as connection:
        report = period_report(connection, PeriodFilter(date(2025, 3, 1), date(2025, 3, 31)))
    assert report.totals.games == 5
    assert report.reconciliation.balanced and not report.discrepancies
    assert report.totals.gross == sum(row["gross"] for row in games.values())
    assert report.totals.fees == sum(row["fee"] for row in games.values())
    assert games["ST-DEALS"]["gross"] == Decimal("50.00")
    kinds = {line.kind: line for line in report.by_kind}
    assert (kinds["rejoin_fee"].games, kinds["rejoin_fee"].debits) == (
        # the report counts games with a rejoin fee, not deals with a rejoin
        sum(1 for r in records() if any(d.get("rejoins") for d in r["deals"])),
        sum(Decimal("25.00") * len(d.get("rejoins", ())) for r in records() for d in r["deals"]),
    )
    split_ids = [r["game_id"] for r in records() if "split" in r]
    assert "ST-SPLIT" in split_ids
    assert (kinds["split"].games, kinds["split"].credits) == (
        len(split_ids),
        sum(games[game_id]["net_to_winner"] for game_id in split_ids),
    )


def test_a_rejected_match_stores_nothing(database_url):
    ledger = ledger_for(database_url)
    record = records()[1]
    bad = copy.deepcopy(record)
    bad["deals"][3]["rejoins"] = []  # p2 is dealt in without having rejoined
    summary = import_lines(ledger, [json.dumps(bad)], follow=False)
    assert summary.rejected == 1
    assert "deal 4: cannot deal: the deal has a hand for p2, eliminated in deal 3" in (
        summary.line() + " ".join(str(f) for f in summary.failures)
    )
    assert not ledger.game_exists("ST-REJOIN")


def test_state_at_every_step_and_snapshots(database_url):
    ledger = ledger_for(database_url)
    match = play_match(config("ST-LONG", "pool", pool=101, seed=4), seed=4, split=0)
    record = json.loads(json.dumps(match_record_of(match).to_dict()))
    assert import_lines(ledger, [json.dumps(record)], follow=False).imported == 1
    stored = ledger.get_game("ST-LONG")
    assert stored.steps == match.steps and stored.settlement == match.settlement
    snapshots = ledger.snapshots.get(Ledger.aggregate_id("ST-LONG")) if ledger.snapshots else []
    assert list(snapshots), "a long match is snapshotted"
    steps = len(match.steps)
    replayed = match_record_of(match).build()
    assert state_at_step(ledger, "ST-LONG", steps).to_dict() == (
        replayed.table_state().to_dict() | {"version": stored.version}
    )
    first_deal = state_at_step(ledger, "ST-LONG", 1).to_dict()
    assert first_deal["deal_number"] == 1 and first_deal["deal"]["move_index"] == 0
    fifth = state_at_step(ledger, "ST-LONG", 6).to_dict()
    assert fifth["deal"]["move_index"] == 5
    _, states = states_after_steps(ledger, "ST-LONG")
    assert len(states) == steps and states[5].to_dict() == fifth


def test_verify_checks_each_deal_against_the_seed(database_url):
    from domain import variants

    ledger = ledger_for(database_url)
    record = records()[0]
    assert import_lines(ledger, [json.dumps(record)], follow=False).imported == 1
    variant = variants.get("pool")
    stored = ledger.get_game("ST-SPLIT")
    assert variant.check_stored_deals(stored) is None
    stored.deals[1]["deal"]["wild"], stored.deals[1]["deal"]["open"] = (
        stored.deals[1]["deal"]["open"],
        stored.deals[1]["deal"]["wild"],
    )
    assert variant.check_stored_deals(stored).startswith("deal 2: the wild card is")


def live_steps(record: dict) -> list[dict]:
    out = []
    for played in record["deals"]:
        out += [{"type": "rejoin", "player": p} for p in played.get("rejoins", ())]
        out.append({"type": "deal", "deal": played["deal"]})
        out += played["moves"]
    if "split" in record:
        out.append({"type": "split", **record["split"]})
    return out


@pytest.mark.parametrize("which", [0, 1, 2])
def test_a_match_played_over_http_is_the_match_importing_it_stores(server, tmp_path, which):  # noqa: F811
    base, url, _app = server
    record = records()[which]
    game_id = record["game_id"]
    token = tokens.create_token("acme-pool").token
    header = {k: v for k, v in record.items() if k not in ("deals", "split")}
    status, started = call(base, token, "POST", "/games", "/games", header)
    assert status == 201, started
    for seq, step in enumerate(live_steps(record)):
        path = f"/games/{game_id}/moves"
        status, answer = call(
            base, token, "POST", "/games/{game_id}/moves", path, {"seq": seq, **step}
        )
        assert status == 201, (seq, step, answer)
    status, settled = call(
        base, token, "POST", "/games/{game_id}/settle", f"/games/{game_id}/settle"
    )
    assert status == 200, settled
    assert (
        settled["settlement"]["payouts"]
        == match_record_of(Ledger(url, env={"CREATE_TABLE": "no"}).get_game(game_id))
        .build()
        .settlement["payouts"]
    )

    imported_url = f"sqlite:///{tmp_path / 'imported.sqlite3'}"
    imported = ledger_for(imported_url)
    assert import_lines(imported, [json.dumps(record)], follow=False).imported == 1
    live = Ledger(url, env={"CREATE_TABLE": "no"})
    assert events(live, game_id) == events(imported, game_id)


def test_live_refusals_name_the_deal_and_the_step(server):  # noqa: F811
    base, _url, _app = server
    record = records()[1]  # the 101 pool with a rejoin
    game_id = record["game_id"]
    token = tokens.create_token("acme-pool").token
    header = {k: v for k, v in record.items() if k not in ("deals", "split")}
    assert call(base, token, "POST", "/games", "/games", header)[0] == 201
    steps = live_steps(record)
    rejoin_at = next(i for i, s in enumerate(steps) if s["type"] == "rejoin")
    for seq, step in enumerate(steps[:rejoin_at]):
        path = f"/games/{game_id}/moves"
        assert (
            call(base, token, "POST", "/games/{game_id}/moves", path, {"seq": seq, **step})[0]
            == 201
        )
    path = f"/games/{game_id}/moves"
    early_split = {"seq": rejoin_at, "type": "split", "accepted_by": ["p1"]}
    status, answer = call(base, token, "POST", "/games/{game_id}/moves", path, early_split)
    assert status == 422, answer
    assert (
        answer["error"]
        == "deal 4: cannot split: p3 did not accept the split: every remaining player must"
    )
    next_deal = next(s for s in steps[rejoin_at:] if s["type"] == "deal")
    status, answer = call(
        base, token, "POST", "/games/{game_id}/moves", path, {"seq": rejoin_at, **next_deal}
    )
    assert status == 422 and "p2, eliminated in deal 3" in answer["error"], answer
    status, answer = call(
        base, token, "POST", "/games/{game_id}/settle", f"/games/{game_id}/settle"
    )
    assert status == 422 and "the match is not over" in answer["error"]
