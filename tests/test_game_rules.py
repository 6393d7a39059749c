"""Every rule the game aggregate enforces (docs/rules.md §1), and every named domain error.

Each illegal command must raise its own error class with a message that says who, what and
why, and must record nothing (the game's version and pending events are unchanged).
"""

from __future__ import annotations

import pytest
from game_tables import (
    THREE_HANDS,
    complete_deal,
    config_for,
    dealt_game,
    pass_turn,
    random_legal_game,
    three_player_deal,
)

from domain.cards import Card, full_deck
from domain.errors import (
    BadConfig,
    BadDeal,
    BadMove,
    CardNotHeld,
    DeclarationMismatch,
    GameNotOver,
    GameOver,
    IllegalDrop,
    IllegalMiss,
    IllegalPick,
    IllegalReshuffle,
    IllegalShow,
    JokerPickForbidden,
    NotDealt,
    NotYourTurn,
    PlayerOut,
    RuleViolation,
    StockMismatch,
    UnknownPlayer,
)
from domain.rummy13.game import Game
from domain.rummy13.moves import apply_move, play_game

P1_DECLARES = [
    ["AS", "2S", "3S"],
    ["4H", "5H", "JK"],
    ["9D", "9H", "9S"],
    ["KS", "KD", "KC", "KH"],
]


def rejects(game: Game, error: type[RuleViolation], message: str, move: dict) -> RuleViolation:
    """Apply ``move`` expecting ``error`` with ``message``; check nothing was recorded."""
    version, pending = game.version, len(game.pending_events)
    moves_before = game.moves
    with pytest.raises(error) as caught:
        apply_move(game, move)
    assert str(caught.value) == message
    assert game.version == version
    assert len(game.pending_events) == pending
    assert game.moves == moves_before
    return caught.value


# -- turns ---------------------------------------------------------------------------------


def test_the_seat_after_the_dealer_moves_first_and_turns_follow_seat_order():
    game = dealt_game(config_for(dealer="p2"))
    assert game.current_player == "p3"
    for move in pass_turn("p3", "4H"):
        apply_move(game, move)
    assert game.current_player == "p1"


def test_a_move_out_of_turn_is_refused_with_who_and_why():
    game = dealt_game()
    error = rejects(
        game,
        NotYourTurn,
        "p2 cannot pick 4H: it is p1's turn",
        {"player": "p2", "type": "pick", "from": "closed", "card": "4H"},
    )
    assert (error.player, error.move_type, error.card, error.game_id) == (
        "p2",
        "pick",
        "4H",
        "test-game",
    )


def test_the_toss_decides_the_first_mover_and_the_dealer_is_the_seat_before():
    config = config_for(dealer=None, toss={"p1": "KS", "p2": "AC", "p3": "AH"})
    assert config.toss_winner == "p3" and config.dealer_player == "p2"
    assert dealt_game(config).current_player == "p3"


def test_toss_ties_and_disagreements_are_bad_configurations():
    with pytest.raises(BadConfig, match="toss is tied between p1 and p2"):
        config_for(dealer=None, toss={"p1": "AS", "p2": "AS", "p3": "2C"})
    with pytest.raises(BadConfig, match="dealer p3 disagrees with the toss"):
        config_for(dealer="p3", toss={"p1": "KS", "p2": "AC", "p3": "AH"})


def test_picking_twice_discarding_before_picking_and_declaring_before_picking_are_refused():
    game = dealt_game()
    rejects(
        game,
        NotYourTurn,
        "p1 cannot discard TC: must pick before discarding",
        {"player": "p1", "type": "discard", "card": "TC"},
    )
    rejects(
        game,
        NotYourTurn,
        "p1 cannot declare TC: must pick before declaring",
        {"player": "p1", "type": "declare", "finish": "TC", "groups": P1_DECLARES},
    )
    apply_move(game, {"player": "p1", "type": "pick", "from": "closed", "card": "4H"})
    rejects(
        game,
        NotYourTurn,
        "p1 cannot pick KC: already picked this turn: discard or declare",
        {"player": "p1", "type": "pick", "from": "open", "card": "KC"},
    )


