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

from replays.store.settings import database_url

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
    from replays.store.db import engine_for
    from replays.store.schema import EVENTS_TABLE

    url = database_url(url)
    engine = engine_for(url)
    if not sa.inspect(engine).has_table(EVENTS_TABLE):
        return 0
    # Dispute cases are aggregates in the same store: only games count here.
    query = sa.text(
        f"SELECT count(*) FROM {EVENTS_TABLE} "
        "WHERE originator_version = 1 AND topic NOT LIKE 'rummy_ledger:DisputeCase%'"
    )
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
    from replays.simulation import Floor, Simulation, store_games
    from replays.store.schema import migrate

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
    from replays.integrity import evidence as integrity
    from replays.integrity import signing

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

    if importlib.util.find_spec("replays.access.accounts") is None:
        return []
    from replays.access import accounts

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
    from replays.store.application import Ledger

    ledger = Ledger(url)
    for game_id in ledger.iter_game_ids(batch=1):
        return ledger.get_game(game_id).config.players[0]
    return None


# -- dispute cases ---------------------------------------------------------------------------

# The demo's dispute officer: the account create_demo_accounts makes for the role, so each
# note and decision names someone who can sign in.
DEMO_OFFICER = "demo-dispute-officer"


@dataclass(frozen=True)
class _DemoActor:
    """Who takes a demo case's steps: a player of the game, or the demo's officer."""

    role: str
    player_id: str | None = None

    @property
    def actor(self) -> str:
        return self.player_id or DEMO_OFFICER


