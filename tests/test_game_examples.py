"""The worked examples of the seed texts and docs/record-format.md, played as whole games.

Each is a real deal from two decks with printed jokers (all 106 cards), played move by move
through the aggregate; the payout then comes out of the events, not out of the test.
"""

from __future__ import annotations

from decimal import Decimal

from game_tables import THREE_HANDS, complete_deal, config_for, pass_turn, three_player_deal

from domain.cards import parse_cards
from domain.rummy13.moves import play_game
from domain.rummy13.solver import min_hand_score

# Wild indicator TD (tens are jokers; no hand holds one). Each loser's best grouping leaves
# exactly the loose cards noted.
POINTS_HANDS = {
    "p1": "2D 3D 4D 6C 7C 8C QH QS QC JH JS JC KS",  # loose KS = 10
    "p2": "3C 4C 5C 7H 8H 9H KS KH KC 2D 4H 6D 8S",  # loose 2D 4H 6D 8S = 20
    "p3": "6S 7S 8S 9S JD QD KD 4H 4D 4C AC JH QC",  # loose AC JH QC = 30
    "p4": "2S 3S 4S 5D 6D 7D 9D 9H 9C KC QS JD AH",  # loose KC QS JD AH = 40
    "p5": "AS 2S 3S 4S 6H 7H 8H 9C 9D 9S AC AD 2C",  # picks AH and declares
}
P5_DECLARES = [["AS", "2S", "3S", "4S"], ["6H", "7H", "8H"], ["9C", "9D", "9S"], ["AC", "AD", "AH"]]


def test_points_rummy_seed_example_pays_200():
    """Seed 004: 'r 2 / Point', player 5 declares, the others lose 10, 20, 30 and 40."""
    config = config_for("p1 p2 p3 p4 p5", point_value="2", fee_percent="15")
    deal = complete_deal(POINTS_HANDS, "TD", "5C", "5H 5S 3H 2H AH")
    moves = [
        *pass_turn("p1", "5H"),
        *pass_turn("p2", "5S"),
        *pass_turn("p3", "3H"),
        *pass_turn("p4", "2H"),
        {"player": "p5", "type": "pick", "from": "closed", "card": "AH"},
        {"player": "p5", "type": "declare", "finish": "2C", "groups": P5_DECLARES},
    ]
    game = play_game(config, deal, moves, settle=True)
    settlement = game.settlement
    assert settlement.winner == "p5"
    assert {p: line.points for p, line in settlement.players.items()} == {
        "p1": 10,
        "p2": 20,
        "p3": 30,
        "p4": 40,
    }
    assert all(line.result == "lost" for line in settlement.players.values())
    assert settlement.gross == Decimal("200.00")
    assert (settlement.fee, settlement.net_to_winner) == (Decimal("30.00"), Decimal("170.00"))
    # Nobody showed, so each loser was charged the minimum their cards allow.
    for player, line in settlement.players.items():
        assert (
            line.min_score
            == line.hand_score
            == min_hand_score(parse_cards(POINTS_HANDS[player]), "TD")
        )
    assert settlement.balanced


RAISE_HANDS = {
    "p1": "5H 5S JD QD KH 7S 8D 9S 6S TH TC 2H 3H",
    "p2": "AH 3H 6H 6D 8C 8S JD JS QS 4S 5S 4D 3C",
    "p3": "2D 3D 4D 6C 7C 8C QH QS QC JH JS JC KS",  # best: loose KS = 10
    "p4": "3C 4C 5C 7H 8H 9H KS KH KC 2D 4H 6D 3S",  # best: loose 2D 4H 6D 3S = 15
    "p5": "AS 2S 3S 4S 6H 7H 8H 9C 9D 9S AC AD 2C",
}


def raise_example() -> tuple:
    """Seed 000: start 1, max 2 (step 0.10); dealer p5, so p1 moves first.

    Round 0: p1 first-drops (@1.00). p2 plays rounds 0-2 and middle-drops in round 3
    (@1.30). p3, p4 and p5 play on; p5 declares on its turn in round 10 (@2.00).
    """
    config = config_for(
        "p1 p2 p3 p4 p5",
        variant="raise",
        point_value="1",
        raise_step="0.10",
        raise_max="2",
        fee_percent="10",
    )
    base = complete_deal(RAISE_HANDS, "TD", "5C")
    fillers = [card for card in base["stock"] if card != "AH"][:35]
    deal = complete_deal(RAISE_HANDS, "TD", "5C", " ".join([*fillers, "AH"]))
    cards = iter(fillers)
    moves = [{"player": "p1", "type": "drop", "at": "2025-03-01T18:04:05Z"}]
    for player in ["p2", "p3", "p4", "p5"] * 3:
        moves += pass_turn(player, next(cards))
    moves.append({"player": "p2", "type": "drop"})
    for player in ["p3", "p4", "p5"] * 7 + ["p3", "p4"]:
        moves += pass_turn(player, next(cards))
    moves += [
        {"player": "p5", "type": "pick", "from": "closed", "card": "AH"},
        {
            "player": "p5",
            "type": "declare",
            "finish": "2C",
            "groups": P5_DECLARES,
            "at": "2025-03-01T18:30:00Z",
        },
    ]
    return config, deal, moves