def test_unknown_players_and_moves_before_the_deal_are_refused():
    game = dealt_game()
    rejects(
        game,
        UnknownPlayer,
        "p9 cannot drop: not seated at this table",
        {"player": "p9", "type": "drop"},
    )
    undealt = Game(config_for())
    with pytest.raises(NotDealt, match="p1 cannot drop: the cards have not been dealt"):
        undealt.drop("p1")


# -- picking -------------------------------------------------------------------------------


def test_a_pick_from_the_open_pile_takes_its_top_card():
    game = dealt_game()
    rejects(
        game,
        IllegalPick,
        "p1 cannot pick QH: the open pile's top card is KC",
        {"player": "p1", "type": "pick", "from": "open", "card": "QH"},
    )
    apply_move(game, {"player": "p1", "type": "pick", "from": "open", "card": "KC"})
    assert game.hand("p1").count(Card.parse("KC")) == 2
    assert game.table_state().open_pile == ()


def test_a_pick_from_the_closed_stock_takes_its_top_card_when_the_order_is_known():
    game = dealt_game()
    rejects(
        game,
        StockMismatch,
        "p1 cannot pick 9C: the top of the stock is 4H",
        {"player": "p1", "type": "pick", "from": "closed", "card": "9C"},
    )
    rejects(
        game,
        BadMove,
        "p1 cannot pick 4H: a pick is from 'open' or 'closed', not 'deck'",
        {"player": "p1", "type": "pick", "from": "deck", "card": "4H"},
    )
    apply_move(game, {"player": "p1", "type": "pick", "from": "closed", "card": "4H"})
    assert game.stock_count == 106 - 3 * 13 - 2 - 1


def test_without_a_stock_order_a_closed_pick_must_be_a_card_still_unseen():
    deal = three_player_deal(known_stock=False)
    game = play_game(config_for(), deal, [])
    assert not game.table_state().stock_known
    # Both 7S are in p3's hand: no 7S can be in the stock.
    rejects(
        game,
        StockMismatch,
        "p1 cannot pick 7S: no such card is left in the stock (every copy is in a hand, "
        "on the open pile, or the wild indicator)",
        {"player": "p1", "type": "pick", "from": "closed", "card": "7S"},
    )
    apply_move(game, {"player": "p1", "type": "pick", "from": "closed", "card": "QH"})
    assert game.card_counts() == full_deck(2, 1)


# -- jokers on the open pile -----------------------------------------------------------------


def test_the_dealt_open_card_may_be_picked_even_when_it_is_a_joker():
    deal = complete_deal(THREE_HANDS, "7D", "7C", "4H 9C")
    game = play_game(config_for(), deal, [])
    apply_move(game, {"player": "p1", "type": "pick", "from": "open", "card": "7C"})
    assert Card.parse("7C") in game.hand("p1")


def test_a_joker_another_player_discarded_may_not_be_picked_from_the_open_pile():
    game = dealt_game()
    apply_move(game, {"player": "p1", "type": "pick", "from": "closed", "card": "4H"})
    apply_move(game, {"player": "p1", "type": "discard", "card": "JK"})
    rejects(
        game,
        JokerPickForbidden,
        "p2 cannot pick JK: it is a joker, discarded by p1",
        {"player": "p2", "type": "pick", "from": "open", "card": "JK"},
    )
    apply_move(game, {"player": "p2", "type": "pick", "from": "closed", "card": "9C"})
    apply_move(game, {"player": "p2", "type": "discard", "card": "9C"})
    apply_move(game, {"player": "p3", "type": "pick", "from": "closed", "card": "QH"})
    apply_move(game, {"player": "p3", "type": "discard", "card": "7S"})  # wild rank: a joker
    rejects(
        game,
        JokerPickForbidden,
        "p1 cannot pick 7S: it is a joker, discarded by p3",
        {"player": "p1", "type": "pick", "from": "open", "card": "7S"},
    )


PRINTED_JOKER_HANDS = {  # wild indicator JK: every Ace is a joker
    "p1": "2S 3S 4S 6H 7H 9D 9H 9S KS KD KC 5D AC",
    "p2": "AD 3D 5D 8D TD JC QC 2H 4C 6C 8C TS QS",
    "p3": "5C 6C 7C QD 2H 8S 7S 7S 2D 2C 3D JH QH",
}


