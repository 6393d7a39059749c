"""A period's fair-play review: every signal tested, false discoveries controlled, evidence.

Each signal is a statistic whose null comes from the same period's own population:

- ``feeding`` (ordered pair feeder → picker): how many of the feeder's discards the picker took
  to their gain, against each table's own rate times the picker's ratio to it on everyone
  else's discards and the feeder's ratio to it with everyone else (each shrunk toward 1);
  exact binomial tail.
- ``seating`` (pair): games at one table, against what each one's games at each table explain
  (``sum over tables of games_a * games_b``, scaled so that every pair's expectations at a
  table add up to the pairs its games seated); Poisson tail.
- ``folding`` (ordered pair A → B): the deals in which B was dealt a strong hand and A
  dropped (first or middle drop) with B still in, against the period's population rate of
  such drops given a strong other hand, times A's own ratio to it with everyone else (shrunk
  toward 1, as in feeding); exact binomial tail.
- ``hidden cards`` (player): ``sum (2 stock - 1) surprise / sqrt(sum variance)`` (see
  :mod:`.facts`): about standard normal for any honest player, whatever their skill; the
  population's own centre and spread (median, MAD, never narrower than the theory's) is
  used, so a bias common to everyone flags nobody.
- ``chip dumping`` (ordered pair dumper → beneficiary, Pool/Deals): how strong the dumper's
  hands were when they dropped or showed wrongly with the beneficiary still in, as ranks in
  the population's distribution of exit hands (a rank-sum z), population-centred the same way.
- ``bot-like timing`` (player): the spread of the player's move intervals against the
  population's, kind by kind (``log`` of the variance ratio over its sampling error), centred
  and scaled by the population's own median and MAD: a person's times scatter, a program's
  do not. The coefficient of variation is reported beside it.
- ``solver agreement`` (player): how often the player's discard left no more than the
  solver's choice, against the population's rate in each class of discard (by how many
  links the solver's choice had with the cards kept), weighted by 1 / rate (the score test
  for "follows the solver on a share of discards"), as an estimated share beyond the
  population's habit; its null is a normal fitted to the population's upper quarter (the
  strongest honest players), widened by each player's sampling variance.

A pair is tested only once its count reaches a floor (three games together, two takes, two
drops): its p-value is the tail given that floor, ``P(X >= observed | X >= floor)``. Of a
month's hundreds of thousands of pairs, the few thousand that reach the floor by chance have
plain tails far below uniform, and Benjamini–Hochberg counts only the pairs tested.

Every p-value goes into one Benjamini–Hochberg procedure across all players and pairs tested.
"""

from __future__ import annotations

import math
import operator
from collections import defaultdict
from dataclasses import dataclass, field

from replays.fairplay.summary import EXIT_BANDS, Evidence, PairDay, Period, PlayerDay, Summary

SIGNALS = {
    "feeding": "colluding pair: takes the partner's discards",
    "seating": "colluding pair: seated together",
    "folding": "colluding pair: drops when the partner is strong",
    "hidden": "hidden-card knowledge",
    "dumping": "chip dumping",
    "timing": "bot-like timing",
    "solver": "bot-like play: agrees with the solver",
}
MIN_FACED = 5  # feeding: discards faced from one feeder
MIN_USEFUL = 2  # feeding: of them, taken to the picker's gain
MIN_TOGETHER = 3  # seating: games at one table
MIN_STRONG = 3  # folding: deals with the partner dealt a strong hand
MIN_DROPS = 2  # folding: of them, dropped with the partner in
MIN_CHOICES = 20  # hidden cards: choices between a useful open card and the stock
MIN_EXITS = 3  # dumping: exits with the beneficiary still in
MIN_INTERVALS = 20  # timing: move intervals (degrees of freedom)
MIN_DISCARDS = 50  # solver agreement: discards weighed
SHRINK = 10.0  # feeding: a player's ratio to their tables' rate borrows this many takes at 1
# The floors a pair's period sums must reach for a pair signal to test it: any one of these
# conjunctions (feeding, seating, folding, dumping). ``exits`` is the sum of the exit bands.
# A period's sums are no more than its calendar months', so a pair no floor of a month holds
# is never tested in a period inside it: the projection keeps the rows of each month's pairs
# that reach one (``fairplay_noted_pair_days``) and a period inside the month reads those.
PAIR_FLOORS = (
    (("faced", MIN_FACED), ("useful", MIN_USEFUL)),
    (("together", MIN_TOGETHER),),
    (("strong", MIN_STRONG), ("strong_drops", MIN_DROPS)),
    (("exits", MIN_EXITS),),
)


