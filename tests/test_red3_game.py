"""The Red 3 match aggregate: every rule of docs/rules.md §2 enforced, scored, and replayable."""

import doctest
import random

import pytest
from eventsourcing.application import Application
from red3_factory import EXAMPLE_ROUNDS, conserved, make_deal, new_match, take_turn

import domain.red3.game
import domain.red3.moves
import domain.red3.scoring
import domain.red3.state
import domain.red3.table
from domain.cards import Card, parse_cards
from domain.errors import (
    BadConfig,
    BadDeal,
    BadMove,
    CardNotHeld,
    GameOver,
    IllegalPick,
    NotDealt,
    NotYourTurn,
    RuleViolation,
    StockMismatch,
    UnknownPlayer,
)
from domain.red3.errors import IllegalAddition, IllegalBook, OpeningTooLow, RoundOver
from domain.red3.game import Red3Config
from domain.red3.moves import apply_move, play_match, where
from domain.red3.table import deal_from_order

P = parse_cards


def example_rounds(upto=2):
    return [{"deal": make_deal(**r["deal"]), "moves": r["moves"]} for r in EXAMPLE_ROUNDS[:upto]]


def example_match(upto=2):
    config = Red3Config(game_id="R3-EX", players=("p1", "p2"), rounds=2)
    return play_match(config, example_rounds(upto))


def dealt(first="p1", hands=None, second=None, pile="4C JD", stock_top="", rounds=2, **kw):
    """A 2-player match with round 1 dealt from the given cards."""
    match = new_match(rounds=rounds, **kw)
    hands = hands or {"p1": "5C 6C 7C 8C QS QH QD", "p2": "KS KH 3D JK 4D 5D 6D"}
    second = second or {"p1": "AS AH 2D 9S 9H 3H 4S", "p2": "TS TH TD 7S 8S 9D JC"}
    match.deal(make_deal(first, hands, second, pile, stock_top))
    return match


@pytest.mark.parametrize(
    "module",
    [
        domain.red3.game,
        domain.red3.moves,
        domain.red3.scoring,
        domain.red3.state,
        domain.red3.table,
    ],
)
def test_docstring_examples(module):
    result = doctest.testmod(module)
    assert result.failed == 0 and result.attempted > 0


# -- the hand-worked example (docs/red3-rules.md "A worked match") -------------------------
def test_worked_example_round_1():
    match = example_match(upto=1)
    score = match.round_scores[0]
    assert score.out == "p1" and match.phase == "round_over"
    p1, p2 = score.players
    # p1: run 5C-9C 5x15=75, QS QH QD 30, AS AH 2D 15+15+15=45, 9S 9H 9D 15; holds nothing.
    assert (p1.books, p1.held, p1.score) == (165, 0, 165)
    # p2: run 4D-6D 45, KS KH JK 10+10+15=35; holds 3D 4C 4S = 30+5+5 and the second hand
    # never picked up, TS TH TD 7S 8S 9D JC = 30+15+10 = 55.
    assert (p2.books, p2.held, p2.red_threes, p2.score) == (80, 95, 1, -15)
    assert match.totals == {"p1": 165, "p2": -15}


def test_worked_example_round_2_and_match():
    match = example_match()
    score = match.round_scores[1]
    assert score.out == "p2"
    p1, p2 = score.players
    # p2: 7H-QH 6x15=90, 3C 3S 2C 5+5+15=25, KC KD KS 30, JK 6S 7S (JK as 5S) 45.
    assert (p2.books, p2.held, p2.score) == (190, 0, 190)
    # p1 never opened; holds 6H 6D 6C 4H 9S 5S (6x5) AC 15, red threes 3D 3H (2x30), and the
    # face-down second hand QC QD TC 30 + 8D 8C 7D 5H 20.
    assert (p1.books, p1.held, p1.red_threes, p1.score) == (0, 155, 2, -155)
    assert match.totals == {"p1": 10, "p2": 175}
    assert match.winners == ("p2",) and match.phase == "finished"
    settlement = match.settlement().to_dict()
    assert settlement["winner"] == "p2" and settlement["complete"] is True
    assert [r["totals"] for r in settlement["rounds"]] == [
        {"p1": 165, "p2": -15},
        {"p1": 10, "p2": 175},
    ]