def seed_dispute_cases(url: str | None = None) -> list[str]:
    """A few dispute cases on the demo's games, so the dispute pages are not empty: one open
    with a note, one rejected, one adjusted with an amount, and one on a wrong show.

    Idempotent: nothing is added once the ledger holds any case. Returns the case ids made.
    """
    from replays.disputes.cases import OFFICER, PLAYER, Disputes
    from replays.disputes.projection import CASES
    from replays.readmodels.models import GameRow, PlayerResultRow
    from replays.store.application import Ledger

    url = database_url(url)
    from replays.store.db import engine_for

    engine = engine_for(url)
    with engine.connect() as connection:
        if connection.execute(sa.select(sa.func.count()).select_from(CASES)).scalar_one():
            return []
        games = connection.execute(
            sa.select(GameRow.game_id, GameRow.moves_count, GameRow.winner, GameRow.ended_at)
            .where(GameRow.status == "settled", GameRow.variant.in_(("points", "raise")))
            .order_by(GameRow.game_id)
        ).all()
        losers = connection.execute(
            sa.select(PlayerResultRow.game_id, PlayerResultRow.player, PlayerResultRow.result)
            .where(PlayerResultRow.result != "won")
            .order_by(PlayerResultRow.game_id, PlayerResultRow.player)
        ).all()
    lost_by: dict[str, list[tuple[str, str]]] = {}
    for game_id, player, result in losers:
        lost_by.setdefault(game_id, []).append((player, result))
    ledger = Ledger(url)
    disputes = Disputes(ledger)
    officer = _DemoActor(OFFICER)

    from datetime import UTC, datetime, timedelta

    # The cases are opened as the demo is prepared (their steps over the last five hours),
    # not in the simulated month: a case's age is read against today's clock, and a case
    # dated in the simulated month would read "open for 600 days" on every demo.
    opened = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=300)

    def when(game, minutes: int) -> str:
        return (opened + timedelta(minutes=minutes - 20)).isoformat()

    def wrong_show_move(game_id: str, player: str) -> int:
        moves = ledger.get_game(game_id).moves
        found = [i for i, m in enumerate(moves) if m["type"] == "declare" and m["player"] == player]
        return found[0] + 1

    wrong = next(
        (
            (g, p)
            for g in games
            for p, result in lost_by.get(g.game_id, ())
            if result == "wrong_show" and g.ended_at
        ),
        None,
    )
    wrong_game = wrong[0].game_id if wrong else None
    others = [g for g in games if g.ended_at and lost_by.get(g.game_id) and g.game_id != wrong_game]
    if len(others) < 3:
        return []
    made = []

    def open_case(game, player: str, move: int, text: str):
        case = disputes.open_case(
            _DemoActor(PLAYER, player), game.game_id, move, text, at=when(game, 20)
        )
        made.append(case.case_id)
        return case

    # 1. Open, with an officer's note: waiting for the operator's log.
    game = others[0]
    player = lost_by[game.game_id][0][0]
    case = open_case(
        game,
        player,
        max(1, game.moves_count // 2),
        "I did not miss that turn: my connection dropped for two seconds.",
    )
    disputes.add_note(
        officer,
        case.case_id,
        "Asked the operator for the seat's connection log.",
        at=when(game, 90),
    )
    # 2. Closed, rejected.
    game = others[1]
    player = lost_by[game.game_id][0][0]
    case = open_case(game, player, game.moves_count, "The winner's declaration looks wrong to me.")
    disputes.close_case(
        officer, case.case_id, "rejected",
        reason="The declaration holds two sequences, one pure: valid under docs/rules.md.",
        at=when(game, 240),
    )  # fmt: skip
    # 3. Closed, adjusted with an amount: the house refunds a middle drop forced by an outage.
    game = others[2]
    player = lost_by[game.game_id][0][0]
    case = open_case(
        game, player, max(1, game.moves_count // 3), "The table froze and I was dropped."
    )
    disputes.close_case(
        officer, case.case_id, "adjusted",
        reason="The operator confirmed an outage at the table; the house refunds the drop.",
        amount="12.50", credited=player, at=when(game, 300),
    )  # fmt: skip
    # 4. A wrong show contested by the player who made it (open: the case page shows why).
    if wrong is not None:
        game, player = wrong
        open_case(
            game,
            player,
            wrong_show_move(game.game_id, player),
            "My show was valid: the last group is a sequence with a joker.",
        )
    return made


# -- deccan's two-point rule -------------------------------------------------------------------

DECCAN_GAME = "T5-points-2025-000300"
# Wild 7♦ (7s are jokers). p0019 declares on the first turn after picking 4♥; p0006's dealt
# hand is already a valid declaration (A♦ 2♦ 3♦ | 4♣ 5♣ 6♣ | 8♥ 8♠ 8♦ | Q♥ Q♠ Q♣ Q♦) that
# they never had a turn to make: under deccan they owe a flat 2 points (docs/rules.md §1.6).
DECCAN_HANDS = {
    "p0019": "AS 2S 3S 5H JK 9D 9H 9S KS KD KC KH TC",
    "p0006": "AD 2D 3D 4C 5C 6C 8H 8S 8D QH QS QC QD",
    "p0027": "5C 6C 7C QD 2H 8S 7H 7S 7S JK 2D 2C 3D",
}


def seed_deccan_example(url: str | None = None) -> str | None:
    """One deccan Points game in the demo's month where a loser's hand met the objective
    without declaring, so the pages show deccan's flat 2-point charge and say why (the
    simulator's bots declare as soon as they can, so its games never show it). Idempotent;
    returns the game id when it was stored now."""
    from collections import Counter
    from datetime import UTC, datetime, timedelta
    from decimal import Decimal

    from domain.cards import Card, full_deck, parse_cards
    from domain.rummy13.table import TableConfig
    from replays.readmodels.projections import catch_up
    from replays.store.application import Ledger

    url = database_url(url)
    ledger = Ledger(url)
    if ledger.game_exists(DECCAN_GAME):
        return None
    wild, open_card, stock_top = Card.parse("7D"), Card.parse("KC"), Card.parse("4H")
    used = Counter()
    for cards in DECCAN_HANDS.values():
        used.update(parse_cards(cards))
    used.update((wild, open_card, stock_top))
    rest = sorted((full_deck(2, 1) - used).elements(), key=lambda card: card.index)
    deal = {
        "hands": {p: cards.split() for p, cards in DECCAN_HANDS.items()},
        "wild": str(wild),
        "open": str(open_card),
        "stock": [str(stock_top)] + [str(card) for card in rest],
    }
    started = datetime(2025, 3, 28, 20, 15, tzinfo=UTC)
    config = TableConfig(
        game_id=DECCAN_GAME,
        variant="points",
        players=tuple(DECCAN_HANDS),
        point_value=Decimal("5.00"),
        rules="deccan",
        table_id="T5",
        fee_percent=Decimal("10"),
        dealer="p0027",
        started_at=started,
    )
    at = [(started + timedelta(seconds=s)).isoformat() for s in (40, 95)]
    moves = [
        {"player": "p0019", "type": "pick", "from": "closed", "card": "4H", "at": at[0]},
        {
            "player": "p0019",
            "type": "declare",
            "finish": "TC",
            "groups": [
                ["AS", "2S", "3S"],
                ["4H", "5H", "JK"],
                ["9D", "9H", "9S"],
                ["KS", "KD", "KC", "KH"],
            ],
            "at": at[1],
        },
    ]
    ledger.record_game(config, deal, moves)
    catch_up(url)
    return DECCAN_GAME
