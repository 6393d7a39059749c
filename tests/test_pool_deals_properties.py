"""Chips and money are conserved in every generated Pool and Deals match (docs/rules.md §3, §4).

Hypothesis draws the table (players, pool type or deal count, entry fee, fee, rejoin cap,
auto split) and the players' habits (how often they drop, rejoin, agree to a split); the
small random player of ``match_player`` plays the match through the aggregate. Whatever it
plays:

- deals: the sum of chips is 80 × N × players after every deal, and each loser's chips
  given plus shortfall is exactly their deal points;
- pool: each deal's points add to the scores, eliminations are exactly the crossings of
  the limit, every rejoin enters at the highest remaining score + 1;
- both: the ledger entries balance, debits = credits = prize pool = entry fee × (players +
  rejoins), and payouts + fee = prize pool, to the paisa; a split's shares add up to the
  net pool.
"""

from __future__ import annotations

from decimal import Decimal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from match_player import config, play_match

from domain.pooldeals.match import FINISHED

D = Decimal
SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}


@st.composite
def tables(draw):
    variant = draw(st.sampled_from(["pool", "deals"]))
    count = draw(st.integers(2, 6))
    players = tuple(f"p{i}" for i in range(1, count + 1))
    terms = {
        "entry_fee": str(draw(st.sampled_from([D("10"), D("25"), D("33.33"), D("101.01")]))),
        "fee_percent": str(draw(st.sampled_from([D("0"), D("7.5"), D("10"), D("12.35")]))),
        "seed": draw(st.integers(0, 10_000)),
    }
    if variant == "pool":
        terms["pool"] = draw(st.sampled_from([61, 101, 201]))
        terms["max_rejoins"] = draw(st.sampled_from([None, 0, 1, 2]))
        terms["auto_split"] = draw(st.booleans())
    else:
        terms["deals"] = draw(st.sampled_from([2, 3, 6]))
    habits = {
        "drop": draw(st.sampled_from([0.05, 0.2, 0.4])),
        "rejoin": draw(st.sampled_from([0.0, 0.5, 1.0])),
        "split": draw(st.sampled_from([0.0, 0.3])),
    }
    return config("HYP", variant, players=players, **terms), terms["seed"], habits


@settings(max_examples=25, **SETTINGS)
@given(tables())
def test_chips_and_money_are_conserved(table):
    cfg, seed, habits = table
    match = play_match(cfg, seed, max_deals=40, **habits)
    players = cfg.players
    if cfg.variant == "deals":
        total = cfg.starting_chips * len(players)
        chips = dict.fromkeys(players, cfg.starting_chips)
        for result in match.results:
            for loser, points in result["points"].items():
                assert result["given"][loser] + result["shortfalls"].get(loser, 0) == points
                assert chips[loser] - result["given"][loser] == result["after"][loser]
            chips.update(result["after"])
            assert sum(chips.values()) == total
        assert sum(match.scores.values()) == total
        assert all(chips >= 0 for chips in match.scores.values())
    else:
        pool = cfg.pool_type
        scores = dict.fromkeys(players, 0)
        rejoins = iter(match.rejoin_log)
        pending = next(rejoins, None)
        for dealt, result in zip(match.deals, match.results, strict=True):
            while pending is not None and pending["before_deal"] == dealt["number"]:
                remaining = [p for p in players if scores[p] < pool.limit]
                assert pending["score"] == max(scores[p] for p in remaining) + 1
                scores[pending["player"]] = pending["score"]
                pending = next(rejoins, None)
            assert set(dealt["players"]) == {p for p in players if scores[p] < pool.limit}
            for player, points in result["points"].items():
                assert points <= max(pool.cap, pool.wrong_show)
                scores[player] += points
            crossed = [p for p in dealt["players"] if scores[p] >= pool.limit]
            assert result["eliminated"] == crossed
            assert {p: scores[p] for p in result["after"]} == result["after"]
    if match.phase != FINISHED:
        return
    settled = match.settlement
    paid = sum(match.entries_paid.values())
    prize_pool = D(settled["prize_pool"])
    assert prize_pool == (cfg.entry_fee * paid).quantize(D("0.01"))
    debits = sum(D(e["debit"]) for e in settled["ledger_entries"])
    credits = sum(D(e["credit"]) for e in settled["ledger_entries"])
    payouts = sum(D(v) for v in settled["payouts"].values())
    assert debits == credits == prize_pool == payouts + D(settled["fee"])
    if match.split is not None:
        assert sum(D(v) for v in match.split["shares"].values()) == D(settled["net_pool"])
