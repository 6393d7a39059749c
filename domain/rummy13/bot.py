"""Bots for 13-card rummy: sensible, bounded, and only as wise as their own seat.

A bot sees what its seat sees: its own hand, the wild indicator, the open pile's top and
whether it may take it. It judges cards with the rules engine — ``min_hand_score`` for the
score a hand would leave, ``declaration`` for a finish, ``best_grouping`` only to lay out a
show — and weighs at most ``temper.lookahead`` discards per decision, so a turn costs at
most ``2 * lookahead + 1`` solver calls however long the game runs.

Human habits are part of the policy because the ledger must record them: weak starting
hands are dropped (first drop), hopeless ones later (middle drop), a seat times out now and
then and sometimes three times running (auto-drop), and an over-eager player declares a
hand that is not finished (wrong show).
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass

from domain.cards import ALL_CARDS, SUITS, Card, wild_rank
from domain.rummy13.profiles import RuleProfile
from domain.rummy13.solver import best_grouping, declaration, min_hand_score

# Discards that leave the same score are told apart by the card's links to the rest of the
# hand (a linked card is one pick from a group): a point of score per link, two at most.
HOPE_LINKS = 2
# After this many turns of one game a player starts to tire of it (and may drop). Real
# tables rarely see a seat play past a dozen turns: someone declares, or the rest fold.
TIRED_TURNS = 10
# With the stock nearly gone (no more than two cards a seat still in, and this many more),
# a hand still this far from finished folds rather than play on into a reshuffle.
SHORT_STOCK_SPARE = 4
SHORT_STOCK_SCORE = 10
SHORT_STOCK_FOLD = 0.9
HEAD_TO_HEAD_FOLD = 0.15
# A hand this close to finished tempts a rash player to declare it anyway.
RASH_SCORE = 10


@dataclass(frozen=True)
class Temper:
    """How one player plays, steady across that player's games."""

    lookahead: int  # discards weighed per decision with the solver
    careless: float  # chance of throwing back the picked card without weighing it
    caution: float  # readiness to drop a weak or hopeless hand
    miss_rate: float  # chance of letting a turn time out
    away_rate: float  # chance per turn of leaving the table for several turns
    rashness: float  # chance per near-finished turn of declaring too early (wrong show)
    # Chance per discard of asking the solver for the discard that leaves the least score
    # (every card weighed, no eye for links): a program at the seat. People never do.
    solver: float = 0.0

    @classmethod
    def of(cls, player: str, seed: int, novice: bool = False) -> Temper:
        """A player's temper; beginners weigh one discard, and often none."""
        rng = random.Random(f"temper:{seed}:{player}")
        return cls(
            lookahead=1 if novice else rng.choice((2, 3, 3, 4)),
            careless=rng.uniform(0.5, 0.8) if novice else rng.uniform(0.0, 0.08),
            caution=rng.uniform(0.2, 1.0),
            miss_rate=rng.uniform(0.002, 0.03),
            away_rate=rng.uniform(0.0, 0.006),
            rashness=rng.uniform(0.0, 0.03) if novice else rng.uniform(0.0, 0.006),
        )


# A program at the seat (a ``bot`` cheat, domain/simulation/cheats.py): weighs six discards
# with the solver, never careless, never away; the simulator sets how often it takes the
# solver's own discard (``solver``: the cheat's strength).
MACHINE = Temper(lookahead=6, careless=0.0, caution=0.6, miss_rate=0.0, away_rate=0.0, rashness=0.0)


@dataclass(frozen=True)
class Finish:
    """How a turn ends: a discard, or a declaration (``groups``) with ``card`` as finish."""

    card: Card
    groups: list[list[Card]] | None = None
    valid: bool = False  # a declaration the bot knows to be valid; otherwise a wrong show