def test_a_printed_joker_as_wild_indicator_makes_every_ace_a_joker():
    deal = complete_deal(PRINTED_JOKER_HANDS, "JK", "KC", "KH 4D")
    game = play_game(config_for(), deal, [])
    apply_move(game, {"player": "p1", "type": "pick", "from": "closed", "card": "KH"})
    apply_move(game, {"player": "p1", "type": "discard", "card": "5D"})
    apply_move(game, {"player": "p2", "type": "pick", "from": "closed", "card": "4D"})
    apply_move(game, {"player": "p2", "type": "discard", "card": "AD"})  # an Ace: a joker
    rejects(
        game,
        JokerPickForbidden,
        "p3 cannot pick AD: it is a joker, discarded by p2",
        {"player": "p3", "type": "pick", "from": "open", "card": "AD"},
    )


def test_an_ace_stands_in_for_a_missing_card_when_the_printed_joker_is_the_indicator():
    deal = complete_deal(PRINTED_JOKER_HANDS, "JK", "KC", "KH")
    game = play_game(
        config_for(),
        deal,
        [
            {"player": "p1", "type": "pick", "from": "closed", "card": "KH"},
            {
                "player": "p1",
                "type": "declare",
                "finish": "5D",
                "groups": [
                    ["2S", "3S", "4S"],
                    ["6H", "7H", "AC"],
                    ["9D", "9H", "9S"],
                    ["KS", "KD", "KC", "KH"],
                ],
            },
        ],
        settle=True,
    )
    assert game.winner == "p1"
    assert game.declaration().kinds == ["pure", "impure", "set", "set"]
    # p2 has no pure sequence, so all 13 cards count, and its Ace (a joker) counts 0:
    # 0+3+5+8+10+10+10+2+4+6+8+10+10 = 86. p2 had no first turn: a deal show, capped at 40.
    line = game.settlement.players["p2"]
    assert (line.result, line.hand_score, line.points) == ("deal_show", 86, 40)


# -- drops and misses ------------------------------------------------------------------------


def test_a_drop_on_the_first_turn_is_a_first_drop_and_later_a_middle_drop():
    game = dealt_game(
        config_for("p1 p2 p3 p4", dealer="p4"),
        complete_deal(
            {**THREE_HANDS, "p4": "AH 3H 6D 6S 8H 8H JD JS QD 4S 5S 4D 3C"},
            "7D",
            "KC",
            "4H 9C QH 3H 6H",
        ),
    )
    apply_move(game, {"player": "p1", "type": "drop"})
    for move in pass_turn("p2", "4H") + pass_turn("p3", "9C") + pass_turn("p4", "QH"):
        apply_move(game, move)
    apply_move(game, {"player": "p2", "type": "drop"})
    state = game.table_state()
    assert state.seat_of("p1").drop_kind == "first_drop"
    assert state.seat_of("p2").drop_kind == "middle_drop"
    assert state.seat_of("p1").status == state.seat_of("p2").status == "dropped"
    assert state.current_player == "p3"
    rejects(
        game,
        PlayerOut,
        "p1 cannot pick 3H: already out of the game (dropped)",
        {"player": "p1", "type": "pick", "from": "closed", "card": "3H"},
    )


def test_a_drop_must_come_before_picking():
    game = dealt_game()
    apply_move(game, {"player": "p1", "type": "pick", "from": "closed", "card": "4H"})
    rejects(
        game,
        IllegalDrop,
        "p1 cannot drop: already picked this turn: a drop comes before picking",
        {"player": "p1", "type": "drop"},
    )


def test_three_consecutive_misses_drop_the_player_automatically():
    game = dealt_game()
    stock = iter(str(c) for c in list(game._stock))
    for _ in range(2):
        for move in pass_turn("p1", next(stock)):
            apply_move(game, move)
        apply_move(game, {"player": "p2", "type": "miss"})
        for move in pass_turn("p3", next(stock)):
            apply_move(game, move)
    assert game.table_state().seat_of("p2").consecutive_misses == 2
    for move in pass_turn("p1", next(stock)):
        apply_move(game, move)
    apply_move(game, {"player": "p2", "type": "miss"})
    seat = game.table_state().seat_of("p2")
    assert (seat.status, seat.drop_kind) == ("auto_dropped", "auto_drop")
    assert game.current_player == "p3"
    assert game.moves[-1] == {"player": "p2", "type": "miss"}


