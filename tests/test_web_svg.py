"""The server-drawn SVG: every card readable as words, deterministic text, well-formed XML."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.cards import ALL_CARDS, JOKER, Card, parse_cards
from web import charts, svg
from web.moves import describe, moments

NS = {"s": "http://www.w3.org/2000/svg"}


def parse(text: str) -> ET.Element:
    return ET.fromstring(text)


def card_groups(root: ET.Element) -> list[ET.Element]:
    return [g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("data-card")]


@pytest.mark.parametrize("card", ALL_CARDS, ids=str)
def test_every_card_names_its_rank_and_suit_for_screen_readers(card):
    root = parse(svg.card(card))
    assert root.get("role") == "img"
    assert root.get("aria-label") == card.spoken
    assert root.find("s:title", NS).text == card.spoken
    (group,) = card_groups(root)
    assert group.get("data-card") == str(card)
    assert group.find("s:title", NS).text == card.spoken
    # The rank is printed on the face as well (10 as "10", the joker as "JK").
    printed = [t.text for t in group.iter("{http://www.w3.org/2000/svg}text")]
    assert printed[0] == ("JK" if card.is_printed_joker else card.symbol[:-1])


def test_suits_differ_by_symbol_not_only_by_colour():
    symbols = {}
    for text in ("AS", "AH", "AD", "AC"):
        group = card_groups(parse(svg.card(Card.parse(text))))[0]
        texts = [t.text for t in group.iter("{http://www.w3.org/2000/svg}text")]
        symbols[text] = texts[1]
    assert sorted(symbols.values()) == sorted("♠♥♦♣")
    red = card_groups(parse(svg.card(Card.parse("AH"))))[0]
    black = card_groups(parse(svg.card(Card.parse("AS"))))[0]
    assert red.find("s:text", NS).get("fill") != black.find("s:text", NS).get("fill")


def test_wild_rank_cards_are_marked_joker_in_words_and_on_the_face():
    wild = Card.parse("7D")
    drawn = svg.card(Card.parse("7C"), wild=wild)
    assert 'aria-label="7 of clubs, joker"' in drawn
    assert "★ JOKER" in drawn
    plain = svg.card(Card.parse("8C"), wild=wild)
    assert "joker" not in plain.lower()
    # A printed joker as the indicator makes Aces the jokers.
    assert "ace of hearts, joker" in svg.card(Card.parse("AH"), wild=JOKER)


def test_output_is_deterministic_text():
    cards = parse_cards("KD 2C JK 7S AH")
    assert svg.hand(cards, wild=Card.parse("7D")) == svg.hand(cards, wild=Card.parse("7D"))
    assert svg.hand(cards) != svg.hand(cards[:-1])


def test_hand_is_sorted_as_a_player_holds_it_with_jokers_last():
    wild = Card.parse("7D")
    order = [
        g.get("data-card")
        for g in card_groups(parse(svg.hand(parse_cards("JK 2C 7S AS 9H"), wild=wild)))
    ]
    assert order == ["AS", "9H", "2C", "7S", "JK"]
    unsorted = svg.hand(parse_cards("JK 2C"), sort=False)
    assert [g.get("data-card") for g in card_groups(parse(unsorted))] == ["JK", "2C"]


def test_hand_marks_the_card_just_picked_in_words():
    drawn = svg.hand(parse_cards("AS 4H"), marked={Card.parse("4H"): "just picked"})
    assert 'aria-label="4 of hearts, just picked"' in drawn


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(ALL_CARDS), min_size=0, max_size=14), st.sampled_from(ALL_CARDS))
def test_any_hand_draws_every_card_once_as_valid_xml(cards, wild):
    root = parse(svg.hand(cards, wild=wild))
    drawn = [g.get("data-card") for g in card_groups(root)]
    assert sorted(drawn) == sorted(str(c) for c in cards)
    label = root.get("aria-label")
    for c in cards:
        assert c.spoken in label


def test_grouped_hand_names_each_group_and_marks_loose_cards():
    wild = Card.parse("7D")
    drawn = svg.grouped_hand(
        [
            svg.DrawnGroup(tuple(parse_cards("AS 2S 3S")), "pure"),
            svg.DrawnGroup(tuple(parse_cards("4H 5H JK")), "impure"),
            svg.DrawnGroup(tuple(parse_cards("QD 2H 8S")), None, "mixes suits"),
        ],
        parse_cards("9C KD"),
        wild=wild,
    )
    root = parse(drawn)
    captions = [
        t.text for t in root.iter("{http://www.w3.org/2000/svg}text") if t.text and " " in t.text
    ]
    assert "pure sequence" in captions
    assert "impure sequence" in captions
    assert "not a group" in captions
    invalid = next(
        g
        for g in root.iter("{http://www.w3.org/2000/svg}g")
        if g.get("class") == "group kind-invalid"
    )
    assert invalid.find("s:title", NS).text == "not a group: mixes suits"
    assert "loose (2)" in captions
    loose = [g for g in card_groups(root) if "loose" in g.get("class")]
    assert [g.get("data-card") for g in loose] == ["9C", "KD"]
    assert all(g.get("aria-label").endswith(", loose") for g in loose)
    # The frame is dashed: shape, not only colour, says "loose".
    assert all(g.find("s:rect", NS).get("stroke-dasharray") for g in loose)


def test_piles_say_what_they_hold():
    assert 'aria-label="open pile, empty"' in svg.open_pile([])
    pile = svg.open_pile(parse_cards("4H 9C KC"))
    assert "open pile, 3 cards, top: king of clubs" in pile
    assert "open (3)" in pile
    assert "stock, 41 cards" in svg.stock(41)
    assert "stock, 1 card," not in svg.stock(1) and "stock, 1 card" in svg.stock(1)
    assert "order not recorded" in svg.stock(30, known=False)
    assert "stock (0)" in svg.stock(0)
    assert "printed joker: aces are jokers" in svg.wild_indicator(JOKER)
    assert "Ks are jokers" in svg.wild_indicator(Card.parse("KH"))
    assert "finish slot, empty" in svg.finish_slot(None)
    assert "finish slot: 9 of clubs" in svg.finish_slot(Card.parse("9C"))


def test_hidden_hand_draws_backs_only():
    root = parse(svg.hidden_hand(13))
    backs = [g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == "card back"]
    assert len(backs) == 13
    assert card_groups(root) == []
    assert root.get("aria-label") == "13 hidden cards"


def test_player_ids_are_escaped():
    drawn = svg.hand(parse_cards("AS"), label='p<1>&"x"')
    assert parse(drawn).get("aria-label") == 'p<1>&"x"'


def test_point_value_chart_marks_every_exit_in_words():
    values = [Decimal("1.00"), Decimal("1.00"), Decimal("1.10"), Decimal("1.20")]
    exits = [
        charts.Exit(1, "p2", "first drop", Decimal("1.00")),
        charts.Exit(3, "p1", "declared", Decimal("1.20")),
        charts.Exit(3, "p3", "lost", Decimal("1.20")),
    ]
    root = parse(charts.point_value_chart(values, exits))
    marks = [
        g.get("aria-label")
        for g in root.iter("{http://www.w3.org/2000/svg}g")
        if g.get("class") == "exit"
    ]
    assert marks == [
        "p2: first drop at 1.00 after move 1",
        "p1: declared at 1.20 after move 3",
        "p3: lost at 1.20 after move 3",
    ]
    path = root.find("s:path", NS).get("d")
    assert path.count("H") == 3  # one step per move after the deal
    assert "from 1.00 to 1.20" in root.get("aria-label")


def test_running_total_chart_plots_each_game():
    root = parse(charts.running_total_chart([("G1", Decimal("-20.00")), ("G2", Decimal("24.50"))]))
    titles = [c.find("s:title", NS).text for c in root.iter("{http://www.w3.org/2000/svg}circle")]
    assert titles == ["after G1: -20.00", "after G2: 24.50"]
    points = root.find("s:polyline", NS).get("points").split()
    assert len(points) == 3  # the start at zero, then each game
    assert root.get("aria-label") == "Running total over 2 games, ending at 24.50"


def test_moves_in_words():
    assert describe({"player": "p1", "type": "pick", "from": "open", "card": "TC"}) == (
        "p1 picks 10♣ from the open pile"
    )
    assert describe({"player": "p3", "type": "miss"}) == "p3 misses the turn"
    assert describe({"player": "p1", "type": "declare", "finish": "9C"}) == (
        "p1 declares, finishing with 9♣"
    )
    assert describe({"type": "reshuffle"}) == "the open pile is reshuffled into a new stock"


def test_moments_find_drops_auto_drops_wrong_shows_and_the_declaration():
    rows = [
        {"player": "p1", "type": "miss"},
        {"player": "p2", "type": "drop"},
        {"player": "p1", "type": "miss"},
        {"player": "p3", "type": "declare"},
        {"player": "p1", "type": "miss"},
        {"type": "reshuffle"},
        {"player": "p4", "type": "declare"},
    ]
    outcomes = {"p1": "auto_drop", "p2": "first_drop", "p3": "wrong_show", "p4": "won"}
    found = [(m.move, m.kind) for m in moments(rows, outcomes)]
    assert found == [
        (1, "miss"),
        (2, "drop"),
        (3, "miss"),
        (4, "wrong_show"),
        (5, "auto_drop"),
        (6, "reshuffle"),
        (7, "declaration"),
    ]


def _table_state():
    from domain.rummy13.state import SeatState, TableState

    wild = Card.parse("7D")
    seats = (
        SeatState(
            "p1",
            1,
            tuple(parse_cards("AS 2S 3S 4H 5H JK 9C 9D 9H KS KD KC KH 4C")),
            "playing",
            None,
            3,
            0,
            None,
            hand_size=14,
        ),
        SeatState(
            "p2",
            2,
            tuple(parse_cards("2D 4D 6D 8D TD QD 3H 6H 8H JH 4S 6S 8S")),
            "dropped",
            "first_drop",
            1,
            0,
            None,
            hand_size=13,
        ),
        SeatState(
            "p3",
            3,
            tuple(parse_cards("5C 6C 7C QD 2H 8S 3D 3C 9S TS JS QS AD")),
            "playing",
            None,
            2,
            1,
            None,
            hand_size=13,
        ),
    )
    return TableState(
        game_id="G1",
        variant="raise",
        rules="rummycircle",
        version=9,
        move_index=7,
        seats=seats,
        open_pile=tuple(parse_cards("KC TC")),
        stock_count=62,
        stock_known=True,
        wild=wild,
        finish=None,
        current_player="p1",
        round=1,
        point_value=Decimal("1.10"),
        next_point_value=Decimal("1.20"),
        phase="playing",
        winner=None,
        declaration=None,
        last_move={"player": "p1", "type": "pick", "from": "closed", "card": "4C"},
        settlement=None,
    )


def test_table_draws_centre_and_every_seat_with_words():
    state = _table_state()
    root = parse(svg.table(state))
    label = root.get("aria-label")
    assert label.startswith("Table of game G1 after move 7: Round 1 · point value 1.10 (next 1.20)")
    assert "Seat 2 · p2 · dropped (first drop)" in label
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "▶ Seat 1 · p1 · in play · to play" in texts
    assert "stock (62)" in texts and "open (2)" in texts and "wild" in texts and "finish" in texts
    drawn = [g.get("data-card") for g in card_groups(root)]
    # 14 + 13 + 13 held cards, the open top, the wild indicator.
    assert len(drawn) == 14 + 13 + 13 + 2
    assert drawn.count("TC") == 1 and "KC" in drawn


def test_table_in_seat_view_hides_other_hands():
    state = _table_state()
    root = parse(svg.table(state, seat="p3"))
    drawn = [g.get("data-card") for g in card_groups(root)]
    assert sorted(drawn) == sorted(
        ["5C", "6C", "7C", "QD", "2H", "8S", "3D", "3C", "9S", "TS", "JS", "QS", "AD", "TC", "7D"]
    )
    backs = [g for g in root.iter("{http://www.w3.org/2000/svg}g") if g.get("class") == "card back"]
    assert len(backs) == 14 + 13 + 1  # the hidden hands and the stock
