"""Many simulated games: deterministic per game, optionally spread over processes.

Game ``i`` of a run with seed ``s`` draws everything from its own generator seeded with
``(s, i)`` and is called ``<table>-<variant>-<s>-<i>`` (``T7-raise-7-000123``), so it is the same game whether it is simulated alone, in a batch of a million,
or by one of several worker processes; ``--jobs`` changes the speed, never the records.

>>> run = Simulation(Floor(seed=1))
>>> run.game(3) == Simulation(Floor(seed=1)).game(3)
True
"""

from __future__ import annotations

import multiprocessing
import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

from domain.simulation.floor import Floor, Table
from replays.simulation.variants import table_at, variant


@dataclass(frozen=True)
class Simulation:
    """A run: the floor it plays on and how often the operator misreports a settlement."""

    floor: Floor
    discrepancy_rate: float = 0.0

    @cached_property
    def _tables(self) -> dict[int, Table]:
        return {n: table_at(self.floor, n) for n in range(1, self.floor.tables + 1)}

    def game_id(self, table: Table, index: int) -> str:
        # The variant is part of the id: runs of different variants with one seed pick the
        # same tables and indexes, so without it their different games would share ids and
        # importing both would turn every second game into a conflict.
        return f"{table.id}-{table.variant}-{self.floor.seed}-{index:06d}"

    def game(self, index: int) -> dict:
        """Game number ``index`` of this run, as a record with its ``reported`` block."""
        rng = random.Random(f"game:{self.floor.seed}:{index}")
        table = self._tables[rng.randrange(1, self.floor.tables + 1)]
        game = variant(table.variant)
        record = game.play(rng, self.floor, table, self.game_id(table, index))
        reported = game.report(record, rng, self.discrepancy_rate)
        if reported is not None:
            record["reported"] = reported
        return record

    def games(
        self, count: int, *, start: int = 0, jobs: int = 1, progress: bool = False
    ) -> Iterator[dict]:
        """Games ``start`` .. ``start + count - 1`` in order, on ``jobs`` processes.

        ``progress`` shows a bar on stderr when it is a terminal.
        """
        games = self._play(range(start, start + count), jobs)
        if progress and sys.stderr.isatty():
            from tqdm import tqdm

            games = tqdm(games, total=count, unit="game", desc="simulating")
        yield from games

    def _play(self, indexes: range, jobs: int) -> Iterator[dict]:
        count = len(indexes)
        if jobs <= 1 or count < 2 * jobs:
            yield from map(self.game, indexes)
            return
        # fork keeps the solver's warm caches and the imports; the games come back in order.
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            yield from pool.imap(self.game, indexes, chunksize=max(1, min(64, count // (8 * jobs))))
