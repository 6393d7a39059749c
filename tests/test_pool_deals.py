"""Pool Rummy and Deals Rummy in memory (docs/rules.md §3, §4): the rules and money, the match
aggregate over 13-card deals, the records, settle and audit. Storage is tested in
test_pool_deals_storage.py."""

from __future__ import annotations

import copy
import json
from decimal import Decimal

import pytest
from match_player import config, next_deal, planned_deal, play_match

from domain import variants
from domain.errors import BadDeal, GameOver, NotYourTurn, RuleViolation
from domain.pooldeals import pool as pool_rules
from domain.pooldeals.deals import leaders, move_chips
from domain.pooldeals.match import FINISHED, Match, MatchRuleViolation
from domain.pooldeals.profile import POOL_TYPES
from domain.pooldeals.records import match_record_of
from domain.pooldeals.settlement import equal_shares, settle_pool_money
from domain.records import RecordError
from domain.variants.registry import project

SIX = tuple(f"p{i}" for i in range(1, 7))
D = Decimal


def record_of(match: Match) -> dict:
    return json.loads(json.dumps(match_record_of(match).to_dict()))


def reimport(record: dict) -> Match:
    variant = variants.for_record(record)
    parsed = variant.parse_record(record)
    variant.check_deals(parsed)
    return variant.build(parsed)


def balanced(settlement: dict) -> bool:
    debits = sum(D(e["debit"]) for e in settlement["ledger_entries"])
    credits = sum(D(e["credit"]) for e in settlement["ledger_entries"])
    paid = sum(D(v) for v in settlement["payouts"].values()) + D(settlement["fee"])
    return debits == credits == D(settlement["prize_pool"]) == paid


# -- the rules, pure -------------------------------------------------------------------------


def test_the_split_example_of_the_rules_exactly():
    # 101 pool, entry 25, fee 0, pool 150, three players with 3, 1 and 0 drops.
    split = pool_rules.split_by_drops(
        POOL_TYPES[101], D("25"), D("0"), D("150"), {"a": 40, "b": 80, "c": 100}, ("a", "b", "c")
    )
    assert split.drops == {"a": 3, "b": 1, "c": 0}
    assert split.first == {"a": D("75"), "b": D("25"), "c": D("0")}
    assert split.rest == D("50")
    assert {p: str(v) for p, v in split.shares.items()} == {
        "a": "91.67",
        "b": "41.67",
        "c": "16.66",
    }
    assert sum(split.shares.values()) == D("150")


def test_drops_and_the_rest_follow_the_fee():
    pool = POOL_TYPES[101]
    assert [pool.drops(s) for s in (0, 40, 41, 80, 81, 100)] == [5, 3, 2, 1, 0, 0]
    split = pool_rules.split_by_drops(
        pool, D("25"), D("10"), D("100"), {"a": 10, "b": 50}, ("a", "b")
    )
    assert split.drop_worth == D("22.50") and split.net_pool == D("90.00")
    assert split.shares == {"a": D("67.50"), "b": D("22.50")}
    assert sum(split.shares.values()) == split.net_pool


def test_a_split_needs_a_qualifying_table_every_acceptance_and_a_drop_of_rest():
    pool = POOL_TYPES[101]
    ok = pool_rules.split_by_drops(pool, D("25"), D("0"), D("100"), {"a": 40, "b": 80}, "ab")
    assert ok.rest == D("50")
    assert pool_rules.split_refusal(pool, 4, ["a", "b"], ["a", "b"], ok) is None
    assert "cannot split" in pool_rules.split_refusal(pool, 2, ["a", "b"], ["a", "b"], ok)
    assert "did not accept" in pool_rules.split_refusal(pool, 4, ["a", "b"], ["a"], ok)
    assert "a accepted twice" in pool_rules.split_refusal(pool, 4, ["a", "b"], ["a", "a", "b"], ok)
    assert "only when 2 remain" in pool_rules.split_refusal(pool, 3, list("abc"), list("abc"), ok)
    # 5 drops against 0: 125 of a 100 pool would be owed, nothing is left to share.
    short = pool_rules.split_by_drops(pool, D("25"), D("0"), D("100"), {"a": 0, "b": 100}, "ab")
    assert short.rest == D("-25")
    assert "less than one drop's worth" in pool_rules.split_refusal(
        pool, 4, ["a", "b"], ["a", "b"], short
    )


