"""`rummy-ledger hand`: best grouping, a given grouping, JSON Lines batches, bad input."""

import json

import pytest
from click.testing import CliRunner

from web.cli import main

HAND = "AS 2S 3S 4H 5H JK 9C 9D 9H KS KD 2C 5D"
DECLARES = "AS 2S 3S 4H 5H JK 9C 9D 9H KS KD KC KH"
NO_PURE = "KS 9S 5S KH TH 6H KD QD 8D QC 9C AC 7C"  # 24 + 26 + 28 + 36 = 114 points


def run(*args, input=None):
    result = CliRunner().invoke(main, ["hand", *args], input=input)
    # Bad input ends in a clean message and exit status, never in a traceback.
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    assert "Traceback" not in result.output
    return result


def test_best_grouping_for_people():
    result = run("--joker", "7D", "--cards", HAND)
    assert result.exit_code == 0
    out = result.output
    assert "Wild joker 7♦: every 7 is a joker" in out
    assert "pure sequence    A♠ 2♠ 3♠" in out
    assert "impure sequence  4♥ 5♥ JK" in out
    assert "set              9♥ 9♦ 9♣" in out
    assert "loose               K♠ K♦ 2♣ 5♦" in out
    assert "Hand score: K♠ 10 + K♦ 10 + 2♣ 2 + 5♦ 5 = 27" in out
    assert "Points: 27\n" in out
    assert "Can declare: no" in out


def test_best_grouping_json():
    result = run("--joker", "7D", "--cards", HAND, "--json")
    assert result.exit_code == 0
    assert json.loads(result.output) == {
        "valid_declaration": False,
        "hand_score": 27,
        "points": 27,
        "groups": [["AS", "2S", "3S"], ["4H", "5H", "JK"], ["9H", "9D", "9C"]],
        "loose": ["KS", "KD", "2C", "5D"],
        "kinds": ["pure", "impure", "set"],
    }


def test_a_hand_that_declares():
    out = run("--joker", "7D", "--cards", DECLARES, "--rules", "deccan").output
    assert "(deccan rules)" in out and "Can declare: yes" in out
    assert "Hand score: 0 (no card counts)" in out


def test_points_capped_at_80_show_the_arithmetic():
    out = run("--joker", "2C", "--cards", NO_PURE).output
    assert "no pure sequence: all 13 cards count" in out
    assert "= 114" in out and "Points: 80 (hand score 114 capped at 80)" in out


def test_grouping_as_given_and_its_invalid_segment():
    result = run("--joker", "7D", "--groups", "AS 2S 3S | 4H 5H JK | 9C 9D 9H | KS KD 2C 5D")
    assert result.exit_code == 0
    out = result.output
    assert "Grouping as given (rummycircle rules)" in out
    assert "4. not a group      K♠ K♦ 2♣ 5♦  (mixes suits" in out
    assert "counts as loose" in out
    assert "Hand score: K♠ 10 + K♦ 10 + 2♣ 2 + 5♦ 5 = 27" in out
    assert "This is the least possible hand score for these cards." in out
    assert "Declaration: not valid: group 4 (KS KD 2C 5D)" in out


def test_grouping_that_costs_more_than_it_had_to():
    out = run("--joker", "7D", "--groups", "AS 2S 3S | 4H 5H 9C 9D 9H KS KD 2C 5D JK").output
    assert "Hand score: 4♥ 5 + 5♥ 5" not in out  # the second segment is no group
    assert "a pure sequence but fewer than two sequences" in out
    assert "Least possible hand score for these cards: 27" in out


def test_grouping_json_lists_invalid_groups_with_null_kind():
    result = run(
        "--joker", "7D", "--groups", "AS 2S 3S | 4H 5H JK | 9C 9D 9H | KS KD 2C 5D", "--json"
    )
    answer = json.loads(result.output)
    assert answer["kinds"] == ["pure", "impure", "set", None]
    assert answer["hand_score"] == 27 and answer["loose"] == []


def line(joker="7D", **fields):
    return json.dumps({"joker": joker, **fields})


