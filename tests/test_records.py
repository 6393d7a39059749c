"""docs/record-format.md records: parsing, clear errors naming game/move/field, canonical writing."""

from __future__ import annotations

import copy
import json
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest
import record_factory

from domain.cards import full_deck, parse_cards
from domain.records import RecordError, dump_record
from domain.rummy13.moves import play_game
from domain.rummy13.records import GameRecord, Move
from replays.records.codec import explain, parse_record, read_records, record_of

DATA = Path(__file__).parent / "data"


def games() -> list[dict]:
    return [json.loads(line) for line in (DATA / "games.jsonl").read_text().splitlines()]


def example() -> dict:
    return copy.deepcopy(games()[0])


def test_sample_files_are_what_the_factory_builds():
    # The data files are generated; editing them by hand would make them drift from it.
    assert (DATA / "games.jsonl").read_text().splitlines() == [
        json.dumps(record) for record in record_factory.games()
    ]
    assert (DATA / "broken.jsonl").read_text().splitlines() == [
        json.dumps(record) for record in record_factory.broken()
    ]


@pytest.mark.parametrize("raw", games(), ids=lambda r: r["game_id"])
def test_sample_deals_conserve_the_two_deck_multiset(raw):
    deal = raw["deal"]
    cards = Counter(parse_cards(deal["stock"]) + parse_cards([deal["wild"], deal["open"]]))
    for hand in deal["hands"].values():
        assert len(hand) == 13
        cards.update(parse_cards(hand))
    assert cards == full_deck(2, 1)
    assert sum(cards.values()) == 106


def test_the_format_example_parses_into_typed_values():
    record = parse_record(example())
    assert isinstance(record, GameRecord)
    config = record.config
    assert (config.game_id, config.variant, config.rules) == ("T7-000123", "raise", "rummycircle")
    assert config.point_value == Decimal("1.00") and config.raise_step == Decimal("0.10")
    assert config.players == ("p1", "p2", "p3") and config.dealer == "p3"
    assert str(record.deal.wild) == "7D" and str(record.deal.open_card) == "KC"
    assert record.moves[0] == Move.from_dict(
        {"player": "p1", "type": "pick", "from": "closed", "card": "4H"}
    )
    assert record.moves[5].describe() == "p1 declare 9C"
    assert record.reported.gross == Decimal("49.70")
    assert record.reported.points == {"p2": 20, "p3": 27}


@pytest.mark.parametrize("raw", games(), ids=lambda r: r["game_id"])
def test_parse_and_write_round_trip(raw):
    record = parse_record(raw)
    assert parse_record(record.to_dict()) == record
    assert parse_record(dump_record(record)) == record
    assert json.loads(dump_record(record)) == raw  # the samples are already canonical


def test_canonical_form_normalises_cards_times_and_seat_order():
    raw = example()
    raw["players"] = list(reversed(raw["players"]))  # seat numbers decide the order
    raw["moves"][0]["card"] = "4h"
    raw["moves"][1]["card"] = "10C"
    raw["moves"][2]["at"] = "2025-03-01T23:40:00+05:30"
    record = parse_record(raw)
    assert record.config.players == ("p1", "p2", "p3")
    out = record.to_dict()
    assert out["moves"][0]["card"] == "4H" and out["moves"][1]["card"] == "TC"
    assert out["moves"][2]["at"] == "2025-03-01T18:10:00Z"


def test_a_game_rebuilt_from_a_record_writes_the_same_record():
    for raw in games():
        record = parse_record(raw)
        game = play_game(record.config, record.deal, record.move_dicts(), settle=True)
        if record.reported is not None:
            game.report(record.reported.to_dict())
        assert record_of(game).canonical() == record.canonical()


def test_shuffle_block_is_kept():
    raw = example()
    raw["shuffle"] = {"commitment": "sha256:" + "ab" * 32}
    record = parse_record(raw)
    assert record.shuffle == {"commitment": "sha256:" + "ab" * 32}
    assert record.to_dict()["shuffle"] == raw["shuffle"]


