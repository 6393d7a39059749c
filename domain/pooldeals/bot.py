"""Simulated Pool and Deals Rummy matches: a table, the 13-card bots, and the match played
through its aggregate (docs/rules.md §3, §4).

Each deal is derived from the match's one committed shuffle seed
(:func:`domain.pooldeals.shuffle.derive_match_deal`) and played to its end by the 13-card
bots (:func:`domain.rummy13.simulate.play_deal`, the same players as at a Points table);
its moves then go through :class:`~domain.pooldeals.match.Match` one by one, so every
simulated record is legal by construction and scored by the ledger's own rules. Between
deals eliminated players rejoin and the players left agree to split, at the rates below;
the record is exported as ``rummy-ledger export`` writes a stored match.

>>> from domain.simulation.floor import Floor
>>> floor = Floor(seed=3, variants=("pool",))
>>> table = setup_table(floor, 1, random.Random(2), variant="pool")
>>> record = play(random.Random(1), floor, table, "T1-pool-doc")
>>> record["format"], record["match"]["pool"] == table.pool, len(record["deals"]) >= 1
('rummy-ledger/pool@1', True, True)
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_DOWN, Decimal

from domain.errors import RuleViolation
from domain.pooldeals import pool as pool_rules
from domain.pooldeals.match import FINISHED, Match
from domain.pooldeals.records import match_record_of, parse_match_record
from domain.pooldeals.shuffle import derive_match_deal
from domain.pooldeals.table import POOL, MatchConfig
from domain.rummy13.simulate import play_deal
from domain.shuffle import commitment
from domain.simulation.dealing import Deal
from domain.simulation.floor import (
    FEE_PERCENTS,
    ONE_PACK_SHARE_FOR_TWO,
    PROFILE_WEIGHTS,
    SEAT_COUNT_WEIGHTS,
    Floor,
    Table,
    timestamp,
)

# What operators' lobbies offer, weighted by how often tables of each kind run: the 101
# pool and the best of 2 are the common games; 201 pools and best of 6 are for the patient.
POOL_WEIGHTS = {101: 60, 201: 30, 61: 10}
DEALS_WEIGHTS = {2: 65, 3: 25, 6: 10}
ENTRY_FEES = tuple(Decimal(v) for v in ("5", "10", "25", "50", "100", "250", "500"))
ENTRY_FEE_WEIGHTS = (10, 20, 25, 20, 15, 7, 3)
# Most pools allow rejoins without a cap; some cap them at one or two per player.
MAX_REJOINS_WEIGHTS = {None: 70, 1: 20, 2: 10}
AUTO_SPLIT_SHARE = 0.1
# An eliminated player allowed back pays again this often (many leave the table instead);
# each player left accepts an allowed split this often (all must, so splits are rarer).
REJOIN_RATE = 0.45
SPLIT_ACCEPT_RATE = 0.6
# A pool that runs this long stops taking rejoins: the players want it to end.
REJOIN_DEALS = 40
# Seconds between deals (scores shown, cards collected, next deal) and for a decision.
BETWEEN_DEALS = (15, 45)
DECISION = (5, 25)


@dataclass(frozen=True)
class MatchTable(Table):
    """A Pool or Deals table: the floor's table with the match's format and entry fee."""

    pool: int | None = None
    deals: int | None = None
    entry_fee: Decimal = Decimal("0")
    max_rejoins: int | None = None
    auto_split: bool = False


def _pick(rng: random.Random, weights: dict):
    return rng.choices(list(weights), list(weights.values()))[0]


def setup_table(floor: Floor, number: int, rng: random.Random, variant: str) -> MatchTable:
    """A Pool or Deals table: 2 to 6 seats, two packs (one for most two-seat tables), a
    pool type or a deal count, an entry fee and the operator's fee."""
    seats = rng.choices(floor.seats, [SEAT_COUNT_WEIGHTS[s] for s in floor.seats])[0]
    decks = 1 if seats == 2 and rng.random() < ONE_PACK_SHARE_FOR_TWO else 2
    pool = _pick(rng, POOL_WEIGHTS) if variant == POOL else None
    return MatchTable(
        id=f"T{number}",
        variant=variant,
        rules=_pick(rng, PROFILE_WEIGHTS),
        seats=seats,
        decks=decks,
        jokers_per_deck=1,
        currency=floor.currency,
        point_value=Decimal("0"),  # no money changes hands per deal: the prize pool settles
        fee_percent=rng.choice(FEE_PERCENTS),
        beginners=seats == 2 and rng.random() < 0.3,
        pool=pool,
        deals=None if variant == POOL else _pick(rng, DEALS_WEIGHTS),
        entry_fee=rng.choices(ENTRY_FEES, ENTRY_FEE_WEIGHTS)[0],
        max_rejoins=_pick(rng, MAX_REJOINS_WEIGHTS) if variant == POOL else None,
        auto_split=variant == POOL and rng.random() < AUTO_SPLIT_SHARE,
    )


