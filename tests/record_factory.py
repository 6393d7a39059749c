"""Builds the sample game records in ``tests/data/`` from hand-designed deals.

Every record uses a real, conserved deck (2 packs + 2 printed jokers = 106 cards): the hands,
the open card and the wild indicator are chosen by hand, the rest of the stock is shuffled
with a fixed seed, and every closed pick takes the stock's next card. The cards a winner
needs are *planted* at the position where the winner's pick will meet them.

``python tests/record_factory.py`` rewrites ``tests/data/games.jsonl`` and
``tests/data/broken.jsonl``; ``tests/test_records.py`` checks the files are up to date.
"""

from __future__ import annotations

import copy
import json
import random
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from domain.cards import Card, full_deck, parse_cards  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"


class RecordBuilder:
    """Writes one record move by move, keeping the stock and open pile honest.

    The builder does not judge legality (the aggregate does); it only guarantees that the
    cards exist, that each closed pick is the stock's next card and that a reshuffle holds
    exactly the open pile below its top card.
    """

    def __init__(
        self,
        game_id: str,
        players: list[str],
        hands: dict[str, str],
        *,
        wild: str,
        open_card: str,
        variant: str = "points",
        rules: str = "rummycircle",
        dealer: str | None = None,
        toss: dict[str, str] | None = None,
        stakes: dict | None = None,
        table: str = "T1",
        seed: int = 1,
        started_at: str = "2025-03-01T18:00:00Z",
        timed: bool = False,
        reserve: str = "",
    ):
        self.game_id = game_id
        self.players = players
        self.random = random.Random(seed)
        self.pool = full_deck(2, 1)
        self.hands = {}
        for player in players:
            text = hands.get(player)
            self.hands[player] = self._take(parse_cards(text)) if text else []
        self.wild = self._take([Card.parse(wild)])[0]
        self.open_card = self._take([Card.parse(open_card)])[0]
        # Cards kept back from the random stock for a planned pick later on.
        self.reserved = Counter(self._take(parse_cards(reserve)))
        # Players with no designed hand get random cards; drawn after the designed ones.
        self._shuffled: list[Card] = []
        for player in players:
            if not self.hands[player]:
                self.hands[player] = [self._draw() for _ in range(13)]
        self.stock: list[Card] = []  # the dealt stock as far as picks have revealed it
        self.stock_at = 0
        self.open_pile = [self.open_card]
        self.moves: list[dict] = []
        self.header = {
            "format": "rummy-ledger/game@1",
            "game_id": game_id,
            "variant": variant,
            "rules": rules,
            "started_at": started_at,
            "table": {"id": table, "decks": 2, "jokers_per_deck": 1},
            "stakes": stakes or {"currency": "INR", "point_value": "1.00", "fee_percent": "10"},
            "players": [{"id": p, "seat": i} for i, p in enumerate(players, start=1)],
        }
        if toss:
            self.header["toss"] = toss
        else:
            self.header["dealer"] = dealer
        self.clock = datetime.fromisoformat(started_at.replace("Z", "+00:00")) if timed else None
        self.reshuffled: list[Card] | None = None
        self.reshuffle_at = 0

    # -- cards -------------------------------------------------------------------------
    def _take(self, cards: list[Card]) -> list[Card]:
        for card in cards:
            if self.pool[card] <= 0:
                raise ValueError(f"{self.game_id}: no {card} left in the deck")
            self.pool[card] -= 1
        return list(cards)

    def _draw(self) -> Card:
        if not self._shuffled:
            self._shuffled = list(self.pool.elements())
            self.random.shuffle(self._shuffled)
        while True:
            card = self._shuffled.pop()
            if self.pool[card] > 0:
                self.pool[card] -= 1
                return card

    def _next_stock(self, want: str | None) -> Card:
        if self.reshuffled is not None:
            card = self.reshuffled[self.reshuffle_at]
            if want and card != Card.parse(want):
                raise ValueError(f"{self.game_id}: the reshuffled stock has {card}, not {want}")
            self.reshuffle_at += 1
            return card
        if want:
            card = Card.parse(want)
            if self.reserved[card]:
                self.reserved[card] -= 1
            else:
                card = self._take([card])[0]
            # A planted card must not also be waiting in the random order.
            self._shuffled = []
        else:
            card = self._draw()
        self.stock.append(card)
        return card

    @property
    def stock_left(self) -> int:
        if self.reshuffled is not None:
            return len(self.reshuffled) - self.reshuffle_at
        return sum(self.pool.values())

    # -- moves -------------------------------------------------------------------------
    def _move(self, move: dict) -> dict:
        if self.clock is not None:
            self.clock += timedelta(seconds=7 + len(self.moves) % 5)
            move["at"] = self.clock.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.moves.append(move)
        return move

    def pick(self, player: str, source: str = "closed", want: str | None = None) -> Card:
        card = self.open_pile.pop() if source == "open" else self._next_stock(want)
        self.hands[player].append(card)
        self._move({"player": player, "type": "pick", "from": source, "card": str(card)})
        return card

    def discard(self, player: str, card: Card | str) -> None:
        card = Card.parse(card)
        self.hands[player].remove(card)
        self.open_pile.append(card)
        self._move({"player": player, "type": "discard", "card": str(card)})

    def turn(self, player: str) -> None:
        """A quiet turn: pick the stock's next card and throw it straight back."""
        self.discard(player, self.pick(player))

    def drop(self, player: str) -> None:
        self._move({"player": player, "type": "drop"})

    def miss(self, player: str) -> None:
        self._move({"player": player, "type": "miss"})

    def declare(self, player: str, finish: str, groups: str) -> None:
        finish_card = Card.parse(finish)
        self.hands[player].remove(finish_card)
        grouped = [parse_cards(group) for group in groups.split("|")]
        self._move(
            {
                "player": player,
                "type": "declare",
                "finish": str(finish_card),
                "groups": [[str(c) for c in group] for group in grouped],
            }
        )

    def show(self, player: str, groups: str) -> None:
        grouped = [parse_cards(group) for group in groups.split("|")] if groups else []
        self._move(
            {"player": player, "type": "show", "groups": [[str(c) for c in g] for g in grouped]}
        )

    def reshuffle(self, plant: dict[int, str] | None = None) -> None:
        """The open pile below its top becomes the new stock, in a seeded order."""
        assert self.stock_left == 0, "reshuffle only when the stock is empty"
        top = self.open_pile.pop()
        cards = self.open_pile
        self.random.shuffle(cards)
        for position, text in sorted((plant or {}).items()):
            card = Card.parse(text)
            cards.remove(card)
            cards.insert(position, card)
        self.reshuffled = list(cards)
        self.reshuffle_at = 0
        self.open_pile = [top]
        self._move({"type": "reshuffle", "stock": [str(c) for c in cards]})

    # -- output ------------------------------------------------------------------------
    def record(self, reported: dict | None = None, **extra) -> dict:
        assert not +self.reserved, f"{self.game_id}: reserved cards never picked"
        stock = self.stock + sorted(self.pool.elements(), key=lambda c: c.index)
        rest = stock[len(self.stock) :]
        self.random.shuffle(rest)
        dealt = {
            "hands": {p: [str(c) for c in self._dealt_hand(p)] for p in self.players},
            "wild": str(self.wild),
            "open": str(self.open_card),
            "stock": [str(c) for c in self.stock + rest],
        }
        deck = Counter(parse_cards(dealt["stock"]))
        for cards in dealt["hands"].values():
            deck.update(parse_cards(cards))
        deck.update([self.wild, self.open_card])
        assert deck == full_deck(2, 1), f"{self.game_id}: the deal does not conserve the deck"
        out = dict(self.header)
        out["deal"] = dealt
        out["moves"] = self.moves
        if reported is not None:
            out["reported"] = reported
        out.update(extra)
        return out

    def _dealt_hand(self, player: str) -> list[Card]:
        return self._initial[player]

    def freeze_deal(self) -> None:
        """Remember the hands as dealt (call before the first move)."""
        self._initial = {p: list(cards) for p, cards in self.hands.items()}


