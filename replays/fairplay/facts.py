"""One game walked move by move into what the fair-play signals count.

The walk keeps what the dealer keeps (every hand, the open pile, the stock in order, who
discarded the open card, who is out) and notes, for each move, only what a signal needs:

- **open choices** (hidden-card knowledge): at a pick where the open card linked with the
  hand, could be taken and the stock was not empty, whether the player took the stock
  (``stock``), and the hidden top of the stock's worth to that hand (its links, three at
  most, a joker three) less the mean worth of the cards this player could not see
  (``surprise``), with that worth's variance. An honest choice cannot depend on the hidden
  card, so ``surprise`` has mean 0 whatever the choice; a player who sees it takes the stock
  when it is worth more.
- **feeds** (colluding pairs): each time a player faced the card the previous player
  discarded, whether they took it and, when they did, how much it lowered their hand's
  least score (the solver's ``min_hand_score`` before the pick and after their discard).
- **exits** (chip dumping): each drop or wrong show, with the hand's least score at that
  moment and who was still in the deal.
- **intervals** (bot-like play): seconds between a move and the one before it, by kind.
- **deals** (colluding pairs): each player's hand score as dealt, and who dropped (first or
  middle drop) with whom still in: a partner who drops when the other was dealt a strong hand.

Pure: records in, plain data out. The record's variant says where its 13-card deals are
(``Variant.thirteen_card_deals``: one for a Points or Raise game, each deal of a match) and
whether points carry from deal to deal (``carries_points``: where chips are dumped);
records of other games give nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from domain import variants
from domain.cards import ALL_CARDS, SUITS, Card, full_deck, wild_rank
from domain.rummy13.bot import links
from domain.rummy13.profiles import get_profile
from domain.rummy13.solver import min_hand_score

TIMED_KINDS = ("pick", "discard", "drop", "declare")
# A card's worth to a hand, as the hidden-card signal reads it: its links, three at most; a
# joker counts three.
MOST_LINKS = 3
_SUIT_PLACE = {suit: place for place, suit in enumerate(SUITS)}
_NEAR = {
    rank: tuple(
        r
        for r in sorted(
            {rank - 2, rank - 1, rank + 1, rank + 2}
            | ({12, 13} if rank == 1 else set())
            | ({1} if rank in (12, 13) else set())
        )
        if 1 <= r <= 13
    )
    for rank in range(1, 14)
}


@dataclass
class OpenChoice:
    player: str
    stock: bool
    surprise: float  # the hidden card's worth less what a random unseen card is worth
    variance: float  # of that worth over the unseen cards
    step: int


@dataclass
class Feed:
    feeder: str
    picker: str
    picked: bool
    gain: int
    step: int


@dataclass
class Exit:
    player: str
    kind: str  # drop, wrong_show
    score: int
    others: tuple[str, ...]  # still in the deal
    step: int


@dataclass
class Deal:
    """One 13-card deal: each player's hand score as dealt (how strong a partner was), and
    each player's drop (first or middle: a choice, not missed turns) with who was still in."""

    dealt: dict[str, int]
    drops: dict[str, tuple[int, tuple[str, ...]]]  # player: (step, others still in)


@dataclass
class GameFacts:
    game_id: str
    day: str  # YYYY-MM-DD of the start
    table: str
    players: tuple[str, ...]
    chips: bool  # several deals scored by points: where chip dumping pays
    choices: list[OpenChoice] = field(default_factory=list)
    feeds: list[Feed] = field(default_factory=list)
    exits: list[Exit] = field(default_factory=list)
    intervals: list[tuple[str, str, float, int]] = field(default_factory=list)
    deals: list[Deal] = field(default_factory=list)


