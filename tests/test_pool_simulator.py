"""Simulated Pool and Deals matches: deterministic, legal, verifiable, audited clean, and
conserving chips and money in every match (docs/rules.md §3, §4)."""

from __future__ import annotations

import json
import random
from collections import Counter
from decimal import Decimal

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain import variants
from domain.pooldeals.bot import DEALS_WEIGHTS, MISTAKES, POOL_WEIGHTS, reported_block, settle
from domain.pooldeals.records import parse_match_record
from replays.integrity.verify import verify_store
from replays.simulation import Floor, Simulation, store_games, table_at
from replays.store.application import Ledger
from replays.store.timeline import audit_stored
from web.cli import main

RUNS = 24


def simulated(variant: str, seed: int = 5, count: int = RUNS, rate: float = 0.0) -> list[dict]:
    run = Simulation(Floor(seed=seed, variants=(variant,)), discrepancy_rate=rate)
    return list(run.games(count))


_runs: dict = {}


def batch(variant: str) -> list[dict]:
    """One run per variant shared by the tests that only read it (a run takes seconds)."""
    if variant not in _runs:
        _runs[variant] = simulated(variant)
    return _runs[variant]


def test_the_same_seed_gives_the_same_matches():
    assert simulated("pool", count=3) == batch("pool")[:3]
    assert simulated("deals", seed=6, count=2) != batch("deals")[:2]


@pytest.mark.parametrize("variant", ["pool", "deals"])
def test_every_simulated_match_round_trips_and_settles_as_reported(variant):
    for record in batch(variant):
        parsed = parse_match_record(record)
        assert parsed.to_dict() == {k: v for k, v in record.items() if k != "reported"} | (
            {"reported": parsed.reported} if parsed.reported else {}
        )
        outcome = settle(record)
        assert outcome["complete"], record["game_id"]
        reported = record["reported"]
        assert reported["payouts"] == outcome["payouts"]
        assert reported["prize_pool"] == outcome["prize_pool"]
        assert reported["fee"] == outcome["fee"]
        assert reported.get("winner") == outcome["winner"]


def test_tables_and_behaviour_look_like_real_pools_and_deals():
    seen = Counter()
    for record in batch("pool") + batch("deals"):
        terms = record["match"]
        seen["pool", terms.get("pool")] += 1
        seen["deals", terms.get("deals")] += 1
        seen["seats", len(record["players"])] += 1
        seen["fee", terms["fee_percent"]] += 1
        for played in record["deals"]:
            seen["rejoin"] += len(played.get("rejoins", ()))
            kinds = Counter(move["type"] for move in played["moves"])
            seen["drop"] += kinds["drop"]
            seen["declare"] += kinds["declare"]
            seen["show"] += kinds["show"]
            seen["miss"] += kinds["miss"]
        seen["split"] += "split" in record
        seen["outright"] += "winner" in record["reported"]
    for behaviour in ("rejoin", "split", "outright", "drop", "declare", "show", "miss"):
        assert seen[behaviour] > 0, behaviour
    assert len({key for key in seen if isinstance(key, tuple) and key[0] == "seats"}) >= 3


def test_tables_offer_the_common_formats_most_often():
    tables = [
        table_at(Floor(seed=1, variants=(name,)), n)
        for name in ("pool", "deals")
        for n in range(1, 301)
    ]
    pools = Counter(t.pool for t in tables if t.variant == "pool")
    deals = Counter(t.deals for t in tables if t.variant == "deals")
    assert set(pools) == set(POOL_WEIGHTS) and set(deals) == set(DEALS_WEIGHTS)
    assert pools.most_common(1)[0][0] == max(POOL_WEIGHTS, key=POOL_WEIGHTS.get) == 101
    assert deals.most_common(1)[0][0] == max(DEALS_WEIGHTS, key=DEALS_WEIGHTS.get) == 2
    assert all(t.entry_fee > 0 and t.fee_percent > 0 for t in tables)
    assert {t.decks for t in tables if t.seats > 2} == {2}


def test_game_ids_never_collide_across_variants_for_one_seed(database_url):
    runs = {name: simulated(name, seed=7, count=4) for name in ("pool", "deals", "points")}
    ids = [record["game_id"] for records in runs.values() for record in records]
    assert len(set(ids)) == len(ids) == 12
    for records in runs.values():
        summary = store_games(records, database_url)
        assert (summary.stored, summary.rejected) == (4, [])
    assert len(Ledger(database_url).list_game_ids()) == 12


def test_simulated_matches_import_verify_and_audit_clean(database_url):
    records = batch("pool")[:8] + batch("deals")[:8]
    summary = store_games(records, database_url)
    assert (summary.stored, summary.rejected) == (16, [])
    ledger = Ledger(database_url)
    for record in records:
        audit = audit_stored(ledger, record["game_id"])
        assert audit.clean, (record["game_id"], audit.discrepancies)
        assert audit.computed["payouts"] == record["reported"]["payouts"]
    report = verify_store(database_url)
    assert report.ok, [str(problem) for problem in report.problems]
    again = store_games(records, database_url)
    assert (again.stored, again.already) == (0, 16)