def links(card: Card, others: list[Card], wild: Card, most: int = 0) -> int:
    """How many cards of ``others`` could sit in a group with ``card`` (jokers aside); with
    ``most``, no more than that: counting stops there (whether a card links at all is
    ``most=1``, and it is asked of every open card the fair-play walk meets).

    >>> from domain.cards import parse_cards
    >>> links(Card.parse("7S"), parse_cards("8S 9S 7H 7S KD"), wild=Card.parse("2C"))
    3
    >>> links(Card.parse("7S"), parse_cards("8S 9S 7H 7S KD"), wild=Card.parse("2C"), most=2)
    2
    """
    joker_rank = wild_rank(wild)
    rank, suit = card.rank, card.suit
    if rank in (0, joker_rank):
        return 0
    count = 0
    # The suit first: most cards share neither suit nor rank, and are passed after one
    # test. A printed joker has no suit and rank 0, so it is passed the same way.
    for other in others:
        if other.suit == suit:
            other_rank = other.rank
            # One comparison after another, not a tuple built a card (SIM109 would build one).
            if other_rank == rank or other_rank == joker_rank or not other_rank:  # noqa: SIM109
                continue  # another copy of the card, or a joker
            gap = abs(rank - other_rank)
            if gap > 2 and 1 in (rank, other_rank):  # the Ace also sits above the King
                gap = 14 - max(rank, other_rank)
            if gap > 2:
                continue
        elif other.rank != rank:
            continue
        count += 1
        if count == most:
            break
    return count


def _neighbour_ranks(rank: int) -> tuple[int, ...]:
    """Ranks one or two places from ``rank`` in a suit, the Ace also above the King."""
    places = {rank - 2, rank - 1, rank + 1, rank + 2}
    if rank == 1:
        places |= {12, 13}
    if rank in (12, 13):
        places.add(1)
    return tuple(sorted(r for r in places if 1 <= r <= 13))


_NEIGHBOURS = {rank: _neighbour_ranks(rank) for rank in range(1, 14)}


def link_table(hand: list[Card], wild: Card) -> dict[Card, int]:
    """:func:`links` of every card of ``hand`` with the rest of the hand, in one pass.

    >>> from domain.cards import parse_cards
    >>> table = link_table(parse_cards("7S 8S 9S 7H 7S KD 2C"), wild=Card.parse("2C"))
    >>> table[Card.parse("7S")], table[Card.parse("KD")], Card.parse("2C") in table
    (3, 0, False)
    """
    joker_rank = wild_rank(wild)
    copies = Counter(c for c in hand if c.rank not in (0, joker_rank))
    ranks = Counter()
    for card, count in copies.items():
        ranks[card.rank] += count
    table = {}
    for card, count in copies.items():
        base = SUITS.index(card.suit) * 13 - 1
        near = sum(copies[ALL_CARDS[base + r]] for r in _NEIGHBOURS[card.rank])
        table[card] = ranks[card.rank] - count + near
    return table