def test_rejoin_rules_and_score():
    pool = POOL_TYPES[101]
    scores = {"a": 79, "b": 30, "c": 120}
    assert pool_rules.rejoin_refusal(pool, "c", scores, ["a", "b"], 0, None) is None
    assert pool_rules.rejoin_score(scores, ["a", "b"]) == 80
    above = {"a": 80, "b": 30, "c": 120}
    assert "above 79" in pool_rules.rejoin_refusal(pool, "c", above, ["a", "b"], 0, None)
    assert "at least 2" in pool_rules.rejoin_refusal(pool, "c", scores, ["a"], 0, None)
    assert "already rejoined 1" in pool_rules.rejoin_refusal(pool, "c", scores, ["a", "b"], 1, 1)
    assert POOL_TYPES[201].rejoin_threshold == 174 and POOL_TYPES[61].rejoin_threshold == 44


def test_equal_shares_give_the_odd_paise_by_order():
    assert equal_shares(D("100"), ["x", "y", "z"]) == {
        "x": D("33.34"),
        "y": D("33.33"),
        "z": D("33.33"),
    }


def test_chips_never_go_below_zero_and_are_conserved():
    chips, given, short = move_chips({"a": 160, "b": 10, "c": 5}, "a", {"b": 40, "c": 80})
    assert chips == {"a": 175, "b": 0, "c": 0} and given == {"b": 10, "c": 5}
    assert short == {"b": 30, "c": 75}
    assert sum(chips.values()) == 175
    assert leaders({"a": 5, "b": 5, "c": 1}, ["a", "b", "c"]) == ["a", "b"]


def test_money_balances():
    money = settle_pool_money("G", "INR", D("12.5"), D("33.33"), {"a": 2, "b": 1}, {"a": None})
    assert money.prize_pool == D("99.99") and money.fee == D("12.50")
    assert money.payouts == {"a": D("87.49")} and money.balanced


# -- pool matches -------------------------------------------------------------------------


def test_a_101_pool_with_a_rejoin():
    match = Match.start(config("P101", "pool", pool=101, fee_percent="10"))
    planned_deal(match, "p1", {"p2": "middle", "p3": "first"})
    planned_deal(match, "p2", {"p1": "first", "p3": "middle"})
    planned_deal(match, "p3", {"p1": "first", "p2": "wrong"})
    assert match.scores == {"p1": 40, "p2": 120, "p3": 60} and match.eliminated == {"p2": 3}
    assert match.drops_left() == {"p1": 3, "p3": 2}
    match.rejoin("p2")  # nobody above 79: back at 60 + 1, paying 25 again
    assert match.scores["p2"] == 61 and match.prize_pool == D("100")
    planned_deal(match, "p1", {"p2": "middle", "p3": "wrong"})
    assert match.phase == FINISHED and match.winner == "p1"
    settled = match.settlement
    assert settled["prize_pool"] == "100.00" and settled["fee"] == "10.00"
    assert settled["payouts"] == {"p1": "90.00"} and settled["entries_paid"]["p2"] == 2
    assert balanced(settled)
    again = reimport(record_of(match))
    assert record_of(again) == record_of(match) and again.rejoin_log == match.rejoin_log


def test_the_dealer_passes_left_among_those_still_in():
    match = Match.start(config("PDEAL", "pool", pool=101, players=("p1", "p2", "p3", "p4")))
    planned_deal(match, "p1", {"p2": "wrong", "p3": "first", "p4": "first"})
    planned_deal(match, "p1", {"p2": "wrong", "p3": "first", "p4": "first"})  # p2 out
    assert [d["dealer"] for d in match.deals] == ["p4", "p1"]
    planned_deal(match, "p1", {"p3": "first", "p4": "first"})
    assert match.deals[-1]["dealer"] == "p3"  # p2, the next seat, is eliminated
    assert match.deals[-1]["players"] == ["p1", "p3", "p4"]


