"""Record moves are built without the frozen dataclass's ``__init__`` (``Move.of``, the
import's hot path): each must be the very value the constructor gives, field for field, in
equality, hash, order of fields and immutability."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from domain.record_schema.common import CARD_SPELLINGS
from domain.rummy13 import record_schema as game13
from domain.rummy13.records import Move, parse_game_record

DATA = Path(__file__).parent / "data"
_MOVE = TypeAdapter(game13.Move)


def by_constructor(move: game13.MoveBase) -> Move:
    """The reference: the same fields through the dataclass's own ``__init__``."""
    given_ = move.__dict__
    groups, stock = given_.get("groups"), given_.get("stock")
    return Move(
        type=move.type,
        player=None if move.type == "reshuffle" else given_["player"],
        source=given_.get("source"),
        card=given_.get("card"),
        finish=given_.get("finish"),
        groups=None if groups is None else tuple(tuple(group) for group in groups),
        stock=None if stock is None else tuple(stock),
        at=move.at,
    )


def assert_same(built: Move, reference: Move) -> None:
    assert type(built) is Move
    assert built == reference and hash(built) == hash(reference)
    assert list(vars(built)) == [field.name for field in dataclasses.fields(Move)]
    assert dataclasses.astuple(built) == dataclasses.astuple(reference)
    assert repr(built) == repr(reference)
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.card = None  # type: ignore[misc]


def test_every_move_of_the_sample_games_is_the_constructors() -> None:
    count = 0
    for line in (DATA / "games.jsonl").read_text().splitlines():
        if not line.strip():
            continue
        obj = json.loads(line)
        if obj.get("format") != game13.FORMAT_TAG:
            continue
        record = parse_game_record(obj)
        for move, raw in zip(record.moves, obj["moves"], strict=True):
            assert_same(move, by_constructor(_MOVE.validate_python(raw)))
            count += 1
    assert count > 50


cards = st.sampled_from(sorted(CARD_SPELLINGS))
times = st.sampled_from([None, "2025-03-01T18:04:05Z", "2025-03-01T23:34:05+05:30"])
player = st.sampled_from(["p1", "p2", "p3"])
moves = st.one_of(
    st.fixed_dictionaries(
        {
            "player": player,
            "type": st.just("pick"),
            "from": st.sampled_from(["open", "closed"]),
            "card": cards,
        }
    ),
    st.fixed_dictionaries({"player": player, "type": st.just("discard"), "card": cards}),
    st.fixed_dictionaries({"player": player, "type": st.sampled_from(["drop", "miss"])}),
    st.fixed_dictionaries(
        {
            "player": player,
            "type": st.just("declare"),
            "finish": cards,
            "groups": st.lists(st.lists(cards, max_size=5), max_size=4),
        }
    ),
    st.fixed_dictionaries(
        {
            "player": player,
            "type": st.just("show"),
            "groups": st.lists(st.lists(cards, max_size=5), max_size=4),
        }
    ),
    st.fixed_dictionaries(
        {"type": st.just("reshuffle")},
        optional={"player": player, "stock": st.lists(cards, max_size=8)},
    ),
)


@settings(max_examples=300, deadline=None)
@given(moves, times)
def test_any_move_is_the_constructors(raw: dict, at: str | None) -> None:
    if at is not None:
        raw = {**raw, "at": at}
    validated = _MOVE.validate_python(raw)
    built = Move.of(validated)
    assert_same(built, by_constructor(validated))
    assert Move.from_dict(built.to_dict()) == built


def test_every_deal_of_the_sample_games_is_the_constructors() -> None:
    """``Deal.of_cards`` (the record's deal, cards not read again) against ``Deal(...)``."""
    from domain.cards import Card
    from domain.rummy13.table import Deal

    count = 0
    for line in (DATA / "games.jsonl").read_text().splitlines():
        obj = json.loads(line) if line.strip() else {}
        if obj.get("format") != game13.FORMAT_TAG:
            continue
        deal = parse_game_record(obj).deal
        reference = Deal(
            hands={p: list(map(str, cards)) for p, cards in deal.hands.items()},
            wild=str(deal.wild),
            open_card=str(deal.open_card),
            stock=None if deal.stock is None else [str(card) for card in deal.stock],
        )
        assert type(deal) is Deal and deal == reference and repr(deal) == repr(reference)
        assert list(vars(deal)) == list(vars(reference))
        assert all(type(cards) is tuple for cards in deal.hands.values())
        assert all(type(card) is Card for cards in deal.hands.values() for card in cards)
        with pytest.raises(dataclasses.FrozenInstanceError):
            deal.wild = None  # type: ignore[misc]
        count += 1
    assert count > 5
    # Anything but cards goes through the constructor, which reads (or refuses) it.
    assert Deal.of_cards({"p1": ("AS",)}, "7d", "10c") == Deal({"p1": ["AS"]}, "7D", "TC")
