"""What happened over a batch of simulated games, counted from the records.

The simulator prints this after a run so its realism can be seen at a glance (and the tests
check that every behaviour the ledger must handle actually occurs). Each record's variant
says how many moves it holds and what each 13-card deal in it showed
(``Variant.record_moves``, ``Variant.deal_behaviours``): a 13-card game is one deal, a
match of 13-card deals several, a game of another kind none.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from domain import variants as registry


@dataclass
class Tally:
    games: int = 0
    moves: int = 0
    counts: Counter = field(default_factory=Counter)
    variants: Counter = field(default_factory=Counter)
    # 13-card deals only: how long each ran and how often its stock was reshuffled.
    lengths: list[int] = field(default_factory=list)
    reshuffles: Counter = field(default_factory=Counter)

    def add(self, record: dict) -> None:
        self.games += 1
        self.variants[record["variant"]] += 1
        variant = registry.get(record["variant"])
        self.moves += len(variant.record_moves(record))
        for found in variant.deal_behaviours(record):
            found = Counter(found)
            self.lengths.append(found.pop("moves"))
            self.counts.update(found)
            self.reshuffles[found["reshuffle"]] += 1

    def percentile(self, share: float) -> int:
        """Moves per 13-card game at ``share`` (0.95: 95 % of games were no longer).

        >>> tally = Tally(lengths=[10, 20, 30, 40])
        >>> tally.percentile(0.5), tally.percentile(0.95), tally.percentile(1.0)
        (20, 40, 40)
        """
        ordered = sorted(self.lengths)
        # Nearest rank, ceil(n * share); rounded first so that 200 × 0.95 is 190, not 191.
        rank = max(1, math.ceil(round(len(ordered) * share, 9)))
        return ordered[rank - 1]

    def distribution_lines(self) -> list[str]:
        if not self.lengths:
            return []
        games = len(self.lengths)
        reshuffled = games - self.reshuffles[0]
        counts = ", ".join(f"{n}× in {self.reshuffles[n]}" for n in sorted(self.reshuffles) if n)
        return [
            f"  moves per game: median {self.percentile(0.5)}, 90% ≤ {self.percentile(0.9)}, "
            f"95% ≤ {self.percentile(0.95)}, longest {max(self.lengths)}",
            f"  reshuffles per game: none in {self.reshuffles[0]} of {games}"
            + (f"; {counts}" if counts else "")
            + f" ({100 * reshuffled / games:.1f}% of games reshuffled)",
        ]

    def lines(self) -> list[str]:
        names = (
            ("first_drop", "first drops"),
            ("middle_drop", "middle drops"),
            ("miss", "missed turns"),
            ("auto_drop", "auto-drops"),
            ("wrong_show", "wrong shows"),
            ("declare", "valid declarations"),
            ("show", "shows"),
            ("reshuffle", "reshuffles"),
            ("reshuffled_two_player_games", "two-player games that reshuffled"),
        )
        variants = ", ".join(f"{name} {count}" for name, count in sorted(self.variants.items()))
        out = [f"{self.games} games ({variants}), {self.moves} moves"]
        if self.lengths:
            out += [f"  {label}: {self.counts[key]}" for key, label in names]
            out += self.distribution_lines()
        return out
