"""One game walked move by move into what the fair-play signals count.

The walk keeps what the dealer keeps (every hand, the open pile, the stock in order, who
discarded the open card, who is out) and notes, for each move, only what a signal needs:

- **open choices** (hidden-card knowledge): at a pick where the open card linked with the
  hand, could be taken and the stock was not empty, whether the player took the stock
  (``stock``), and whether the hidden top of the stock was of use to that hand (see
  :func:`_choice`) less the share of the cards this player could not see that would have
  been (``surprise``), with that share's variance. An honest choice cannot depend on the
  hidden card, so ``surprise`` has mean 0 whatever the choice; a player who sees it takes
  the stock when it is of use, and a useless open card when the stock is no better.
- **feeds** (colluding pairs): each time a player faced the card the previous player
  discarded, whether they took it and, when they did, how much it lowered their hand's
  least score (the solver's ``min_hand_score`` before the pick and after their discard).
- **exits** (chip dumping): each drop or wrong show, with the hand's least score at that
  moment and who was still in the deal.
- **intervals** (bot-like play): seconds between a move and the one before it, by kind.
- **discards** (bot-like play): each discard from 14 cards against the solver's choice (the
  card whose discard leaves the least score): whether it left no more, and how many links the
  solver's choice had with the cards kept (people keep linked cards; a program need not).
- **deals** (colluding pairs): each player's hand score as dealt, and who dropped (first or
  middle drop) with whom still in: a partner who drops when the other was dealt a strong hand.

Pure: records in, plain data out. The record's variant says where its 13-card deals are
(``Variant.thirteen_card_deals``: one for a Points or Raise game, each deal of a match) and
whether points carry from deal to deal (``carries_points``: where chips are dumped);
records of other games give nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime

from domain import variants
from domain.cards import ALL_CARDS, SUITS, Card, card_of, cards_of, full_deck, wild_rank
from domain.rummy13.bot import links
from domain.rummy13.melds import evaluate
from domain.rummy13.profiles import get_profile
from domain.rummy13.solver import deadwood, min_hand_score

TIMED_KINDS = ("pick", "discard", "drop", "declare")
# A card's worth to a hand, as the hidden-card signal reads it: its links, three at most; a
# joker counts three.
MOST_LINKS = 3


class Unreadable(ValueError):
    """A game the walk cannot follow: its id, the replay's move number and what went wrong.
    The projection records it and goes on with the other games."""

    def __init__(self, game_id: str, step: int, what: str) -> None:
        super().__init__(game_id, step, what)  # the arguments pickle (the walking workers)
        self.game_id, self.step, self.what = game_id, step, what

    def __str__(self) -> str:
        return f"game {self.game_id}, move {self.step}: {self.what}"


@dataclass
class OpenChoice:
    player: str
    stock: bool
    surprise: float  # the hidden card's worth less what a random unseen card is worth
    variance: float  # of that worth over the unseen cards
    step: int


@dataclass
class Discard:
    """One discard weighed as the solver weighs it: of the 14 cards held, the one whose
    discard leaves the least hand score is the solver's choice (on a tie, any of them)."""

    player: str
    agreed: bool  # the card discarded leaves that least score
    breaks: int  # the solver's choice's links with the other cards (MOST_LINKS at most):
    # 0, a loose card, the discard anyone would see; more, a card people keep for its links
    loss: int  # the score the discard left above the solver's choice
    step: int
    card: str = ""


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
    discards: list[Discard] = field(default_factory=list)

    def packed(self) -> tuple:
        """These facts as plain tuples, fields in order (what :meth:`Summary.add_packed
        <replays.fairplay.summary.Summary.add_packed>` reads): a walking worker sends them
        to the process that adds them up, and tuples pickle and unpickle about five times
        faster than the dataclasses (1.3 s a 1,000 games before, over half of it in the
        one process that adds up and writes)."""
        return (
            self.game_id,
            self.day,
            self.table,
            self.players,
            self.chips,
            [(c.player, c.stock, c.surprise, c.variance, c.step) for c in self.choices],
            [(f.feeder, f.picker, f.picked, f.gain, f.step) for f in self.feeds],
            [(e.player, e.kind, e.score, e.others, e.step) for e in self.exits],
            self.intervals,
            [(d.dealt, d.drops) for d in self.deals],
            [(d.player, d.agreed, d.breaks, d.loss, d.step, d.card) for d in self.discards],
        )