def test_a_201_pool_won_outright():
    match = Match.start(config("P201", "pool", pool=201, players=("p1", "p2"), entry_fee="50"))
    planned_deal(match, "p1", {"p2": "middle"})
    assert match.scores["p2"] == 50  # a 201 pool's middle drop
    planned_deal(match, "p2", {"p1": "first"})
    assert match.scores["p1"] == 25
    for _ in range(2):
        planned_deal(match, "p1", {"p2": "wrong"})
    assert match.scores["p2"] == 210 and match.winner == "p1"
    assert match.settlement["payouts"] == {"p1": "100.00"} and balanced(match.settlement)
    with pytest.raises(GameOver, match="p1 is the last player left"):
        match.deal(next_deal(match))


def test_a_61_pool():
    match = Match.start(config("P61", "pool", pool=61, entry_fee="10", fee_percent="15"))
    planned_deal(match, "p1", {"p2": "first", "p3": "middle"})
    assert match.scores == {"p1": 0, "p2": 15, "p3": 30}
    planned_deal(match, "p2", {"p1": "wrong", "p3": "first"})
    assert match.scores == {"p1": 60, "p2": 15, "p3": 45}
    with pytest.raises(MatchRuleViolation, match="p1 is still in"):
        match.rejoin("p1")
    planned_deal(match, "p2", {"p1": "first", "p3": "middle"})
    assert match.eliminated == {"p1": 3, "p3": 3} and match.winner == "p2"
    assert match.settlement["fee"] == "4.50" and match.settlement["payouts"] == {"p2": "25.50"}


def test_the_rules_split_example_as_a_match():
    match = Match.start(config("PSPLIT", "pool", pool=101, players=SIX))
    planned_deal(
        match, "p1", {"p2": "wrong", "p3": "first", "p4": "wrong", "p5": "wrong", "p6": "wrong"}
    )
    planned_deal(
        match, "p2", {"p1": "middle", "p3": "wrong", "p4": "middle", "p5": "middle", "p6": "middle"}
    )
    with pytest.raises(MatchRuleViolation, match="p3 did not accept the split"):
        match.agree_split(["p1", "p2"])
    match.agree_split(["p1", "p2", "p3"])
    assert match.settlement["payouts"] == {"p1": "91.67", "p2": "41.67", "p3": "16.66"}
    assert match.split["first"] == {"p1": "75.00", "p2": "25.00", "p3": "0.00"}
    assert balanced(match.settlement)
    with pytest.raises(GameOver, match="split the pool"):
        match.deal(next_deal(match))
    assert reimport(record_of(match)).settlement == match.settlement


def test_a_split_after_a_rejoin_at_the_same_break_is_refused():
    match = Match.start(config("PSPLITJ", "pool", pool=101, players=("p1", "p2", "p3", "p4")))
    planned_deal(match, "p1", {"p2": "wrong", "p3": "first", "p4": "wrong"})
    planned_deal(match, "p1", {"p2": "wrong", "p3": "first", "p4": "wrong"})
    assert match.remaining() == ["p1", "p3"] and match.scores["p3"] == 40
    match.rejoin("p2")  # back at 41 for deal 3: three remain, as a split would need
    before = match.version
    with pytest.raises(MatchRuleViolation, match="p2 rejoined after deal 2: a split is agreed"):
        match.agree_split(["p1", "p2", "p3"])
    assert match.version == before and match.split is None
    planned_deal(match, "p1", {"p2": "first", "p3": "first"})  # play goes on
    again = reimport(record_of(match))
    assert record_of(again) == record_of(match) and again.rejoin_log == match.rejoin_log


def test_auto_split_shares_equally():
    match = Match.start(config("PAUTO", "pool", pool=101, auto_split=True, fee_percent="10"))
    planned_deal(match, "p1", {"p2": "wrong", "p3": "wrong"})
    assert match.phase != FINISHED
    planned_deal(match, "p1", {"p2": "first", "p3": "first"})
    assert match.scores == {"p1": 0, "p2": 100, "p3": 100} and match.phase != FINISHED
    # p1 is at 0: not every score is at least 80, so no auto split yet.
    planned_deal(match, "p2", {"p1": "wrong", "p3": "first"})
    assert match.eliminated == {"p3": 3} and match.scores["p1"] == 80
    assert match.phase == FINISHED and match.split["kind"] == "equal"
    assert match.settlement["payouts"] == {"p1": "33.75", "p2": "33.75"}


# -- deals matches ------------------------------------------------------------------------


