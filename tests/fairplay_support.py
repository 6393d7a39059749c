"""A small stored month with cheats, its fair-play statistics counted: for the page tests."""

from __future__ import annotations

from domain.simulation.cheats import Cheats
from replays.simulation import Floor, Simulation

FROM, TO = "2025-03-01", "2025-03-31"


def cheating_records():
    """Points games at high strength: two feeding pairs and two bots among 30 players."""
    cheats = Cheats.parse("pair:0.14,bot:0.07", strength=1.0)
    floor = Floor(seed=31, players=30, tables=4, variants=("points",), cheats=cheats)
    return list(Simulation(floor).games(120, jobs=2))


def fairplay_store(url: str) -> None:
    """Store the games at ``url`` (migrated first) and count them for the review."""
    from replays.fairplay import projection
    from replays.simulation import store_games
    from replays.store.application import Ledger
    from replays.store.schema import migrate

    migrate(url)
    store_games(cheating_records(), url)
    projection.catch_up(Ledger(url, env={"CREATE_TABLE": "no"}), url)