def reaches_floor(row: PairDay) -> bool:
    """Whether any pair signal tests ``row`` (a pair's sums): :data:`PAIR_FLOORS`.

    >>> reaches_floor(PairDay(together=3)), reaches_floor(PairDay(faced=9, useful=1))
    (True, False)
    """
    return any(
        all(
            (sum(row.exits) if name == "exits" else getattr(row, name)) >= floor
            for name, floor in floors
        )
        for floors in PAIR_FLOORS
    )


@dataclass
class Flag:
    signal: str
    players: tuple[str, ...]
    observed: float
    expected: float
    statistic: str
    p: float
    games: int
    q: float = 1.0
    evidence: list[Evidence] = field(default_factory=list)

    @property
    def key(self) -> str:
        """A stable name for this flag in a period: signal and players."""
        return f"{self.signal}:{'+'.join(self.players)}"

    @property
    def label(self) -> str:
        return SIGNALS[self.signal]

    def to_dict(self) -> dict:
        return {
            "key": self.key,
            "signal": self.signal,
            "label": self.label,
            "players": list(self.players),
            "observed": round(self.observed, 3),
            "expected": round(self.expected, 3),
            "statistic": self.statistic,
            "p": self.p,
            "q": self.q,
            "games": self.games,
            "evidence": [
                {
                    "game_id": e.game_id,
                    "move": e.step,
                    "note": e.note,
                    "url": replay_url(e.game_id, e.step),
                }
                for e in self.evidence
            ],
        }


class Tested(tuple):
    """One player or pair tested, ``Tested((p, make, facts))``: its p-value, and how to make
    its :class:`Flag` should Benjamini–Hochberg flag it (``make(*facts, p)``). A month tests
    thousands; the few hundred flagged need a note (formatted text, the costliest part), so
    the note waits until then. A tuple: made without a call to Python code, half the time
    of an object with its own ``__init__`` (a custom period's first look makes 16,000)."""

    __slots__ = ()

    p = property(operator.itemgetter(0), doc="The p-value.")

    def flag(self) -> Flag:
        p, make, facts = self
        return make(*facts, p)


EVIDENCE_SOURCE = {
    "feeding": "feed",
    "seating": "seat",
    "folding": "fold",
    "hidden": "peek",
    "dumping": "dump",
    "timing": "bot",
    "solver": "solver",
}


def evidence_subject(flag: Flag) -> tuple[str, str, str]:
    """Which kept evidence rows back ``flag``: (evidence signal, first, second)."""
    second = flag.players[1] if len(flag.players) > 1 else ""
    return EVIDENCE_SOURCE[flag.signal], flag.players[0], second


BEST_EVIDENCE = 5  # moves shown for a flag


def best_evidence(rows) -> list[Evidence]:
    return sorted(rows, key=lambda e: (-e.weight, e.game_id, e.step))[:BEST_EVIDENCE]


def replay_url(game_id: str, step: int) -> str:
    """The staff replay at the move (docs: web/views/replays.py's permalink)."""
    return f"/games/{game_id}/replay?move={step}"