def test_raise_rummy_seed_example_pays_122():
    config, deal, moves = raise_example()
    game = play_game(config, deal, moves, settle=True)
    summary = game.settlement.summary()
    assert summary["players"] == {
        "p1": {"result": "first_drop", "points": 20, "point_value": "1.00", "amount": "20.00"},
        "p2": {"result": "middle_drop", "points": 40, "point_value": "1.30", "amount": "52.00"},
        "p3": {"result": "lost", "points": 10, "point_value": "2.00", "amount": "20.00"},
        "p4": {"result": "lost", "points": 15, "point_value": "2.00", "amount": "30.00"},
    }
    assert (summary["winner"], summary["gross"], summary["fee"], summary["net_to_winner"]) == (
        "p5",
        "122.00",
        "12.20",
        "109.80",
    )
    details = game.settlement.players
    assert [details[p].ended_at_round for p in ("p1", "p2", "p3", "p4")] == [0, 3, 10, 10]
    assert details["p3"].min_score == 10 and details["p4"].min_score == 15
    # The value rose to the cap: a replay shows 2.00 now and next.
    state = game.table_state()
    assert (state.round, state.point_value, state.next_point_value) == (
        10,
        Decimal("2"),
        Decimal("2"),
    )
    assert state.to_dict()["next_point_value"] == "2.00"


def test_format_example_settles_to_the_reported_figures():
    """docs/record-format.md's example: p2 first drop 20 @ 1.00, p1 declares in round 1 @ 1.10,
    p3 shows and is charged 27 @ 1.10 → gross 49.70, fee 4.97, net 44.73."""
    config = config_for(
        variant="raise",
        point_value="1.00",
        raise_step="0.10",
        raise_max="2.00",
        fee_percent="10",
        dealer="p3",
    )
    assert THREE_HANDS["p3"].startswith("5C 6C 7C QD 2H 8S")
    moves = [
        {"player": "p1", "type": "pick", "from": "closed", "card": "4H"},
        {"player": "p1", "type": "discard", "card": "TC"},
        {"player": "p2", "type": "drop"},
        {"player": "p3", "type": "miss"},
        {"player": "p1", "type": "pick", "from": "closed", "card": "9C"},
        {
            "player": "p1",
            "type": "declare",
            "finish": "9C",
            "groups": [
                ["AS", "2S", "3S"],
                ["4H", "5H", "JK"],
                ["9D", "9H", "9S"],
                ["KS", "KD", "KC", "KH"],
            ],
        },
        {"player": "p3", "type": "show", "groups": [["5C", "6C", "7C"], ["QD", "2H", "8S"]]},
    ]
    game = play_game(config, three_player_deal("4H 9C"), moves)
    assert game.phase == "settled"  # the only remaining loser showed
    summary = game.settlement.summary()
    assert summary == {
        "game_id": "test-game",
        "winner": "p1",
        "gross": "49.70",
        "fee": "4.97",
        "net_to_winner": "44.73",
        "players": {
            "p2": {"result": "first_drop", "points": 20, "point_value": "1.00", "amount": "20.00"},
            "p3": {"result": "lost", "points": 27, "point_value": "1.10", "amount": "29.70"},
        },
    }
    p3 = game.settlement.players["p3"]
    # Charged on the grouping shown; the cards could have done better (four jokers).
    assert p3.case == "pure_but_fewer_than_two_sequences" and p3.hand_score == 27
    assert p3.min_score < 27


def test_the_final_table_is_plain_json_for_viewers():
    import json

    config, deal, moves = raise_example()
    state = play_game(config, deal, moves, settle=True).table_state()
    data = json.loads(json.dumps(state.to_dict()))
    assert data["phase"] == "settled" and data["winner"] == "p5"
    assert data["settlement"]["gross"] == "122.00"
    assert data["declaration"]["valid_declaration"] is True
    assert [seat["status"] for seat in data["seats"]] == [
        "dropped",
        "dropped",
        "lost",
        "lost",
        "won",
    ]
    seat_view = json.loads(json.dumps(state.for_seat("p1").to_dict()))
    assert seat_view["seats"][1]["hand"] is None  # p2 dropped: its cards stay hidden
    assert seat_view["seats"][2]["hand"] is not None  # p3 was charged at settlement