def test_a_played_turn_resets_the_run_of_misses():
    game = dealt_game()
    stock = iter(str(c) for c in list(game._stock))
    turns = [
        ("p1", "pass"),
        ("p2", "miss"),
        ("p3", "pass"),
        ("p1", "pass"),
        ("p2", "miss"),
        ("p3", "pass"),
        ("p1", "pass"),
        ("p2", "pass"),
        ("p3", "pass"),
        ("p1", "pass"),
        ("p2", "miss"),
        ("p3", "pass"),
        ("p1", "pass"),
        ("p2", "miss"),
        ("p3", "pass"),
    ]
    for player, kind in turns:
        if kind == "miss":
            apply_move(game, {"player": player, "type": "miss"})
        else:
            for move in pass_turn(player, next(stock)):
                apply_move(game, move)
    seat = game.table_state().seat_of("p2")
    assert (seat.status, seat.consecutive_misses, seat.turns_taken) == ("playing", 2, 5)


def test_a_miss_cannot_follow_a_pick():
    game = dealt_game()
    apply_move(game, {"player": "p1", "type": "pick", "from": "closed", "card": "4H"})
    rejects(
        game,
        IllegalMiss,
        "p1 cannot miss: already picked this turn: discard or declare",
        {"player": "p1", "type": "miss"},
    )


# -- discards and declarations ---------------------------------------------------------------


def test_a_card_discarded_must_be_held():
    game = dealt_game()
    apply_move(game, {"player": "p1", "type": "pick", "from": "closed", "card": "4H"})
    rejects(
        game,
        CardNotHeld,
        "p1 cannot discard 9C: not in hand",
        {"player": "p1", "type": "discard", "card": "9C"},
    )


def test_the_finish_card_must_be_held():
    game = dealt_game()
    apply_move(game, {"player": "p1", "type": "pick", "from": "closed", "card": "4H"})
    rejects(
        game,
        CardNotHeld,
        "p1 cannot declare 5C: the finish card is not in hand",
        {"player": "p1", "type": "declare", "finish": "5C", "groups": P1_DECLARES},
    )


def test_declared_groups_must_be_exactly_the_13_cards_left():
    game = dealt_game()
    apply_move(game, {"player": "p1", "type": "pick", "from": "closed", "card": "4H"})
    groups = [group[:] for group in P1_DECLARES]
    groups[3] = ["KS", "KD", "KC", "QS"]
    rejects(
        game,
        DeclarationMismatch,
        "p1 cannot declare TC: the groups must be exactly the 13 cards left after the "
        "finish card: they leave out KH and list QS not in hand",
        {"player": "p1", "type": "declare", "finish": "TC", "groups": groups},
    )
    rejects(
        game,
        DeclarationMismatch,
        "p1 cannot declare TC: the groups must be exactly the 13 cards left after the "
        "finish card: they leave out KS KD KC KH",
        {"player": "p1", "type": "declare", "finish": "TC", "groups": P1_DECLARES[:3]},
    )


def test_a_valid_declaration_wins_and_ends_the_game_for_everyone_else():
    game = dealt_game()
    apply_move(game, {"player": "p1", "type": "pick", "from": "closed", "card": "4H"})
    apply_move(game, {"player": "p1", "type": "declare", "finish": "TC", "groups": P1_DECLARES})
    state = game.table_state()
    assert (state.phase, state.winner, state.finish) == ("showing", "p1", Card.parse("TC"))
    assert [seat.status for seat in state.seats] == ["won", "lost", "lost"]
    assert state.declaration.valid_declaration
    rejects(
        game,
        GameOver,
        "p2 cannot pick 9C: the game is over (p1 won)",
        {"player": "p2", "type": "pick", "from": "closed", "card": "9C"},
    )


WRONG_GROUPS = [
    ["AS", "2S", "3S"],
    ["4H", "5H", "9D"],
    ["JK", "9H", "9S"],
    ["KS", "KD", "KC", "KH"],
]
P3_DECLARES = [["5C", "6C", "7C"], ["2D", "3D", "4D", "7H"], ["2H", "2C", "7S"], ["8S", "7S", "JK"]]