def test_a_best_of_2_with_a_tiebreaker():
    match = Match.start(config("D2", "deals", deals=2, players=("p1", "p2"), entry_fee="100"))
    assert match.scores == {"p1": 160, "p2": 160}
    planned_deal(match, "p1", {"p2": "first"})
    planned_deal(match, "p2", {"p1": "first"})
    assert match.scores == {"p1": 160, "p2": 160} and match.tiebreak == ["p1", "p2"]
    assert match.phase != FINISHED
    planned_deal(match, "p1", {"p2": "middle"})
    assert match.winner == "p1" and match.scores == {"p1": 200, "p2": 120}
    assert match.settlement["payouts"] == {"p1": "200.00"} and balanced(match.settlement)
    assert len(reimport(record_of(match)).deals) == 3


def test_a_best_of_3_with_a_tiebreaker_among_the_tied_only():
    players = ("p1", "p2", "p3", "p4")
    match = Match.start(config("D3", "deals", deals=3, players=players, fee_percent="10"))
    planned_deal(match, "p1", {"p2": "first", "p3": "first", "p4": "middle"})
    planned_deal(match, "p2", {"p1": "first", "p3": "first", "p4": "first"})
    planned_deal(match, "p4", {"p1": "middle", "p2": "first", "p3": "first"})
    assert match.scores == {"p1": 260, "p2": 260, "p3": 180, "p4": 260}
    assert match.tiebreak == ["p1", "p2", "p4"]
    with pytest.raises(MatchRuleViolation, match="p3, who is not in the tiebreaker"):
        match.deal(next_deal(match) | {"hands": {**next_deal(match)["hands"], "p3": []}})
    planned_deal(match, "p2", {"p1": "first", "p4": "first"})
    assert match.deals[-1]["players"] == ["p1", "p2", "p4"]
    assert match.winner == "p2" and sum(match.scores.values()) == 960
    assert match.settlement["payouts"] == {"p2": "90.00"}


def test_a_player_with_no_chips_sits_out():
    match = Match.start(config("D0", "deals", deals=2, players=("p1", "p2", "p3")))
    planned_deal(match, "p1", {"p2": "wrong", "p3": "first"})
    planned_deal(match, "p3", {"p1": "first", "p2": "wrong"})
    assert match.scores == {"p1": 240, "p2": 0, "p3": 240} and match.tiebreak == ["p1", "p3"]
    assert match.dealt_in() == ["p1", "p3"]
    dealt = next_deal(match)
    dealt["hands"]["p2"] = dealt["stock"][:13]
    with pytest.raises(MatchRuleViolation, match="p2, who has 0 chips and sits out"):
        match.deal(dealt)
    planned_deal(match, "p3", {"p1": "wrong"})
    assert match.winner == "p3" and sum(match.scores.values()) == 480


# -- bad input --------------------------------------------------------------------------


def test_a_rejoin_refused_when_someone_is_above_the_threshold():
    match = Match.start(config("PBAD", "pool", pool=101))
    planned_deal(match, "p1", {"p2": "wrong", "p3": "wrong"})
    planned_deal(match, "p1", {"p2": "middle", "p3": "first"})
    assert match.eliminated == {"p2": 2} and match.scores["p3"] == 100
    version = match.version
    with pytest.raises(MatchRuleViolation) as caught:
        match.rejoin("p2")
    assert str(caught.value) == (
        "deal 3: p2 cannot rejoin: p3 has 100, above 79: rejoins are closed in a 101 pool"
    )
    assert match.version == version  # nothing recorded


def test_a_rejoin_past_max_rejoins_is_refused():
    match = Match.start(config("PMAX", "pool", pool=101, max_rejoins=0))
    planned_deal(match, "p1", {"p2": "wrong", "p3": "first"})
    planned_deal(match, "p1", {"p2": "middle", "p3": "first"})
    with pytest.raises(MatchRuleViolation, match="the most this pool allows"):
        match.rejoin("p2")


