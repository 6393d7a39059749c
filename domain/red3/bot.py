"""Simulated Red 3 Rummy matches: a table, bots, and the match played through its aggregate.

The match is played through :class:`~domain.red3.game.Red3Match` itself (the bots only
choose among legal moves), so every simulated record is legal by construction; the record
is then exported exactly as ``rummy-ledger export`` writes a stored match, and the
importer plays it again through the rules. A bot decides from what its seat can see: its
own hand, the pile (every card in it was turned up or discarded in view), the books on the
table and how many cards the others hold.

>>> from domain.simulation.floor import Floor
>>> floor = Floor(seed=3, variants=("red3",))
>>> record = play(random.Random(1), floor, setup_table(floor, 1, random.Random(2)), "R3-doc")
>>> record["format"], record["variant"], len(record["rounds"]) == record["round_count"]
('rummy-ledger/red3@1', 'red3', True)
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from decimal import Decimal

from domain.cards import Card
from domain.red3.game import Red3Config, Red3Match
from domain.red3.hints import fitting_cards, related, suggest_books
from domain.red3.records import red3_record_of
from domain.red3.rules import held_penalty, is_red_three, is_wild, lay_down_value
from domain.red3.shuffle import commitment, derive_red3_deal
from domain.simulation.floor import SEAT_COUNT_WEIGHTS, Floor, Table, timestamp

ROUNDS = (2, 3, 4)  # rounds a simulated match is agreed to last
# Seconds each kind of move takes at a real table: (shortest, longest).
THINKING = {"deal": (20, 60), "pick": (1, 8), "lay_down": (5, 30), "discard": (2, 14)}


def setup_table(floor: Floor, number: int, rng: random.Random) -> Table:
    """A Red 3 table: 2 to 6 seats, one pack with two jokers per seat, points only."""
    seats = rng.choices(floor.seats, [SEAT_COUNT_WEIGHTS[s] for s in floor.seats])[0]
    return Table(
        id=f"T{number}",
        variant="red3",
        rules="standard",
        seats=seats,
        decks=seats,
        jokers_per_deck=2,
        currency=floor.currency,
        point_value=Decimal("0"),  # docs/rules.md §2 names no stakes: a match settles in points
        fee_percent=Decimal("0"),
        beginners=seats == 2 and rng.random() < 0.4,
    )


def play(
    rng: random.Random, floor: Floor, table: Table, game_id: str, *, rounds: int | None = None
) -> dict:
    """Seat players at ``table`` and play a whole match; return its ``red3@1`` record.

    ``rounds`` fixes the match's length (benchmarks want long ones); by default it is drawn.
    """
    players = tuple(floor.player_ids(rng, table))
    started_at = floor.start_time(rng)
    # The operator's server commits to one seed for the match; each seat adds its own.
    server_seed = rng.randbytes(32)
    shuffle = {
        "commitment": commitment(server_seed),
        "seed": server_seed.hex(),
        "client_seeds": {p: rng.randbytes(16).hex() for p in players},
    }
    config = Red3Config(
        game_id=game_id,
        players=players,
        rounds=rng.choice(ROUNDS) if rounds is None else rounds,
        first_player=rng.choice(players),
        table_id=table.id,
        started_at=started_at,
        shuffle=shuffle,
    )
    match = Red3Match.start(config)
    clock = _Clock(started_at, rng)
    bots = {p: Red3Bot(p, rng, careless=table.beginners and floor.is_novice(p)) for p in players}
    for number in range(1, config.rounds + 1):
        first = config.first_player_of(number)
        deal = derive_red3_deal(shuffle, players, number, first=first, rules=config.profile)
        match.deal(deal, at=clock.tick("deal"))
        while match.phase in ("pick", "play"):
            bots[match.current_player].turn(match, clock)
    return red3_record_of(match).to_dict()


class _Clock:
    def __init__(self, start: datetime, rng: random.Random):
        self.now = start
        self.rng = rng

    def tick(self, kind: str) -> str:
        low, high = THINKING[kind]
        self.now += timedelta(seconds=self.rng.randint(low, high))
        return timestamp(self.now)


class Red3Bot:
    """A sensible player: opens as soon as it can, lays everything down it can, takes the
    pile when it helps, keeps wilds and neighbours, throws red threes and lone high cards.

    A careless player (a beginner) discards at random now and then.
    """

    def __init__(self, player: str, rng: random.Random, *, careless: bool = False):
        self.player = player
        self.rng = rng
        self.careless = careless

    def turn(self, match: Red3Match, clock: _Clock) -> None:
        me = self.player
        hand = list(match.hands[me])
        if self._wants_pile(match, hand):
            match.pick(me, "pile", at=clock.tick("pick"))
        else:
            named = None if match.stock is not None else self._any_unseen(match)
            match.pick(me, "stock", named, at=clock.tick("pick"))
        self._lay_down(match, clock)
        if match.phase == "play":
            match.discard(me, self._discard(match.hands[me]), at=clock.tick("discard"))

    @staticmethod
    def _any_unseen(match: Red3Match) -> Card:
        return min(match.unseen, key=lambda card: card.index)

    def _wants_pile(self, match: Red3Match, hand: list[Card]) -> bool:
        pile = match.pile
        if not pile:
            return False
        if not any(
            is_wild(card) or any(related(card, held) for held in hand)
            for card in pile
            if not is_red_three(card)
        ):
            return False  # nothing in the pile goes with anything held
        opened = match.opening[self.player] is not None
        now = lay_down_value(suggest_books(hand))
        then = lay_down_value(suggest_books([*hand, *pile]))
        gain = then - now - sum(30 for card in pile if is_red_three(card))
        if not opened and now < 70 <= then:
            return gain > 0
        return gain >= 30

    def _lay_down(self, match: Red3Match, clock: _Clock) -> None:
        me = self.player
        while match.phase == "play":
            books = suggest_books(match.hands[me])
            if match.opening[me] is None and lay_down_value(books) < match.rules.opening_minimum:
                return
            if books:
                match.lay_down(me, [book.cards for book in books], at=clock.tick("lay_down"))
                continue
            fits = fitting_cards(match.books[me], match.hands[me])
            if not fits:
                return
            additions = _one_card_per_book(fits)
            match.lay_down(me, additions=additions, at=clock.tick("lay_down"))

    def _discard(self, hand: list[Card]) -> Card:
        if self.careless and self.rng.random() < 0.2:
            return self.rng.choice(hand)
        reds = [card for card in hand if is_red_three(card)]
        if reds:
            return reds[0]

        def keep(card: Card) -> tuple[int, int]:
            if is_wild(card):
                return (100, 0)
            neighbours = sum(
                1
                for other in hand
                if other is not card
                and not is_wild(other)
                and (
                    other.rank == card.rank
                    or (other.suit == card.suit and abs(other.rank - card.rank) <= 2)
                )
            )
            # Among equally lonely cards, throw the one that would cost the most if held.
            return (neighbours, -held_penalty(card))

        worst = min(keep(card) for card in hand)
        return self.rng.choice([card for card in hand if keep(card) == worst])


def _one_card_per_book(fits: list[tuple[int, Card]]) -> list[tuple[int, list[Card]]]:
    """Additions that cannot clash: at most one card for each book in one lay-down."""
    chosen: dict[int, Card] = {}
    for index, card in fits:
        chosen.setdefault(index, card)
    return [(index, [card]) for index, card in chosen.items()]


def settle(record: dict) -> dict:
    """The ``settle`` summary of a Red 3 record, through the aggregate."""
    from domain.red3.records import parse_red3_record

    return parse_red3_record(record).settle()


MISTAKES = ("round_score", "total", "winner")


def reported_block(record: dict, rng: random.Random, discrepancy_rate: float) -> dict:
    """What the operator says the match scored: the ledger's own figures, sometimes wrong."""
    settled = settle(record)
    reported = {
        "rounds": [
            {player: line["score"] for player, line in played["scores"].items()}
            for played in settled["rounds"]
        ],
        "totals": dict(settled["totals"]),
        "winner": settled["winner"],
    }
    if rng.random() < discrepancy_rate:
        mistake = rng.choice(MISTAKES)
        player = rng.choice(sorted(reported["totals"]))
        if mistake == "round_score":
            # A red three forgotten in someone's hand: 30 points too kind.
            reported["rounds"][-1][player] += 30
        elif mistake == "total":
            reported["totals"][player] += 5 * rng.randint(1, 6)
        else:
            others = [p for p in reported["totals"] if p != reported["winner"]]
            reported["winner"] = rng.choice(others)
    return reported