def test_worked_example_books_on_the_table():
    match = example_match()
    books = [str(b) for b in match.books["p2"]]
    assert books == ["7H 8H 9H TH JH QH", "3C 3S 2C", "KC KD KS", "JK 6S 7S"]
    assert match.books["p2"][3].describe() == "run 5S-7S (JK as 5S)"


# -- the table ------------------------------------------------------------------------------
def test_config_needs_two_players_and_a_number_of_rounds():
    with pytest.raises(BadConfig, match="at least 2 players"):
        Red3Config(game_id="x", players=("p1",), rounds=2)
    with pytest.raises(BadConfig, match="rounds must be a whole number of at least 1"):
        Red3Config(game_id="x", players=("p1", "p2"), rounds=0)
    with pytest.raises(BadConfig, match="seated twice"):
        Red3Config(game_id="x", players=("p1", "p1"), rounds=1)
    with pytest.raises(BadConfig, match="unknown Red 3 rules"):
        Red3Config(game_id="x", players=("p1", "p2"), rounds=1, rules="deccan")


@pytest.mark.parametrize("players", [2, 3, 5])
def test_each_round_deals_two_hands_of_seven_from_one_pack_with_two_jokers_per_player(players):
    seats = tuple(f"p{i}" for i in range(1, players + 1))
    match = new_match(players=seats, rounds=1)
    match.deal(deal_from_order(domain.red3.table.deck_order(players, 2), seats, first="p1"))
    state = match.table_state()
    assert all(s.hand_count == 7 and s.second_hand_count == 7 for s in state.seats)
    assert state.pile_size == 2 and state.stock_count == players * 54 - players * 14 - 2
    assert conserved(match)


def test_deal_must_conserve_the_packs():
    match = new_match()
    good = make_deal(**EXAMPLE_ROUNDS[0]["deal"])
    extra = (Card.parse("JK"), *good.stock[1:])  # a fifth joker instead of the 9C
    with pytest.raises(BadDeal, match="JK is dealt 5 times; the packs hold 4"):
        match.deal(
            domain.red3.table.Red3Deal(good.first, good.hands, good.second_hands, good.pile, extra)
        )
    with pytest.raises(BadDeal, match="leave out"):
        match.deal(
            domain.red3.table.Red3Deal(
                good.first, good.hands, good.second_hands, good.pile, good.stock[:-1]
            )
        )
    short = dict(good.hands, p1=good.hands["p1"][:6])
    with pytest.raises(BadDeal, match="p1's first hand has 6 cards; 7 are dealt"):
        match.deal(domain.red3.table.Red3Deal(good.first, short, good.second_hands, good.pile))
    with pytest.raises(BadDeal, match="the pile starts with 2 cards"):
        match.deal(
            domain.red3.table.Red3Deal(good.first, good.hands, good.second_hands, good.pile[:1])
        )
    assert match.version == 1  # nothing recorded


def test_first_player_rotates_each_round():
    match = example_match(upto=1)
    wrong = make_deal(**dict(EXAMPLE_ROUNDS[1]["deal"], first="p1"))
    with pytest.raises(BadDeal, match="the first player rotates, so p2 leads, not p1"):
        match.deal(wrong)
    match.deal(make_deal(**EXAMPLE_ROUNDS[1]["deal"]))
    assert match.current_player == "p2"


def test_turns_go_in_seat_order():
    match = dealt(stock_top="9C 9D")
    with pytest.raises(NotYourTurn, match="p2 cannot pick: it is p1's turn"):
        match.pick("p2", "stock")
    with pytest.raises(UnknownPlayer):
        match.pick("p9", "stock")
    match.pick("p1", "stock")
    match.discard("p1", Card.parse("9C"))
    assert match.current_player == "p2"


# -- a turn: pick ---------------------------------------------------------------------------
def test_pick_one_stock_card_from_the_top():
    match = dealt(stock_top="9C 9D")
    with pytest.raises(StockMismatch, match="the stock's top card is 9C"):
        match.pick("p1", "stock", Card.parse("9D"))
    match.pick("p1", "stock", Card.parse("9C"))
    assert match.hands["p1"][-1] == Card.parse("9C") and match.stock_count == 77