def bad(mutate) -> RecordError:
    raw = example()
    mutate(raw)
    with pytest.raises(RecordError) as caught:
        parse_record(raw)
    return caught.value


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda r: r.__setitem__("format", "rummy-ledger/game@2"), "T7-000123: field 'format'"),
        (lambda r: r.pop("variant"), "T7-000123: field 'variant': missing"),
        (lambda r: r.__setitem__("rules", "house"), "unknown rule profile 'house'"),
        (lambda r: r.__setitem__("colour", "red"), "field 'colour': not a field of a game record"),
        (lambda r: r["stakes"].__setitem__("point_value", 1.1), 'decimal string such as "1.00"'),
        (lambda r: r["stakes"].__setitem__("fee_percent", "ten"), "field 'stakes.fee_percent'"),
        (lambda r: r["stakes"].pop("raise"), "field 'stakes.raise': missing"),
        (lambda r: r.__setitem__("dealer", "p9"), "field 'dealer': 'p9' is not a player"),
        (lambda r: r["deal"]["hands"].pop("p2"), "field 'deal.hands': no hand for p2"),
        (lambda r: r["deal"].__setitem__("wild", "XX"), "field 'deal.wild': 'XX' is not a card"),
        (
            lambda r: r["deal"]["hands"]["p3"].__setitem__(4, "1Z"),
            "field 'deal.hands.p3[4]': '1Z' is not a card",
        ),
        (
            lambda r: r["moves"][3].__setitem__("type", "fold"),
            "move 3, field 'type': 'fold' is not a move type",
        ),
        (lambda r: r["moves"][1].__setitem__("card", "ZZ"), "move 1, field 'card': 'ZZ'"),
        (lambda r: r["moves"][0].pop("from"), "move 0, field 'from': missing"),
        (
            lambda r: r["moves"][0].__setitem__("from", "deck"),
            "field 'from': 'deck' is not 'open' or 'closed'",
        ),
        (lambda r: r["moves"][2].__setitem__("player", "p7"), "move 2, field 'player'"),
        (lambda r: r["moves"][2].__setitem__("card", "5S"), "move 2, field 'card': not a field"),
        (
            lambda r: r["moves"][5]["groups"][1].__setitem__(0, "4X"),
            "move 5, field 'groups[1][0]': '4X' is not a card",
        ),
        (lambda r: r["moves"][4].__setitem__("at", "yesterday"), "move 4, field 'at'"),
        (lambda r: r["reported"].__setitem__("gross", 49.7), "field 'reported.gross'"),
        (lambda r: r["reported"]["points"].__setitem__("p2", "20"), "reported.points.p2"),
        (
            lambda r: r.update(players=r["players"][:1], dealer="p1"),
            "field 'players': 1 given: at least 2 needed",
        ),
        (lambda r: r["players"][1].__setitem__("seat", 1), "seat 1 is taken twice"),
    ],
)
def test_format_errors_name_game_move_and_field(mutate, message):
    error = bad(mutate)
    assert message in str(error)
    assert str(error).startswith("T7-000123: ")


def test_a_record_without_a_usable_game_id_is_named_by_its_line():
    lines = [json.dumps(example()), "{not json", json.dumps({"game_id": "x y"}), ""]
    results = list(read_records(lines))
    assert [number for number, _ in results] == [1, 2, 3]
    assert isinstance(results[0][1], GameRecord)
    assert str(results[1][1]).startswith("line 2: not valid JSON")
    assert "line 3, field 'game_id'" in str(results[2][1])


def test_rule_violations_are_explained_with_the_move():
    raw = example()
    raw["moves"][1]["card"] = "9C"
    record = parse_record(raw)
    with pytest.raises(Exception) as caught:
        play_game(record.config, record.deal, record.move_dicts())
    assert (
        explain(caught.value, record) == "move 1 (p1 discard 9C): p1 cannot discard 9C: not in hand"
    )


# -- robustness: any damage to a record is an error line, never a traceback --------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from replays.records.settle import settle_lines  # noqa: E402

_JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 200),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "AS", "10h", "JK", "XX", "p1", "p9", "closed", "open", "1.00", "-5", "x"]),
    st.lists(st.sampled_from(["AS", "KD", "7C", "JK", "ZZ"]), max_size=4),
    st.dictionaries(st.sampled_from(["p1", "card", "type"]), st.integers(0, 3), max_size=2),
)


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


_EXAMPLE_PATHS = [path for path in _paths(games()[0]) if path]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    damage=st.lists(st.tuples(st.sampled_from(_EXAMPLE_PATHS), _JUNK), min_size=1, max_size=3),
    drop=st.booleans(),
)
def test_a_damaged_record_gives_an_error_line_not_a_traceback(damage, drop):
    raw = example()
    for path, junk in damage:
        target = raw
        try:
            for key in path[:-1]:
                target = target[key]
            if drop and isinstance(target, dict):
                target.pop(path[-1], None)
            else:
                target[path[-1]] = junk
        except (KeyError, IndexError, TypeError):
            continue  # an earlier change removed this path
    [outcome] = settle_lines([json.dumps(raw)])
    assert "error" in outcome or outcome["gross"].count(".") == 1
    if "error" in outcome:
        assert outcome["error"] and "Traceback" not in outcome["error"]
