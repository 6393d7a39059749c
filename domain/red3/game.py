"""The Red 3 match aggregate: a match is nothing but its events.

``Red3Match.start(config)`` records ``Started``; each round is ``deal``t, then played with
``pick`` (the whole pile or one stock card), ``lay_down`` (new books, cards added to one's own
books) and ``discard``. A player who gets rid of the last card of the second hand ends the
round, and so does the turn that drew the last stock card: ``RoundScored`` follows at once,
and ``MatchEnded`` after the last round. Every command checks the rules
first and raises a named :class:`~domain.errors.RuleViolation` that records nothing.

>>> from domain.cards import parse_cards
>>> match = Red3Match.start(Red3Config(game_id="R3-doc", players=("p1", "p2"), rounds=1))
>>> match.deal(deal_from_order(deck_order(2, 2), ("p1", "p2"), first="p1"))
>>> match.pick("p1", "stock")
>>> match.discard("p2", Card.parse("9S"))
Traceback (most recent call last):
...
domain.errors.NotYourTurn: p2 cannot discard 9S: it is p1's turn
>>> match.lay_down("p1", [parse_cards("AS 3S 5S")])
Traceback (most recent call last):
...
domain.red3.errors.IllegalBook: p1 cannot lay down AS 3S 5S: not consecutive: missing 2S 4S
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain.cards import Card, deck_order
from domain.errors import (
    BadMove,
    CardNotHeld,
    GameOver,
    IllegalPick,
    NotDealt,
    NotYourTurn,
    StockMismatch,
    UnknownPlayer,
)
from domain.game_ids import game_uuid
from domain.red3.errors import IllegalAddition, IllegalBook, OpeningTooLow, RoundOver
from domain.red3.rules import Book, BookError, lay_down_value, make_book
from domain.red3.scoring import (
    Red3Settlement,
    RoundScore,
    leaders,
    score_round,
    scores_hash,
    settle_match,
)
from domain.red3.snapshot import restore_state, snapshot_state
from domain.red3.state import Red3TableState, table_state
from domain.red3.table import Red3Config, Red3Deal, deal_from_order, red3_deck
from domain.snapshots import restored
from domain.timestamps import format_time, parse_time

__all__ = ["Red3Config", "Red3Deal", "Red3Match", "deal_from_order", "deck_order"]

PICK_SOURCES = ("stock", "pile")


def _cards_text(cards: Sequence[Card]) -> list[str]:
    return [str(card) for card in cards]


def _timed(move: dict, at: str | None) -> dict:
    if at is not None:
        move["at"] = at
    return move


def _moment(at: datetime | str | None, game_id: str) -> datetime | None:
    try:
        return parse_time(at, what="at")
    except ValueError as error:
        raise BadMove(str(error), game_id=game_id) from None


class Red3Match(Aggregate):
    """A Red 3 Rummy match of a fixed number of rounds."""

    TOPIC = "rummy_ledger.red3:Red3Match"
    # What callers that handle both games dispatch on (records, export, audit, viewer).
    variant = "red3"
    # MatchEnded's hash of the scores the rules computed (None: stored before it).
    computed_hash: str | None = None

    class Event(Aggregate.Event):
        TOPIC = "rummy_ledger.red3:Red3Match.Event"

    class Created(Event, Aggregate.Created):
        TOPIC = "rummy_ledger.red3:Red3Match.Created"

    class Snapshot(Aggregate.Snapshot):
        """The match's state in the text forms its events use (``domain.red3.snapshot``)."""

        TOPIC = "rummy_ledger.red3:Red3Match.Snapshot"

        @classmethod
        def take(cls, aggregate: Red3Match) -> Red3Match.Snapshot:
            snapshot = super().take(aggregate)
            object.__setattr__(snapshot, "state", snapshot_state(snapshot.state))
            return snapshot

        def mutate(self, _: None) -> Red3Match:
            match = restored(Red3Match, self, restore_state(self.state))
            return match

    @staticmethod
    def create_id(game_id: str) -> UUID:
        """The same uuid5 as the 13-card game's, so one game id names one game in the ledger."""
        return game_uuid(game_id)

    @classmethod
    def start(
        cls,
        config: Red3Config,
        *,
        reported: Mapping[str, Any] | None = None,
        at: datetime | str | None = None,
    ) -> Red3Match:
        """A new match. ``reported`` keeps what the operator says it scored, for audits.

        Like every event's, the Started event's timestamp is the record's own time, so the
        same record always gives the same events.
        """
        moment = _moment(at, config.game_id) or config.started_at
        return cls._create(
            cls.Started,
            id=cls.create_id(config.game_id),
            game_id=config.game_id,
            config=config.to_dict(),
            reported=None if reported is None else dict(reported),
            at=format_time(moment),
            timestamp=moment,
        )

    # -- events --------------------------------------------------------------------------
    @event("Started", topic="rummy_ledger.red3:Red3Match.Started")
    def __init__(
        self,
        game_id: str,
        config: dict,
        reported: dict | None = None,
        at: str | None = None,
    ) -> None:
        self.game_id = game_id
        self.config = Red3Config.from_dict(config)
        self.rules = self.config.profile
        self.players = self.config.players
        self.reported = reported
        self.started_at = parse_time(at) or self.config.started_at
        self.round = 0
        self.phase = "dealing"  # dealing | pick | play | round_over | finished
        self.round_scores: list[RoundScore] = []
        self.totals = dict.fromkeys(self.players, 0)
        self.winners: tuple[str, ...] = ()
        self.deals: list[Red3Deal] = []
        self.deal_times: list[str | None] = []
        self.round_moves: list[list[dict]] = []
        # Steps a replay walks through: each deal and each move, with the version after it.
        self.steps: list[dict] = []
        self.step_versions: list[int] = []
        self._clear_table()

    def _clear_table(self) -> None:
        self.hands: dict[str, list[Card]] = {p: [] for p in self.players}
        self.second_hands: dict[str, list[Card] | None] = dict.fromkeys(self.players)
        self.books: dict[str, list[Book]] = {p: [] for p in self.players}
        self.opening: dict[str, int | None] = dict.fromkeys(self.players)
        self.pile: list[Card] = []
        self.stock: list[Card] | None = []  # top first; None when the order is not known
        self.unseen: Counter[Card] = Counter()  # what an unknown stock holds
        self.current: int | None = None
        self.out: str | None = None

    def _step(self, round_number: int, entry: dict) -> None:
        self.steps.append({"round": round_number, **entry})
        self.step_versions.append(self.version + 1)

    @event("RoundDealt", topic="rummy_ledger.red3:Red3Match.RoundDealt")
    def _dealt(self, number: int, deal: dict, at: str | None = None) -> None:
        dealt = Red3Deal.from_dict(deal)
        self.round = number
        self._clear_table()
        self.hands = {p: list(dealt.hands[p]) for p in self.players}
        self.second_hands = {p: list(dealt.second_hands[p]) for p in self.players}
        self.pile = list(dealt.pile)
        if dealt.stock is None:
            self.stock = None
            self.unseen = red3_deck(len(self.players), self.rules) - dealt.cards()
        else:
            self.stock = list(dealt.stock)
        self.current = self.players.index(dealt.first)
        self.phase = "pick"
        self.deals.append(dealt)
        self.deal_times.append(at)
        self.round_moves.append([])
        self._step(number, _timed({"type": "deal"}, at))

    @event("Picked", topic="rummy_ledger.red3:Red3Match.Picked")
    def _picked(self, player: str, source: str, cards: list, at: str | None = None) -> None:
        taken = [Card.parse(card) for card in cards]
        if source == "pile":
            self.pile = []
            move = {"player": player, "type": "pick", "from": "pile", "cards": _cards_text(taken)}
        else:
            if self.stock is None:
                self.unseen[taken[0]] -= 1
                self.unseen += Counter()  # drop zero counts
            else:
                self.stock = self.stock[1:]
            move = {"player": player, "type": "pick", "from": "stock", "card": str(taken[0])}
        self.hands[player] = [*self.hands[player], *taken]
        self.phase = "play"
        self._record(player, move, at)

    @event("LaidDown", topic="rummy_ledger.red3:Red3Match.LaidDown")
    def _laid_down(self, player: str, books: list, additions: list, at: str | None = None) -> None:
        hand = Counter(self.hands[player])
        new_books = [make_book(cards, self.rules) for cards in books]
        owned = list(self.books[player])
        for addition in additions:
            index = addition["book"]
            owned[index] = owned[index].add([Card.parse(c) for c in addition["cards"]], self.rules)
            hand.subtract(Card.parse(c) for c in addition["cards"])
        for book in new_books:
            hand.subtract(book.cards)
        if self.opening[player] is None:
            self.opening[player] = lay_down_value(new_books, self.rules)
        self.books[player] = [*owned, *new_books]
        self.hands[player] = self._remaining(self.hands[player], hand)
        move: dict[str, Any] = {"player": player, "type": "lay_down"}
        if books:
            move["books"] = [_cards_text([Card.parse(c) for c in cards]) for cards in books]
        if additions:
            move["add"] = [
                {"book": a["book"], "cards": _cards_text([Card.parse(c) for c in a["cards"]])}
                for a in additions
            ]
        self._take_second_hand(player)
        self._record(player, move, at)

    @event("Discarded", topic="rummy_ledger.red3:Red3Match.Discarded")
    def _discarded(self, player: str, card: str, at: str | None = None) -> None:
        card = Card.parse(card)
        hand = list(self.hands[player])
        hand.remove(card)
        self.hands[player] = hand
        self.pile = [*self.pile, card]
        took_second = self._take_second_hand(player)
        if hand or took_second:
            self.current = (self.current + 1) % len(self.players)
            self.phase = "pick"
        self._record(player, {"player": player, "type": "discard", "card": str(card)}, at)

    @event("RoundScored", topic="rummy_ledger.red3:Red3Match.RoundScored")
    def _round_scored(self, score: dict) -> None:
        scored = RoundScore.from_dict(score)
        self.round_scores.append(scored)
        for entry in scored.players:
            self.totals[entry.player] += entry.score
        self.out = scored.out
        self.phase = "round_over"
        self.step_versions[-1] = self.version + 1

    @event("MatchEnded", topic="rummy_ledger.red3:Red3Match.MatchEnded")
    def _match_ended(self, totals: dict, winners: list, computed_hash: str | None = None) -> None:
        self.winners = tuple(winners)
        if computed_hash is not None:  # events stored before the field carry none
            self.computed_hash = computed_hash
        self.phase = "finished"
        self.step_versions[-1] = self.version + 1

    def _record(self, player: str | None, move: dict, at: str | None) -> None:
        move = _timed(move, at)
        self.round_moves[-1].append(move)
        self._step(self.round, move)

    def _take_second_hand(self, player: str) -> bool:
        """Pick up the face-down second hand once the first is gone; True if it happened."""
        if self.hands[player] or self.second_hands[player] is None:
            return False
        self.hands[player] = self.second_hands[player]
        self.second_hands[player] = None
        return True

    @staticmethod
    def _remaining(hand: list[Card], left: Counter[Card]) -> list[Card]:
        """The hand in its order, keeping only ``left`` copies of each card."""
        keep = Counter(left)
        remaining = []
        for card in hand:
            if keep[card] > 0:
                remaining.append(card)
                keep[card] -= 1
        return remaining

    # -- commands ------------------------------------------------------------------------
    def deal(self, deal: Red3Deal | Mapping[str, Any], *, at: datetime | str | None = None) -> None:
        """Deal the next round. ``first`` must be the rotating first player."""
        if self.phase == "finished":
            raise GameOver("the match is over", move_type="deal", game_id=self.game_id)
        if self.phase not in ("dealing", "round_over"):
            raise NotDealt(
                f"round {self.round} is still being played", move_type="deal", game_id=self.game_id
            )
        deal = Red3Deal.from_dict(deal)
        if not deal.first:
            raise BadMove("a deal names its first player", move_type="deal", game_id=self.game_id)
        deal.check(self.config, self.round + 1)
        self._trigger(self.RoundDealt, at, number=self.round + 1, deal=deal.to_dict())

    def pick(
        self,
        player: str,
        source: str,
        card: Card | str | None = None,
        *,
        cards: Sequence[Card | str] | None = None,
        at: datetime | str | None = None,
    ) -> None:
        """Take one stock card (``source="stock"``) or the whole pile (``source="pile"``).

        ``card`` names the stock card (needed when the stock order is unknown, checked when it
        is known); ``cards`` optionally names the pile, bottom first, and is checked.
        """
        self._check_turn(player, "pick", card)
        if self.phase != "pick":
            raise NotYourTurn("already picked this turn", **self._who(player, "pick", card))
        if source == "pile":
            if not self.pile:
                raise IllegalPick("the pile is empty", **self._who(player, "pick", card))
            if cards is not None:
                claimed = [Card.parse(c) for c in cards]
                if claimed != self.pile:
                    raise IllegalPick(
                        f"the pile is {' '.join(_cards_text(self.pile))}, "
                        f"not {' '.join(_cards_text(claimed))}",
                        **self._who(player, "take the pile", None),
                    )
            self._trigger(
                self.Picked, at, player=player, source="pile", cards=_cards_text(self.pile)
            )
            return
        if source not in PICK_SOURCES:
            raise BadMove(
                f"pick from 'stock' or 'pile', not {source!r}", **self._who(player, "pick", None)
            )
        card = None if card is None else Card.parse(card)
        if self.stock_count == 0:
            raise IllegalPick(
                "the stock is empty (the round should have ended)",
                **self._who(player, "pick", card),
            )
        if self.stock is not None:
            top = self.stock[0]
            if card is not None and card != top:
                raise StockMismatch(
                    f"the stock's top card is {top}", **self._who(player, "pick", card)
                )
            card = top
        elif card is None:
            raise BadMove(
                "the stock order is not recorded, so a stock pick must name its card",
                **self._who(player, "pick", None),
            )
        elif self.unseen[card] == 0:
            raise StockMismatch(
                "no such card is left in the stock", **self._who(player, "pick", card)
            )
        self._trigger(self.Picked, at, player=player, source="stock", cards=[str(card)])

    def lay_down(
        self,
        player: str,
        books: Sequence[Sequence[Card | str]] = (),
        additions: Sequence[tuple[int, Sequence[Card | str]]] = (),
        *,
        at: datetime | str | None = None,
    ) -> None:
        """Lay down new ``books`` and add cards to the player's own books already down.

        ``additions`` are ``(book index, cards)`` pairs; the index counts the player's books
        of this round in the order they were laid down, from 0.
        """
        self._check_turn(player, "lay down", None)
        if self.phase != "play":
            raise NotYourTurn("pick first", **self._who(player, "lay down", None))
        books = [[Card.parse(c) for c in cards] for cards in books]
        additions = [(index, [Card.parse(c) for c in cards]) for index, cards in additions]
        if not books and not additions:
            raise BadMove("a lay-down needs books or cards to add", **self._who(player, "lay down"))
        used = [card for cards in books for card in cards]
        used += [card for _, cards in additions for card in cards]
        self._check_held(player, used, "lay down")
        made = []
        for cards in books:
            try:
                made.append(make_book(cards, self.rules))
            except BookError as error:
                raise IllegalBook(
                    str(error), **self._who(player, "lay down", " ".join(_cards_text(cards)))
                ) from None
        if additions and self.opening[player] is None:
            raise IllegalAddition(
                f"no books of theirs are down yet (the first lay-down must reach "
                f"{self.rules.opening_minimum})",
                **self._who(player, "add", " ".join(_cards_text(additions[0][1]))),
            )
        owned = list(self.books[player])
        for index, cards in additions:
            text = " ".join(_cards_text(cards))
            if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(owned):
                raise IllegalAddition(
                    f"book {index!r} is not one of theirs (they have {len(owned)} down)",
                    **self._who(player, "add", text),
                )
            try:
                owned[index] = owned[index].add(cards, self.rules)
            except BookError as error:
                raise IllegalAddition(
                    f"{error} (book {index}: {owned[index]})", **self._who(player, "add", text)
                ) from None
        if self.opening[player] is None:
            value = lay_down_value(made, self.rules)
            if value < self.rules.opening_minimum:
                raise OpeningTooLow(
                    f"the first lay-down of a round is worth {value}, at least "
                    f"{self.rules.opening_minimum} needed",
                    **self._who(player, "lay down", " | ".join(str(b) for b in made)),
                )
        self._trigger(
            self.LaidDown,
            at,
            player=player,
            books=[_cards_text(cards) for cards in books],
            additions=[{"book": index, "cards": _cards_text(cards)} for index, cards in additions],
        )
        if not self.hands[player]:
            self._end_round(out=player)

    def discard(self, player: str, card: Card | str, *, at: datetime | str | None = None) -> None:
        """End the turn with one card onto the pile (the last card of the second hand goes out)."""
        card = Card.parse(card)
        self._check_turn(player, "discard", card)
        if self.phase != "play":
            raise NotYourTurn("pick first", **self._who(player, "discard", card))
        self._check_held(player, [card], "discard")
        self._trigger(self.Discarded, at, player=player, card=str(card))
        if not self.hands[player]:
            self._end_round(out=player)
        elif self.stock_count == 0:
            # The stock has run out: this was the round's last turn (docs/red3-rules.md).
            self._end_round(out=None)

    def _trigger(self, event_class: type, at: datetime | str | None, **fields: Any) -> None:
        """Trigger an event stamped with the record's time (or the previous event's)."""
        moment = _moment(at, self.game_id)
        if "at" in event_class.__annotations__:
            fields["at"] = format_time(moment)
        self.trigger_event(event_class, timestamp=moment or self.modified_on, **fields)

    def _end_round(self, out: str | None) -> None:
        held = {p: [*self.hands[p], *(self.second_hands[p] or ())] for p in self.players}
        score = score_round(self.round, out, self.players, self.books, held, self.rules)
        self._trigger(self.RoundScored, None, score=score.to_dict())
        if self.round == self.config.rounds:
            winners = list(leaders(self.totals))
            # What the rules computed: the projection takes a stored match whose scores
            # still hash to it as its audit's recomputation (docs/red3-format.md).
            computed = scores_hash(self.round_scores, winners)
            self._trigger(
                self.MatchEnded,
                None,
                totals=dict(self.totals),
                winners=winners,
                computed_hash=computed,
            )

    # -- guards --------------------------------------------------------------------------
    def _who(self, player: str | None, move_type: str, card: Any = None) -> dict:
        return {"player": player, "move_type": move_type, "card": card, "game_id": self.game_id}

    def _check_live(self, move_type: str, player: str | None = None, card: Any = None) -> None:
        who = self._who(player, move_type, card)
        if self.phase == "dealing":
            raise NotDealt("no round has been dealt yet", **who)
        if self.phase == "finished":
            raise GameOver("the match is over", **who)
        if self.phase == "round_over":
            raise RoundOver(
                f"{self.out} went out and round {self.round} is over; deal the next round", **who
            )

    def _check_turn(self, player: str, move_type: str, card: Any) -> None:
        if player not in self.players:
            raise UnknownPlayer(
                f"{player!r} is not seated in this match", **self._who(None, move_type, card)
            )
        self._check_live(move_type, player, card)
        current = self.players[self.current]
        if player != current:
            raise NotYourTurn(f"it is {current}'s turn", **self._who(player, move_type, card))

    def _check_held(self, player: str, cards: Sequence[Card], move_type: str) -> None:
        hand = Counter(self.hands[player])
        need = Counter(cards)
        for card, count in need.items():
            if hand[card] >= count:
                continue
            if hand[card]:
                reason = f"holds only {hand[card]} of it"
            elif card in (self.second_hands[player] or ()):
                reason = "it is in the face-down second hand, not picked up yet"
            elif any(card in book.cards for book in self.books[player]):
                reason = "it is on the table, and cards on the table never come back"
            else:
                reason = "not in hand"
            raise CardNotHeld(reason, **self._who(player, move_type, card))

    # -- reading -------------------------------------------------------------------------
    @property
    def stock_count(self) -> int:
        return sum(self.unseen.values()) if self.stock is None else len(self.stock)

    @property
    def current_player(self) -> str | None:
        if self.phase in ("pick", "play") and self.current is not None:
            return self.players[self.current]
        return None

    def held(self, player: str) -> list[Card]:
        """Every card the player still holds, both hands."""
        return [*self.hands[player], *(self.second_hands[player] or ())]

    def table_state(self) -> Red3TableState:
        """The table as it stands now, full view (``.for_seat(player)`` for one seat's)."""
        return table_state(self)

    def settlement(self) -> Red3Settlement:
        """Per-round scores, running totals and the winner(s), from the scored rounds."""
        return settle_match(
            self.game_id, self.players, self.round_scores, rounds_planned=self.config.rounds
        )

    @property
    def moves(self) -> list[dict]:
        """Every move of every round, in play order (record dicts)."""
        return [move for moves in self.round_moves for move in moves]

    @property
    def move_count(self) -> int:
        """``len(self.moves)`` without building the list (asked once per move in a replay)."""
        return sum(map(len, self.round_moves))