def test_pick_takes_the_whole_pile():
    match = dealt(pile="4C JD")
    with pytest.raises(IllegalPick, match="the pile is 4C JD, not JD"):
        match.pick("p1", "pile", cards=P("JD"))
    match.pick("p1", "pile", cards=P("4C JD"))
    assert match.pile == [] and match.hands["p1"][-2:] == P("4C JD")


def test_one_pick_per_turn_and_a_pick_before_anything_else():
    match = dealt()
    with pytest.raises(NotYourTurn, match="p1 cannot discard 5C: pick first"):
        match.discard("p1", Card.parse("5C"))
    with pytest.raises(NotYourTurn, match="pick first"):
        match.lay_down("p1", [P("QS QH QD")])
    match.pick("p1", "stock")
    with pytest.raises(NotYourTurn, match="already picked this turn"):
        match.pick("p1", "pile")


def test_unknown_stock_order_needs_the_card_named_and_checks_it_is_left():
    match = new_match()
    deal = make_deal(
        "p1",
        {"p1": "5C 6C 7C 8C QS QS QD", "p2": "KS KH 3D JK 4D 5D 6D"},
        {"p1": "AS AH 2D 9S 9H 3H 4S", "p2": "TS TH TD 7S 8S 9D JC"},
        "4C JD",
    )
    match.deal(domain.red3.table.Red3Deal(deal.first, deal.hands, deal.second_hands, deal.pile))
    assert match.table_state().stock_count == 78 and not match.table_state().stock_known
    with pytest.raises(BadMove, match="must name its card"):
        match.pick("p1", "stock")
    with pytest.raises(StockMismatch, match="p1 cannot pick QS: no such card is left in the stock"):
        match.pick("p1", "stock", Card.parse("QS"))  # both packs' QS are in p1's hand
    match.pick("p1", "stock", Card.parse("QH"))
    assert match.stock_count == 77 and conserved(match)


# -- a turn: lay down -------------------------------------------------------------------------
def test_first_lay_down_of_the_round_must_reach_70():
    match = dealt(stock_top="9C")
    match.pick("p1", "stock")
    with pytest.raises(OpeningTooLow, match="worth 60, at least 70 needed"):
        match.lay_down("p1", [P("5C 6C 7C 8C")])  # a run counts 15 a card: 60
    match.lay_down("p1", [P("5C 6C 7C 8C 9C")])  # 75
    assert match.table_state().seat("p1").opened
    assert match.table_state().seat("p1").opening_points == 75
    match.lay_down("p1", [P("QS QH QD")])  # once opened, any book will do


def test_opening_counts_kinds_by_rank():
    match = dealt(
        hands={"p1": "KS KH KD 9C 9H 9D 5S", "p2": "KS KH 3D JK 4D 5D 6D"}, stock_top="AS"
    )
    match.pick("p1", "stock")
    with pytest.raises(OpeningTooLow, match="worth 45"):
        match.lay_down("p1", [P("KS KH KD"), P("9C 9H 9D")])  # 30 + 15


def test_books_are_checked_when_laid_down():
    match = dealt(
        hands={"p1": "5C 6C 7C 8C 3H 3D JK", "p2": "KS KH 3D JK 4D 5D 6D"},
        second={"p1": "AS AH 2D 9S 9H 3S 4S", "p2": "TS TH TD 7S 8S 9D JC"},
        stock_top="2C",
    )
    match.pick("p1", "stock")
    with pytest.raises(IllegalBook, match="red threes are never in a book"):
        match.lay_down("p1", [P("3H 3D JK")])
    with pytest.raises(IllegalBook, match="2 wild cards"):
        match.lay_down("p1", [P("5C 6C 7C 8C JK 2C")])
    with pytest.raises(IllegalBook, match="p1 cannot lay down 5C 7C 8C: not consecutive"):
        match.lay_down("p1", [P("5C 7C 8C")])
    assert match.version == 3  # started, dealt, picked: nothing more


