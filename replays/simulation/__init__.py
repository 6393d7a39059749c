"""Simulated play: bots at a floor of tables, producing games for the ledger.

``Simulation(Floor(seed=7)).games(1000)`` yields docs/record-format.md records (deterministic for the
seed); :func:`store_games` stores them through the ledger's import use case, the same one
operators' records go through, and :func:`write_records` writes them as JSON Lines.
``rummy-ledger simulate`` and ``rummy-ledger demo`` are the command-line faces of this.
"""

from domain.simulation.floor import Floor, Table
from replays.simulation.batch import Simulation
from replays.simulation.output import StoreSummary, store_games, write_records
from replays.simulation.tally import Tally
from replays.simulation.variants import VARIANTS, UnknownVariant, check_variants, table_at

__all__ = [
    "VARIANTS",
    "Floor",
    "Simulation",
    "StoreSummary",
    "Table",
    "Tally",
    "UnknownVariant",
    "check_variants",
    "store_games",
    "table_at",
    "write_records",
]