def test_a_wrong_show_scores_80_takes_the_player_out_and_another_player_wins():
    game = dealt_game(deal=three_player_deal("4H 9C 4D"))
    apply_move(game, {"player": "p1", "type": "pick", "from": "closed", "card": "4H"})
    apply_move(game, {"player": "p1", "type": "declare", "finish": "TC", "groups": WRONG_GROUPS})
    state = game.table_state()
    assert state.seat_of("p1").status == "wrong_show"
    assert state.open_top == Card.parse("TC") and state.phase == "playing"
    assert state.current_player == "p2"
    for move in pass_turn("p2", "9C"):
        apply_move(game, move)
    apply_move(game, {"player": "p3", "type": "pick", "from": "closed", "card": "4D"})
    apply_move(game, {"player": "p3", "type": "declare", "finish": "QD", "groups": P3_DECLARES})
    assert game.winner == "p3" and game.phase == "showing"
    settlement = game.settle()
    assert settlement.players["p1"].result == "wrong_show"
    assert settlement.players["p1"].points == 80
    assert settlement.players["p2"].result == "lost"
    assert game.card_counts() == full_deck(2, 1)


# -- shows ------------------------------------------------------------------------------------


def test_shows_come_only_after_a_valid_declaration_once_per_remaining_loser():
    game = dealt_game(deal=three_player_deal("4H 9C 4D"))
    rejects(
        game,
        IllegalShow,
        "p2 cannot show: shows come only after a valid declaration",
        {"player": "p2", "type": "show", "groups": []},
    )
    apply_move(game, {"player": "p1", "type": "pick", "from": "closed", "card": "4H"})
    apply_move(game, {"player": "p1", "type": "declare", "finish": "TC", "groups": P1_DECLARES})
    rejects(
        game,
        IllegalShow,
        "p1 cannot show: the winner declared and does not show",
        {"player": "p1", "type": "show", "groups": []},
    )
    rejects(
        game,
        CardNotHeld,
        "p2 cannot show 5C: not in hand",
        {"player": "p2", "type": "show", "groups": [["5C", "6C", "7C"]]},
    )
    apply_move(game, {"player": "p2", "type": "show", "groups": [["4C", "6C", "8C"]]})
    rejects(
        game,
        IllegalShow,
        "p2 cannot show: already showed",
        {"player": "p2", "type": "show", "groups": []},
    )
    assert game.phase == "showing"
    apply_move(game, {"player": "p3", "type": "show", "groups": [["5C", "6C", "7C"]]})
    assert game.phase == "settled"  # every remaining loser has shown: settled by itself
    rejects(
        game,
        GameOver,
        "p3 cannot show: the game is already settled",
        {"player": "p3", "type": "show", "groups": []},
    )


def test_an_eliminated_player_does_not_show():
    game = dealt_game(deal=three_player_deal("4H 9C 4D"))
    apply_move(game, {"player": "p1", "type": "pick", "from": "closed", "card": "4H"})
    apply_move(game, {"player": "p1", "type": "declare", "finish": "TC", "groups": WRONG_GROUPS})
    for move in pass_turn("p2", "9C"):
        apply_move(game, move)
    apply_move(game, {"player": "p3", "type": "pick", "from": "closed", "card": "4D"})
    apply_move(game, {"player": "p3", "type": "declare", "finish": "QD", "groups": P3_DECLARES})
    rejects(
        game,
        IllegalShow,
        "p1 cannot show: out of the game (wrong_show)",
        {"player": "p1", "type": "show", "groups": []},
    )


# -- the end of the game ------------------------------------------------------------------------


def test_the_last_player_standing_wins_with_zero_and_the_game_settles_by_itself():
    game = dealt_game()
    apply_move(game, {"player": "p1", "type": "drop"})
    apply_move(game, {"player": "p2", "type": "drop"})
    assert (game.phase, game.winner) == ("settled", "p3")
    summary = game.settlement.summary()
    assert summary["players"] == {
        "p1": {"result": "first_drop", "points": 20, "point_value": "1.00", "amount": "20.00"},
        "p2": {"result": "first_drop", "points": 20, "point_value": "1.00", "amount": "20.00"},
    }
    assert summary["gross"] == "40.00"
    rejects(
        game,
        GameOver,
        "p3 cannot pick 4H: the game is over (p3 won)",
        {"player": "p3", "type": "pick", "from": "closed", "card": "4H"},
    )


