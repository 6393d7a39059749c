"""Compare the solver's answers between two checkouts, hand by hand (not a benchmark: the
leading underscore keeps ``python -m bench`` from running it).

    python bench/_solver_compare.py deal HANDS.json      # once, from either checkout
    python bench/_solver_compare.py solve HANDS.json OUT.jsonl [EVERY]   # in each checkout
    cmp OUT-a.jsonl OUT-b.jsonl                          # byte-identical, or not

The hands: 15,000 of each joker class (tests/oracle.py's ``deal_in_class``), 30,000 joker-rich
ones, 7,500 each of random, near-complete and suited deals, and 7,500 joker-rich and
two-joker hands under the reading where a wild card in its place is a stand-in: 135,000 in
all, from a fixed seed. For each: ``best_grouping`` (groups, kinds, loose cards, case,
counted cards, score, declaration verdict and reasons, each group's verdict),
``declaration`` (the same, or None) and ``min_hand_score``, one JSON line a hand. The
caches are emptied every 997 hands (EVERY) so that both cold and warm tables answer.

The grouping shown can depend on what the caches held: a suit's table kept from a hand
with more jokers names the same sequences, maybe in another order (main shows another
order on 8 of the 135,000 hands when every hand starts from empty caches). A change to what
is cached or kept therefore compares with EVERY 1 too, where no hand leans on another.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

PER_CLASS = 15_000


def deal(path: str) -> None:
    from oracle import (
        JOKER_CLASSES,
        deal_in_class,
        deal_joker_rich,
        deal_near_complete,
        deal_random,
        deal_suited,
    )

    rng = random.Random(2611261)
    hands = []
    for name in JOKER_CLASSES:
        hands += [("default", name, *deal_in_class(rng, name)) for _ in range(PER_CLASS)]
    hands += [("default", "joker-rich", *deal_joker_rich(rng)) for _ in range(2 * PER_CLASS)]
    hands += [("default", "random", *deal_random(rng)) for _ in range(PER_CLASS // 2)]
    hands += [("default", "near", *deal_near_complete(rng)) for _ in range(PER_CLASS // 2)]
    hands += [("default", "suited", *deal_suited(rng)) for _ in range(PER_CLASS // 2)]
    hands += [("strict", "joker-rich", *deal_joker_rich(rng)) for _ in range(PER_CLASS // 4)]
    hands += [
        ("strict", "2 jokers", *deal_in_class(rng, "2 jokers")) for _ in range(PER_CLASS // 4)
    ]
    rows = [
        [profile, name, [str(c) for c in hand], str(wild)] for profile, name, hand, wild in hands
    ]
    Path(path).write_text(json.dumps(rows))
    print(len(rows), "hands")


def _text(result) -> dict | None:
    if result is None:
        return None
    body = result.to_json()
    body["case"] = result.case.value
    body["counted"] = [str(card) for card in result.counted]
    body["reasons"] = list(result.reasons)
    body["verdicts"] = [[group.kind and group.kind.value, group.reason] for group in result.groups]
    return body


def solve(path: str, out: str, every: int = 997) -> None:
    from domain.cards import Card
    from domain.rummy13.profiles import RuleProfile
    from domain.rummy13.solver import best_grouping, clear_caches, declaration, min_hand_score

    strict = RuleProfile(name="strict", wild_natural_is_pure=False)
    hands = json.loads(Path(path).read_text())
    with open(out, "w") as lines:
        for number, (profile, _, hand, wild) in enumerate(hands):
            if number % every == 0:
                clear_caches()
            rules = strict if profile == "strict" else None
            cards = [Card.parse(card) for card in hand]
            indicator = Card.parse(wild)
            line = [
                _text(best_grouping(cards, indicator, rules)),
                _text(declaration(cards, indicator, rules)),
                min_hand_score(cards, indicator, rules),
            ]
            lines.write(json.dumps(line, separators=(",", ":")) + "\n")
    print(len(hands), "hands solved")


if __name__ == "__main__":
    if sys.argv[1] == "deal":
        deal(sys.argv[2])
    else:
        solve(sys.argv[2], sys.argv[3], *map(int, sys.argv[4:5]))