@dataclass
class Review:
    start: str
    end: str
    table: str | None
    fdr: float
    tested: int
    games: int
    players: int
    flags: list[Flag]

    def flagged_players(self) -> set[str]:
        return {p for flag in self.flags for p in flag.players}

    def to_dict(self) -> dict:
        return {
            "from": self.start,
            "to": self.end,
            "table": self.table,
            "fdr": self.fdr,
            "games": self.games,
            "players": self.players,
            "tested": self.tested,
            "flags": [flag.to_dict() for flag in self.flags],
        }


# -- distributions ---------------------------------------------------------------------------
_SQRT2 = math.sqrt(2)  # the same float ``math.sqrt(2)`` gives, not asked a test at a time


def normal_sf(z: float) -> float:
    return 0.5 * math.erfc(z / _SQRT2)


# ``math.lgamma(i + 1)`` (the log of i!) for the counts a period's pairs reach: the binomial
# tails below read their terms' log factorials here, the same floats, not asking lgamma twice
# a term for each of thousands of pairs. A fixed table, never grown (threads share it).
_LOG_FACTORIALS = tuple(math.lgamma(i + 1) for i in range(512))


def _log_factorials(n: int) -> tuple[float, ...]:
    """``math.lgamma(i + 1)`` for every ``i <= n``, by index."""
    if n < len(_LOG_FACTORIALS):
        return _LOG_FACTORIALS
    return tuple(math.lgamma(i + 1) for i in range(n + 1))