def test_batch_one_answer_per_line_in_order(tmp_path):
    lines = [
        line(cards=HAND.split()),
        line(cards=DECLARES.split(), rules="deccan"),
        line(groups=[["AS", "2S", "3S"], ["4H", "5H", "JK"]], loose=HAND.split()[6:]),
        line(
            joker="JK",
            cards=["AS", "2S", "3S", "AH", "AD", "5C", "6C", "9H", "9D", "9S", "KH", "KD", "QC"],
        ),
    ]
    path = tmp_path / "hands.jsonl"
    path.write_text("\n".join(lines) + "\n")
    result = run("--batch", str(path))
    assert result.exit_code == 0
    answers = [json.loads(text) for text in result.output.splitlines()]
    assert [a["hand_score"] for a in answers] == [27, 0, 54, 10]
    assert [a["valid_declaration"] for a in answers] == [False, True, False, False]
    assert answers[2]["kinds"] == ["pure", "impure"]
    assert set(answers[0]) == {
        "valid_declaration",
        "hand_score",
        "points",
        "groups",
        "loose",
        "kinds",
    }


def test_batch_hand_score_before_cap_points_after():
    answer = json.loads(run("--batch", "-", input=line(joker="2C", cards=NO_PURE.split())).output)
    assert (answer["hand_score"], answer["points"]) == (114, 80)


def test_batch_bad_lines_are_answered_and_the_rest_goes_on():
    lines = [
        line(cards=HAND.split()),
        "not json",
        line(cards=HAND.split()[:12]),
        line(cards=[*HAND.split()[:12], "1Z"]),
        line(cards=HAND.split(), rules="pointsbet"),
        json.dumps({"cards": HAND.split()}),
        line(cards=["AS"] * 3 + HAND.split()[3:]),
        line(cards=HAND.split(), groups=[]),
        "",
        "[1, 2]",
        line(cards=["AS", "2S", 3, *HAND.split()[3:]]),
        line(cards=HAND.split()),
    ]
    result = run("--batch", "-", input="\n".join(lines) + "\n")
    assert result.exit_code == 1
    answers = [json.loads(text) for text in result.output.splitlines()]
    assert len(answers) == len(lines)
    assert answers[0]["hand_score"] == 27 and answers[-1]["hand_score"] == 27
    errors = [a.get("error") for a in answers[1:-1]]
    assert errors == [
        "line 2: not JSON (Expecting value at column 1)",
        "line 3: a hand has 13 cards, got 12",
        "line 4: '1Z' is not a card (rank A,2-9,T,J,Q,K then suit S,H,D,C, or JK)",
        "line 5: unknown rule profile 'pointsbet' (known: deccan, rummycircle)",
        "line 6: missing 'joker' (the wild joker indicator, e.g. \"7D\")",
        "line 7: AS appears 3 times but 2 deck(s) with 1 printed joker(s) each hold only 2",
        "line 8: give either 'cards' (a list of 13) or 'groups' (a list of lists)",
        "line 9: empty line",
        "line 10: expected a JSON object with 'joker' and 'cards' or 'groups'",
        "line 11: 'cards' must be card text such as \"7D\", got 3",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--joker", "7D", "--cards", "AS 2S 1Z"], "'1Z' is not a card (rank A,2-9,T,J,Q,K"),
        (["--joker", "7D", "--cards", "AS 2S 3S"], "a hand has 13 cards, got 3"),
        (
            ["--joker", "7D", "--cards", "AS AS AS " + " ".join(HAND.split()[3:])],
            "AS appears 3 times",
        ),
        (["--joker", "1Z", "--cards", HAND], "'1Z' is not a card"),
        (
            ["--joker", "7D", "--cards", HAND, "--rules", "nope"],
            "unknown rule profile 'nope' (known: deccan, rummycircle)",
        ),
        (["--joker", "7D", "--groups", "AS 2S 3S | 4H"], "a hand has 13 cards, got 4"),
        (["--cards", HAND], "--joker is required"),
        (["--joker", "7D"], "give exactly one of --cards, --groups or --batch"),
        (["--joker", "7D", "--cards", HAND, "--groups", HAND], "give exactly one of"),
    ],
)
def test_bad_input_says_what_and_where(args, message):
    result = run(*args)
    assert result.exit_code in (1, 2)
    assert message in result.output


def test_every_scoring_case_has_its_text():
    """The command keeps its texts by the scoring case's value (so `hand --help` need not
    import the rules); every case must find its own."""
    from domain.rummy13.melds import ScoringCase
    from web.commands.hand import CASE_TEXT

    assert set(CASE_TEXT) == {case.value for case in ScoringCase}
    for case in ScoringCase:
        assert CASE_TEXT[case] == CASE_TEXT[case.value]