def test_a_deal_to_an_eliminated_player_is_refused():
    match = Match.start(config("PELIM", "pool", pool=101, players=("p1", "p2", "p3", "p4")))
    planned_deal(match, "p1", {"p2": "wrong", "p3": "first", "p4": "first"})
    planned_deal(match, "p1", {"p2": "middle", "p3": "first", "p4": "first"})
    dealt = next_deal(match)
    dealt["hands"]["p2"] = dealt["stock"][:13]
    with pytest.raises(MatchRuleViolation, match=r"p2, eliminated in deal 2 \(score 120\)"):
        match.deal(dealt)


def test_a_record_with_a_bad_step_names_match_deal_and_move_and_stores_nothing():
    match = play_match(config("PREC", "pool", pool=101, seed=3), seed=3, split=0)
    record = record_of(match)
    bad = copy.deepcopy(record)
    move = next(m for m in bad["deals"][1]["moves"] if m["type"] == "discard")
    index = bad["deals"][1]["moves"].index(move)
    move["card"] = "JK" if move["card"] != "JK" else "2C"
    variant = variants.for_record(bad)
    with pytest.raises(RuleViolation) as caught:
        variant.build(variant.parse_record(bad))
    explained = variant.explain(caught.value)
    assert explained.startswith(f"deal 2, move {index} ({move['player']} discard")


def test_a_deal_after_the_match_ended_in_a_record_is_refused():
    match = Match.start(config("PEND", "pool", pool=101, players=("p1", "p2")))
    planned_deal(match, "p1", {"p2": "wrong"})
    planned_deal(match, "p1", {"p2": "wrong"})
    record = record_of(match)
    extra = copy.deepcopy(record["deals"][-1])
    record["deals"].append(extra | {"number": 3})
    variant = variants.for_record(record)
    with pytest.raises(GameOver) as caught:
        variant.build(variant.parse_record(record))
    assert variant.explain(caught.value) == (
        "deal 3: cannot deal: the match is over: p1 is the last player left and won the pool"
    )


def test_a_split_record_without_every_acceptance_or_at_a_two_player_table():
    match = Match.start(config("PSPL2", "pool", pool=101, players=("p1", "p2")))
    planned_deal(match, "p1", {"p2": "first"})
    record = record_of(match) | {"split": {"accepted_by": ["p1", "p2"]}}
    variant = variants.for_record(record)
    with pytest.raises(MatchRuleViolation, match="started with 2 players cannot split"):
        variant.build(variant.parse_record(record))


def test_a_deals_record_with_a_split_or_rejoin_is_refused_by_its_shape():
    match = Match.start(config("DSH", "deals", deals=2, players=("p1", "p2")))
    planned_deal(match, "p1", {"p2": "first"})
    record = record_of(match)
    with pytest.raises(RecordError, match="split"):
        variants.for_record(record).parse_record(record | {"split": {"accepted_by": ["p1"]}})
    bad = copy.deepcopy(record)
    bad["deals"][0]["rejoins"] = ["p2"]
    with pytest.raises(RecordError, match="rejoins"):
        variants.for_record(bad).parse_record(bad)


def test_a_deal_not_from_the_seed_is_refused():
    match = Match.start(config("PSEED", "pool", pool=101))
    planned_deal(match, "p1", {"p2": "first", "p3": "first"})
    planned_deal(match, "p2", {"p1": "first", "p3": "first"})
    record = record_of(match)
    hands = record["deals"][1]["deal"]["hands"]
    hands["p1"][0], hands["p2"][0] = hands["p2"][0], hands["p1"][0]
    variant = variants.for_record(record)
    with pytest.raises(BadDeal, match="deal 2: p1's hand holds"):
        variant.check_deals(variant.parse_record(record))


def test_a_move_out_of_turn_names_the_deal():
    match = Match.start(config("PTURN", "pool", pool=101))
    match.deal(next_deal(match))
    with pytest.raises(NotYourTurn) as caught:
        match.play({"player": "p2", "type": "drop"})
    assert variants.get("pool").explain(caught.value) == (
        "deal 1, move 0 (p2 drop): p2 cannot drop: it is p1's turn"
    )


# -- records, settle, audit, replay ----------------------------------------------------------


@pytest.mark.parametrize("variant", ["pool", "deals"])
def test_import_export_reimport_identical(variant):
    terms = {"pool": 101} if variant == "pool" else {"deals": 3}
    match = play_match(config(f"RT-{variant}", variant, seed=5, **terms), seed=5)
    record = record_of(match)
    again = reimport(record)
    assert record_of(again) == record
    assert json.loads(variants.for_record(record).parse_record(record).canonical()) == record


