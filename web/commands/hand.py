"""`rummy-ledger hand`: the best grouping of a 13-card hand, or the score of a given grouping.

    rummy-ledger hand --joker 7D --cards "AS 2S 3S 4H 5H JK 9C 9D 9H KS KD 2C 5D"
    rummy-ledger hand --joker 7D --groups "AS 2S 3S | 4H 5H JK | 9C 9D 9H | KS KD 2C 5D"
    rummy-ledger hand --batch hands.jsonl        # JSON Lines in and out; '-' for stdin

All the rules live in ``domain.rummy13.melds`` and ``domain.rummy13.solver``; this module only reads input
and writes results.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import click

from domain.rummy13.profiles import DEFAULT_PROFILE

if TYPE_CHECKING:
    from domain.cards import Card
    from domain.rummy13.melds import HandEvaluation

# The cards, the rules and the solver are imported when a hand is answered, not when the
# module loads: `rummy-ledger hand --help` needs none of them (tests/test_startup.py).

KIND_LABELS = {"pure": "pure sequence", "impure": "impure sequence", "set": "set"}
# By the scoring case's value (domain.rummy13.melds.ScoringCase, a StrEnum: its members
# look these up; tests/test_hand_cli.py checks that every case has its text).
CASE_TEXT = {
    "no_pure_sequence": "no pure sequence: all 13 cards count",
    "pure_but_fewer_than_two_sequences": (
        "a pure sequence but fewer than two sequences: all but it count"
    ),
    "two_sequences_with_pure": "two sequences, one pure: only cards outside valid groups count",
}


@click.command("hand")
@click.option("--joker", "wild", metavar="CARD", help="The wild joker indicator, e.g. 7D or JK.")
@click.option("--cards", metavar="CARDS", help="13 cards: find the best grouping.")
@click.option(
    "--groups",
    metavar="GROUPS",
    help="13 cards grouped with '|': score the grouping as given (a segment that is no "
    "valid group counts as loose).",
)
@click.option(
    "--batch",
    type=click.File("r", encoding="utf-8"),
    metavar="FILE",
    help="JSON Lines of hands ('-' for stdin); one JSON result per line on stdout.",
)
@click.option(
    "--rules",
    default=DEFAULT_PROFILE,
    show_default=True,
    help="Rule profile (rummycircle or deccan); in --batch, for lines without 'rules'.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def command(
    wild: str | None,
    cards: str | None,
    groups: str | None,
    batch,
    rules: str,
    as_json: bool,
) -> None:
    """Evaluate a 13-card hand: best grouping, score and whether it can declare."""
    chosen = [name for name, value in (("--cards", cards), ("--groups", groups)) if value]
    if batch is not None:
        if chosen or wild:
            raise click.UsageError("--batch takes its hands from the file, not from options")
        failed = _run_batch(batch, rules)
        click.get_current_context().exit(1 if failed else 0)
    if len(chosen) != 1:
        raise click.UsageError("give exactly one of --cards, --groups or --batch")
    if not wild:
        raise click.UsageError("--joker is required (the wild joker indicator, e.g. 7D or JK)")
    from domain.cards import Card, parse_cards
    from domain.rummy13.melds import evaluate
    from domain.rummy13.profiles import get_profile
    from domain.rummy13.solver import best_grouping, min_hand_score

    try:
        profile = get_profile(rules)
        indicator = Card.parse(wild)
        if cards:
            result = best_grouping(parse_cards(cards), indicator, profile)
            least = result.hand_score
        else:
            segments = [parse_cards(part) for part in groups.split("|") if part.strip()]
            result = evaluate(segments, [], indicator, profile)
            least = min_hand_score(result.cards, indicator, profile)
    except ValueError as error:
        raise click.ClickException(str(error)) from None
    if as_json:
        click.echo(json.dumps(result.to_json()))
        return
    for line in describe(result, indicator, profile.name, profile.max_points, least, bool(cards)):
        click.echo(line)


# -- batch ------------------------------------------------------------------------------------


def _run_batch(lines: Iterable[str], default_rules: str) -> int:
    """Answer every input line in order; return how many lines were errors."""
    failed = 0
    for number, line in _progress(enumerate(lines, 1)):
        if not line.strip():
            answer: dict = {"error": f"line {number}: empty line"}
        else:
            try:
                answer = answer_line(line, default_rules)
            except ValueError as error:
                answer = {"error": f"line {number}: {error}"}
        failed += "error" in answer
        click.echo(json.dumps(answer))
    return failed


def answer_line(line: str, default_rules: str = DEFAULT_PROFILE) -> dict:
    """One batch line in, one result dict out; bad input raises ValueError saying why.

    >>> answer_line('{"joker": "7D", "cards": ["AS","2S","3S","4H","5H","JK","9C","9D",'
    ...             '"9H","KS","KD","2C","5D"]}')["hand_score"]
    27
    """
    try:
        request = json.loads(line)
    except json.JSONDecodeError as error:
        raise ValueError(f"not JSON ({error.msg} at column {error.colno})") from None
    except RecursionError:
        raise ValueError("not JSON (nested too deeply)") from None
    if not isinstance(request, dict):
        raise ValueError("expected a JSON object with 'joker' and 'cards' or 'groups'")
    unknown = set(request) - {"joker", "cards", "groups", "loose", "rules"}
    if unknown:
        raise ValueError(f"unknown field(s): {', '.join(sorted(unknown))}")
    if "joker" not in request:
        raise ValueError("missing 'joker' (the wild joker indicator, e.g. \"7D\")")
    if ("cards" in request) == ("groups" in request):
        raise ValueError("give either 'cards' (a list of 13) or 'groups' (a list of lists)")
    from domain.cards import Card
    from domain.rummy13.melds import evaluate
    from domain.rummy13.profiles import get_profile
    from domain.rummy13.solver import best_grouping

    profile = get_profile(request.get("rules", default_rules))
    indicator = Card.parse(_text(request["joker"], "joker"))
    if "cards" in request:
        if "loose" in request:
            raise ValueError("'loose' goes with 'groups', not with 'cards'")
        return best_grouping(_card_list(request["cards"], "cards"), indicator, profile).to_json()
    groups = request["groups"]
    if not isinstance(groups, list):
        raise ValueError("'groups' must be a list of lists of cards")
    segments = [_card_list(group, f"groups[{i}]") for i, group in enumerate(groups)]
    loose = _card_list(request.get("loose", []), "loose")
    return evaluate(segments, loose, indicator, profile).to_json()


def _text(value, field: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"'{field}' must be card text such as \"7D\", got {json.dumps(value)}")
    return value


def _card_list(value, field: str) -> list[Card]:
    from domain.cards import Card

    if not isinstance(value, list):
        raise ValueError(f"'{field}' must be a list of cards, got {json.dumps(value)}")
    return [Card.parse(_text(card, field)) for card in value]


def _progress(items: Iterator) -> Iterator:
    """A progress bar on stderr for long batches, only when someone is watching."""
    if not sys.stderr.isatty():
        return items
    from tqdm import tqdm

    return tqdm(items, unit=" hands", file=sys.stderr, leave=False)


# -- for people -------------------------------------------------------------------------------


def describe(
    result: HandEvaluation,
    wild: Card,
    rules: str,
    max_points: int,
    least: int,
    searched: bool,
) -> list[str]:
    """The result for people: suit symbols, each group labelled, the score's arithmetic."""
    from domain.cards import RANKS, wild_rank

    rank = wild_rank(wild)
    rank_text = {1: "Ace", 10: "10"}.get(rank, RANKS[rank - 1])
    why = " (a printed joker makes Aces wild)" if wild.rank == 0 else ""
    lines = [
        f"Wild joker {wild.symbol}: every {rank_text} is a joker{why}, and so is every printed joker",
        f"{'Best grouping' if searched else 'Grouping as given'} ({rules} rules):",
    ]
    width = max(
        (len(KIND_LABELS.get(kind or "", "not a group")) for kind in result.kinds), default=0
    )
    for number, group in enumerate(result.groups, 1):
        label = KIND_LABELS[group.kind.value] if group.kind else "not a group"
        text = f"  {number}. {label:<{width}}  {_symbols(group.cards)}"
        if group.kind is None:
            text += f"  ({group.reason}; counts as loose)"
        lines.append(text)
    if result.loose:
        lines.append(f"  loose{' ' * max(0, width - 2)}  {_symbols(result.loose)}")
    lines.append(f"Scoring case: {CASE_TEXT[result.case]}")
    if result.counted:
        terms = " + ".join(f"{card.symbol} {card.points(wild)}" for card in result.counted)
        lines.append(f"Hand score: {terms} = {result.hand_score}")
    else:
        lines.append("Hand score: 0 (no card counts)")
    capped = f" (hand score {result.hand_score} capped at {max_points})"
    lines.append(f"Points: {result.points}{capped if result.points < result.hand_score else ''}")
    if not searched:
        if least < result.hand_score:
            lines.append(f"Least possible hand score for these cards: {least}")
        else:
            lines.append("This is the least possible hand score for these cards.")
    if searched:
        verdict = "yes" if result.valid_declaration else "no (" + "; ".join(result.reasons) + ")"
        lines.append(f"Can declare: {verdict}")
    elif result.valid_declaration:
        lines.append("Declaration: valid")
    else:
        lines.append("Declaration: not valid: " + "; ".join(result.reasons))
    return lines


def _symbols(cards: Iterable[Card]) -> str:
    return " ".join(card.symbol for card in cards)