def _seconds(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text).timestamp()  # Python 3.11 reads a "Z" itself
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
    solver = _Solver(profile)
    # The first of equal texts for them all, for the game: a stored game's moves each hold
    # their own copies of the players' ids and the moves' kinds, and the facts pickle each
    # object once (and the process adding them up makes each once), not once a move.
    players: dict[str, str] = {}
    kinds: dict[str, str] = {}
    for step, part in parts:
        started = part.get("at") or record.get("started_at")
        _walk(facts, part, seating, solver, deck, step, started, players, kinds)
    return facts


def _unreadable(facts, step: int, move: dict | None, error: Exception) -> Unreadable:
    kind = f" ({move.get('type')} by {move.get('player')})" if move else " (the deal)"
    what = str(error) if isinstance(error, _Off) else f"{type(error).__name__}: {error}"
    return Unreadable(facts.game_id, step, f"{what}{kind}")


class _Off(ValueError):
    """The record leaves the walk's own model of the table (the walk's words)."""


class _Solver:
    """The solver's scores and groupings the walk asks for, each hand's asked once: a
    player's hand after a discard is the hand they pick to next turn, and the hand a drop
    gives up, so weighing a discard also scores (and groups) the next turn's hand."""

    def __init__(self, profile):
        self.profile = profile
        # The 13-card solver scores a 14-card hand the same way, told the hand's size: the
        # hand before a discard, whose grouping says what every discard would leave.
        self.wide = replace(profile, hand_size=profile.hand_size + 1)
        # player: (hand, its least score, its loose cards in a best grouping or None)
        self.known: dict[str, tuple[tuple[Card, ...], int, tuple[Card, ...] | None]] = {}
        # player: (hand, score, loose cards) of the last 13 cards the solver itself grouped
        # for them. A player who discards the card just picked keeps the hand they held
        # before the pick; when that discard is a grouped card, the kept hand's grouping is
        # this one, not asked again (511 of 2,328 regroupings a 400 games). ``known`` cannot tell:
        # its loose cards may be a 14-card grouping's less the discard, which can differ.
        self.grouped: dict[str, tuple[tuple[Card, ...], int, tuple[Card, ...]]] = {}

    def clear(self) -> None:
        """A new deal: nothing known of its hands."""
        self.known.clear()
        self.grouped.clear()

    def score(self, player: str, hand: list[Card], wild: Card) -> int:
        kept = self.known.get(player)
        if kept is not None and kept[0] == tuple(hand):
            return kept[1]
        score = min_hand_score(hand, wild, self.profile)
        self.known[player] = (tuple(hand), score, None)
        return score

    def counted(self, player: str, hand: list[Card], wild: Card) -> tuple[Card, ...]:
        """The cards whose points count in a best grouping of ``hand`` (its deadwood)."""
        kept = self.known.get(player)
        if kept is not None and kept[0] == tuple(hand) and kept[2] is not None:
            return kept[2]
        return self._group(player, tuple(hand), wild)[2]

    def _group(self, player: str, hand: tuple[Card, ...], wild: Card) -> tuple:
        """The solver's best grouping of the 13 cards ``hand`` as (hand, score, loose cards),
        now known for ``player``."""
        grouped = self.grouped.get(player)
        if grouped is None or grouped[0] != hand:
            grouped = self.grouped[player] = (hand, *deadwood(hand, wild, self.profile))
        self.known[player] = grouped
        return grouped

    def discard(
        self, player: str, hand: list[Card], card: Card, wild: Card, place: int | None = None
    ) -> Discard:
        """``card`` discarded from the 14 of ``hand``, against the solver's choice.

        The 14 cards' best grouping says what each of its loose (counted) cards leaves when
        discarded: the score less that card's points, the rest of the grouping standing.
        The solver's choice is the loose card of most points (the least score left); a
        discard agrees when it leaves no more than that. A grouped card can leave as little
        only when the hand regroups, a rare case asked of the solver only when it is the
        card discarded. One grouping a discard; it also groups the 13 cards kept.
        ``place``: where ``card`` is in ``hand``, when the caller knows."""
        joker = wild_rank(wild)
        # The 14 cards are the 13 held before the pick and the card picked: with that card
        # loose they score the 13's least score and its points, a bound the search starts
        # from (the same grouping comes back, solver.best_grouping says why). It saves
        # little, 1.5 % of the choices of sets decided: two times in three the picked card
        # stays loose, the bound is the least score itself, and the search must still find
        # a grouping that reaches it.
        bound = None
        before = self.known.get(player)
        if before is not None and len(before[0]) + 1 == len(hand) and before[0] == tuple(hand[:-1]):
            picked = hand[-1].rank
            bound = before[1] + (0 if picked in (0, joker) else _POINTS[picked])
        whole, counted = deadwood(hand, wild, self.wide, bound)
        if not counted:
            return None  # a hand that could declare: no discard to weigh
        most, choice = -1, None
        for loose in counted:
            rank = loose.rank
            points = 0 if rank == joker else _POINTS[rank]  # a printed joker's are 0
            if points > most:
                most, choice = points, loose
        best = whole - most
        # What the solver's choice breaks up: its links with the other 13 cards (a card, or
        # another copy of it, links with none of its own).
        breaks = links(choice, hand, wild, MOST_LINKS)
        if place is None:
            place = _place(hand, card)
        kept = (*hand[:place], *hand[place + 1 :])
        # The counted cards are the hand's own objects, and the walk's cards are interned
        # (Card.parse's): a card not found by identity is not there, and _place's second pass,
        # by value, would only look again (a third of the discards are of a grouped card).
        at = _held(counted, card)
        if at >= 0:
            left = whole - (0 if card.rank == joker else _POINTS[card.rank])
            self.known[player] = (kept, left, (*counted[:at], *counted[at + 1 :]))
        else:
            # Grouped, not only scored: the player's next pick reads the grouping, and a
            # grouping costs about what a score does.
            left = self._group(player, kept, wild)[1]
        return Discard(player, left <= best, breaks, max(0, left - best), 0, str(card))