def _seconds(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def game_facts(record: dict) -> GameFacts | None:
    """What the signals count in one game record; None for a record with no 13-card deal."""
    try:
        variant = variants.get(str(record.get("variant")))
    except variants.UnknownVariant:
        return None
    parts = variant.thirteen_card_deals(record)
    if not parts:
        return None
    table = record.get("table") or {}
    seating = [p["id"] for p in sorted(record.get("players", []), key=lambda p: p.get("seat", 0))]
    facts = GameFacts(
        game_id=record["game_id"],
        day=str(record.get("started_at", ""))[:10],
        table=str(table.get("id", "")),
        players=tuple(seating),
        chips=variant.carries_points,
    )
    profile = get_profile(record.get("rules"))
    packs = full_deck(int(table.get("decks", 2)), int(table.get("jokers_per_deck", 1)))
    deck = [packs.get(card, 0) for card in ALL_CARDS]
    for step, part in parts:
        started = part.get("at") or record.get("started_at")
        _walk(facts, part, seating, profile, deck, step, started)
    return facts


def _walk(facts, part, seating, profile, deck, step0, started) -> None:
    deal = part["deal"]
    wild = Card.parse(deal["wild"])
    hands = {p: [Card.parse(c) for c in cards] for p, cards in deal["hands"].items()}
    order = [p for p in seating if p in hands] or list(hands)
    stock = [Card.parse(c) for c in reversed(deal["stock"])]  # pop() is the top
    dealt = Deal({p: min_hand_score(hands[p], wild, profile) for p in order}, {})
    facts.deals.append(dealt)
    pile = [Card.parse(deal["open"])]
    fed_by: str | None = None
    out: set[str] = set()
    pending: tuple[Feed, int] | None = None  # an open pick waiting for its discard
    last = _seconds(started)
    moves = part["moves"]
    last_declare = max((i for i, m in enumerate(moves) if m.get("type") == "declare"), default=None)
    for index, move in enumerate(moves):
        kind, player = move.get("type"), move.get("player")
        step = step0 + index + 1
        now = _seconds(move.get("at"))
        if kind in TIMED_KINDS and now is not None and last is not None and player:
            facts.intervals.append((player, kind, now - last, step))
        if now is not None:
            last = now
        if kind == "pick":
            hand = hands[player]
            top = pile[-1] if pile else None
            may_take = top is not None and not (top.is_joker(wild) and fed_by not in (None, player))
            from_open = move.get("from") == "open"
            if may_take and stock and not top.is_joker(wild):
                _choice(facts, player, hand, top, stock[-1], wild, deck, from_open, step)
            if may_take and stock and fed_by not in (None, player):
                feed = Feed(fed_by, player, from_open, 0, step)
                facts.feeds.append(feed)
                if from_open:
                    pending = (feed, min_hand_score(hand, wild, profile))
            card = Card.parse(move["card"])
            if from_open:
                pile.pop()
                fed_by = None  # the card beneath was discarded earlier, by whoever
            elif stock:
                stock.pop()
            hand.append(card)
        elif kind == "discard":
            hand = hands[player]
            card = Card.parse(move["card"])
            if card in hand:
                hand.remove(card)
            pile.append(card)
            fed_by = player
            pending = _settle(pending, player, hand, wild, profile)
        elif kind == "declare":
            hand = hands[player]
            card = Card.parse(move["finish"])
            if card in hand:
                hand.remove(card)
            pending = _settle(pending, player, hand, wild, profile)
            if index != last_declare:  # play went on: a wrong show
                others = tuple(p for p in order if p not in out and p != player)
                score = min_hand_score(hand, wild, profile)
                facts.exits.append(Exit(player, "wrong_show", score, others, step))
                out.add(player)
                pile.append(card)
                fed_by = player
        elif kind == "drop":
            others = tuple(p for p in order if p not in out and p != player)
            dealt.drops.setdefault(player, (step, others))
            hand = hands[player]
            if len(hand) == 13:
                score = min_hand_score(hand, wild, profile)
                facts.exits.append(Exit(player, "drop", score, others, step))
            out.add(player)
        elif kind == "reshuffle":
            stock = [Card.parse(c) for c in reversed(move.get("stock", []))]
            pile = pile[-1:]


def _settle(pending, player, hand, wild, profile):
    if pending is not None and pending[0].picker == player:
        feed, before = pending
        feed.gain = before - min_hand_score(hand, wild, profile)
        return None
    return pending


def _choice(facts, player, hand, top, hidden, wild, deck, from_open, step) -> None:
    if links(top, hand, wild) == 0:
        return  # an open card no use to the hand: every player takes the stock
    joker = wild_rank(wild)
    exact = [[0] * 14 for _ in SUITS]
    by_rank = [0] * 14
    held = [0] * len(ALL_CARDS)
    for card in hand:
        held[card.index] += 1
        if card.rank not in (0, joker):
            exact[_SUIT_PLACE[card.suit]][card.rank] += 1
            by_rank[card.rank] += 1
    held[top.index] += 1  # the cards this player cannot see: the packs less hand and open card

    def worth(card: Card) -> int:
        if card.rank in (0, joker):
            return MOST_LINKS
        row = exact[_SUIT_PLACE[card.suit]]
        near = by_rank[card.rank] - row[card.rank] + sum(row[r] for r in _NEAR[card.rank])
        return min(MOST_LINKS, near)

    total = first = second = 0
    for card in ALL_CARDS:
        copies = deck[card.index] - held[card.index]
        if copies > 0:
            value = worth(card)
            total += copies
            first += copies * value
            second += copies * value * value
    if not total:
        return
    mean = first / total
    variance = second / total - mean * mean
    if variance <= 1e-9:
        return
    facts.choices.append(OpenChoice(player, not from_open, worth(hidden) - mean, variance, step))