def build(game_id: str, players: list[str], hands: dict[str, str], **options) -> RecordBuilder:
    builder = RecordBuilder(game_id, players, hands, **options)
    builder.freeze_deal()
    return builder


# -- the sample games --------------------------------------------------------------------


def format_example() -> dict:
    """docs/record-format.md's example made whole: p2 first drop @1.00, p1 declares in round 1 @1.10."""
    b = build(
        "T7-000123",
        ["p1", "p2", "p3"],
        {
            "p1": "AS 2S 3S 5H JK 9D 9H 9S KS KD KC KH TC",
            "p2": "2D 4D 6D 8D TD QD 3H 6H 8H JH 4S 6S 8S",
            "p3": "5C 6C 7C QD 2H 8S 2C 2D 3H JK 7S 7H 7S",
        },
        wild="7D",
        open_card="KC",
        variant="raise",
        dealer="p3",
        table="T7",
        started_at="2025-03-01T18:04:05Z",
        stakes={
            "currency": "INR",
            "point_value": "1.00",
            "raise": {"step": "0.10", "max": "2.00"},
            "fee_percent": "10",
        },
    )
    b.pick("p1", "closed", want="4H")
    b.discard("p1", "TC")
    b.drop("p2")
    b.miss("p3")
    b.pick("p1", "closed", want="9C")
    b.declare("p1", "9C", "AS 2S 3S | 4H 5H JK | 9D 9H 9S | KS KD KC KH")
    b.show("p3", "5C 6C 7C | QD 2H 8S")
    return b.record(
        {
            "winner": "p1",
            "points": {"p2": 20, "p3": 27},
            "gross": "49.70",
            "fee": "4.97",
            "net_to_winner": "44.73",
        }
    )