def _walk(facts, part, seating, solver, deck, step0, started, players, kinds) -> None:
    step, move = step0, None  # the move being walked (the deal's own step: none yet)
    try:
        deal = part["deal"]
        wild = card_of(deal["wild"])
        joker = wild_rank(wild)
        hands = {p: cards_of(cards) for p, cards in deal["hands"].items()}
        order = [p for p in seating if p in hands] or list(hands)
        stock = cards_of(deal["stock"], top_last=True)  # pop() is the top
        solver.clear()
        for player in order:
            solver.counted(player, hands[player], wild)  # the dealt hand's score and grouping
        dealt = Deal({p: solver.score(p, hands[p], wild) for p in order}, {})
        facts.deals.append(dealt)
        pile = [card_of(deal["open"])]
        fed_by: str | None = None
        out: set[str] = set()
        pending: tuple[Feed, int] | None = None  # an open pick waiting for its discard
        last = _seconds(started)
        wide = solver.wide.hand_size
        intervals, feeds, exits = facts.intervals, facts.feeds, facts.exits
        score = solver.score
        for following, current in enumerate(part["moves"], step0 + 1):
            kind, player = current.get("type"), current.get("player")
            step, move = following, current  # (a move that is no mapping: named by the last)
            now = _seconds(move.get("at"))
            if now is not None:
                if kind in TIMED_KINDS and last is not None and player:
                    player = players.setdefault(player, player)
                    intervals.append((player, kinds.setdefault(kind, kind), now - last, step))
                last = now
            if kind == "pick":
                hand = hands[player]
                top = pile[-1] if pile else None
                top_joker = top is not None and top.rank in (0, joker)
                from_open = move.get("from") == "open"
                if top is not None and stock and not (top_joker and fed_by not in (None, player)):
                    if not top_joker and links(top, hand, wild, 1):
                        # An open card that links with the hand: a choice (one that links
                        # with nothing is left by everyone, so its choice says nothing).
                        loose = solver.counted(player, hand, wild)
                        _choice(
                            facts, player, hand, loose, top, stock[-1], wild, deck, from_open, step
                        )
                    if fed_by not in (None, player):
                        feed = Feed(fed_by, player, from_open, 0, step)
                        feeds.append(feed)
                        if from_open:
                            pending = (feed, score(player, hand, wild))
                card = card_of(move["card"])
                if from_open:
                    if not pile:
                        raise _Off("an open pick from an empty pile")
                    pile.pop()
                    fed_by = None  # the card beneath was discarded earlier, by whoever
                elif stock:
                    stock.pop()
                hand.append(card)
            elif kind == "discard":
                hand = hands[player]
                card = card_of(move["card"])
                place = _place(hand, card)
                if place >= 0:
                    if len(hand) == wide:
                        weighed = solver.discard(player, hand, card, wild, place)
                        if weighed is not None:
                            weighed.step = step
                            facts.discards.append(weighed)
                    del hand[place]
                pile.append(card)
                fed_by = player
                if pending is not None:
                    pending = _settle(pending, player, hand, wild, solver)
            elif kind == "declare":
                hand = hands[player]
                card = card_of(move["finish"])
                place = _place(hand, card)
                if place >= 0:
                    del hand[place]
                if pending is not None:
                    pending = _settle(pending, player, hand, wild, solver)
                if not _valid(move, wild, solver.profile):
                    # A wrong show, judged as domain/ judges it (not by a later declaration:
                    # a deal may end on the others' drops after a wrong show). Its finish
                    # card goes to the open pile like a discard.
                    others = tuple(p for p in order if p not in out and p != player)
                    exits.append(
                        Exit(player, "wrong_show", score(player, hand, wild), others, step)
                    )
                    out.add(player)
                    pile.append(card)
                    fed_by = player
            elif kind == "drop":
                others = tuple(p for p in order if p not in out and p != player)
                dealt.drops.setdefault(player, (step, others))
                hand = hands[player]
                if len(hand) == 13:
                    exits.append(Exit(player, "drop", score(player, hand, wild), others, step))
                out.add(player)
            elif kind == "reshuffle":
                stock = cards_of(move.get("stock", []), top_last=True)
                pile = pile[-1:]
    except Exception as error:  # any way a record leaves the rules the walk follows
        raise _unreadable(facts, step, move, error) from error


