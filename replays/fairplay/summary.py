"""The sufficient statistics of the fair-play signals, per day, player and pair.

Every figure here is a count or a sum, so a period's statistics are the days' added up, and
a new day costs only that day's games. The projection keeps these rows in read-model tables
(:mod:`replays.fairplay.tables`); a summary built in memory from records is the same thing.

- per player and day (:class:`PlayerDay`): games; the hidden-card statistic's parts (open
  choices, the sum of ``(2 stock - 1) surprise`` and of its variance); as a
  picker, how often they faced the previous player's discard and took it to their gain; move
  intervals by kind (count, sum, sum of squares); exits by hand-score band.
- per player and day, solver agreement: discards weighed and those that left no more than
  the solver's choice, by the links of the solver's choice (:data:`BREAKS` classes).
- per ordered pair and day (:class:`PairDay`): the same feeding counts for one feeder and one
  picker; exits of the first while the second was still in the deal, by score band; games
  at one table (kept on the pair in name order); deals in which the second was dealt a
  strong hand, and how many of them the first dropped while the second was in.
- per table and day: games (with each player's games there: what seating alone explains).
- evidence: the moves that weigh most for each signal, a few per day and subject.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from replays.fairplay.facts import MOST_LINKS, TIMED_KINDS, GameFacts

# Hand-score bands of an exit (drop or wrong show): the least score of the 13 cards held.
EXIT_BANDS = (10, 20, 30, 40, 60, 80)
# A partner's hand "strong" as dealt: a hand score this low or lower (about one dealt hand in
# five at the simulator's tables); the folding signal asks who drops when the other holds one.
STRONG_HAND = 50
EVIDENCE_KEPT = 5  # per day, signal and subject
# Discards weighed against the solver, by how many links the solver's choice had with the
# rest of the hand (0: a loose card, the discard anyone sees; up to MOST_LINKS).
BREAKS = MOST_LINKS + 1
FEEDS_PER_GAME = 3  # a pair's discards faced, counted per game


def band(score: int) -> int:
    """>>> band(0), band(25), band(200)
    (0, 2, 6)
    """
    for place, bound in enumerate(EXIT_BANDS):
        if score <= bound:
            return place
    return len(EXIT_BANDS)


def _bands() -> list[int]:
    return [0] * (len(EXIT_BANDS) + 1)


def _breaks() -> list[int]:
    return [0] * BREAKS


def _timing() -> dict[str, list[float]]:
    return {kind: [0, 0.0, 0.0] for kind in TIMED_KINDS}


@dataclass
class PlayerDay:
    games: int = 0
    choices: int = 0
    choice_sum: float = 0.0
    choice_var: float = 0.0
    faced: int = 0
    useful: int = 0
    timing: dict[str, list[float]] = field(default_factory=_timing)
    exits: list[int] = field(default_factory=_bands)
    # Discards weighed, and of them those that left no more than the solver's choice, by
    # the links the solver's choice had (``BREAKS`` classes).
    discards: list[int] = field(default_factory=_breaks)
    agreed: list[int] = field(default_factory=_breaks)

    def add(self, other: PlayerDay) -> None:
        self.games += other.games
        self.choices += other.choices
        self.choice_sum += other.choice_sum
        self.choice_var += other.choice_var
        self.faced += other.faced
        self.useful += other.useful
        for kind, (n, s, ss) in other.timing.items():
            mine = self.timing.setdefault(kind, [0, 0.0, 0.0])
            mine[0] += n
            mine[1] += s
            mine[2] += ss
        self.exits = [a + b for a, b in zip(self.exits, other.exits, strict=True)]
        self.discards = [a + b for a, b in zip(self.discards, other.discards, strict=True)]
        self.agreed = [a + b for a, b in zip(self.agreed, other.agreed, strict=True)]


@dataclass
class PairDay:
    faced: int = 0
    useful: int = 0
    gain: int = 0
    together: int = 0
    exits: list[int] = field(default_factory=_bands)
    strong: int = 0  # deals in which the second was dealt a strong hand, the first dealt in too
    strong_drops: int = 0  # of them, the first dropped (first or middle drop), the second in

    def add(self, other: PairDay) -> None:
        self.faced += other.faced
        self.useful += other.useful
        self.gain += other.gain
        self.together += other.together
        self.exits = [a + b for a, b in zip(self.exits, other.exits, strict=True)]
        self.strong += other.strong
        self.strong_drops += other.strong_drops


@dataclass(frozen=True)
class Evidence:
    signal: str  # feed, peek, dump, bot, seat, fold
    first: str
    second: str  # "" for a one-player signal
    game_id: str
    step: int  # the replay's move number: /games/<id>/replay?move=<step>
    weight: float
    note: str


@dataclass
class Summary:
    """Sufficient statistics keyed by day and table: ``players[(day, table, player)]``,
    ``pairs[(day, table, first, second)]``, ``tables[(day, table)]`` (games) and
    ``evidence[(day, table, signal, first, second)]``. Keeping the table in the key lets a
    review cover one table (``--table``) and the seating test see where each player sat."""

    players: dict[tuple[str, str, str], PlayerDay] = field(
        default_factory=lambda: defaultdict(PlayerDay)
    )
    pairs: dict[tuple[str, str, str, str], PairDay] = field(
        default_factory=lambda: defaultdict(PairDay)
    )
    tables: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    evidence: dict[tuple[str, str, str, str, str], list[Evidence]] = field(
        default_factory=lambda: defaultdict(list)
    )

    def add_game(self, facts: GameFacts) -> None:
        day = (facts.day, facts.table)
        players = sorted(set(facts.players))
        self.tables[day] += 1
        for player in players:
            self.players[(*day, player)].games += 1
        for place, first in enumerate(players):
            for second in players[place + 1 :]:
                self.pairs[(*day, first, second)].together += 1
                kept = self.evidence[(*day, "seat", first, second)]
                if len(kept) < EVIDENCE_KEPT:
                    kept.append(
                        Evidence("seat", first, second, facts.game_id, 0, 0.0, "at one table")
                    )
        for choice in facts.choices:
            row = self.players[(*day, choice.player)]
            row.choices += 1
            part = (1 if choice.stock else -1) * choice.surprise
            row.choice_sum += part
            row.choice_var += choice.variance
            if part > 0 and choice.stock:
                note = "took the stock; its hidden top was the better card"
                self._keep(
                    day, Evidence("peek", choice.player, "", facts.game_id, choice.step, part, note)
                )
        faced: dict[tuple[str, str], int] = defaultdict(int)
        for feed in facts.feeds:
            # Turns of one game hang together (the same hands, the same pile): a pair counts
            # its first few only, so that one long match cannot pass for a habit.
            faced[(feed.feeder, feed.picker)] += 1
            if faced[(feed.feeder, feed.picker)] > FEEDS_PER_GAME:
                continue
            useful = feed.picked and feed.gain > 0
            picker = self.players[(*day, feed.picker)]
            picker.faced += 1
            picker.useful += useful
            pair = self.pairs[(*day, feed.feeder, feed.picker)]
            pair.faced += 1
            pair.useful += useful
            if useful:
                pair.gain += feed.gain
                note = f"took {feed.feeder}'s discard; hand score {feed.gain} lower"
                self._keep(
                    day,
                    Evidence(
                        "feed", feed.feeder, feed.picker, facts.game_id, feed.step, feed.gain, note
                    ),
                )
        if facts.chips:
            for out in facts.exits:
                where = band(out.score)
                self.players[(*day, out.player)].exits[where] += 1
                for other in out.others:
                    self.pairs[(*day, out.player, other)].exits[where] += 1
                    note = f"{out.kind.replace('_', ' ')} with a hand scoring {out.score}"
                    weight = float(max(0, 80 - out.score))
                    self._keep(
                        day,
                        Evidence("dump", out.player, other, facts.game_id, out.step, weight, note),
                    )
        for deal in facts.deals:
            for partner, score in deal.dealt.items():
                if score > STRONG_HAND:
                    continue
                for player in deal.dealt:
                    if player == partner:
                        continue
                    pair = self.pairs[(*day, player, partner)]
                    pair.strong += 1
                    step, others = deal.drops.get(player, (0, ()))
                    if partner in others:
                        pair.strong_drops += 1
                        note = f"dropped while {partner} held a hand scoring {score} as dealt"
                        weight = float(STRONG_HAND + 1 - score)
                        self._keep(
                            day,
                            Evidence("fold", player, partner, facts.game_id, step, weight, note),
                        )
        for weighed in facts.discards:
            row = self.players[(*day, weighed.player)]
            row.discards[weighed.breaks] += 1
            if weighed.agreed:
                row.agreed[weighed.breaks] += 1
                kept = self.evidence[(*day, "solver", weighed.player, "")]
                # Most discards agree: a note is written only for one that would be kept.
                if weighed.breaks and (
                    len(kept) < EVIDENCE_KEPT or kept[-1].weight < weighed.breaks
                ):
                    # The agreements no eye for links would make: the solver's own choice.
                    note = (
                        f"discarded {weighed.card}, the solver's choice, though it linked "
                        f"with {weighed.breaks} of the cards kept"
                    )
                    self._keep(
                        day,
                        Evidence(
                            "solver",
                            weighed.player,
                            "",
                            facts.game_id,
                            weighed.step,
                            float(weighed.breaks),
                            note,
                        ),
                    )
        for player, kind, seconds, step in facts.intervals:
            if seconds < 0:
                continue
            cell = self.players[(*day, player)].timing.setdefault(kind, [0, 0.0, 0.0])
            cell[0] += 1
            cell[1] += seconds
            cell[2] += seconds * seconds
            if cell[0] <= EVIDENCE_KEPT:
                note = f"{kind} after {seconds:.0f} s"
                self._keep(day, Evidence("bot", player, "", facts.game_id, step, 0.0, note))

    def _keep(self, day: tuple[str, str], evidence: Evidence) -> None:
        kept = self.evidence[(*day, evidence.signal, evidence.first, evidence.second)]
        kept.append(evidence)
        if len(kept) >= EVIDENCE_KEPT:
            # Heaviest first (the last kept is the lightest), the earliest of equals first.
            kept.sort(key=lambda e: -e.weight)
            del kept[EVIDENCE_KEPT:]

    def period(self, start: str, end: str, table: str | None = None) -> Period:
        """Days ``start``..``end`` (inclusive) of one table or all, added up."""
        return _period(self, start, end, table)

    def add(self, other: Summary) -> None:
        for key, row in other.players.items():
            self.players[key].add(row)
        for key, row in other.pairs.items():
            self.pairs[key].add(row)
        for key, count in other.tables.items():
            self.tables[key] += count
        for key, rows in other.evidence.items():
            for evidence in rows:
                self._keep(key[:2], evidence)


@dataclass
class Period:
    """A period's statistics added up: what a review reads. ``players`` and ``pairs`` hold one
    row each for the whole period; ``at_tables[player][table]`` the player's games at each
    table and ``table_pairs[table]`` the pairs seated in its games, counted once a game (the
    seating test's null); ``table_games`` and, per ordered pair, ``feed_base``:
    the pair's discards faced, each weighted by its own table's rate of useful takes in the
    period (the feeding test's null before the two players' own ratios). ``evidence`` is
    None when read from the tables: a review then fetches its flags' evidence afterwards.

    :meth:`Summary.period` adds a summary up in Python;
    :func:`replays.fairplay.projection.load_period` does the same sums in the database."""

    start: str
    end: str
    table: str | None
    players: dict[str, PlayerDay] = field(default_factory=lambda: defaultdict(PlayerDay))
    at_tables: dict[str, dict[str, int]] = field(
        default_factory=lambda: defaultdict(lambda: defaultdict(int))
    )
    pairs: dict[tuple[str, str], PairDay] = field(default_factory=lambda: defaultdict(PairDay))
    table_games: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    table_pairs: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    feed_base: dict[tuple[str, str], float] = field(default_factory=lambda: defaultdict(float))
    evidence: dict[tuple[str, str, str], list[Evidence]] | None = None


def _period(summary: Summary, start: str, end: str, table: str | None) -> Period:
    def within(day: str, where: str) -> bool:
        return start <= day <= end and (table is None or where == table)

    period = Period(start, end, table, evidence=defaultdict(list))
    table_faced: dict[str, int] = defaultdict(int)
    table_useful: dict[str, int] = defaultdict(int)
    for (day, where, player), row in summary.players.items():
        if within(day, where):
            period.players[player].add(row)
            period.at_tables[player][where] += row.games
            table_faced[where] += row.faced
            table_useful[where] += row.useful
    for (day, where, first, second), row in summary.pairs.items():
        if within(day, where):
            period.pairs[(first, second)].add(row)
            if row.together:
                period.table_pairs[where] += row.together
            if row.faced:
                period.feed_base[(first, second)] += (
                    row.faced * table_useful[where] / table_faced[where]
                )
    for (day, where), count in summary.tables.items():
        if within(day, where):
            period.table_games[where] += count
    for (day, where, signal, first, second), rows in summary.evidence.items():
        if within(day, where):
            period.evidence[(signal, first, second)].extend(rows)
    return period


def summarise(records, progress=None) -> Summary:
    """A summary of ``records`` (game records, any variant; those without 13-card deals are
    passed over)."""
    from replays.fairplay.facts import game_facts

    summary = Summary()
    for record in records:
        facts = game_facts(record)
        if facts is not None:
            summary.add_game(facts)
        if progress is not None:
            progress()
    return summary