class _Clock:
    def __init__(self, start: datetime, rng: random.Random):
        self.now = start
        self.rng = rng

    def wait(self, span: tuple[int, int]) -> str:
        self.now += timedelta(seconds=self.rng.randint(*span))
        return timestamp(self.now)


def play(rng: random.Random, floor: Floor, table: MatchTable, game_id: str) -> dict:
    """Seat players at ``table`` and play a whole match; return its record."""
    players = tuple(floor.player_ids(rng, table))
    started_at = floor.start_time(rng)
    server_seed = rng.randbytes(32)
    shuffle = {
        "commitment": commitment(server_seed),
        "seed": server_seed.hex(),
        "client_seeds": {p: rng.randbytes(16).hex() for p in players},
    }
    config = MatchConfig(
        game_id=game_id,
        variant=table.variant,
        players=players,
        entry_fee=table.entry_fee,
        pool=table.pool,
        deals=table.deals,
        rules=table.rules,
        table_id=table.id,
        decks=table.decks,
        jokers_per_deck=table.jokers_per_deck,
        currency=table.currency,
        fee_percent=table.fee_percent,
        max_rejoins=table.max_rejoins,
        auto_split=table.auto_split,
        dealer=rng.choice(players),
        started_at=started_at,
        shuffle=shuffle,
    )
    match = Match.start(config)
    clock = _Clock(started_at, rng)
    while match.phase != FINISHED:
        if match.deals and config.variant == POOL:
            # A split is agreed at the end of a deal, before anyone rejoins for the next:
            # the record keeps a rejoin with the deal it was made for.
            if _splits(match, rng, clock):
                break
            _rejoins(match, rng, clock)
        _play_deal(match, rng, floor, clock)
    return match_record_of(match).to_dict()


def _play_deal(match: Match, rng: random.Random, floor: Floor, clock: _Clock) -> None:
    config = match.config
    players = match.dealt_in()
    dealer = (
        config.first_dealer
        if not match.deals
        else config.next_dealer(match.deals[-1]["dealer"], players)
    )
    dealt = derive_match_deal(
        config.shuffle,
        len(match.deals) + 1,
        players,
        dealer,
        decks=config.decks,
        jokers_per_deck=config.jokers_per_deck,
    )
    match.deal(dealt.to_dict(), at=clock.wait(BETWEEN_DEALS))
    cards = Deal(
        hands={p: list(dealt.hands[p]) for p in players},
        wild=dealt.wild,
        open=dealt.open_card,
        stock=list(dealt.stock),
    )
    moves, clock.now = play_deal(
        rng, floor, config.rules, players, dealer, cards, clock.now, chips=True
    )
    for move in moves:
        match.play(move)
    match.close()


def _rejoins(match: Match, rng: random.Random, clock: _Clock) -> None:
    """Each eliminated player allowed back decides whether to pay again."""
    if len(match.deals) >= REJOIN_DEALS:
        return
    config = match.config
    for player in [p for p in config.players if p in match.eliminated]:
        refused = pool_rules.rejoin_refusal(
            config.pool_type,
            player,
            match.scores,
            match.remaining(),
            match.rejoins[player],
            config.max_rejoins,
        )
        if refused is None and rng.random() < REJOIN_RATE:
            match.rejoin(player, at=clock.wait(DECISION))