def test_settle_describes_deals_eliminations_and_money():
    match = Match.start(config("PSET", "pool", pool=101, fee_percent="10"))
    planned_deal(match, "p1", {"p2": "wrong", "p3": "wrong"})
    planned_deal(match, "p1", {"p2": "middle", "p3": "middle"})
    variant = variants.get("pool")
    outcome = variant.settle(variant.parse_record(record_of(match)))
    assert outcome["winner"] == "p1" and outcome["payouts"] == {"p1": "67.50"}
    assert outcome["deals"][1]["eliminated"] == ["p2", "p3"]
    text = variant.describe_settlement(outcome)
    assert "deal 2: p1 wins (p2 +40, p3 +40) -> p1 0, p2 120, p3 120" in text
    assert "prize pool 75.00 INR, fee 7.50" in text


def test_audit_finds_a_reported_difference():
    reported = {"winner": "p1", "payouts": {"p1": "70.00"}, "scores": {"p2": 120}, "fee": "7.50"}
    match = Match.start(config("PAUD", "pool", pool=101, fee_percent="10"), reported=reported)
    planned_deal(match, "p1", {"p2": "wrong", "p3": "wrong"})
    planned_deal(match, "p1", {"p2": "middle", "p3": "middle"})
    report = variants.get("pool").audit(match, [])
    found = {(d.field, d.source): (d.reported, d.computed) for d in report.discrepancies}
    assert found == {("payouts.p1", "reported"): ("70.00", "67.50")}
    assert "payouts.p1" in report.for_people()


def test_audit_finds_a_tampered_recorded_score():
    match = Match.start(config("PTAMP", "pool", pool=101))
    planned_deal(match, "p1", {"p2": "first", "p3": "first"})
    match.results[0]["after"]["p2"] = 0
    found = variants.get("pool").audit(match, []).discrepancies
    assert [d.field for d in found] == ["deal 1 scores"]