def seed_points() -> dict:
    """Seed 004's worked example: value 2, losers 10, 20, 30, 40 -> 200 gross."""
    b = build(
        "seed-points-200",
        ["p1", "p2", "p3", "p4", "p5"],
        {
            "p1": "3H 4H 5H 6H 7C 8C 9C QS QH QD 5S 6S KD",
            "p4": "5D 6D 7D 8D 9S TS JS QS 3C 3S 3D 4C 6H",
            "p5": "9H TH JH 4S 5S 6S KC KS KH 8C 9D 5C 8D",
        },
        wild="2C",
        open_card="TD",
        dealer="p5",
        seed=4,
        stakes={"currency": "INR", "point_value": "2.00", "fee_percent": "10"},
    )
    b.turn("p1")
    b.drop("p2")  # first drop: 20
    for player in ("p3", "p4", "p5", "p1"):
        b.turn(player)
    b.drop("p3")  # middle drop: 40
    b.turn("p4")
    b.turn("p5")
    b.pick("p1", "closed", want="7S")
    b.declare("p1", "KD", "3H 4H 5H 6H | 7C 8C 9C | QS QH QD | 5S 6S 7S")
    b.show("p4", "5D 6D 7D 8D | 9S TS JS QS | 3C 3S 3D")  # 4C 6H loose: 10
    # p5 shows nothing: scored on the best grouping, 30.
    return b.record(
        {
            "winner": "p1",
            "points": {"p2": 20, "p3": 40, "p4": 10, "p5": 30},
            "gross": "200.00",
            "fee": "20.00",
            "net_to_winner": "180.00",
        }
    )


def seed_raise() -> dict:
    """Seed 000's worked example: 20 @1, 40 @1.3, 10 and 15 @2 -> 122 gross."""
    b = build(
        "seed-raise-122",
        ["p1", "p2", "p3", "p4", "p5"],
        {
            "p1": "3H 4H 5H 6H 7C 8C 9C QS QH QD 5S 6S KD",
            "p4": "5D 6D 7D 8D 9S TS JS QS 3C 3S 3D 4C 6H",
            "p5": "9H TH JH QH 4S 5S 6S KC KS KH 8C 4D 3H",
        },
        wild="2C",
        open_card="TD",
        variant="raise",
        dealer="p5",
        seed=5,
        reserve="7S",
        stakes={
            "currency": "INR",
            "point_value": "1.00",
            "raise": {"step": "0.10", "max": "2.00"},
            "fee_percent": "10",
        },
    )
    b.turn("p1")
    b.drop("p2")  # round 0: first drop, 20 @ 1.00
    for player in ("p3", "p4", "p5"):
        b.turn(player)
    for _round in (1, 2):
        for player in ("p1", "p3", "p4", "p5"):
            b.turn(player)
    b.turn("p1")
    b.drop("p3")  # round 3: middle drop, 40 @ 1.30
    b.turn("p4")
    b.turn("p5")
    for _round in range(4, 10):
        for player in ("p1", "p4", "p5"):
            b.turn(player)
    b.pick("p1", "closed", want="7S")  # round 10: value 2.00
    b.declare("p1", "KD", "3H 4H 5H 6H | 7C 8C 9C | QS QH QD | 5S 6S 7S")
    return b.record(
        {
            "winner": "p1",
            "points": {"p2": 20, "p3": 40, "p4": 10, "p5": 15},
            "gross": "122.00",
            "fee": "12.20",
            "net_to_winner": "109.80",
        }
    )