class Bot:
    """One seat's player: its hand and the exact minimum score of that hand."""

    def __init__(
        self,
        player: str,
        hand: list[Card],
        wild: Card,
        profile: RuleProfile,
        temper: Temper,
        rng: random.Random,
    ):
        self.player = player
        self.hand = list(hand)
        self.wild = wild
        self.profile = profile
        self.temper = temper
        self.rng = rng
        self.away = 0  # turns still to miss while away from the table
        self.score = min_hand_score(self.hand, wild, profile)
        self._planned: tuple[Card, int] | None = None

    def _is_joker(self, card: Card) -> bool:
        return card.is_joker(self.wild)

    def _candidates(self, hand: list[Card]) -> list[Card]:
        """Discards worth weighing, best first: unlinked, then high (jokers never)."""
        table = link_table(hand, self.wild)
        first_seen = {}
        for position, card in enumerate(hand):
            first_seen.setdefault(card, position)
        ranked = sorted(table, key=lambda c: (table[c], -c.face_points, first_seen[c]))
        return ranked

    def _weigh(self, hand14: list[Card], candidates: list[Card]) -> tuple[int, Card, int]:
        """The best of ``candidates`` to discard from ``hand14``: (cost, card, score left).

        Cost is the score left plus the discard's links (two at most); on a tie the higher
        card goes.
        """
        weighed = []
        for card in candidates:
            kept = list(hand14)
            kept.remove(card)
            score = min_hand_score(kept, self.wild, self.profile)
            weighed.append((score + min(HOPE_LINKS, links(card, kept, self.wild)), card, score))
        return min(weighed, key=_discard_order)

    # -- decisions -------------------------------------------------------------------
    def misses(self) -> bool:
        """Whether this turn times out. Away players miss until they come back."""
        if self.away:
            self.away -= 1
            return True
        if self.rng.random() < self.temper.away_rate:
            # Gone for good (three misses, the auto-drop) more often than back in time.
            self.away = self.rng.choice((1, 2, 3, 3, 3, 3)) - 1
            return True
        return self.rng.random() < self.temper.miss_rate

    def drops(self, turns_taken: int) -> bool:
        """First drop on a weak starting hand; middle drop on a hopeless one."""
        jokers = sum(map(self._is_joker, self.hand))
        if turns_taken == 0:
            potential = sum(links(c, self.hand, self.wild) for c in self.hand)
            weak = self.score >= 60 and (potential < 16 - 6 * jokers)
            return weak and self.rng.random() < self.temper.caution * 0.7
        if turns_taken >= 4 and jokers <= 1 and self.score >= 50:
            # Paying 40 now beats the 80 a finished opponent would charge.
            return self.rng.random() < self.temper.caution * 0.15
        # Games that drag on: players tire and fold, more readily the longer it goes.
        return turns_taken > TIRED_TURNS and self.rng.random() < 0.02 * (turns_taken - TIRED_TURNS)

    def folds_on_short_stock(self, turns_taken: int, stock_left: int, seats_in: int) -> bool:
        """A middle drop when the stock runs short and this hand is not close to finished:
        the way real tables end before the pile is reshuffled."""
        if turns_taken == 0 or self.score < SHORT_STOCK_SCORE:
            return False
        if stock_left > 2 * seats_in + SHORT_STOCK_SPARE:
            return False
        # Head to head there is no one else to fold for: most play on, some into a reshuffle.
        return self.rng.random() < (SHORT_STOCK_FOLD if seats_in >= 3 else HEAD_TO_HEAD_FOLD)

    def picks_open(self, top: Card, may_take: bool) -> bool:
        """Take the open card when it would lower this hand's best score."""
        self._planned = None
        if not may_take:
            return False
        if self._is_joker(top):
            return True
        if self.temper.lookahead == 1 and self.rng.random() < self.temper.careless:
            return False  # a beginner who did not look at the open pile
        if links(top, self.hand, self.wild) == 0:
            return False  # it cannot join a group, so it cannot lower the score for long
        better = self._improvement([*self.hand, top], top)
        if better is None:
            return False
        self._planned = better
        return True

    # -- cheats (domain/simulation/cheats.py) --------------------------------------
    def picks_seeing(self, top: Card, may_take: bool, hidden: Card) -> bool:
        """A player who has seen the stock's top card takes whichever card leaves the lower
        score (the stock on a tie)."""
        self._planned = None
        if not may_take:
            return False
        if self._is_joker(hidden):
            return False
        if self._is_joker(top):
            return True
        on_stock = self._improvement([*self.hand, hidden], hidden)
        on_open = self._improvement([*self.hand, top], top)
        if on_open is None:
            # Knowing the stock holds nothing better, a card that links is worth keeping.
            return on_stock is None and links(top, self.hand, self.wild) > 0
        if on_stock is not None and on_stock[1] <= on_open[1]:
            return False
        self._planned = on_open
        return True

    def picks_fed(self, top: Card, may_take: bool) -> bool:
        """A partner's discard is weighed with care (never skipped as a careless player
        would), and taken when it lowers the score."""
        self._planned = None
        if not may_take:
            return False
        better = self._improvement([*self.hand, top], top)
        if better is None:
            return False
        self._planned = better
        return True

    def feed(self, discard: Card, partner_hand: list[Card]) -> Card:
        """The card of this hand (or ``discard``) that links most to the partner's hand; it
        replaces ``discard`` and is returned. Jokers are kept."""
        hand14 = [*self.hand, discard]
        gift = max(
            (c for c in hand14 if not self._is_joker(c)),
            key=lambda c: (links(c, partner_hand, self.wild), c == discard),
            default=discard,
        )
        if gift == discard or links(gift, partner_hand, self.wild) == 0:
            return discard
        hand14.remove(gift)
        self.hand = hand14
        self.score = min_hand_score(self.hand, self.wild, self.profile)
        return gift

    def wrong_show_groups(self) -> list[list[Card]]:
        return self._wrong_show_groups()

    def take(self, card: Card, from_open: bool = False) -> Finish:
        """Add the picked card and decide how the turn ends.

        A card taken from the open pile is kept: it was taken to be used.
        """
        planned, self._planned = self._planned, None
        hand14 = [*self.hand, card]
        if self.temper.solver and self.rng.random() < self.temper.solver:
            planned = self._solver_discard(hand14)
        if planned is not None:
            discard, score = planned
        else:
            discard, score = self._choose_discard(hand14, card, from_open)
        hand14.remove(discard)
        self.hand = hand14
        self.score = score
        if score == 0:
            finished = declaration(self.hand, self.wild, self.profile)
            if finished is not None:
                return Finish(discard, [list(g.cards) for g in finished.groups], valid=True)
        if 0 < score <= RASH_SCORE and self.rng.random() < self.temper.rashness:
            return Finish(discard, self._wrong_show_groups())
        return Finish(discard)

    def _choose_discard(self, hand14: list[Card], card: Card, from_open: bool):
        if self._is_joker(card) or from_open:
            # The new card stays: the best of the others goes.
            candidates = [c for c in self._candidates(hand14) if c != card]
            _, discard, score = self._weigh(hand14, candidates[: self.temper.lookahead])
            return discard, score
        if links(card, self.hand, self.wild) == 0:
            # An unlinked card goes straight back, unless it is cheaper than the worst
            # unlinked card in hand: then that one is weighed against it.
            worst = self._candidates(self.hand)[0]
            if links(worst, self.hand, self.wild) or worst.points() <= card.points(self.wild):
                return card, self.score
            _, discard, score = self._weigh(hand14, [worst])
            return (discard, score) if score < self.score else (card, self.score)
        if self.rng.random() < self.temper.careless:
            return card, self.score  # thrown back without a second look
        better = self._improvement(hand14, card)
        return better if better is not None else (card, self.score)

    def _improvement(self, hand14: list[Card], new: Card) -> tuple[Card, int] | None:
        """The discard (other than ``new``) that lowers the score most, if any does.

        The likeliest discard is weighed first; only when keeping ``new`` pays at all are
        the next ``lookahead - 1`` weighed too, so a useless card costs one solver call.
        """
        candidates = [c for c in self._candidates(hand14) if c != new][: self.temper.lookahead]
        if not candidates:
            return None
        best = self._weigh(hand14, candidates[:1])
        if best[2] >= self.score:
            return None
        if len(candidates) > 1:
            best = min(best, self._weigh(hand14, candidates[1:]), key=_discard_order)
        return best[1], best[2]

    def _solver_discard(self, hand14: list[Card]) -> tuple[Card, int]:
        """The discard that leaves the least score, every card of ``hand14`` weighed (on a
        tie the higher card goes, a joker last)."""
        weighed = []
        for card in dict.fromkeys(hand14):
            kept = list(hand14)
            kept.remove(card)
            score = min_hand_score(kept, self.wild, self.profile)
            weighed.append((score, self._is_joker(card), -card.face_points, card))
        score, _, _, card = min(weighed, key=lambda w: w[:3])
        return card, score

    def _wrong_show_groups(self) -> list[list[Card]]:
        """The hand as it stands, its loose cards passed off as one more group."""
        evaluation = best_grouping(self.hand, self.wild, self.profile)
        groups = [list(g.cards) for g in evaluation.groups]
        remaining = list(self.hand)
        for group in groups:
            for card in group:
                remaining.remove(card)
        if remaining:
            groups.append(remaining)
        return groups

    def show(self) -> list[list[Card]] | None:
        """A loser's grouping after a valid declaration; now and then none, or a poor one."""
        roll = self.rng.random()
        if roll < 0.08:
            return None  # the operator recorded no show: the ledger scores the best grouping
        groups = [list(g.cards) for g in best_grouping(self.hand, self.wild, self.profile).groups]
        if roll < 0.12 and groups:
            groups = groups[1:]  # a careless show that leaves a group loose
        return groups


def _discard_order(weighed: tuple[int, Card, int]) -> tuple[int, int]:
    cost, card, _ = weighed
    return cost, -card.face_points
