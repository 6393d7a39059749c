"""Whether a move's or a reported block's players are seated is asked by its reader once
the block is validated (domain.record_schema.common.Seated has no validator running for
every move of every record). The refusals must be the ones the validator gave, field errors
first: the table below is main's answers (c95eb3c), message for message."""

from __future__ import annotations

import pytest

from domain.records import RecordError
from domain.rummy13.records import Move, Reported

SEATED = ("p1", "p2")
CASES = [
    (
        "move",
        {"player": "p9", "type": "drop"},
        ("p1", "p2"),
        "move 3, field 'player': 'p9' is not a player at this table",
    ),
    ("move", {"player": "p9", "type": "drop"}, None, None),
    (
        "move",
        {"player": "p9", "type": "pick", "from": "open", "card": "AS"},
        ("p1", "p2"),
        "move 3, field 'player': 'p9' is not a player at this table",
    ),
    ("move", {"player": "p9", "type": "pick", "from": "open", "card": "AS"}, None, None),
    (
        "move",
        {"player": "p9", "type": "pick", "from": "open", "card": "ZZ"},
        ("p1", "p2"),
        "move 3, field 'card': 'ZZ' is not a card (rank A,2-9,T,J,Q,K then suit S,H,D,C, or JK)",
    ),
    (
        "move",
        {"player": "p9", "type": "pick", "from": "open", "card": "ZZ"},
        None,
        "move 3, field 'card': 'ZZ' is not a card (rank A,2-9,T,J,Q,K then suit S,H,D,C, or JK)",
    ),
    ("move", {"player": "p9", "type": "reshuffle"}, ("p1", "p2"), None),
    ("move", {"player": "p9", "type": "reshuffle"}, None, None),
    (
        "move",
        {"player": "p9", "type": "drop", "at": "bad"},
        ("p1", "p2"),
        "move 3, field 'at': 'bad' is not an ISO-8601 time",
    ),
    (
        "move",
        {"player": "p9", "type": "drop", "at": "bad"},
        None,
        "move 3, field 'at': 'bad' is not an ISO-8601 time",
    ),
    (
        "move",
        {"player": "p9", "type": "show", "groups": [["AS", "2S", "3S"]]},
        ("p1", "p2"),
        "move 3, field 'player': 'p9' is not a player at this table",
    ),
    ("move", {"player": "p9", "type": "show", "groups": [["AS", "2S", "3S"]]}, None, None),
    (
        "move",
        {"player": "p9", "type": "declare", "finish": "AS", "groups": []},
        ("p1", "p2"),
        "move 3, field 'player': 'p9' is not a player at this table",
    ),
    ("move", {"player": "p9", "type": "declare", "finish": "AS", "groups": []}, None, None),
    ("move", {"player": "p1", "type": "discard", "card": "9c"}, ("p1", "p2"), None),
    ("move", {"player": "p1", "type": "discard", "card": "9c"}, None, None),
    ("move", {"player": "p9", "type": "discard"}, ("p1", "p2"), "move 3, field 'card': missing"),
    ("move", {"player": "p9", "type": "discard"}, None, "move 3, field 'card': missing"),
    (
        "move",
        {"player": "p9", "type": "jump"},
        ("p1", "p2"),
        "move 3, field 'type': 'jump' is not a move type (expected 'pick', 'discard', 'drop', 'miss', 'declare', 'show', 'reshuffle')",
    ),
    (
        "move",
        {"player": "p9", "type": "jump"},
        None,
        "move 3, field 'type': 'jump' is not a move type (expected 'pick', 'discard', 'drop', 'miss', 'declare', 'show', 'reshuffle')",
    ),
    ("move", {"type": "drop"}, ("p1", "p2"), "move 3, field 'player': missing"),
    ("move", {"type": "drop"}, None, "move 3, field 'player': missing"),
    ("reported", {"winner": "p9"}, None, "field 'reported.winner': 'p9' is not a player"),
    ("reported", {"points": {"p1": 3, "p9": 4}}, None, "field 'reported.points.p9': not a player"),
    (
        "reported",
        {"winner": "p9", "points": {"p1": "x"}},
        None,
        "field 'reported.points.p1': 'x' is not a whole number",
    ),
    ("reported", {"winner": "p1", "points": {"p2": 3}, "gross": "1.00"}, None, None),
    (
        "reported",
        {"winner": "p9", "gross": 1.5},
        None,
        "field 'reported.gross': 1.5: write money as a decimal string such as \"1.00\"",
    ),
    (
        "reported",
        {"points": {"p9": 2}, "winner": "p8"},
        None,
        "field 'reported.winner': 'p8' is not a player",
    ),
]


@pytest.mark.parametrize(("kind", "obj", "players", "expected"), CASES)
def test_a_block_read_alone_is_refused_as_before(kind, obj, players, expected):
    try:
        if kind == "move":
            Move.from_dict(obj, index=3, players=players)
        else:
            Reported.from_dict(obj, SEATED)
    except RecordError as error:
        assert str(error) == expected
    else:
        assert expected is None
