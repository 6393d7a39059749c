import pytest

from domain.cards import JOKER, Card, CardError, check_within_deck, full_deck, parse_cards
from domain.rummy13.profiles import UnknownProfile, get_profile


@pytest.mark.parametrize(
    ("text", "rank", "suit", "canonical"),
    [
        ("AS", 1, "S", "AS"),
        ("th", 10, "H", "TH"),
        ("10D", 10, "D", "TD"),
        ("kc", 13, "C", "KC"),
        ("JK", 0, None, "JK"),
        ("jk", 0, None, "JK"),
        ("7C", 7, "C", "7C"),
    ],
)
def test_parse_and_format_round_trip(text, rank, suit, canonical):
    card = Card.parse(text)
    assert (card.rank, card.suit, str(card)) == (rank, suit, canonical)
    assert Card.parse(str(card)) is card


def test_parse_gives_the_same_card_for_every_spelling_of_every_card():
    # The canonical text takes a shortcut (one lookup); every other accepted spelling
    # (lower case, spaces, ``10`` for ``T``, a str subclass) must give the same card.
    class Text(str):
        pass

    for card in full_deck(decks=1, jokers_per_deck=1):
        text = str(card)
        spellings = [text, text.lower(), f" {text} ", Text(text), Text(text.lower())]
        if card.rank == 10:
            spellings += ["10" + card.suit, "10" + card.suit.lower()]
        assert {id(Card.parse(s)) for s in spellings} == {id(card)}, text
        assert Card.parse(card) is card
    with pytest.raises(CardError):
        Card.parse(Text("1Z"))
    with pytest.raises(CardError):
        Card.parse(7)


@pytest.mark.parametrize("text", ["1Z", "", "11S", "AX", "J", "JKK", "0S"])
def test_bad_card_text_says_what_is_accepted(text):
    with pytest.raises(CardError) as error:
        Card.parse(text)
    assert str(error.value) == (
        f"'{text}' is not a card (rank A,2-9,T,J,Q,K then suit S,H,D,C, or JK)"
    )


def test_points():
    assert [c.points() for c in parse_cards("AS TH JD QC KS 2S 9H JK")] == [
        10,
        10,
        10,
        10,
        10,
        2,
        9,
        0,
    ]


def test_jokers_by_indicator():
    wild = Card.parse("7D")
    assert Card.parse("7S").is_joker(wild) and Card.parse("7S").points(wild) == 0
    assert not Card.parse("8S").is_joker(wild)
    assert JOKER.is_joker(wild)
    # A printed joker as indicator makes every Ace a joker.
    assert Card.parse("AH").is_joker(JOKER) and Card.parse("AH").points(JOKER) == 0
    assert not Card.parse("2H").is_joker(JOKER)


def test_toss_order_ace_high_then_suits():
    cards = parse_cards("AC AS AD AH TC TS")
    assert max(cards, key=lambda c: c.toss_strength) == Card.parse("AS")
    assert Card.parse("2S").toss_strength < Card.parse("3C").toss_strength


def test_deck_multiset():
    deck = full_deck(2, 1)
    assert sum(deck.values()) == 106 and deck[JOKER] == 2 and deck[Card.parse("AS")] == 2
    check_within_deck(parse_cards("AS AS JK JK"), 2, 1)
    with pytest.raises(CardError, match="AS appears 3 times"):
        check_within_deck(parse_cards("AS AS AS"), 2, 1)


def test_profiles():
    assert get_profile().name == "rummycircle"
    assert get_profile("deccan").met_objective_points == 2
    assert get_profile("rummycircle").deal_show_points(30) == 15
    assert get_profile("rummycircle").deal_show_points(3) == 2
    assert get_profile("rummycircle").deal_show_points(95) == 40
    assert get_profile("deccan").deal_show_points(95) == 20
    with pytest.raises(UnknownProfile, match=r"known: deccan, rummycircle"):
        get_profile("pointsbet")