def test_cards_laid_down_must_be_held():
    match = dealt(stock_top="9C")
    match.pick("p1", "stock")
    with pytest.raises(CardNotHeld, match="p1 cannot lay down AS: it is in the face-down second"):
        match.lay_down("p1", [P("AS AH 2D")])
    with pytest.raises(CardNotHeld, match="p1 cannot lay down QS: holds only 1 of it"):
        match.lay_down("p1", [P("QS QS QH")])


def test_add_to_own_books_after_opening():
    match = example_match(upto=1)
    match.deal(make_deal(**EXAMPLE_ROUNDS[1]["deal"]))
    for move in EXAMPLE_ROUNDS[1]["moves"][:7]:
        apply_move(match, move)
    # p2 holds 6S 7S JK QH, with 7H-JH, 3C 3S 2C and KC KD KS down.
    with pytest.raises(IllegalAddition, match="book 5 is not one of theirs"):
        match.lay_down("p2", additions=[(5, P("QH"))])
    with pytest.raises(IllegalAddition, match="6S is not a hearts card"):
        match.lay_down("p2", additions=[(0, P("6S"))])
    with pytest.raises(IllegalAddition, match="2 wild cards"):
        match.lay_down("p2", additions=[(1, P("JK"))])
    match.lay_down("p2", additions=[(0, P("QH"))])
    assert str(match.books["p2"][0]) == "7H 8H 9H TH JH QH"


def test_no_additions_before_opening():
    match = example_match(upto=1)
    match.deal(make_deal(**EXAMPLE_ROUNDS[1]["deal"]))
    for move in EXAMPLE_ROUNDS[1]["moves"][:5]:
        apply_move(match, move)  # p1 has taken the pile and holds three 6s but has not opened
    with pytest.raises(IllegalAddition, match="no books of theirs are down yet"):
        match.lay_down("p1", additions=[(0, P("6H"))])
    with pytest.raises(OpeningTooLow, match="worth 15"):
        match.lay_down("p1", [P("6H 6D 6C")])


def test_cards_on_the_table_never_come_back():
    match = dealt(stock_top="9C")
    match.pick("p1", "stock")
    match.lay_down("p1", [P("5C 6C 7C 8C 9C")])
    with pytest.raises(CardNotHeld, match="on the table, and cards on the table never come back"):
        match.discard("p1", Card.parse("9C"))
    with pytest.raises(CardNotHeld, match="never come back"):
        match.lay_down("p1", [P("7C 8C 9C")])


# -- the second hand and the end of a round ------------------------------------------------------
def test_second_hand_is_picked_up_when_the_first_is_laid_down_and_play_goes_on():
    match = dealt(stock_top="9C")
    match.pick("p1", "stock")
    match.lay_down("p1", [P("5C 6C 7C 8C 9C"), P("QS QH QD")])
    seat = match.table_state().seat("p1")
    assert seat.second_hand_taken and seat.hand == tuple(P("AS AH 2D 9S 9H 3H 4S"))
    match.lay_down("p1", [P("AS AH 2D")])  # same turn, from the second hand
    match.discard("p1", Card.parse("4S"))
    assert match.current_player == "p2" and match.hands["p1"] == P("9S 9H 3H")


def test_second_hand_is_picked_up_after_discarding_the_last_card_of_the_first():
    match = dealt(stock_top="KD")
    match.pick("p1", "stock")
    match.lay_down("p1", [P("5C 6C 7C 8C"), P("QS QH QD")])
    assert match.hands["p1"] == P("KD") and match.second_hands["p1"] is not None
    match.discard("p1", Card.parse("KD"))
    assert match.second_hands["p1"] is None and match.hands["p1"] == P("AS AH 2D 9S 9H 3H 4S")
    assert match.current_player == "p2" and match.phase == "pick"


def test_round_ends_by_discarding_the_last_card_of_the_second_hand():
    match = example_match(upto=1)  # p1 went out by discarding 3H, a red three
    assert match.round_scores[0].out == "p1" and match.pile[-1] == Card.parse("3H")


def test_round_ends_by_laying_down_the_last_card_of_the_second_hand():
    match = example_match()  # p2 went out laying down JK 6S 7S
    assert match.round_scores[1].out == "p2" and match.moves[-1]["type"] == "lay_down"


