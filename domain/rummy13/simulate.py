"""One simulated game of 13-card rummy (Points or Raise), played by bots, as a docs/record-format.md record.

The loop keeps only the table facts a dealer would (hands, open pile, stock, who is out)
to know whose turn it is and what each seat sees; the rules themselves are enforced when
the record is stored or settled, through the game aggregate, exactly as for an operator's
record. The simulator's own tests store every game that way.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP
from typing import Any

from domain.rummy13.bot import MACHINE, Bot, Finish, Temper
from domain.rummy13.profiles import get_profile
from domain.simulation.dealing import Deal, deal
from domain.simulation.floor import (
    FEE_PERCENTS,
    MICRO_STAKES,
    ONE_PACK_SHARE_FOR_TWO,
    PAISA,
    POINT_VALUES,
    PROFILE_WEIGHTS,
    SEAT_COUNT_WEIGHTS,
    TWO_SEAT_BEGINNER_SHARE,
    Floor,
    Table,
    timestamp,
)

RECORD_FORMAT = "rummy-ledger/game@1"
# A game that drags past this many turns per seat is abandoned by its players in turn
# (middle drops) rather than simulated forever. Head-to-head games run longer at real
# tables (one pack, and nobody else to declare): they are where reshuffles are seen.
PATIENCE_TURNS = 20
TWO_PLAYER_PATIENCE_TURNS = 45
# Seconds each kind of move takes at a real table: (shortest, longest). A miss is the
# turn's whole time limit.
THINKING = {
    "pick": (1, 8),
    "discard": (2, 14),
    "drop": (2, 12),
    "miss": (30, 30),
    "declare": (10, 40),
    "show": (8, 45),
    "reshuffle": (1, 3),
}
# A dumper (domain/simulation/cheats.py) gives a deal up with a hand this close to finished,
# by a drop this often and otherwise by declaring it unfinished (a wrong show).
DUMP_SCORE = 25
DUMP_BY_DROP = 0.7
# A pair's feeder (domain/simulation/cheats.py) also gives the deal up early, in its first
# turns, when the partner's hand scores this low: one fewer hand between the partner and
# the show.
FOLD_SCORE = 50
FOLD_TURNS = 2


class Clock:
    """Move times: the game's start plus each move's thinking time."""

    def __init__(self, start: datetime, rng: random.Random):
        self.now = start
        self.rng = rng

    def tick(self, kind: str, regularity: float | None = None) -> str:
        low, high = THINKING[kind]
        if regularity is None:
            seconds = self.rng.randint(low, high)
        else:
            # A program at the seat: the middle of the human range, give or take a jitter
            # that shrinks as the cheat's strength (``regularity``) grows.
            spread = (high - low) / 2 * (1 - regularity)
            seconds = round((low + high) / 2 + self.rng.uniform(-spread, spread))
        self.now += timedelta(seconds=seconds)
        return timestamp(self.now)


def setup_table(floor: Floor, number: int, rng: random.Random, variant: str) -> Table:
    return thirteen_card_table(floor, number, variant, rng)


def play(rng: random.Random, floor: Floor, table: Table, game_id: str) -> dict:
    """Seat players at ``table``, deal, and play one game to its end; return its record."""
    players = floor.player_ids(rng, table)
    dealer = players[rng.randrange(len(players))]
    started_at = floor.start_time(rng)
    dealt = deal(rng, players, dealer, table.decks, table.jokers_per_deck)
    moves, _ended = play_deal(rng, floor, table.rules, players, dealer, dealt, started_at)
    record = {
        "format": RECORD_FORMAT,
        "game_id": game_id,
        "variant": table.variant,
        "rules": table.rules,
        "started_at": timestamp(started_at),
        "table": {
            "id": table.id,
            "decks": table.decks,
            "jokers_per_deck": table.jokers_per_deck,
        },
        "stakes": table.stakes(),
        "players": [{"id": p, "seat": seat} for seat, p in enumerate(players, start=1)],
        "dealer": dealer,
        "deal": dealt.to_record(),
        "moves": moves,
    }
    if dealt.shuffle is not None:
        record["shuffle"] = dealt.shuffle
    return record


def play_deal(
    rng: random.Random,
    floor: Floor,
    rules: str,
    players: list[str],
    dealer: str,
    dealt: Deal,
    started_at: datetime,
    chips: bool = False,
) -> tuple[list[dict], datetime]:
    """Bots play one dealt 13-card hand to its end: its moves (times from ``started_at``)
    and when it ended. A match of deals (another family) plays each deal through this, with
    ``chips`` true: there dumpers (domain/simulation/cheats.py) play for their partner."""
    game = _Game(rng, floor, rules, players, dealer, dealt, started_at, chips)
    game.run()
    return game.moves, game.clock.now


class _Game:
    def __init__(self, rng, floor, rules, players, dealer, dealt, started_at, chips=False):
        self.rng = rng
        self.players = players
        self.profile = get_profile(rules)
        self.wild = dealt.wild
        # Cheats (fair-play review): none on an honest floor, and then nothing below differs.
        self.roles = {p: role for p in players if (role := floor.role(p)) is not None}
        self.strength = floor.cheats.strength if floor.cheats is not None else 0.0
        self.chips = chips
        self.bots = {
            p: Bot(
                p,
                dealt.hands[p],
                dealt.wild,
                self.profile,
                replace(MACHINE, solver=self.strength)
                if self._is("bot", p)
                else Temper.of(p, floor.seed, novice=floor.is_novice(p)),
                rng,
            )
            for p in players
        }
        self.stock = list(reversed(dealt.stock))  # pop() takes the top card
        self.open_pile = [dealt.open]
        self.discarded_by: str | None = None  # None: the top was turned up by the deal
        self.out: set[str] = set()
        self.turns = dict.fromkeys(players, 0)
        self.misses = dict.fromkeys(players, 0)
        self.clock = Clock(started_at, rng)
        self.moves: list[dict] = []
        self.seat = (players.index(dealer) + 1) % len(players)

    def record(self, kind: str, player: str | None = None, **fields) -> None:
        move = {"player": player, "type": kind} if player else {"type": kind}
        move.update(fields)
        regular = self.strength if self._is("bot", player) and kind != "miss" else None
        move["at"] = self.clock.tick(kind, regular)
        self.moves.append(move)

    def _is(self, kind: str, player: str | None) -> bool:
        role = self.roles.get(player)
        return role is not None and role.kind == kind

    def _acts(self, kind: str, player: str) -> bool:
        """Whether ``player`` is a ``kind`` cheat who cheats this time (its strength)."""
        return self._is(kind, player) and self.rng.random() < self.strength

    def _next_in_play(self, player: str) -> str | None:
        place = self.players.index(player)
        for offset in range(1, len(self.players)):
            other = self.players[(place + offset) % len(self.players)]
            if other not in self.out:
                return other
        return None

    def _dumps(self, player: str) -> bool:
        """A dumper with a strong hand gives the deal up while the partner is still in it."""
        role = self.roles.get(player)
        if not self.chips or role is None or role.kind != "dump" or not role.gives:
            return False
        if role.partner not in self.in_play() or self.bots[player].score > DUMP_SCORE:
            return False
        return self.rng.random() < self.strength

    def _folds(self, player: str) -> bool:
        """A pair's feeder drops early while the partner, still in, holds a strong hand."""
        role = self.roles.get(player)
        if role is None or role.kind != "pair" or not role.gives:
            return False
        if self.turns[player] >= FOLD_TURNS or role.partner not in self.in_play():
            return False
        if self.bots[role.partner].score > FOLD_SCORE:
            return False
        return self.rng.random() < self.strength

    def in_play(self) -> list[str]:
        return [p for p in self.players if p not in self.out]

    def run(self) -> None:
        while len(self.in_play()) > 1:
            player = self.players[self.seat]
            if player not in self.out and self.turn(player):
                return
            self.seat = (self.seat + 1) % len(self.players)

    def turn(self, player: str) -> bool:
        """Play ``player``'s turn; True when a valid declaration ended the game."""
        bot = self.bots[player]
        if bot.misses():
            self.record("miss", player)
            self.misses[player] += 1
            if self.misses[player] >= self.profile.misses_to_auto_drop:
                self.out.add(player)
            return False
        self.misses[player] = 0
        patience = TWO_PLAYER_PATIENCE_TURNS if len(self.players) == 2 else PATIENCE_TURNS
        dumping = self._dumps(player)
        if (dumping and self.rng.random() < DUMP_BY_DROP) or self._folds(player):
            self.record("drop", player)
            self.out.add(player)
            return False
        if (
            bot.folds_on_short_stock(self.turns[player], len(self.stock), len(self.in_play()))
            or bot.drops(self.turns[player])
            or self.turns[player] >= patience
        ):
            self.record("drop", player)
            self.out.add(player)
            return False
        if not self.stock and len(self.open_pile) > 1:
            self.reshuffle()
        top = self.open_pile[-1]
        may_take = not (top.is_joker(self.wild) and self.discarded_by not in (None, player))
        if not self.stock and not may_take:
            # Nothing this seat may pick: the player gives the hand up.
            self.record("drop", player)
            self.out.add(player)
            return False
        from_open = not self.stock or self._picks_open(player, top, may_take)
        if from_open:
            card = self.open_pile.pop()
            self.record("pick", player, **{"from": "open", "card": str(card)})
        else:
            card = self.stock.pop()
            self.record("pick", player, **{"from": "closed", "card": str(card)})
        self.turns[player] += 1
        finish = bot.take(card, from_open=from_open)
        if finish.groups is None and bot.score > 0 and dumping:
            finish = Finish(finish.card, bot.wrong_show_groups())
        if finish.groups is None and self._is("pair", player):
            partner = self.roles[player].partner
            if self._next_in_play(player) == partner and self.rng.random() < self.strength:
                finish = Finish(bot.feed(finish.card, self.bots[partner].hand))
        if finish.groups is None:
            self.open_pile.append(finish.card)
            self.discarded_by = player
            self.record("discard", player, card=str(finish.card))
            return False
        self.record(
            "declare",
            player,
            finish=str(finish.card),
            groups=[[str(c) for c in group] for group in finish.groups],
        )
        if finish.valid:
            self.shows(player)
            return True
        # A wrong show: the player is out. docs/rules.md is silent on the finish card; the
        # aggregate puts it on the open pile like a discard (docs/rules-choices.md).
        self.out.add(player)
        self.open_pile.append(finish.card)
        self.discarded_by = player
        return False

    def _picks_open(self, player: str, top, may_take: bool) -> bool:
        bot = self.bots[player]
        if self._acts("peek", player):
            return bot.picks_seeing(top, may_take, self.stock[-1])
        role = self.roles.get(player)
        if (
            role is not None
            and role.kind == "pair"
            and self.discarded_by == role.partner
            and self.rng.random() < self.strength
        ):
            return bot.picks_fed(top, may_take)
        return bot.picks_open(top, may_take)

    def reshuffle(self) -> None:
        """The open pile but its top becomes the new stock, in a freshly shuffled order."""
        new_stock = self.open_pile[:-1]
        self.rng.shuffle(new_stock)
        self.open_pile = self.open_pile[-1:]
        self.stock = list(reversed(new_stock))
        self.record("reshuffle", stock=[str(c) for c in new_stock])

    def shows(self, winner: str) -> None:
        first = self.players.index(winner)
        for offset in range(1, len(self.players)):
            loser = self.players[(first + offset) % len(self.players)]
            if loser in self.out:
                continue
            groups = self.bots[loser].show()
            if groups is not None:
                self.record("show", loser, groups=[[str(c) for c in g] for g in groups])