def _splits(match: Match, rng: random.Random, clock: _Clock) -> bool:
    """When the table qualifies for a split, each player left accepts it or not; True when
    all did (the split ends the match)."""
    config = match.config
    remaining = match.remaining()
    split = pool_rules.split_by_drops(
        config.pool_type,
        config.entry_fee,
        config.fee_percent,
        match.prize_pool,
        {p: match.scores[p] for p in remaining},
        config.players,
    )
    allowed = pool_rules.split_refusal(
        config.pool_type, len(config.players), remaining, remaining, split
    )
    if allowed is not None:
        return False
    if not all(rng.random() < SPLIT_ACCEPT_RATE for _ in remaining):
        return False
    try:
        match.agree_split(remaining, at=clock.wait(DECISION))
    except RuleViolation:  # the aggregate's own check is the last word
        return False
    return True


# -- the operator's report ------------------------------------------------------------------

PAISA = Decimal("0.01")
MISTAKES = ("fee_percent", "rejoin_fee", "split_rounding", "final_score")


def settle(record: dict) -> dict:
    """The match's outcome (``settle`` JSON shape), through the aggregate."""
    from domain.pooldeals.outcome import match_outcome

    return match_outcome(parse_match_record(record).build())


def reported_block(record: dict, rng: random.Random, discrepancy_rate: float) -> dict:
    """What the operator says the match settled: the ledger's own figures, now and then
    with one of the mistakes operators make — the fee at the wrong rate, a rejoin's entry
    fee left out of the prize pool, a split's shares rounded half-up instead of down, a
    final score copied wrong."""
    outcome = settle(record)
    pool = outcome["variant"] == POOL
    reported: dict = {
        "prize_pool": outcome["prize_pool"],
        "fee": outcome["fee"],
        "payouts": dict(outcome["payouts"]),
    }
    if outcome["winner"] is not None:
        reported["winner"] = outcome["winner"]
    column = "scores" if pool else "chips"
    reported[column] = dict(outcome[column])
    if pool:
        if outcome["split"]:
            reported["split"] = dict(outcome["split"]["shares"])
        rejoins: dict[str, list[int]] = {}
        for entry in outcome["rejoins"]:
            rejoins.setdefault(entry["player"], []).append(entry["score"])
        if rejoins:
            reported["rejoins"] = rejoins
    if rng.random() < discrepancy_rate:
        _misreport(reported, rng, record, outcome)
    return reported


def _misreport(reported: dict, rng: random.Random, record: dict, outcome: dict) -> None:
    mistakes = [
        m
        for m in MISTAKES
        if (m != "rejoin_fee" or outcome.get("rejoins"))
        and (m != "split_rounding" or reported.get("split"))
    ]
    mistake = rng.choice(mistakes)
    terms = record["match"]
    if mistake == "fee_percent":
        prize = Decimal(reported["prize_pool"])
        rate = Decimal(terms["fee_percent"]) + Decimal("2.5")
        reported["fee"] = str((prize * rate / 100).quantize(PAISA))
    elif mistake == "rejoin_fee":
        # The pool counted without the last rejoin's entry fee.
        prize = Decimal(reported["prize_pool"]) - Decimal(terms["entry_fee"])
        reported["prize_pool"] = str(prize.quantize(PAISA))
    elif mistake == "split_rounding":
        shares = reported["split"]
        exact = Decimal(outcome["split"]["rest"]) / len(shares)
        half_up = exact.quantize(PAISA)
        down = exact.quantize(PAISA, rounding=ROUND_DOWN)
        bump = half_up - down if half_up != down else PAISA
        player = sorted(shares)[0]
        shares[player] = str(Decimal(shares[player]) + bump)
        reported["payouts"][player] = shares[player]
    else:
        column = "scores" if "scores" in reported else "chips"
        player = sorted(reported[column])[0]
        reported[column][player] += 10
