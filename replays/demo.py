"""The demo a new user meets with ``make run``: a migrated database full of simulated games.

:func:`prepare_demo` is idempotent. On a fresh clone it builds the SQLite database (the
project's default URL), migrates it, and stores a few hundred simulated games across the
variants — some with an operator's misreported settlement, so the audit pages have
something to find. A second run finds the games and only tops up what an interrupted first
run left out (the games are deterministic, so those already stored are skipped).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import sqlalchemy as sa

from replays.settings import database_url

DEMO_GAMES = 300
DEMO_SEED = 2025
DEMO_MONTH = "2025-03"
# A handful of regulars make player pages worth reading; a few tables keep the floor busy.
DEMO_PLAYERS = 40
DEMO_TABLES = 12
DEMO_DISCREPANCY_RATE = 0.04


@dataclass
class DemoSetup:
    url: str
    games_before: int
    games_after: int
    stored: list[str] = field(default_factory=list)  # summary lines of this run's storing

    @property
    def reused(self) -> bool:
        return self.games_before >= self.games_after


@dataclass(frozen=True)
class DemoAccount:
    role: str
    username: str
    password: str


def stored_games(url: str | None = None) -> int:
    """How many games the ledger holds (every game's first event), 0 for a new database."""
    from replays.db import engine_for
    from replays.schema import EVENTS_TABLE

    url = database_url(url)
    engine = engine_for(url)
    if not sa.inspect(engine).has_table(EVENTS_TABLE):
        return 0
    query = sa.text(f"SELECT count(*) FROM {EVENTS_TABLE} WHERE originator_version = 1")
    with engine.connect() as connection:
        return connection.execute(query).scalar_one()


def demo_variants() -> tuple[str, ...]:
    """Every variant the simulator can play (Red 3 Rummy once its bots are registered)."""
    from replays.simulation import VARIANTS

    return tuple(VARIANTS)


def prepare_demo(
    url: str | None = None,
    *,
    games: int = DEMO_GAMES,
    seed: int = DEMO_SEED,
    echo: Callable[[str], None] = print,
) -> DemoSetup:
    """Migrate the database at ``url`` and make sure it holds at least ``games`` games."""
    from replays.schema import migrate
    from replays.simulation import Floor, Simulation, store_games

    url = database_url(url)
    migrate(url)
    before = stored_games(url)
    setup = DemoSetup(url=url, games_before=before, games_after=before)
    if before >= games:
        echo(f"Reusing the demo database: {before} games already stored.")
        return setup
    echo(f"Simulating {games} demo games into the ledger (seed {seed})...")
    floor = Floor(
        seed=seed,
        variants=demo_variants(),
        tables=DEMO_TABLES,
        players=DEMO_PLAYERS,
        month=DEMO_MONTH,
    )
    run = Simulation(floor, discrepancy_rate=DEMO_DISCREPANCY_RATE)
    summary = store_games(run.games(games, progress=True), url=url)
    setup.stored = summary.lines()
    setup.games_after = stored_games(url)
    return setup


def checkpoint_demo(setup: DemoSetup) -> str | None:
    """Sign a checkpoint over the demo's events, so its pages can say "verified".

    Makes a signing key in ``RUMMY_LEDGER_KEY_DIR`` (default ``./keys``) the first time,
    and signs when there is no checkpoint yet or this run stored new games. Returns a line
    for the console, or None when nothing was signed.
    """
    from replays import integrity, signing

    if not (signing.key_dir() / signing.PRIVATE_KEY_FILE).exists():
        signing.init_keys()
    if integrity.latest_checkpoint(setup.url) is not None and setup.reused:
        return None
    checkpoint = integrity.make_checkpoint(setup.url)
    return (
        f"Signed checkpoint over {checkpoint.size} events (key {checkpoint.key_id}, "
        f"in {signing.key_dir()}/): every game page can show its integrity verdict."
    )


def create_demo_accounts(url: str | None = None) -> list[DemoAccount]:
    """One demo login per role (``demo-player``, ``demo-auditor``, ...), printed at start.

    Idempotent: an existing demo account is left as it is. The player account is linked to
    the first seat of the first stored game, so it has games to look at. Returns an empty
    list (and the demo prints nothing) while the site has no accounts yet.

    The passwords are fixed and printed because the demo serves on the loopback address
    only; a real deployment creates its accounts with ``rummy-ledger users add``.
    """
    import importlib.util

    if importlib.util.find_spec("replays.accounts") is None:
        return []
    from replays import accounts

    url = database_url(url)
    made = []
    for role in accounts.ROLES:
        username = f"demo-{role.replace('_', '-')}"
        password = f"{role.replace('_', '-')}-{DEMO_SEED}"
        if accounts.find_user(username, url=url) is None:
            player = _demo_player(url) if role == accounts.PLAYER else None
            if role == accounts.PLAYER and player is None:
                continue  # no games yet: no player to link the account to
            accounts.add_user(username, role, password, player=player, url=url)
        made.append(DemoAccount(role=role, username=username, password=password))
    return made


def _demo_player(url: str) -> str | None:
    from replays.application import Ledger

    ledger = Ledger(url)
    for game_id in ledger.iter_game_ids(batch=1):
        return ledger.get_game(game_id).config.players[0]
    return None