def test_settling_needs_a_finished_game_and_happens_once():
    game = dealt_game()
    with pytest.raises(GameNotOver, match="cannot settle: the game is still playing"):
        game.settle()
    apply_move(game, {"player": "p1", "type": "pick", "from": "closed", "card": "4H"})
    apply_move(game, {"player": "p1", "type": "declare", "finish": "TC", "groups": P1_DECLARES})
    game.settle()
    with pytest.raises(GameOver, match="cannot settle: the game is already settled"):
        game.settle()


# -- reshuffle ---------------------------------------------------------------------------------


ONE_DECK_HANDS = {
    "p1": "AS 2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS",
    "p2": "AH 2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH",
    "p3": "AD 2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD",
}


def _empty_the_stock(game: Game) -> list[str]:
    drawn = [str(card) for card in game._stock]
    players = iter(["p1", "p2", "p3"] * 10)
    for card in drawn:
        for move in pass_turn(next(players), card):
            apply_move(game, move)
    return drawn


def test_reshuffle_only_when_the_stock_is_empty_and_only_with_the_open_piles_cards():
    deal = complete_deal(ONE_DECK_HANDS, "AC", "2C", decks=1)
    game = play_game(config_for(decks=1), deal, [])
    assert game.stock_count == 12
    rejects(
        game,
        IllegalReshuffle,
        "cannot reshuffle: the stock still has 12 card(s)",
        {"type": "reshuffle", "stock": []},
    )
    drawn = _empty_the_stock(game)
    assert game.stock_count == 0 and game.current_player == "p1"
    rejects(
        game,
        IllegalPick,
        "p1 cannot pick 3C: the stock is empty: reshuffle first",
        {"player": "p1", "type": "pick", "from": "closed", "card": "3C"},
    )
    under_top = ["2C", *drawn[:-1]]
    rejects(
        game,
        IllegalReshuffle,
        "cannot reshuffle: the new stock must be exactly the open pile's cards under its "
        f"top card: it leaves out {drawn[-2]} and adds {drawn[-1]}",
        {"type": "reshuffle", "stock": [*under_top[:-1], drawn[-1]]},
    )
    new_order = list(reversed(under_top))
    apply_move(game, {"type": "reshuffle", "stock": new_order})
    state = game.table_state()
    assert state.open_pile == (Card.parse(drawn[-1]),) and state.stock_count == 12
    rejects(
        game,
        StockMismatch,
        f"p1 cannot pick 2C: the top of the stock is {new_order[0]}",
        {"player": "p1", "type": "pick", "from": "closed", "card": "2C"},
    )
    apply_move(game, {"player": "p1", "type": "pick", "from": "closed", "card": new_order[0]})
    assert game.card_counts() == full_deck(1, 1)
    assert game.moves[-2] == {"type": "reshuffle", "stock": new_order}


def test_a_reshuffle_without_an_order_leaves_the_stock_unknown():
    deal = complete_deal(ONE_DECK_HANDS, "AC", "2C", decks=1)
    game = play_game(config_for(decks=1), deal, [])
    drawn = _empty_the_stock(game)
    apply_move(game, {"type": "reshuffle"})
    state = game.table_state()
    assert (state.stock_known, state.stock_count) == (False, 12)
    apply_move(game, {"player": "p1", "type": "pick", "from": "closed", "card": drawn[3]})
    assert game.card_counts() == full_deck(1, 1)


# -- the deal and the table ------------------------------------------------------------------


def _bad_deal(change, message: str, error: type[RuleViolation] = BadDeal) -> None:
    deal = three_player_deal()
    change(deal)
    game = Game(config_for())
    with pytest.raises(error) as caught:
        game.deal(deal["hands"], deal["wild"], deal["open"], deal["stock"])
    assert str(caught.value) == message
    assert game.version == 1 and game.phase == "dealing"