def test_replay_from_events_and_from_a_snapshot_gives_the_same_match():
    match = play_match(config("PSNAP", "pool", pool=101, seed=8), seed=8)
    events = match.collect_events()
    rebuilt = project(None, events)
    assert rebuilt.settlement == match.settlement and rebuilt.steps == match.steps
    middle = project(None, events[: len(events) // 2])
    snapshot = Match.Snapshot.take(middle)
    object.__setattr__(snapshot, "state", json.loads(json.dumps(snapshot.state)))
    restored = project(snapshot.mutate(None), events[len(events) // 2 :])
    assert restored.steps == match.steps and restored.scores == match.scores
    assert restored.game.table_state().to_dict() == match.game.table_state().to_dict()


def test_a_match_restored_from_a_snapshot_plays_its_deal_again_only_when_asked():
    match = play_match(config("PLAZY", "deals", deals=2, seed=5), seed=5)
    events = match.collect_events()
    middle = project(None, events[: len(events) // 2])
    snapshot = Match.Snapshot.take(middle)
    object.__setattr__(snapshot, "state", json.loads(json.dumps(snapshot.state)))
    restored = snapshot.mutate(None)
    assert "game" not in vars(restored)  # the record alone needs no replay
    # Snapshotted again untouched, it is the same snapshot.
    assert Match.Snapshot.take(restored).state == snapshot.state
    game = restored.game
    assert game is restored.game  # played once, then kept
    assert game.table_state().to_dict() == middle.game.table_state().to_dict()
    with pytest.raises(AttributeError, match="no attribute 'gmae'"):
        restored.gmae  # noqa: B018 - any other missing attribute is still an error


def test_the_table_shows_scores_drops_and_each_deal_for_a_seat():
    match = Match.start(config("PVIEW", "pool", pool=101))
    planned_deal(match, "p1", {"p2": "middle", "p3": "first"})
    match.deal(next_deal(match))
    state = match.table_state().for_seat("p2").to_dict()
    assert state["scores"] == {"p1": 0, "p2": 40, "p3": 20}
    assert state["drops_left"] == {"p1": 5, "p2": 3, "p3": 4}
    assert state["score_table"][0]["points"] == {"p2": 40, "p3": 20}
    hands = {seat["player"]: seat["hand"] for seat in state["deal"]["seats"]}
    assert hands["p2"] is not None and hands["p1"] is None and hands["p3"] is None


@pytest.mark.parametrize(
    "name", ["match", "pool", "deals", "profile", "settlement", "table", "variant"]
)
def test_the_family_docstring_examples_hold(name):
    import doctest
    import importlib

    module = importlib.import_module(f"domain.pooldeals.{name}")
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted and not result.failed


def test_a_rejoin_or_split_while_a_deal_is_played_is_refused():
    match = Match.start(config("PMID", "pool", pool=101, players=("p1", "p2", "p3", "p4")))
    planned_deal(match, "p1", {"p2": "wrong", "p3": "wrong", "p4": "first"})
    planned_deal(match, "p1", {"p2": "middle", "p3": "first", "p4": "first"})
    match.deal(next_deal(match))
    with pytest.raises(MatchRuleViolation, match="deal 3: p2 cannot rejoin: deal 3 is still"):
        match.rejoin("p2")
    with pytest.raises(MatchRuleViolation, match="deal 3: cannot split: deal 3 is still"):
        match.agree_split(match.remaining())


def test_a_running_match_audits_clean_and_a_retried_deal_step_compares_equal():
    match = Match.start(config("PRUN", "pool", pool=101))
    planned_deal(match, "p1", {"p2": "first", "p3": "first"})
    match.deal(next_deal(match))
    variant = variants.get("pool")
    assert variant.audit(match, []).discrepancies == ()
    step = {"type": "deal", "deal": {k: v for k, v in next_deal(match).items() if k != "stock"}}
    assert variant.parse_move(match, step, 0) == {"type": "deal", "deal": step["deal"]}
    assert variant.move_at(match, match.steps.index({"type": "deal", "deal": 2}))["type"] == "deal"


def test_a_deal_after_an_auto_split_or_after_the_last_deal_is_refused():
    auto = Match.start(config("PAUTO2", "pool", pool=101, auto_split=True))
    planned_deal(auto, "p1", {"p2": "wrong", "p3": "wrong"})
    planned_deal(auto, "p2", {"p1": "wrong", "p3": "first"})
    assert auto.phase == FINISHED and auto.split["kind"] == "equal"
    with pytest.raises(GameOver, match="the pool was split automatically"):
        auto.deal(next_deal(auto))
    done = Match.start(config("DDONE", "deals", deals=2, players=("p1", "p2")))
    planned_deal(done, "p1", {"p2": "first"})
    planned_deal(done, "p1", {"p2": "first"})
    with pytest.raises(GameOver, match="deal 3: cannot deal: the match is over: p1 won after 2"):
        done.deal(next_deal(done))
    with pytest.raises(GameOver):
        done.rejoin("p2")


def test_reported_chips_that_do_not_add_up_are_audit_discrepancies():
    reported = {"winner": "p1", "chips": {"p1": 200, "p2": 140}, "prize_pool": "50.00"}
    match = Match.start(config("DREP", "deals", deals=2, players=("p1", "p2")), reported=reported)
    planned_deal(match, "p1", {"p2": "first"})
    planned_deal(match, "p1", {"p2": "first"})
    assert match.scores == {"p1": 200, "p2": 120}
    record = record_of(match)
    again = reimport(record)  # reported figures never refuse a record
    found = {
        d.field: (d.reported, d.computed)
        for d in variants.get("deals").audit(again, []).discrepancies
    }
    assert found == {"chips.p2": (140, 120)}


def test_the_simulator_counts_a_match_deal_by_deal():
    match = Match.start(config("PSIM", "pool", pool=101))
    planned_deal(match, "p1", {"p2": "middle", "p3": "first"})
    planned_deal(match, "p2", {"p1": "first", "p3": "wrong"})
    record = record_of(match)
    variant = variants.get("pool")
    assert len(variant.record_moves(record)) == len(match.moves)
    first, second = variant.deal_behaviours(record)
    assert (first["first_drop"], first["middle_drop"], first["wrong_show"]) == (1, 1, 0)
    assert (second["first_drop"], second["wrong_show"], second["declare"]) == (1, 1, 0)
    assert first["moves"] + second["moves"] == len(match.moves)