def _place(cards, card: Card) -> int:
    """Where ``card`` is in ``cards``, -1 when it is not. Cards are interned, so identity finds
    it without the dataclass's ``__eq__`` (a Python call per card passed: ``list.remove`` and
    ``in`` made 1,800 of them a game). Equality stays the fallback, for a card made outside
    ``Card.parse``, compared field by field as the dataclass compares, not through its
    ``__eq__``: the fallback runs through every card each time a card is not there (a grouped
    card looked for among a grouping's loose cards), 120,000 calls a 400 games."""
    for place, held in enumerate(cards):
        if held is card:
            return place
    rank, suit = card.rank, card.suit
    for place, held in enumerate(cards):
        if held.rank == rank and held.suit == suit:
            return place
    return -1


def _held(cards, card: Card) -> int:
    """Where ``card`` itself (not an equal card) is in ``cards``, -1 when it is not."""
    for place, held in enumerate(cards):
        if held is card:
            return place
    return -1


def _valid(move, wild, profile) -> bool:
    groups = [[Card.parse(c) for c in group] for group in move.get("groups") or []]
    return evaluate(groups, [], wild, profile).valid_declaration


def _settle(pending, player, hand, wild, solver):
    if pending is not None and pending[0].picker == player:
        feed, before = pending
        feed.gain = before - solver.score(player, hand, wild)
        return None
    return pending