def test_a_deal_must_be_13_cards_each_for_exactly_the_seated_players():
    _bad_deal(lambda d: d["hands"]["p2"].pop(), "cannot deal: p2 was dealt 12 cards, a hand has 13")
    _bad_deal(lambda d: d["hands"].pop("p3"), "cannot deal: no hand for p3")
    _bad_deal(
        lambda d: d["hands"].update(p9=d["hands"]["p1"]),
        "cannot deal: p9 has a hand but is not seated",
    )
    _bad_deal(
        lambda d: d["hands"]["p1"].__setitem__(0, "ZZ"),
        "cannot deal: hand of p1, card 0: 'ZZ' is not a card (rank A,2-9,T,J,Q,K then "
        "suit S,H,D,C, or JK)",
    )


def test_a_deal_must_come_from_the_tables_decks():
    def three_kings(deal):
        deal["hands"]["p2"][0] = "KC"  # p1 holds one KC and the open card is the other
        deal["stock"].append("AD")

    _bad_deal(
        three_kings,
        "cannot deal: KC is dealt 3 times but 2 deck(s) with 1 printed joker(s) each hold 2",
    )
    _bad_deal(
        lambda d: d["stock"].pop(),
        "cannot deal: hands + open card + wild + stock leave out QC (1 card(s)): the deal "
        "must use the whole deck when the stock is given",
    )


def test_a_game_is_dealt_once():
    game = dealt_game()
    deal = three_player_deal()
    with pytest.raises(NotDealt, match="cannot deal: the cards were already dealt"):
        game.deal(deal["hands"], deal["wild"], deal["open"], deal["stock"])


def test_cards_are_conserved_through_a_whole_game():
    game = dealt_game(deal=three_player_deal("4H 9C 4D"))
    assert game.card_counts() == full_deck(2, 1)
    moves = [
        {"player": "p1", "type": "pick", "from": "closed", "card": "4H"},
        {"player": "p1", "type": "declare", "finish": "TC", "groups": WRONG_GROUPS},
        *pass_turn("p2", "9C"),
        {"player": "p3", "type": "pick", "from": "closed", "card": "4D"},
        {"player": "p3", "type": "declare", "finish": "QD", "groups": P3_DECLARES},
        {"player": "p2", "type": "show", "groups": [["4C", "6C", "8C"]]},
    ]
    for move in moves:
        apply_move(game, move)
        assert game.card_counts() == full_deck(2, 1)
    assert game.phase == "settled"


# -- malformed moves and tables ----------------------------------------------------------------


def test_malformed_moves_are_named_errors():
    game = dealt_game()
    rejects(
        game,
        BadMove,
        "p1 cannot pick: the move has no 'card'",
        {"player": "p1", "type": "pick", "from": "closed"},
    )
    rejects(
        game,
        BadMove,
        "p1 cannot discard: 'ZZ' is not a card (rank A,2-9,T,J,Q,K then suit S,H,D,C, or JK)",
        {"player": "p1", "type": "discard", "card": "ZZ"},
    )
    rejects(
        game,
        BadMove,
        "p1 cannot drop: at 'yesterday' is not an ISO-8601 time",
        {"player": "p1", "type": "drop", "at": "yesterday"},
    )
    apply_move(game, {"player": "p1", "type": "pick", "from": "closed", "card": "4H"})
    rejects(
        game,
        BadMove,
        "p1 cannot declare: groups must be a list of lists of cards",
        {"player": "p1", "type": "declare", "finish": "TC", "groups": "AS 2S 3S"},
    )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"variant": "rummy"}, "variant must be 'points' or 'raise', got 'rummy'"),
        ({"point_value": 1.5}, "point_value must be a decimal string such as '1.10', not 1.5"),
        ({"point_value": "0"}, "point_value must be positive, got 0"),
        ({"players": "p1", "dealer": None}, "a table seats 2 to 6 players, got 1"),
        ({"players": "p1 p2 p1", "dealer": None}, "player p1 is seated twice"),
        ({"rules": "house"}, "unknown rule profile 'house' (known: deccan, rummycircle)"),
        ({"dealer": "p7"}, "dealer p7 is not seated at the table"),
        ({"fee_percent": "120"}, "fee_percent must be between 0 and 100, got 120"),
        (
            {"raise_step": "0.10"},
            "a points game has one fixed point value: drop the raise settings",
        ),
        ({"variant": "raise"}, "a raise game needs a raise step (and max) or a schedule"),
        (
            {"variant": "raise", "raise_schedule": ["1", "2"], "raise_step": "0.1"},
            "give a raise schedule or a raise step and max, not both",
        ),
    ],
)
def test_bad_table_configurations_say_what_is_wrong(settings, message):
    with pytest.raises(BadConfig) as caught:
        config_for(**settings)
    assert str(caught.value) == message