def test_a_misreporting_operator_gives_the_audit_something_to_find():
    from domain.pooldeals.audit import audit_match

    with_rejoins = next(r for r in batch("pool") if any(d.get("rejoins") for d in r["deals"]))
    with_split = next(r for r in batch("pool") if "split" in r)
    found = Counter()
    for record in (with_rejoins, with_split, batch("deals")[0]):
        right = reported_block(record, random.Random(0), 0.0)
        for seed in range(16):
            wrong = reported_block(record, random.Random(seed), 1.0)
            assert wrong != right
            parsed = parse_match_record({**record, "reported": wrong})
            audit = audit_match(parsed.build())
            assert audit.discrepancies, (record["game_id"], wrong)
            found.update(d.field.split(".")[0] for d in audit.discrepancies)
    # Every kind of mistake is made and caught somewhere.
    assert {"fee", "prize_pool", "split", "scores", "chips"} <= set(found), found
    assert len(MISTAKES) == 4


# -- conservation ----------------------------------------------------------------------------


def conserved(record: dict) -> None:
    """Chips and money of one simulated match add up (docs/rules.md §3, §4)."""
    match = parse_match_record(record).build()
    config = match.config
    money = match.settlement
    entry = config.entry_fee
    paid = sum(match.entries_paid.values())
    assert Decimal(money["prize_pool"]) == entry * paid == match.prize_pool
    rejoins = sum(len(d.get("rejoins", ())) for d in record["deals"])
    assert paid == len(config.players) + rejoins
    payouts = sum(Decimal(v) for v in money["payouts"].values())
    assert payouts + Decimal(money["fee"]) == Decimal(money["prize_pool"])
    debits = sum(Decimal(e["debit"]) for e in money["ledger_entries"])
    credits = sum(Decimal(e["credit"]) for e in money["ledger_entries"])
    assert debits == credits == Decimal(money["prize_pool"])
    if config.variant == "deals":
        start = config.starting_chips
        chips = dict.fromkeys(config.players, start)
        for result in match.results:
            for player, owed in result["points"].items():
                given = result["given"][player]
                assert given + result["shortfalls"].get(player, 0) == owed
                assert 0 <= given <= chips[player]
            chips.update(result["after"])
            assert all(value >= 0 for value in chips.values())
            assert sum(chips.values()) == start * len(config.players)
        assert chips == match.scores
    else:
        split = match.split
        if split is not None:
            shares = sum(Decimal(v) for v in split["shares"].values())
            assert shares == Decimal(money["net_pool"])
            assert set(split["shares"]) == set(match.remaining())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    variant=st.sampled_from(["pool", "deals"]),
    seed=st.integers(0, 10_000),
    index=st.integers(0, 100_000),
)
def test_chips_and_money_are_conserved_in_every_simulated_match(variant, seed, index):
    record = Simulation(Floor(seed=seed, variants=(variant,))).game(index)
    conserved(record)


def test_simulate_out_writes_matches_that_import_and_settle(tmp_path, sqlite_url):
    runner = CliRunner()
    for variant in ("pool", "deals"):
        out = tmp_path / f"{variant}.jsonl"
        made = runner.invoke(
            main,
            ["simulate", "--games", "3", "--variant", variant, "--seed", "2", "--out", str(out)],
        )
        assert made.exit_code == 0, made.output
        lines = [json.loads(line) for line in out.read_text().splitlines()]
        assert [line["variant"] for line in lines] == [variant] * 3
        assert variants.get(variant).record_format == lines[0]["format"]
        imported = runner.invoke(main, ["import", str(out)])
        assert "3 imported, 0 already recorded, 0 rejected" in imported.stdout, imported.output
        settled = runner.invoke(main, ["settle", "--json", str(out)])
        assert settled.exit_code == 0, settled.output
        for record, line in zip(lines, settled.stdout.splitlines(), strict=True):
            assert json.loads(line)["payouts"] == record["reported"]["payouts"]


def test_simulate_stores_matches_and_counts_their_moves(sqlite_url):
    from replays.store.schema import migrate

    migrate(sqlite_url)
    result = CliRunner().invoke(
        main, ["simulate", "--games", "4", "--variant", "pool", "--variant", "deals", "--seed", "3"]
    )
    assert result.exit_code == 0, result.output
    assert "stored 4 games" in result.output
    summary = next(line for line in result.output.splitlines() if line.startswith("4 games"))
    moves = int(summary.split(", ")[-1].split()[0])
    assert moves > 0, summary