def thirteen_card_table(floor: Floor, number: int, variant: str, rng: random.Random) -> Table:
    """A Points or Raise Rummy table: 2 to 6 seats, two packs (one for most two-seat tables)."""
    seats = rng.choices(floor.seats, [SEAT_COUNT_WEIGHTS[s] for s in floor.seats])[0]
    decks = 1 if seats == 2 and rng.random() < ONE_PACK_SHARE_FOR_TWO else 2
    point_value = rng.choice(POINT_VALUES)
    rules = rng.choices(list(PROFILE_WEIGHTS), list(PROFILE_WEIGHTS.values()))[0]
    raise_step = raise_max = None
    if variant == "raise":
        # The seed's own Raise table (start 1, step 0.10, max 2) scaled to the stake, with
        # the step in whole paise as operators set it.
        raise_step = max(PAISA, (point_value / 10).quantize(PAISA, rounding=ROUND_HALF_UP))
        raise_max = point_value * 2
    beginners = point_value <= MICRO_STAKES or (
        seats == 2 and rng.random() < TWO_SEAT_BEGINNER_SHARE
    )
    return Table(
        id=f"T{number}",
        variant=variant,
        rules=rules,
        seats=seats,
        decks=decks,
        jokers_per_deck=1,
        currency=floor.currency,
        point_value=point_value,
        fee_percent=rng.choice(FEE_PERCENTS),
        raise_step=raise_step,
        raise_max=raise_max,
        beginners=beginners,
    )


