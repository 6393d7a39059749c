"""``point_value_for_round`` remembers its last answer (the table and round it was for):
whatever order tables and rounds are asked in, every answer must be the computation's."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from domain.rummy13 import raise_schedule
from domain.rummy13.table import TableConfig

TABLES = [
    TableConfig(game_id="P", variant="points", players=("p1", "p2"), point_value="0.50"),
    TableConfig(
        game_id="S",
        variant="raise",
        players=("p1", "p2"),
        point_value="1.00",
        raise_step="0.10",
        raise_max="1.25",
    ),
    TableConfig(
        game_id="U", variant="raise", players=("p1", "p2"), point_value="2", raise_step="0.005"
    ),
    TableConfig(
        game_id="L",
        variant="raise",
        players=("p1", "p2"),
        point_value="1",
        raise_schedule=("1", "1.5", "3"),
    ),
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(TABLES) - 1), st.integers(0, 12)), max_size=40))
def test_every_answer_is_the_computations(asks):
    for table, round_number in asks:
        config = TABLES[table]
        answer = raise_schedule.point_value_for_round(config, round_number)
        expected = raise_schedule._point_value(config, round_number)
        assert answer == expected and str(answer) == str(expected)


def test_an_equal_table_is_not_taken_for_the_last_one():
    first = TABLES[1]
    other = TableConfig(**{**vars(first), "raise_step": "0.20", "raise_max": None})
    assert str(raise_schedule.point_value_for_round(first, 3)) == "1.25"
    assert str(raise_schedule.point_value_for_round(other, 3)) == "1.60"
    assert raise_schedule.point_value_for_round(first, 3) is raise_schedule.point_value_for_round(
        first, 3
    )


def test_a_round_before_the_game_is_still_refused_after_an_answer():
    raise_schedule.point_value_for_round(TABLES[1], 0)
    try:
        raise_schedule.point_value_for_round(TABLES[1], -1)
    except ValueError as error:
        assert "before the game started" in str(error)
    else:
        raise AssertionError("round -1 was answered")