def test_seat_numbers_put_players_in_turn_order():
    config = config_for("p3 p1 p2", seats=(3, 1, 2), dealer="p2")
    assert config.players == ("p1", "p2", "p3") and config.seats == (1, 2, 3)
    assert config.first_mover == "p3"


# -- rounds, point values and what each seat sees ----------------------------------------------


def test_the_round_goes_up_when_play_passes_the_dealer_even_when_the_dealer_is_out():
    config = config_for(variant="raise", raise_step="0.10", raise_max="2.00")
    game = dealt_game(config)
    stock = iter(str(c) for c in list(game._stock))
    state = game.table_state()
    assert (state.round, str(state.point_value), str(state.next_point_value)) == (0, "1.00", "1.10")
    for player in ("p1", "p2", "p3"):
        for move in pass_turn(player, next(stock)):
            apply_move(game, move)
    state = game.table_state()
    assert (state.round, str(state.point_value), str(state.next_point_value)) == (1, "1.10", "1.20")
    for player in ("p1", "p2"):
        for move in pass_turn(player, next(stock)):
            apply_move(game, move)
    apply_move(game, {"player": "p3", "type": "drop"})  # the dealer drops: round 2 begins
    assert game.round == 2
    for player in ("p1", "p2"):  # p2's turn ends, the dealer's seat is skipped: round 3
        for move in pass_turn(player, next(stock)):
            apply_move(game, move)
    assert game.round == 3 and game.current_player == "p1"


def test_a_seat_view_shows_only_what_that_player_could_see():
    game = dealt_game()
    apply_move(game, {"player": "p1", "type": "pick", "from": "closed", "card": "4H"})
    state = game.table_state()
    view = state.for_seat("p2")
    assert view.seat_of("p2").hand == state.seat_of("p2").hand
    assert view.seat_of("p1").hand == () and view.seat_of("p1").hand_hidden
    assert view.seat_of("p1").hand_size == 14
    assert view.last_move == {"player": "p1", "type": "pick", "from": "closed"}
    assert state.for_seat("p1").last_move["card"] == "4H"
    apply_move(game, {"player": "p1", "type": "declare", "finish": "TC", "groups": P1_DECLARES})
    view = game.table_state().for_seat("p2")
    assert view.seat_of("p1").hand_hidden is False  # revealed by the declaration
    assert view.seat_of("p3").hand_hidden is True
    with pytest.raises(KeyError):
        state.for_seat("p9")


# -- nothing is recorded by an illegal command, anywhere in a game -----------------------------


@pytest.mark.parametrize("seed", [21, 22, 23])
def test_illegal_commands_change_nothing_at_any_point_of_a_game(seed):
    config, deal, moves = random_legal_game(seed, turns=50)
    game = play_game(config, deal, [])
    for move in moves:
        before = game.table_state()
        current = game.current_player
        if current is not None:
            others = [p for p in config.players if p != current]
            seen = {str(card) for card in game.hand(current)} | {str(before.open_top)}
            absent = next(str(c) for c in full_deck(2, 1) if str(c) not in seen)
            attempts = [
                {"player": others[0], "type": "drop"},
                {"player": current, "type": "discard", "card": absent},
                {"player": current, "type": "pick", "from": "open", "card": absent},
                {"player": current, "type": "declare", "finish": absent, "groups": []},
                {"player": current, "type": "show", "groups": []},
                {"type": "reshuffle", "stock": []},
            ]
            for attempt in attempts:
                with pytest.raises(RuleViolation):
                    apply_move(game, attempt)
                assert game.table_state() == before
        apply_move(game, move)