def binomial_sf(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p).

    >>> round(binomial_sf(3, 3, 0.5), 3), binomial_sf(0, 5, 0.2)
    (0.125, 1.0)
    """
    if k <= 0:
        return 1.0
    if p <= 0:
        return 0.0
    if p >= 1:
        return 1.0
    factorials = _log_factorials(n)
    log_p, log_q, log_all = math.log(p), math.log1p(-p), factorials[n]
    total = 0.0
    for i in range(k, n + 1):
        total += math.exp(log_all - factorials[i] - factorials[n - i] + i * log_p + (n - i) * log_q)
    return total if total < 1.0 else 1.0


def binomial_sf_given_floor(k: int, floor: int, n: int, p: float) -> float:
    """``given_floor(binomial_sf(k, n, p), binomial_sf(floor, n, p))`` for ``k >= floor > 0``,
    the same floats, each term of the two tails computed once (the floor's holds the other's).

    >>> binomial_sf_given_floor(4, 2, 9, 0.3) == given_floor(
    ...     binomial_sf(4, 9, 0.3), binomial_sf(2, 9, 0.3)
    ... )
    True
    """
    if p <= 0 or p >= 1:
        return given_floor(binomial_sf(k, n, p), binomial_sf(floor, n, p))
    factorials = _log_factorials(n)
    log_p, log_q, log_all = math.log(p), math.log1p(-p), factorials[n]
    exp = math.exp
    tail = floor_tail = 0.0
    for i in range(floor, n + 1):
        term = exp(log_all - factorials[i] - factorials[n - i] + i * log_p + (n - i) * log_q)
        floor_tail += term
        if i >= k:
            tail += term
    # ``min(1.0, x)`` without the call (thousands of pairs): the same float.
    return given_floor(tail if tail < 1.0 else 1.0, floor_tail if floor_tail < 1.0 else 1.0)


def poisson_sf(k: int, mean: float) -> float:
    """P(X >= k) for X ~ Poisson(mean)."""
    if k <= 0:
        return 1.0
    if mean <= 0:
        return 0.0
    total, i = 0.0, k
    term = math.exp(k * math.log(mean) - mean - math.lgamma(k + 1))
    while term > 1e-300 and i < k + 10_000:
        total += term
        i += 1
        term *= mean / i
        if term < total * 1e-15:
            break
    return min(1.0, total)


def given_floor(tail: float, floor_tail: float) -> float:
    """The p-value of a count tested only once it reached a floor: ``P(X >= k | X >= floor)``
    from ``tail`` = P(X >= k) and ``floor_tail`` = P(X >= floor). Selecting the pairs whose
    count is already high and then reading their plain tails would take the selection itself
    for evidence (see the module's docstring).

    >>> given_floor(poisson_sf(3, 0.2), poisson_sf(3, 0.2)), round(given_floor(0.001, 0.01), 6)
    (1.0, 0.1)
    """
    if floor_tail <= 0:
        return tail
    ratio = tail / floor_tail
    return ratio if ratio < 1.0 else 1.0


def empirical_null(scores: list[float], floor: float | None = 1.0) -> tuple[float, float]:
    """Centre and spread of the bulk of ``scores`` (median, 1.4826 MAD): Efron's empirical
    null. ``floor`` keeps the spread no narrower than a theory's (None: no floor)."""
    if len(scores) < 10:
        return 0.0, 1.0 if floor is None else max(1.0, floor)
    ordered = sorted(scores)
    middle = ordered[len(ordered) // 2]
    spread = 1.4826 * sorted([abs(s - middle) for s in ordered])[len(ordered) // 2]
    if floor is not None:
        spread = max(spread, floor)
    return middle, spread or 1.0


def benjamini_hochberg(p_values: list[float]) -> list[float]:
    """Adjusted q-values, in the order given.

    >>> [round(q, 3) for q in benjamini_hochberg([0.01, 0.04, 0.03, 0.5])]
    [0.04, 0.053, 0.053, 0.5]
    """
    m = len(p_values)
    order = sorted(range(m), key=p_values.__getitem__)
    q = [1.0] * m
    running = 1.0
    # ``running = min(running, ...)`` without the call (a month tests thousands): the same
    # floats, the earlier kept on a tie as ``min`` keeps it.
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        adjusted = p_values[i] * m / rank
        if adjusted < running:
            running = adjusted
        q[i] = running
    return q


# -- the review --------------------------------------------------------------------------------
def review(
    summary: Summary | Period,
    start: str,
    end: str,
    *,
    table: str | None = None,
    fdr: float = 0.05,
    players_tested: tuple[list[Tested], list[Tested], list[Tested]] | None = None,
) -> Review:
    """The period ``start``..``end`` (days, inclusive) of ``summary``, one table or all.
    ``summary`` is a :class:`Summary` (added up here) or a :class:`Period` already added up
    (``projection.load_period``: the sums done in the database). ``players_tested``: the
    period's :func:`player_tests`, when already worked out."""
    period = summary if isinstance(summary, Period) else summary.period(start, end, table)
    players, pairs = period.players, period.pairs
    hidden, timing, solver = players_tested or player_tests(players)
    fed, seated, folded, exited = _candidates(pairs)
    tests: list[Tested] = []
    tests += _feeding(period, fed)
    tests += _seating(seated, period.at_tables, period.table_pairs)
    tests += _folding(period, folded)
    tests += hidden
    tests += _dumping(players, exited, period)
    tests += timing
    tests += solver
    flagged = [
        (test, q)
        for test, q in zip(tests, benjamini_hochberg([t.p for t in tests]), strict=True)
        if q <= fdr
    ]
    if period.together_of is not None:
        _read_together(period, [test for test, _ in flagged])
    flags = []
    for test, q in flagged:
        flag = test.flag()
        flag.q = q
        flags.append(flag)
    flags.sort(key=lambda t: (t.p, t.key))
    if period.evidence is not None:
        for flag in flags:
            flag.evidence = best_evidence(period.evidence.get(evidence_subject(flag), []))
    return Review(
        start=start,
        end=end,
        table=table,
        fdr=fdr,
        tested=len(tests),
        games=sum(period.table_games.values()),
        players=len(players),
        flags=flags,
    )


def player_tests(players: dict[str, PlayerDay]) -> tuple[list[Tested], ...]:
    """The one-player signals' tests (hidden cards, bot-like timing, solver agreement): they
    read the players' own sums only (not those of their pairs), so a review from the
    database works them out while the database still sums the pairs."""
    return _hidden(players), _timing(players), _solver(players)


def _candidates(pairs: dict[tuple[str, str], PairDay]) -> tuple[list, list, list, list]:
    """The pairs each pair signal tests, each list in ``pairs``' order (so the tests, and
    Benjamini–Hochberg's ties, keep theirs): feeding's, seating's (each pair once, in name
    order), folding's, each as ``(pair, row)``, and dumping's as ``(pair, row, exits in
    all)``. One pass over a period's tens of thousands of pairs for all four signals, not one
    each."""
    fed, seated, folded, exited = [], [], [], []
    for item in pairs.items():
        pair, row = item
        if row.faced >= MIN_FACED and row.useful >= MIN_USEFUL:
            fed.append(item)
        if row.together >= MIN_TOGETHER and pair[0] <= pair[1]:
            seated.append(item)
        if row.strong >= MIN_STRONG and row.strong_drops >= MIN_DROPS:
            folded.append(item)
        n = sum(row.exits)
        if n >= MIN_EXITS:
            exited.append((pair, row, n))
    return fed, seated, folded, exited


def _feeding(period: Period, fed: list) -> list[Tested]:
    # Tables differ (stakes, seats, packs, deals): each discard faced is expected to be
    # taken at its own table's rate (``period.feed_base``), and a player's habits are their
    # ratio to that: over all their pairs, as the period's player rows add them up.
    players, base = period.players, period.feed_base
    picker_base, feeder_base = period.picker_base, period.feeder_base
    tests = []
    for (feeder, picker), row in fed:
        # Each side's ratio to its tables' rates without the other, shrunk toward 1; their
        # effects multiply (the picker's skill, the feeder's careless or generous discards).
        own = base.get((feeder, picker), 0.0)
        takes = (players[picker].useful - row.useful + SHRINK) / (
            picker_base[picker] - own + SHRINK
        )
        gives = (players[feeder].given - row.useful + SHRINK) / (feeder_base[feeder] - own + SHRINK)
        rate = own * takes * gives / row.faced
        rate = rate if rate < 0.95 else 0.95  # min(0.95, rate), without the call
        p = binomial_sf_given_floor(row.useful, MIN_USEFUL, row.faced, rate)
        tests.append(Tested((p, _feeding_flag, (feeder, picker, row, rate, period))))
    return tests


def _feeding_flag(feeder: str, picker: str, row: PairDay, rate: float, period, p: float) -> Flag:
    return Flag(
        "feeding",
        (feeder, picker),
        row.useful,
        row.faced * rate,
        f"{row.useful} of {row.faced} discards taken to the picker's gain "
        f"({row.gain} points of hand score in all); expected {row.faced * rate:.1f}",
        p,
        _together(period, feeder, picker),
    )


def _read_together(period: Period, flagged: list[Tested]) -> None:
    """The pairs whose games together ``flagged``'s flags show (in name order) that
    ``period.pairs`` lacks, asked of ``period.together_of`` at once (``period.together``):
    a period read without them (they reach no floor) reads a few for its flags, not
    thousands for every pair that may be flagged."""
    pairs, known = period.pairs, period.together
    wanted = set()
    for _, make, facts in flagged:
        if make in _SHOWS_TOGETHER:
            first, second = facts[0], facts[1]
            pair = (first, second) if first < second else (second, first)
            if pair not in pairs and pair not in known:
                wanted.add(pair)
    if wanted and period.together_of is not None:
        known.update(period.together_of(sorted(wanted)))


def _together(period: Period, first: str, second: str) -> int:
    """The games two players had at one table (kept on the pair in name order)."""
    pair = (first, second) if first < second else (second, first)
    row = period.pairs.get(pair)
    return period.together.get(pair, 0) if row is None else row.together


def _folding(period: Period, folded: list) -> list[Tested]:
    # The population's rate of drops with another player strong in the deal, and each
    # player's ratio to it over everyone else (a cautious player drops more, with anyone).
    players = period.players
    strong = sum(row.strong for row in players.values())
    drops = sum(row.strong_drops for row in players.values())
    if not strong:
        return []
    rate = drops / strong
    tests = []
    for (first, second), row in folded:
        ratio = (players[first].strong_drops - row.strong_drops + SHRINK) / (
            (players[first].strong - row.strong) * rate + SHRINK
        )
        expected = rate * ratio
        expected = expected if expected < 0.95 else 0.95  # min(0.95, ...), without the call
        p = binomial_sf_given_floor(row.strong_drops, MIN_DROPS, row.strong, expected)
        tests.append(Tested((p, _folding_flag, (first, second, row, expected, period))))
    return tests


def _folding_flag(first: str, second: str, row: PairDay, expected: float, period, p: float):
    return Flag(
        "folding",
        (first, second),
        row.strong_drops,
        row.strong * expected,
        f"dropped in {row.strong_drops} of {row.strong} deals in which {second} was "
        f"dealt a strong hand; expected {row.strong * expected:.1f}",
        p,
        _together(period, first, second),
    )


def _seating(seated: list, at_tables, table_pairs) -> list[Tested]:
    # Under seating by chance, two players share a game at a table in proportion to their
    # games there. A seat one of them fills is not the other's (a two-seat game holds one
    # pair, not two), so each table's products are scaled to add up to the pairs its games
    # actually seated: the period's own count, whatever the tables' sizes and occupancy.
    totals: dict[str, int] = defaultdict(int)
    squares: dict[str, int] = defaultdict(int)
    for tables in at_tables.values():
        for where, games in tables.items():
            totals[where] += games
            squares[where] += games * games
    scale = {
        where: 2 * seated / (totals[where] ** 2 - squares[where])
        for where, seated in table_pairs.items()
        if totals[where] ** 2 > squares[where]
    }
    # Every table a player sat at, with 0.0 where none was seated: read by subscript in the
    # loop below, not ``scale.get(where, 0.0)`` (tens of thousands of tables shared).
    scale = {where: scale.get(where, 0.0) for where in totals}
    tests = []
    for (first, second), row in seated:
        # Added up in the first one's order of tables, the tables they do not share (a term
        # of exactly 0.0) left out: the same float as the sum over all of them.
        theirs = at_tables[second]
        expected = 0.0
        for where, games in at_tables[first].items():
            other = theirs.get(where)
            if other:
                expected += games * other * scale[where]
        floor_tail = poisson_sf(MIN_TOGETHER, expected)
        # Most pairs tested are at the floor: their tail is the floor's, not worked out again.
        tail = floor_tail if row.together == MIN_TOGETHER else poisson_sf(row.together, expected)
        p = given_floor(tail, floor_tail)
        tests.append(Tested((p, _seating_flag, (first, second, row.together, expected))))
    return tests


def _seating_flag(first: str, second: str, together: int, expected: float, p: float) -> Flag:
    return Flag(
        "seating",
        (first, second),
        together,
        expected,
        f"{together} games at one table; their tables explain {expected:.1f}",
        p,
        together,
    )


def _hidden(players) -> list[Tested]:
    scored = {
        player: row.choice_sum / math.sqrt(row.choice_var)
        for player, row in players.items()
        if row.choices >= MIN_CHOICES and row.choice_var > 0
    }
    centre, spread = empirical_null(list(scored.values()))
    tests = []
    for player, z in scored.items():
        p = normal_sf((z - centre) / spread)
        tests.append(Tested((p, _hidden_flag, (player, players[player], z, centre, spread))))
    return tests


def _hidden_flag(player: str, row, z: float, centre: float, spread: float, p: float) -> Flag:
    return Flag(
        "hidden",
        (player,),
        z,
        centre,
        f"open/stock choices agree with the hidden stock card: z {z:.1f} over "
        f"{row.choices} choices (population centre {centre:.2f}, spread {spread:.2f})",
        p,
        row.games,
    )


def _dumping(players, exited: list, period: Period) -> list[Tested]:
    bands = [0] * (len(EXIT_BANDS) + 1)
    for row in players.values():
        bands = [a + b for a, b in zip(bands, row.exits, strict=True)]
    total = sum(bands)
    if not total:
        return []
    # Each band's mid-rank in the population (0: the strongest hands): uniform under the null.
    ranks, below = [], 0
    for count in bands:
        ranks.append((below + count / 2) / total)
        below += count
    mean = sum(c * r for c, r in zip(bands, ranks, strict=True)) / total
    variance = sum(c * (r - mean) ** 2 for c, r in zip(bands, ranks, strict=True)) / total
    if variance <= 0:
        return []
    scored = {}
    # Each band's lean toward strong hands (``mean - rank``), once: thousands of pairs weigh by it.
    lean = [mean - r for r in ranks]
    # A z depends on the exit bands alone, and the pairs share a few hundred patterns of
    # them: each pattern's z worked out once (the same float for every pair that has it).
    z_of: dict[tuple[int, ...], float] = {}
    for pair, row, n in exited:
        exits = tuple(row.exits)
        z = z_of.get(exits)
        if z is None:
            z = z_of[exits] = sum(map(operator.mul, exits, lean)) / math.sqrt(n * variance)
        scored[pair] = (z, n)
    centre, spread = empirical_null([z for z, _ in scored.values()])
    tests = []
    for (dumper, beneficiary), (z, n) in scored.items():
        p = normal_sf((z - centre) / spread)
        tests.append(Tested((p, _dumping_flag, (dumper, beneficiary, z, n, centre, period))))
    return tests


def _dumping_flag(dumper: str, beneficiary: str, z: float, n: int, centre: float, period, p):
    strong = sum(period.pairs[(dumper, beneficiary)].exits[:3])
    return Flag(
        "dumping",
        (dumper, beneficiary),
        z,
        centre,
        f"{n} drops or wrong shows with {beneficiary} still in, {strong} of them with a "
        f"hand scoring {EXIT_BANDS[2]} or less: strength z {z:.1f}",
        p,
        _together(period, dumper, beneficiary),
    )


# The flags that show their pair's games together (:func:`_together`), by their makers.
_SHOWS_TOGETHER = (_feeding_flag, _folding_flag, _dumping_flag)


def _timing(players) -> list[Tested]:
    spread_of: dict[str, float] = {}
    pooled: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for row in players.values():
        for kind, (n, s, ss) in row.timing.items():
            if n >= 2:
                pooled[kind][0] += ss - s * s / n
                pooled[kind][1] += n - 1
    for kind, (squares, df) in pooled.items():
        if df > 0 and squares > 0:
            spread_of[kind] = squares / df
    scored = {}
    for player, row in players.items():
        ratio = df = 0.0
        n_all = s_all = ss_all = 0.0
        for kind, (n, s, ss) in row.timing.items():
            if n >= 2 and kind in spread_of:
                ratio += max(ss - s * s / n, 0.0) / spread_of[kind]
                df += n - 1
            n_all, s_all, ss_all = n_all + n, s_all + s, ss_all + ss
        if df < MIN_INTERVALS:
            continue
        log_ratio = math.log(max(ratio / df, 1e-6))
        mean = s_all / n_all
        cv = math.sqrt(max(ss_all / n_all - mean * mean, 0.0)) / mean if mean > 0 else 0.0
        scored[player] = (log_ratio / math.sqrt(2 / df), cv, int(n_all))
    centre, spread = empirical_null([z for z, _, _ in scored.values()])
    tests = []
    for player, (z, cv, n) in scored.items():
        p = normal_sf(-(z - centre) / spread)
        facts = (player, z, cv, n, centre, spread, players[player].games)
        tests.append(Tested((p, _timing_flag, facts)))
    return tests


def _timing_flag(player, z, cv, n, centre, spread, games, p) -> Flag:
    return Flag(
        "timing",
        (player,),
        z,
        centre,
        f"move times: spread z {z:.1f} against the population "
        f"(centre {centre:.1f}, spread {spread:.1f}); coefficient of variation {cv:.2f} "
        f"over {n} moves",
        p,
        games,
    )


def _solver(players) -> list[Tested]:
    # The population's rate of agreeing with the solver in each class of discard (by how
    # much the solver's choice breaks up: a loose card anyone would throw, or a card linked
    # to one, two, three others). Under "follows the solver on a share S of discards, plays
    # as the population on the rest", a discard of class k agrees with probability
    # rate_k + S (1 - rate_k); the score test weighs each class's excess by 1 / rate_k
    # (the classes where people keep their links weigh most), and excess / information
    # estimates S, with sampling variance 1 / information.
    classes = len(next(iter(players.values())).discards) if players else 0
    weighed, agreed = [0] * classes, [0] * classes
    for row in players.values():
        weighed = [a + b for a, b in zip(weighed, row.discards, strict=True)]
        agreed = [a + b for a, b in zip(agreed, row.agreed, strict=True)]
    rates = [a / n if n else 0.0 for a, n in zip(agreed, weighed, strict=True)]
    shares: dict[str, tuple[float, float]] = {}
    for player, row in players.items():
        if sum(row.discards) < MIN_DISCARDS:
            continue
        excess = information = 0.0
        for n, a, rate in zip(row.discards, row.agreed, rates, strict=True):
            if n and 0 < rate < 1:
                excess += (a - n * rate) / rate
                information += n * (1 - rate) / rate
        if information > 0:
            shares[player] = (excess / information, 1 / information)
    if len(shares) < 10:
        return []
    # Players differ in skill, not only by chance: the null is the population's own spread
    # of shares (a random effect) plus each player's sampling variance. Only agreement above
    # the population is flagged, so the null is fitted to the upper quarter: a normal whose
    # 75th and 90th percentiles are the population's. Careless beginners (a cluster far
    # below) and the few cheats above the 90th percentile leave that fit alone; a median
    # would fall between the beginners and the rest, wherever their numbers put it.
    ordered = sorted(share for share, _ in shares.values())
    upper, top = _quantile(ordered, 0.75), _quantile(ordered, 0.90)
    reach = (top - upper) / (_Z90 - _Z75)
    centre = upper - _Z75 * reach
    noise = sorted(variance for _, variance in shares.values())[len(shares) // 2]
    skill = max(0.0, reach * reach - noise)
    tests = []
    for player, (share, variance) in shares.items():
        z = (share - centre) / math.sqrt(skill + variance)
        facts = (player, players[player], rates, share, centre, reach, z)
        tests.append(Tested((normal_sf(z), _solver_flag, facts)))
    return tests


def _solver_flag(player, row, rates, share, centre, reach, z, p) -> Flag:
    n, a = sum(row.discards), sum(row.agreed)
    hard_n, hard_a = sum(row.discards[1:]), sum(row.agreed[1:])
    expected = sum(k * rate for k, rate in zip(row.discards, rates, strict=True))
    return Flag(
        "solver",
        (player,),
        a,
        expected,
        f"{a} of {n} discards as the solver would ({expected:.0f} at the population's "
        f"rates); {hard_a} of the {hard_n} where the solver breaks up linked cards: "
        f"{share:.0%} of discards given to the solver beyond the population's habit "
        f"(population centre {centre:.0%}, spread {reach:.0%}), z {z:.1f}",
        p,
        row.games,
    )


_Z75, _Z90 = 0.6745, 1.2816  # standard normal quantiles


def _quantile(ordered: list[float], share: float) -> float:
    """The ``share`` quantile of ``ordered`` (sorted), read between neighbours."""
    place = share * (len(ordered) - 1)
    low = int(place)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (place - low) * (ordered[high] - ordered[low])
