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
- per player and day, what the player's ordered pairs (the player first) add up to: the
  others seated with them, game by game; their discards the next player faced and took to
  their gain; the deals in which another was dealt a strong hand, and the player's drops in
  them. The signals' population rates are these sums, so a period is reviewed without
  adding up its every pair (only the pairs that reach a floor are tested).
- per ordered pair and day (:class:`PairDay`): the same feeding counts for one feeder and one
  picker; exits of the first while the second was still in the deal, by score band; games
  at one table (kept on the pair in name order); deals in which the second was dealt a
  strong hand, and how many of them the first dropped while the second was in.
- per table and day: games (with each player's games there: what seating alone explains).
- evidence: the moves that weigh most for each signal, a few per day and subject.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
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


# Slotted: a period's review makes a row for each of its tens of thousands of pairs and reads
# their fields in every signal's loop; without an instance dict each is made and read faster.
@dataclass(slots=True)
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
    # The player's pairs (the player first) added up: the others seated with them, game by
    # game (each pair counted twice, once by each); as a feeder, discards faced by the next
    # player and taken to their gain; deals with another dealt a strong hand, and of them the
    # player's drops with that one still in.
    partners: int = 0
    fed: int = 0
    given: int = 0
    strong: int = 0
    strong_drops: int = 0

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
        self.partners += other.partners
        self.fed += other.fed
        self.given += other.given
        self.strong += other.strong
        self.strong_drops += other.strong_drops


@dataclass(slots=True)
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


def _evidence(
    signal: str, first: str, second: str, game_id: str, step: int, weight: float, note: str
) -> Evidence:
    """``Evidence(...)`` filled in at once: the frozen dataclass's ``__init__`` sets each field
    through ``object.__setattr__``, and adding up makes one for nearly every row it writes
    (30,000 a 400 games, most of them the seating's "at one table")."""
    made = object.__new__(Evidence)
    made.__dict__.update(
        signal=signal,
        first=first,
        second=second,
        game_id=game_id,
        step=step,
        weight=weight,
        note=note,
    )
    return made


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
        self.add_packed(facts.packed())

    def add_packed(self, packed: tuple) -> None:
        """One game's facts added, as :meth:`GameFacts.packed
        <replays.fairplay.facts.GameFacts.packed>` gives them (what a walking worker sends).

        Evidence that could not be kept (a subject's :data:`EVIDENCE_KEPT` already as heavy,
        and the earlier of equals kept) is not written out at all."""
        game_id, day_, table, seated, chips, choices, feeds, exits, intervals, deals, discards = (
            packed
        )
        day = (day_, table)
        players = self.players
        pairs = self.pairs
        evidence = self.evidence
        keep = self._keep
        seated = sorted(set(seated))
        self.tables[day] += 1
        # The game's player rows by name: each is looked up once, not once a fact.
        rows = _DayRows(players, day)
        for player in seated:
            row = rows[player]
            row.games += 1
            row.partners += len(seated) - 1
        for place, first in enumerate(seated):
            for second in seated[place + 1 :]:
                pairs[(*day, first, second)].together += 1
                kept = evidence[(*day, "seat", first, second)]
                if len(kept) < EVIDENCE_KEPT:
                    kept.append(_evidence("seat", first, second, game_id, 0, 0.0, "at one table"))
        for player, stock, surprise, variance, step in choices:
            row = rows[player]
            row.choices += 1
            part = (1 if stock else -1) * surprise
            row.choice_sum += part
            row.choice_var += variance
            if part > 0 and stock and _may_keep(evidence.get((*day, "peek", player, "")), part):
                note = "took the stock; its hidden top was the better card"
                keep(day, _evidence("peek", player, "", game_id, step, part, note))
        faced: dict[tuple[str, str], int] = defaultdict(int)
        for feeder, picker, picked, gain, step in feeds:
            # Turns of one game hang together (the same hands, the same pile): a pair counts
            # its first few only, so that one long match cannot pass for a habit.
            faced[(feeder, picker)] += 1
            if faced[(feeder, picker)] > FEEDS_PER_GAME:
                continue
            useful = picked and gain > 0
            row = rows[picker]
            row.faced += 1
            row.useful += useful
            row = rows[feeder]
            row.fed += 1
            row.given += useful
            pair = pairs[(*day, feeder, picker)]
            pair.faced += 1
            pair.useful += useful
            if useful:
                pair.gain += gain
                if _may_keep(evidence.get((*day, "feed", feeder, picker)), gain):
                    note = f"took {feeder}'s discard; hand score {gain} lower"
                    keep(day, _evidence("feed", feeder, picker, game_id, step, gain, note))
        if chips:
            for player, kind, score, others, step in exits:
                where = band(score)
                rows[player].exits[where] += 1
                weight = float(max(0, 80 - score))
                for other in others:
                    pairs[(*day, player, other)].exits[where] += 1
                    if _may_keep(evidence.get((*day, "dump", player, other)), weight):
                        note = f"{kind.replace('_', ' ')} with a hand scoring {score}"
                        keep(day, _evidence("dump", player, other, game_id, step, weight, note))
        for dealt, drops in deals:
            for partner, score in dealt.items():
                if score > STRONG_HAND:
                    continue
                weight = float(STRONG_HAND + 1 - score)
                for player in dealt:
                    if player == partner:
                        continue
                    pair = pairs[(*day, player, partner)]
                    pair.strong += 1
                    row = rows[player]
                    row.strong += 1
                    step, others = drops.get(player, (0, ()))
                    if partner in others:
                        pair.strong_drops += 1
                        row.strong_drops += 1
                        if _may_keep(evidence.get((*day, "fold", player, partner)), weight):
                            note = f"dropped while {partner} held a hand scoring {score} as dealt"
                            keep(
                                day, _evidence("fold", player, partner, game_id, step, weight, note)
                            )
        for player, agreed, breaks, _loss, step, card in discards:
            row = rows[player]
            row.discards[breaks] += 1
            if agreed:
                row.agreed[breaks] += 1
                # Most discards agree: a note is written only for one that would be kept.
                if breaks and _may_keep(evidence.get((*day, "solver", player, "")), breaks):
                    # The agreements no eye for links would make: the solver's own choice.
                    note = (
                        f"discarded {card}, the solver's choice, though it linked "
                        f"with {breaks} of the cards kept"
                    )
                    keep(
                        day,
                        _evidence("solver", player, "", game_id, step, float(breaks), note),
                    )
        timed = None
        for player, kind, seconds, step in intervals:
            if seconds < 0:
                continue
            if timed is None or timed[0] != player:
                timed = (player, rows[player].timing)
            cell = timed[1].get(kind)
            if cell is None:
                cell = timed[1][kind] = [0, 0.0, 0.0]
            cell[0] += 1
            cell[1] += seconds
            cell[2] += seconds * seconds
            if cell[0] <= EVIDENCE_KEPT and _may_keep(evidence.get((*day, "bot", player, "")), 0.0):
                note = f"{kind} after {seconds:.0f} s"
                keep(day, _evidence("bot", player, "", game_id, step, 0.0, note))

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


class _DayRows(dict):
    """One game's rows of ``players`` (a summary's), by player: made on first use."""

    __slots__ = ("day", "players")

    def __init__(self, players: dict, day: tuple[str, str]) -> None:
        super().__init__()
        self.players, self.day = players, day

    def __missing__(self, player: str) -> PlayerDay:
        row = self[player] = self.players[(*self.day, player)]
        return row


def _may_keep(kept: list[Evidence] | None, weight: float) -> bool:
    """Whether evidence of ``weight`` would be kept beside ``kept`` (a subject's, heaviest
    first once full): the earlier of equals stays, so it must be heavier than the lightest."""
    return kept is None or len(kept) < EVIDENCE_KEPT or kept[-1].weight < weight


@dataclass
class Period:
    """A period's statistics added up: what a review reads. ``players`` and ``pairs`` hold one
    row each for the whole period; ``at_tables[player][table]`` the player's games at each
    table and ``table_pairs[table]`` the pairs seated in its games, counted once a game (the
    seating test's null); ``table_games`` and, per ordered pair, ``feed_base``:
    the pair's discards faced, each weighted by its own table's rate of useful takes in the
    period (the feeding test's null before the two players' own ratios); ``picker_base`` and
    ``feeder_base``: the same per player, over all their pairs as the picker and as the
    feeder. ``evidence`` is None when read from the tables: a review then fetches its flags'
    evidence afterwards.

    ``pairs`` (and ``feed_base``) need hold only the pairs that may be tested: those whose
    sums reach a floor (:data:`replays.fairplay.signals.PAIR_FLOORS`), with each one's
    reverse (whose games together a flag shows), or without the reverses when
    ``together_of`` is given: a review asks it once for the games together of the pairs (in
    name order) its flags show and ``pairs`` lacks (kept in ``together``; a pair it leaves
    out had none). What
    a review reads of all the pairs is in the player rows (``PlayerDay.fed``, ``given``,
    ``strong``, ``strong_drops``), the bases and ``table_pairs``.

    :meth:`Summary.period` adds a summary up in Python (every pair);
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
    picker_base: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    feeder_base: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    evidence: dict[tuple[str, str, str], list[Evidence]] | None = None
    together_of: Callable[[list[tuple[str, str]]], dict[tuple[str, str], int]] | None = None
    together: dict[tuple[str, str], int] = field(default_factory=dict)

    def add_bases(
        self, rows: Iterable[tuple[str, str, int, int]], rates: dict[str, tuple[int, int]]
    ) -> None:
        """``picker_base`` and ``feeder_base`` from ``rows`` of (player, table, discards
        faced as the picker, discards faced as the feeder): each discard weighted by its
        table's rate of useful takes in the period, ``rates[table]`` = (useful takes,
        discards faced), as ``feed_base`` weighs a pair's.
        :func:`replays.fairplay.projection.load_period` weighs its rows the same way as it
        reads them (the same products, added in the same order): a change here is one there."""
        picker_base, feeder_base = self.picker_base, self.feeder_base
        for player, where, faced, fed in rows:
            rate = rates.get(where)
            if rate is not None:
                took, n = rate
                picker_base[player] += faced * took / n
                feeder_base[player] += fed * took / n


def _period(summary: Summary, start: str, end: str, table: str | None) -> Period:
    def within(day: str, where: str) -> bool:
        return start <= day <= end and (table is None or where == table)

    period = Period(start, end, table, evidence=defaultdict(list))
    table_faced: dict[str, int] = defaultdict(int)
    table_useful: dict[str, int] = defaultdict(int)
    at_table: dict[tuple[str, str], tuple[int, int]] = {}
    for (day, where, player), row in summary.players.items():
        if within(day, where):
            period.players[player].add(row)
            period.at_tables[player][where] += row.games
            table_faced[where] += row.faced
            table_useful[where] += row.useful
            faced, fed = at_table.get((player, where), (0, 0))
            at_table[(player, where)] = (faced + row.faced, fed + row.fed)
    rates = {where: (table_useful[where], n) for where, n in table_faced.items() if n}
    period.add_bases(
        ((player, where, faced, fed) for (player, where), (faced, fed) in at_table.items()), rates
    )
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