def autodrop_wrong_show() -> dict:
    """Three misses auto-drop p2; p3's wrong show costs 80; p1 wins; p4 shows badly."""
    b = build(
        "T2-000451",
        ["p1", "p2", "p3", "p4"],
        {
            "p1": "AC 2C 3C 4D 5D 6D 7H 8H TH TS TD TC 4S",
            "p3": "2H 3H 4H 6S 7S 8S JC QC KC 5C 5D 5H AD",
            "p4": "KS KD KH QS QH JD JH AH AS 3S 6C 8C 4C",
        },
        wild="9S",
        open_card="2D",
        dealer="p4",
        seed=9,
        table="T2",
        timed=True,
        stakes={"currency": "INR", "point_value": "0.50", "fee_percent": "15"},
    )
    b.turn("p1")
    b.miss("p2")
    b.turn("p3")
    b.turn("p4")
    b.turn("p1")
    b.miss("p2")
    # p3 thinks AD completes a run with 2H 3H 4H: it does not (wrong suit), so a wrong show.
    b.pick("p3", "closed", want="QS")
    b.declare("p3", "QS", "2H 3H 4H AD | 6S 7S 8S | JC QC KC | 5C 5D 5H")
    b.turn("p4")
    b.turn("p1")
    b.miss("p2")  # third miss in a row: auto-drop, 40
    b.turn("p4")
    b.pick("p1", "closed", want="9C")  # 9s are wild
    b.declare("p1", "4S", "AC 2C 3C | 4D 5D 6D | 7H 8H 9C | TH TS TD TC")
    # p4 shows only one set and keeps the rest loose (no pure sequence: everything counts).
    b.show("p4", "KS KD KH")
    return b.record(
        {
            "winner": "p1",
            "points": {"p2": 40, "p3": 80, "p4": 80},
            "gross": "100.00",
            "fee": "15.00",
            "net_to_winner": "85.00",
        }
    )


def reshuffle_toss() -> dict:
    """Six players, a toss instead of a dealer, and the stock runs out: a reshuffle."""
    players = ["a1", "b2", "c3", "d4", "e5", "f6"]
    b = build(
        "T9-000777",
        players,
        {"d4": "2S 3S 4S 9H 9D 9C JC QC KC 5D 6D 8D 7C"},
        wild="4H",
        open_card="QS",
        toss={"a1": "9S", "b2": "KC", "c3": "AH", "d4": "5D", "e5": "KS", "f6": "2C"},
        seed=77,
        reserve="7D",
        table="T9",
        timed=True,
        stakes={"currency": "INR", "point_value": "0.25", "fee_percent": "12.5"},
    )
    # c3 wins the toss (Ace high), so b2 deals and c3 moves first.
    order = ["c3", "d4", "e5", "f6", "a1", "b2"]
    b.discard("c3", b.pick("c3", want="7D"))  # into the open pile, to come back later
    turns = 1
    while b.stock_left:
        b.turn(order[turns % 6])
        turns += 1
    # 26 quiet turns empty the stock; the open pile (less its top) is the new stock.
    before_d4 = (order.index("d4") - turns % 6) % 6
    b.reshuffle(plant={before_d4: "7D"})
    while order[turns % 6] != "d4":
        b.turn(order[turns % 6])
        turns += 1
    b.pick("d4", "closed", want="7D")
    b.declare("d4", "7C", "2S 3S 4S | 9H 9D 9C | JC QC KC | 5D 6D 7D 8D")
    return b.record()