def behaviours(record: Mapping[str, Any]) -> Counter:
    """The behaviours one 13-card game shows, by name, and its length (``moves``).

    A drop is a *first* drop when the player had not yet picked a card; a run of misses as
    long as the profile's limit is an auto-drop; a declaration by anyone but the winner is a
    wrong show. ``record``: a ``rummy-ledger/game@1`` record, or any mapping with its
    ``rules``, ``players``, ``moves`` and (for the winner) ``reported``."""
    found: Counter = Counter()
    profile = get_profile(record.get("rules"))
    winner = (record.get("reported") or {}).get("winner")
    picked: set[str] = set()
    misses: Counter = Counter()
    reshuffled = False
    for move in record["moves"]:
        kind, player = move["type"], move.get("player")
        if kind == "pick":
            picked.add(player)
            misses[player] = 0
        elif kind == "miss":
            found["miss"] += 1
            misses[player] += 1
            if misses[player] == profile.misses_to_auto_drop:
                found["auto_drop"] += 1
        elif kind == "drop":
            found["first_drop" if player not in picked else "middle_drop"] += 1
        elif kind == "declare":
            found["declare" if winner in (None, player) else "wrong_show"] += 1
        elif kind == "show":
            found["show"] += 1
        elif kind == "reshuffle":
            found["reshuffle"] += 1
            reshuffled = True
    if reshuffled and len(record["players"]) == 2:
        found["reshuffled_two_player_games"] += 1
    found["moves"] = len(record["moves"])
    return found