def test_nothing_but_a_deal_after_a_round_ends_and_nothing_after_the_match():
    match = example_match(upto=1)
    with pytest.raises(RoundOver, match="p1 went out and round 1 is over"):
        match.pick("p2", "stock")
    match = example_match()
    with pytest.raises(GameOver, match="the match is over"):
        match.deal(make_deal(**dict(EXAMPLE_ROUNDS[0]["deal"])))
    with pytest.raises(GameOver):
        match.pick("p1", "stock")
    with pytest.raises(NotDealt):
        new_match().pick("p1", "stock")


def test_red_three_can_be_discarded_or_taken_with_the_pile_and_then_it_is_stuck():
    match = example_match()
    assert Card.parse("3H") in match.deals[1].pile  # p1 took it with the pile in round 2 ...
    assert match.round_scores[1].players[0].red_threes == 2  # ... and paid 30 for it


# -- the stock running out -------------------------------------------------------------------------
def test_the_turn_that_draws_the_last_stock_card_ends_the_round():
    match = dealt(rounds=1)
    rng = random.Random(3)
    while match.stock_count > 1:
        player = match.current_player
        match.pick(player, "stock")
        match.discard(player, rng.choice(match.hands[player]))
    player = match.current_player
    match.pick(player, "stock")
    assert match.stock_count == 0 and match.phase == "play"  # the turn goes on ...
    match.discard(player, match.hands[player][0])
    assert match.phase == "finished"  # ... and is the round's (here the match's) last
    score = match.round_scores[0]
    assert score.out is None
    for entry in score.players:  # nobody laid anything down: each pays for both hands
        held = match.held(entry.player)
        assert len(held) == 14 and entry.score == -entry.held


# -- events -----------------------------------------------------------------------------------------
def test_a_rejected_command_records_nothing():
    match = dealt(stock_top="9C")
    before = (match.version, len(match.pending_events), list(match.hands["p1"]))
    for attempt in (
        lambda: match.discard("p1", Card.parse("5C")),
        lambda: match.pick("p2", "stock"),
        lambda: match.pick("p1", "stock", Card.parse("AS")),
    ):
        with pytest.raises(RuleViolation):
            attempt()
    assert (match.version, len(match.pending_events), list(match.hands["p1"])) == before