def deal_show_deccan() -> dict:
    """Deccan profile, a printed joker as indicator (Aces wild), a declaration on turn one."""
    b = build(
        "T3-000010",
        ["p1", "p2", "p3"],
        {"p1": "3D 4D 5D 6C AH 8C 9S 9H AS JD QD KD 4S"},
        wild="JK",
        open_card="7H",
        rules="deccan",
        dealer="p3",
        seed=10,
        table="T3",
        stakes={"currency": "INR", "point_value": "5.00", "fee_percent": "10"},
    )
    b.pick("p1", "closed", want="9C")
    b.declare("p1", "4S", "3D 4D 5D | 6C AH 8C | 9S 9H 9C AS | JD QD KD")
    return b.record()


def deal_show_rummycircle() -> dict:
    """rummycircle deal show: losers with no turn pay half their hand score (2 to 40)."""
    b = build(
        "T4-000020",
        ["p1", "p2", "p3", "p4"],
        {
            "p1": "5H 6H 7H 8H 2C 3C 4C 9D TD JD 3S 3D 6S",
            "p2": "AS 2S 3S 5C 6C 7C 8C KD KH KS QH QD 2D",
            "p4": "KC KD QC QS JC JS TC TS 9C 9S 8S 8D 7S",
        },
        wild="5S",
        open_card="AD",
        dealer="p4",
        seed=20,
        table="T4",
        stakes={"currency": "INR", "point_value": "0.10", "fee_percent": "10"},
    )
    b.pick("p1", "closed", want="3H")
    b.declare("p1", "6S", "5H 6H 7H 8H | 2C 3C 4C | 9D TD JD | 3S 3D 3H")
    b.show("p2", "AS 2S 3S | 5C 6C 7C 8C | KD KH KS")
    return b.record()


def last_player_standing() -> dict:
    """Raise Rummy on an explicit schedule; everyone else drops and p3 wins with 0."""
    b = build(
        "T5-000300",
        ["p1", "p2", "p3", "p4"],
        {},
        wild="8C",
        open_card="3D",
        variant="raise",
        dealer="p2",
        seed=30,
        table="T5",
        stakes={
            "currency": "INR",
            "point_value": "0.50",
            "raise": {"schedule": ["0.50", "0.75", "1.00"]},
            "fee_percent": "5",
        },
    )
    b.turn("p3")
    b.drop("p4")  # first drop 20 @ 0.50
    b.turn("p1")
    b.turn("p2")
    b.turn("p3")
    b.drop("p1")  # middle drop 40 @ 0.75
    b.turn("p2")
    b.turn("p3")
    b.drop("p2")  # middle drop 40 @ 1.00: p3 is the last player standing
    return b.record({"winner": "p3", "points": {"p4": 20, "p1": 40, "p2": 40}, "gross": "80.00"})


GAMES = [
    format_example,
    seed_points,
    seed_raise,
    autodrop_wrong_show,
    reshuffle_toss,
    deal_show_deccan,
    deal_show_rummycircle,
    last_player_standing,
]


def games() -> list[dict]:
    return [make() for make in GAMES]


def broken() -> list[dict]:
    """Records that must be rejected, each for one reason, among good ones."""
    good = format_example()
    out = []

    not_held = copy.deepcopy(good)
    not_held["game_id"] = "bad-not-held"
    not_held["moves"][1]["card"] = "9C"  # p1 holds no 9C yet
    out.append(not_held)

    wrong_stock = copy.deepcopy(good)
    wrong_stock["game_id"] = "bad-stock"
    wrong_stock["moves"][0]["card"] = "5S"  # the stock's top is 4H
    out.append(wrong_stock)

    out.append(seed_points())

    bad_card = copy.deepcopy(good)
    bad_card["game_id"] = "bad-card"
    bad_card["moves"][1]["card"] = "1Z"
    out.append(bad_card)

    bad_type = copy.deepcopy(good)
    bad_type["game_id"] = "bad-type"
    bad_type["moves"][2]["type"] = "fold"
    out.append(bad_type)

    out_of_turn = copy.deepcopy(good)
    out_of_turn["game_id"] = "bad-turn"
    out_of_turn["moves"][2]["player"] = "p3"
    out.append(out_of_turn)
    return out


def write(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))


if __name__ == "__main__":
    DATA.mkdir(exist_ok=True)
    write(DATA / "games.jsonl", games())
    write(DATA / "broken.jsonl", broken())
    print(f"wrote {DATA / 'games.jsonl'} and {DATA / 'broken.jsonl'}")
