"""Settlement: points per result, deal shows under both profiles, money rounding, balance."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal

import pytest
from game_tables import THREE_HANDS, complete_deal, config_for, pass_turn
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.cards import parse_cards
from domain.rummy13.moves import play_game
from domain.rummy13.raise_schedule import point_value_for_round
from domain.rummy13.settlement import (
    FEE_ACCOUNT,
    PlayerEnd,
    Settlement,
    compute_settlement,
    money,
)
from domain.rummy13.solver import min_hand_score

P1_DECLARES = [["AS", "2S", "3S"], ["4H", "5H", "JK"], ["9D", "9H", "9S"], ["KS", "KD", "KC", "KH"]]
COMPLETE = "AD 2D 3D 4C 5C 6C 8H 8S 8D QH QS QC QD"  # could declare: 0 points on its own
DEAL_SHOW_HANDS = {
    "p1": THREE_HANDS["p1"],
    "p2": COMPLETE,
    "p3": THREE_HANDS["p3"],  # four jokers: best score 3
    "p4": "AH 3H 6D 6S 8H 8C JD JS 4S 5S 4D 3C 9C",  # best score 71
}


def declared_on_the_first_turn(rules: str):
    """p1 moves first and declares at once: nobody else has had a turn (a deal show)."""
    config = config_for("p1 p2 p3 p4", rules=rules, dealer="p4")
    deal = complete_deal(DEAL_SHOW_HANDS, "7D", "KC", "4H")
    moves = [
        {"player": "p1", "type": "pick", "from": "closed", "card": "4H"},
        {"player": "p1", "type": "declare", "finish": "TC", "groups": P1_DECLARES},
    ]
    return play_game(config, deal, moves, settle=True).settlement


def test_deal_show_rummycircle_is_half_the_hand_score_rounded_down_between_2_and_40():
    lines = declared_on_the_first_turn("rummycircle").players
    assert {p: (line.result, line.hand_score, line.points) for p, line in lines.items()} == {
        "p2": ("deal_show", 0, 2),  # half of 0, raised to the minimum 2
        "p3": ("deal_show", 3, 2),  # 3 // 2 = 1, raised to 2
        "p4": ("deal_show", 71, 35),  # 71 // 2
    }


def test_deal_show_deccan_is_a_flat_20_and_a_hand_that_met_the_objective_pays_2():
    lines = declared_on_the_first_turn("deccan").players
    assert {p: (line.result, line.points, line.met_objective) for p, line in lines.items()} == {
        "p2": ("deal_show", 2, True),
        "p3": ("deal_show", 20, False),
        "p4": ("deal_show", 20, False),
    }


@pytest.mark.parametrize(("rules", "points"), [("rummycircle", 0), ("deccan", 2)])
def test_a_loser_whose_hand_met_the_objective_but_did_not_declare(rules, points):
    config = config_for(rules=rules, dealer="p1")
    hands = {p: DEAL_SHOW_HANDS[p] for p in ("p1", "p2", "p3")}
    moves = [
        *pass_turn("p2", "3H"),
        *pass_turn("p3", "9C"),
        {"player": "p1", "type": "pick", "from": "closed", "card": "4H"},
        {"player": "p1", "type": "declare", "finish": "TC", "groups": P1_DECLARES},
    ]
    game = play_game(config, complete_deal(hands, "7D", "KC", "3H 9C 4H"), moves, settle=True)
    line = game.settlement.players["p2"]
    assert (line.result, line.hand_score, line.points) == ("lost", 0, points)
    assert line.met_objective is (rules == "deccan")


def test_a_loser_without_a_show_is_charged_the_best_grouping_and_both_scores_are_kept():
    settlement = declared_on_the_first_turn("rummycircle")
    for player in ("p2", "p3", "p4"):
        line = settlement.players[player]
        assert (
            line.hand_score
            == line.min_score
            == min_hand_score(parse_cards(DEAL_SHOW_HANDS[player]), "7D")
        )


def test_the_recorded_settlement_equals_a_recomputation_from_the_facts():
    config = config_for("p1 p2 p3 p4", dealer="p4", fee_percent="12.5")
    deal = complete_deal(DEAL_SHOW_HANDS, "7D", "KC", "4H")
    game = play_game(
        config,
        deal,
        [
            {"player": "p1", "type": "pick", "from": "closed", "card": "4H"},
            {"player": "p1", "type": "declare", "finish": "TC", "groups": P1_DECLARES},
            {"player": "p4", "type": "show", "groups": [["8H", "8C", "JS"]]},
        ],
        settle=True,
    )
    recorded = game.settlement
    independent = compute_settlement(game.config, game.winner, game.player_ends(), game.wild)
    assert independent == recorded
    assert Settlement.from_dict(recorded.to_dict()) == recorded
    assert game.recorded_settlement == recorded.to_dict()
    p4 = recorded.players["p4"]
    # The show has no pure sequence, so all 13 cards count: more than the cards' minimum.
    assert p4.kinds == (None,) and p4.case == "no_pure_sequence"
    assert (p4.hand_score, p4.min_score, p4.points) == (86, 71, 40)


# -- money ------------------------------------------------------------------------------------


def _drops(config, *results):
    ends = [PlayerEnd(f"p{i + 2}", result, ended_at_round=0) for i, result in enumerate(results)]
    return compute_settlement(config, "p1", ends, wild=None)


def test_each_losers_amount_is_rounded_half_up_once_at_the_end():
    # 20 × 0.00125 = 0.025: half-up gives 0.03 (banker's rounding would give 0.02).
    config = config_for(
        variant="raise", point_value="0.00125", raise_schedule=None, raise_step="0", raise_max=None
    )
    settlement = _drops(config, "first_drop", "first_drop")
    assert [line.amount for line in settlement.players.values()] == [Decimal("0.03")] * 2
    assert Decimal("0.025").quantize(Decimal("0.01"), ROUND_HALF_EVEN) == Decimal("0.02")
    assert settlement.gross == Decimal("0.06")


def test_the_fee_is_rounded_half_up_and_the_winner_gets_gross_less_fee():
    # 40 × 0.613 = 24.52; 12.5 % of that is 3.065 → 3.07 (half-even would give 3.06).
    config = config_for(point_value="0.613", fee_percent="12.5")
    settlement = _drops(config, "middle_drop", "first_drop")
    assert settlement.players["p2"].amount == Decimal("24.52")
    assert settlement.gross == Decimal("36.78")  # + 20 × 0.613 = 12.26
    assert settlement.fee == money(Decimal("36.78") * Decimal("0.125")) == Decimal("4.60")
    config = config_for(point_value="0.613", fee_percent="12.5", players="p1 p2")
    single = _drops(config, "middle_drop")
    assert (single.gross, single.fee, single.net_to_winner) == (
        Decimal("24.52"),
        Decimal("3.07"),
        Decimal("21.45"),
    )


def test_ledger_entries_debit_each_loser_and_credit_winner_and_fee():
    config = config_for(point_value="0.613", fee_percent="12.5")
    settlement = _drops(config, "middle_drop", "auto_drop")
    entries = [entry.to_dict() for entry in settlement.ledger_entries]
    assert entries == [
        {"account": "player:p2", "debit": "24.52", "credit": "0.00"},
        {"account": "player:p3", "debit": "24.52", "credit": "0.00"},
        {"account": "player:p1", "debit": "0.00", "credit": "42.91"},
        {"account": FEE_ACCOUNT, "debit": "0.00", "credit": "6.13"},
    ]
    assert settlement.balanced


RESULTS = st.sampled_from(["first_drop", "middle_drop", "auto_drop", "wrong_show"])
VALUES = st.decimals(min_value=Decimal("0.001"), max_value=Decimal("50"), places=3)
PERCENTS = st.decimals(min_value=Decimal("0"), max_value=Decimal("100"), places=2)


@settings(max_examples=150, deadline=None)
@given(
    results=st.lists(RESULTS, min_size=1, max_size=5),
    value=VALUES,
    fee=PERCENTS,
    rounds=st.lists(st.integers(0, 30), min_size=5, max_size=5),
)
def test_every_settlement_balances_to_the_paisa(results, value, fee, rounds):
    players = " ".join(f"p{i}" for i in range(1, len(results) + 2))
    config = config_for(
        players,
        variant="raise",
        point_value=value,
        raise_step="0.037",
        raise_max=None,
        fee_percent=fee,
    )
    ends = [PlayerEnd(f"p{i + 2}", r, ended_at_round=rounds[i]) for i, r in enumerate(results)]
    settlement = compute_settlement(config, "p1", ends, wild=None)
    debits = sum(e.debit for e in settlement.ledger_entries)
    credits = sum(e.credit for e in settlement.ledger_entries)
    assert debits == credits == settlement.gross
    assert settlement.net_to_winner + settlement.fee == settlement.gross
    for line in settlement.players.values():
        exact = line.points * point_value_for_round(config, line.ended_at_round)
        assert abs(line.amount - exact) <= Decimal("0.005")
        assert line.amount == line.amount.quantize(Decimal("0.01"))


def test_point_values_per_round():
    capped = config_for(variant="raise", point_value="1.00", raise_step="0.25", raise_max="1.60")
    assert [point_value_for_round(capped, r) for r in range(5)] == [
        Decimal("1.00"),
        Decimal("1.25"),
        Decimal("1.50"),
        Decimal("1.60"),
        Decimal("1.60"),
    ]
    scheduled = config_for(variant="raise", point_value="1", raise_schedule=["1", "1.5", "3"])
    assert [point_value_for_round(scheduled, r) for r in (0, 1, 2, 9)] == [
        Decimal("1"),
        Decimal("1.5"),
        Decimal("3"),
        Decimal("3"),
    ]
    fixed = config_for(point_value="2")
    assert point_value_for_round(fixed, 40) == Decimal("2")


def test_the_settle_summary_has_exactly_the_settle_json_shape():
    summary = _drops(config_for(point_value="2"), "first_drop", "wrong_show").summary()
    assert list(summary) == ["game_id", "winner", "gross", "fee", "net_to_winner", "players"]
    assert summary["players"]["p3"] == {
        "result": "wrong_show",
        "points": 80,
        "point_value": "2.00",
        "amount": "160.00",
    }
    full = _drops(config_for(point_value="2"), "first_drop", "wrong_show").to_dict()
    assert {"currency", "fee_percent", "ledger_entries"} <= set(full)
    assert set(full["players"]["p2"]) >= {"hand_score", "min_score", "case", "ended_at_round"}


def test_a_settlement_needs_every_loser_once():
    config = config_for()
    with pytest.raises(ValueError, match="missing p3"):
        compute_settlement(config, "p1", [PlayerEnd("p2", "first_drop", 0)], wild=None)
    with pytest.raises(ValueError, match="p2 ended the game twice"):
        compute_settlement(
            config,
            "p1",
            [PlayerEnd("p2", "first_drop", 0), PlayerEnd("p2", "middle_drop", 1)],
            wild=None,
        )


def test_a_three_deck_table_judges_hands_against_three_decks():
    from domain.cards import parse_cards
    from domain.rummy13.solver import best_grouping
    from tests.game_tables import config_for

    config = config_for(decks=3)
    assert config.profile.decks == 3 and config.profile.name == "rummycircle"
    # Three copies of AS exist only with three decks: the table's own profile accepts them.
    hand = parse_cards("AS AS AS 2S 3S 4S 5H 6H 7H 9C 9D 9H KD")
    assert best_grouping(hand, parse_cards("JK")[0], config.profile).hand_score >= 0
    assert config_for().profile is config_for().profile


@pytest.mark.parametrize("rules", ["rummycircle", "deccan"])
@pytest.mark.parametrize("result", ["lost", "deal_show", "middle_drop", "wrong_show"])
def test_each_losers_scores_are_the_solvers_own_answers(rules: str, result: str):
    """``settle_player`` asks the solver less (a non-showing loser's best grouping gives its
    least score; a declaration is searched for only when that score is 0): every figure
    must still be what the solver says of the same cards, shown or not."""
    import random

    from domain.cards import ALL_CARDS
    from domain.rummy13.profiles import get_profile
    from domain.rummy13.settlement import settle_player
    from domain.rummy13.solver import best_grouping, declaration

    config = config_for(rules=rules, dealer="p1")
    profile = get_profile(rules)
    deck = [card for card in ALL_CARDS for _ in range(2)]
    chooser = random.Random(f"{rules}-{result}")
    dealt = [chooser.sample(deck, 14) for _ in range(60)]  # the wild indicator and 13
    dealt.append([parse_cards("7D")[0], *parse_cards(COMPLETE)])  # declarable: min score 0
    seen_zero = False
    for index, (wild, *held) in enumerate(dealt):
        cards = tuple(held)
        best = best_grouping(cards, wild, profile)
        shown = None
        if index % 2 and result in ("lost", "deal_show"):
            shown = tuple(tuple(group.cards) for group in best.groups[:-1])
        line = settle_player(
            PlayerEnd("p2", result, ended_at_round=0, cards=cards, shown=shown), wild, config
        )
        least = min_hand_score(cards, wild, profile)
        assert line.min_score == least
        seen_zero |= least == 0
        if result in ("lost", "deal_show"):
            can_declare = declaration(cards, wild, profile) is not None
            assert line.met_objective is (rules == "deccan" and can_declare)
            if shown is None:
                assert line.hand_score == best.hand_score == least
    assert seen_zero