def test_replaying_the_events_rebuilds_the_same_match():
    app = Application(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    match = example_match()
    app.save(match)
    copy = app.repository.get(match.id)
    assert copy.table_state() == match.table_state()
    assert copy.moves == match.moves and copy.settlement() == match.settlement()
    # The state after any step is the same whether replayed or played.
    for step, version in enumerate(match.step_versions, start=1):
        then = app.repository.get(match.id, version=version)
        assert then.table_state().step == step


def test_event_timestamps_come_from_the_record():
    moves = [
        dict(m, at=f"2025-03-01T18:0{i}:00Z") for i, m in enumerate(EXAMPLE_ROUNDS[0]["moves"])
    ]
    rounds = [
        {
            "deal": make_deal(**EXAMPLE_ROUNDS[0]["deal"]),
            "moves": moves,
            "at": "2025-03-01T17:59:00Z",
        }
    ]
    config = Red3Config(
        game_id="R3-T", players=("p1", "p2"), rounds=1, started_at="2025-03-01T17:58:00Z"
    )
    one = play_match(config, rounds)
    two = play_match(config, rounds)
    stamps = [e.timestamp for e in one.collect_events()]
    assert stamps == [e.timestamp for e in two.collect_events()]
    assert one.moves[0]["at"] == "2025-03-01T18:00:00Z"


def test_errors_say_where_in_the_record():
    rounds = example_rounds()
    rounds[1]["moves"] = [
        *rounds[1]["moves"][:5],
        {"player": "p1", "type": "discard", "card": "KS"},
    ]
    with pytest.raises(CardNotHeld) as error:
        play_match(Red3Config(game_id="R3-W", players=("p1", "p2"), rounds=2), rounds)
    assert where(error.value) == "round 2 move 5 (p1 discard KS)"
    assert str(error.value) == "p1 cannot discard KS: not in hand"
    assert error.value.game_id == "R3-W"


@pytest.mark.parametrize(
    ("move", "reason"),
    [
        ({"player": "p1", "type": "declare"}, "unknown move type"),
        ({"player": "p1", "type": "pick", "from": "open"}, "'from' must be 'stock' or 'pile'"),
        ({"player": "p1", "type": "pick", "from": "stock", "card": "1Z"}, "'1Z' is not a card"),
        ({"player": "p1", "type": "lay_down", "books": "QS QH QD"}, "books must be a list"),
        ({"player": "p1", "type": "discard"}, "the move has no 'card'"),
        ({"type": "pick", "from": "stock"}, "the move has no 'player'"),
        ({"player": "p1", "type": "pick", "from": "stock", "colour": "red"}, "unknown field"),
    ],
)
def test_malformed_moves_are_bad_moves(move, reason):
    with pytest.raises(BadMove, match=reason):
        apply_move(dealt(), move)


# -- the table view ---------------------------------------------------------------------------------
def test_state_view_shows_books_hands_pile_and_the_opening():
    match = example_match(upto=1)
    match.deal(make_deal(**EXAMPLE_ROUNDS[1]["deal"]))
    for move in EXAMPLE_ROUNDS[1]["moves"][:5]:
        apply_move(match, move)
    state = match.table_state()
    p1, p2 = state.seats
    assert (state.round, state.pile_size, state.pile_top, state.current_player) == (
        2,
        0,
        None,
        "p1",
    )
    assert p2.opened and p2.book_points == 75 + 25 + 30 and p2.second_hand_taken
    assert not p1.opened and p1.second_hand_count == 7 and not p1.second_hand_taken
    assert p1.total == 165 and p2.total == -15
    seen_by_p2 = state.for_seat("p2")
    assert seen_by_p2.seat("p1").hand is None and seen_by_p2.seat("p1").hand_count == 10
    assert seen_by_p2.seat("p2").hand == tuple(P("6S 7S JK"))
    assert seen_by_p2.seat("p1").second_hand is None and seen_by_p2.pile is None
    assert state.to_dict()["seats"][1]["books"][0] == {
        "kind": "run",
        "cards": ["7H", "8H", "9H", "TH", "JH"],
    }


def test_a_tie_shares_the_win():
    settlement = domain.red3.scoring.settle_match(
        "t",
        ("a", "b", "c"),
        [
            domain.red3.scoring.RoundScore(
                1,
                "a",
                (
                    domain.red3.scoring.PlayerRoundScore("a", 50, 0, 0, 50),
                    domain.red3.scoring.PlayerRoundScore("b", 70, 20, 0, 50),
                    domain.red3.scoring.PlayerRoundScore("c", 0, 30, 1, -30),
                ),
            )
        ],
        rounds_planned=1,
    )
    assert settlement.winners == ("a", "b") and settlement.winner is None


# -- random play ------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(12))
def test_random_matches_conserve_cards_and_score_what_is_on_the_table(seed):
    rng = random.Random(seed)
    players = tuple(f"p{i}" for i in range(1, 3 + seed % 3))
    match = new_match(players=players, rounds=2, game_id=f"R3-rand-{seed}")
    app = Application(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    outs_without_a_winner = 0
    for number in (1, 2):
        order = domain.red3.table.deck_order(len(players), 2)
        rng.shuffle(order)
        match.deal(deal_from_order(order, players, first=match.config.first_player_of(number)))
        turns = 0
        while match.phase in ("pick", "play") and turns < 3000:
            take_turn(match, rng)
            assert conserved(match)
            turns += 1
        assert match.phase not in ("pick", "play"), f"round {number} still going after {turns}"
        score = match.round_scores[-1]
        for entry in score.players:
            laid = sum(book.value() for book in match.books[entry.player])
            assert entry.books == laid and entry.score == laid - entry.held
        if score.out is None:  # the stock ran out
            assert match.stock_count == 0
            outs_without_a_winner += 1
        else:
            assert score.players[players.index(score.out)].held == 0
    assert match.phase == "finished" and outs_without_a_winner < 2
    app.save(match)
    assert app.repository.get(match.id).table_state() == match.table_state()