def _choice(facts, player, hand, loose, top, hidden, wild, deck, from_open, step) -> None:
    """The hidden card's use to the hand, against a random unseen card's.

    A card is *of use* when the hand's best grouping (``loose``: its counted cards) would
    take it: a joker; a card that makes a set or a sequence with two loose cards; a card
    with fewer points than the highest loose card (it would stand in that card's place).
    One grouping a choice, read for every kind of card (as bit masks of ranks, suit by
    suit), and the same reading for the hidden card as for the unseen ones: an honest
    choice, blind to the hidden card, scores 0 on average whatever the player's skill.
    """
    joker = wild_rank(wild)
    # Loose ranks, suit by suit in lanes of 16 bits (bit r of its lane for rank r, bit 14
    # the Ace above the King): each lane's reading at once, none spilling into the next
    # (bits 0 and 15 of a lane never hold a rank, and what a shift moves there is masked).
    loose_ranks = 0
    highest = 0
    for card in loose:
        rank = card.rank
        if rank and rank != joker:
            loose_ranks |= _RANK_BITS[rank] << _LANE[card.suit]
            if _POINTS[rank] > highest:
                highest = _POINTS[rank]
    m = loose_ranks
    # Each lane turned onto the three others: a rank loose in two other suits at least
    # makes a set's third card.
    r1 = (m << 16 | m >> 48) & _LANES
    r2 = (m << 32 | m >> 32) & _LANES
    r3 = (m << 48 | m >> 16) & _LANES
    runs = ((m << 2) & (m << 1)) | ((m << 1) & (m >> 1)) | ((m >> 1) & (m >> 2))
    runs |= (runs >> 13) & _ACE_LOW  # a run's Ace above the King is also the Ace below
    common = (_LOWER[highest] | (1 << joker)) * _EACH_LANE
    useful = (runs | (r1 & r2) | (r1 & r3) | (r2 & r3) | common) & _ALL_RANKS

    # What this player cannot see: the packs less hand, open card and wild indicator.
    packs, jokers = deck[0], deck[-1]
    total = 52 * packs + jokers - len(hand) - 2
    hits = packs * useful.bit_count() + jokers
    for card in (*hand, top, wild):
        rank = card.rank
        if not rank or useful >> (_LANE[card.suit] + rank) & 1:
            hits -= 1
    if not total or hits in (0, total):
        return  # every unseen card alike: the choice cannot tell what was seen
    share = hits / total
    rank = hidden.rank
    surprise = (not rank or bool(useful >> (_LANE[hidden.suit] + rank) & 1)) - share
    facts.choices.append(OpenChoice(player, not from_open, surprise, share * (1 - share), step))


_ACE_HIGH = 1 << 14
_RANKS = sum(1 << rank for rank in range(1, 14))
_LANE = {suit: 16 * place for place, suit in enumerate(SUITS)}  # a suit's lane of rank bits
_EACH_LANE = sum(1 << lane for lane in _LANE.values())  # a lane's bits times this: in each
_LANES = 0xFFFF * _EACH_LANE
_ALL_RANKS = _RANKS * _EACH_LANE
_ACE_LOW = 2 * _EACH_LANE  # bit 1 of each lane
_RANK_BITS = [0] + [(1 << rank) | (_ACE_HIGH if rank == 1 else 0) for rank in range(1, 14)]
_POINTS = [0] + [10 if rank in (1, 10, 11, 12, 13) else rank for rank in range(1, 14)]
# The ranks worth fewer points than each highest loose card (0..10 points).
_LOWER = [sum(1 << r for r in range(1, 14) if _POINTS[r] < most) for most in range(11)]
