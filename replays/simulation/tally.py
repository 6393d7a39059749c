"""What happened over a batch of simulated 13-card games, counted from the records.

The simulator prints this after a run so its realism can be seen at a glance (and the tests
check that every behaviour the ledger must handle actually occurs).

A drop is a *first* drop when the player had not yet picked a card; a run of misses as long
as the profile's limit is an auto-drop; a declaration by anyone but the winner is a wrong
show.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

from domain.rummy13.profiles import get_profile


@dataclass
class Tally:
    games: int = 0
    moves: int = 0
    counts: Counter = field(default_factory=Counter)
    variants: Counter = field(default_factory=Counter)
    # 13-card games only: how long each ran and how often its stock was reshuffled.
    lengths: list[int] = field(default_factory=list)
    reshuffles: Counter = field(default_factory=Counter)

    def add(self, record: dict) -> None:
        self.games += 1
        self.variants[record["variant"]] += 1
        moves = record.get("moves") or moves_in_parts(record)
        self.moves += len(moves)
        if record["variant"] not in ("points", "raise"):
            return
        found = behaviours(record)
        self.counts.update(found)
        self.lengths.append(len(moves))
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
        if self.variants["points"] or self.variants["raise"]:
            out += [f"  {label}: {self.counts[key]}" for key, label in names]
            out += self.distribution_lines()
        return out


def moves_in_parts(record: dict) -> list[dict]:
    """The moves of a record that keeps them per part (a match's rounds or deals): every
    list of the record whose entries carry ``moves``, in order."""
    return [
        move
        for value in record.values()
        if isinstance(value, list)
        for part in value
        if isinstance(part, dict)
        for move in part.get("moves", ())
    ]


def behaviours(record: dict) -> Counter:
    """The behaviours one 13-card record shows, by name."""
    found: Counter = Counter()
    profile = get_profile(record.get("rules"))
    winner = (record.get("reported") or {}).get("winner")
    picked: set[str] = set()
    misses: Counter = Counter()
    reshuffled = False
    for move in record["moves"]:
        kind, player = move["type"], move.get("player")
        if kind == "pick":
            picked.add(player)
            misses[player] = 0
        elif kind == "miss":
            found["miss"] += 1
            misses[player] += 1
            if misses[player] == profile.misses_to_auto_drop:
                found["auto_drop"] += 1
        elif kind == "drop":
            found["first_drop" if player not in picked else "middle_drop"] += 1
        elif kind == "declare":
            found["declare" if winner in (None, player) else "wrong_show"] += 1
        elif kind == "show":
            found["show"] += 1
        elif kind == "reshuffle":
            found["reshuffle"] += 1
            reshuffled = True
    if reshuffled and len(record["players"]) == 2:
        found["reshuffled_two_player_games"] += 1
    return found
