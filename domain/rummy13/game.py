"""The 13-card game as an event-sourced aggregate: a game is nothing but its events.

Each command checks the rules (docs/rules.md §1) first and raises a named
:class:`~domain.errors.RuleViolation` that records nothing; only then is an event
triggered, and the event's body — replayed verbatim whenever the game is rebuilt — just
moves cards. Event bodies hold no clock and no randomness: the record's time of a move
(``at``) is an argument, and it is also the event's timestamp (a move without one keeps the
previous event's time), so the same record always gives the same events.
See ``docs/events.md`` for the catalogue and ``docs/rules-choices.md`` for rule readings.

>>> from domain.cards import parse_cards
>>> config = TableConfig(game_id="doc-1", variant="points", players=("p1", "p2"),
...                      point_value="1", dealer="p2")
>>> game = Game(config)
>>> game.current_player is None, game.phase
(True, 'dealing')
"""

from __future__ import annotations

import copy
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import MISSING
from dataclasses import fields as dataclass_fields
from datetime import UTC, datetime
from functools import lru_cache
from itertools import chain, repeat
from operator import is_
from typing import Any

from eventsourcing.domain import Aggregate, MetaAggregate, decorated_funcs, event
from eventsourcing.utils import resolve_topic

from domain.cards import (
    ALL_CARDS,
    Card,
    CardError,
    card_text,
    card_texts,
    format_cards,
    full_deck,
)
from domain.errors import (
    BadDeal,
    BadMove,
    CardNotHeld,
    DeclarationMismatch,
    GameNotOver,
    GameOver,
    IllegalDrop,
    IllegalMiss,
    IllegalPick,
    IllegalReshuffle,
    IllegalShow,
    JokerPickForbidden,
    NotDealt,
    NotYourTurn,
    PlayerOut,
    RuleViolation,
    StockMismatch,
    UnknownPlayer,
)
from domain.game_ids import GAME_NAMESPACE, game_uuid
from domain.rummy13.melds import HandEvaluation, evaluate
from domain.rummy13.raise_schedule import point_value_for_round
from domain.rummy13.settlement import PlayerEnd, Settlement, compute_settlement, settlement_hash
from domain.rummy13.state import SeatState, TableState
from domain.rummy13.table import Deal, TableConfig, config_of_started, remember_written
from domain.timestamps import format_time, parse_time, utc_z_text

__all__ = ["GAME_NAMESPACE", "Deal", "Game", "SeatState", "TableConfig", "TableState"]


MOVE_OF_EVENT = {
    "Dealt": "deal",
    "Picked": "pick",
    "Discarded": "discard",
    "Dropped": "drop",
    "Missed": "miss",
    "Declared": "declare",
    "Shown": "show",
    "Reshuffled": "reshuffle",
    "Settled": "settle",
    "Reported": "report",
}


# Event bodies hold cards in their canonical text, so replays look them up directly.
_CARD = {str(card): card for card in ALL_CARDS}


def _take(cards: list[Card], card: Card) -> None:
    """Remove one copy of ``card``. Cards are interned, so identity finds it without the
    dataclass ``__eq__`` (a Python call per comparison, the hottest line of a replay)."""
    for index, held in enumerate(cards):
        if held is card:
            del cards[index]
            return
    cards.remove(card)  # not interned (never in a replay): fall back to equality


def _holds(cards: list[Card], card: Card) -> bool:
    """Whether ``cards`` hold ``card``: by identity first (cards are interned, see
    :func:`_take`), so a held card costs no dataclass ``__eq__`` call per card before it."""
    return any(map(is_, cards, repeat(card))) or card in cards


def _parse_card(value: Any, player: str | None, move_type: str) -> Card:
    try:
        return Card.parse(value)
    except CardError as error:
        raise BadMove(str(error), player=player, move_type=move_type) from None


def _parse_groups(groups: Any, player: str, move_type: str) -> list[list[Card]]:
    if isinstance(groups, str) or not isinstance(groups, Iterable):
        raise BadMove("groups must be a list of lists of cards", player=player, move_type=move_type)
    parsed = []
    for group in groups:
        if isinstance(group, str) or not isinstance(group, Iterable):
            raise BadMove("each group must be a list of cards", player=player, move_type=move_type)
        parsed.append([_parse_card(card, player, move_type) for card in group])
    return parsed


def _multiset_difference(want: Counter, have: Counter) -> str:
    missing = list((want - have).elements())
    extra = list((have - want).elements())
    parts = []
    if missing:
        parts.append(f"leave out {format_cards(missing)}")
    if extra:
        parts.append(f"list {format_cards(extra)} not in hand")
    return " and ".join(parts)


class _GameType(MetaAggregate):
    """Lets ``Game(config, at=...)`` stamp the Started event with the game's own time."""

    def __call__(cls, config: TableConfig | Mapping[str, Any], *, at: Any = None) -> Game:
        if not isinstance(config, TableConfig):
            config = TableConfig.from_dict(config)
        moment = parse_time(at, what="at") or config.started_at
        data = config.to_dict()
        remember_written(data, config)
        return cls._create(
            cls.Started,
            id=cls.create_id(config.game_id),
            config=data,
            at=format_time(moment),
            timestamp=moment,
        )


class Game(Aggregate, metaclass=_GameType):
    """One 13-card game (Points or Raise Rummy), from the table's configuration to settlement.

    Commands: :meth:`deal`, :meth:`pick`, :meth:`discard`, :meth:`drop`, :meth:`miss`,
    :meth:`declare`, :meth:`show`, :meth:`reshuffle`, :meth:`settle`, :meth:`report`.
    Views: :meth:`table_state`, :attr:`moves`, :attr:`settlement`.
    """

    # Explicit topics: stored events name these, so classes can move without breaking them.
    TOPIC = "rummy_ledger:Game"

    class Event(Aggregate.Event):
        TOPIC = "rummy_ledger:Game.Event"

    class Created(Event, Aggregate.Created):
        TOPIC = "rummy_ledger:Game.Created"

    class Snapshot(Aggregate.Snapshot):
        TOPIC = "rummy_ledger:Game.Snapshot"

    @staticmethod
    def create_id(game_id: str) -> uuid.UUID:
        """The aggregate id of a game id (uuid5, so the same game id always maps the same)."""
        return game_uuid(game_id)

    # == events ============================================================================
    # Each body below is replayed on every rebuild: it only moves cards and counters.

    @event("Started", topic="rummy_ledger:Game.Started")
    def __init__(self, config: dict, at: str | None = None) -> None:
        self._config = config_of_started(config)
        players = self._config.players
        self._dealer = players.index(self._config.dealer_player)
        self._phase = "dealing"
        self._hands: dict[str, list[Card]] = {p: [] for p in players}
        self._wild: Card | None = None
        self._open_pile: list[Card] = []
        self._open_from: list[str | None] = []  # who put each open card there (None: the deal)
        self._stock: list[Card] | None = None  # closed stock, top first, when its order is known
        self._unseen: list[Card] = []  # closed stock cards whose order is not known
        self._out: dict[str, str] = {}  # player -> dropped / auto_dropped / wrong_show
        self._drop_kind: dict[str, str] = {}
        self._ended_round: dict[str, int] = {}
        self._turns = dict.fromkeys(players, 0)
        self._misses = dict.fromkeys(players, 0)
        self._shown: dict[str, list[list[Card]]] = {}
        self._wrong_show_groups: dict[str, list[list[Card]]] = {}
        self._finish: Card | None = None
        self._declared: list[list[Card]] | None = None
        self._winner: str | None = None
        self._current: int | None = None
        self._picked = False
        self._round = 0
        self._moves: list[dict] = []
        self._settlement: dict | None = None
        self._reported: dict | None = None
        self._started_at = at
        self._deal: dict | None = None

    @event("Dealt", topic="rummy_ledger:Game.Dealt")
    def _dealt(
        self, hands: dict, wild: str, open_card: str, stock: list | None, at: str | None
    ) -> None:
        parse = _CARD.__getitem__
        self._deal = {"hands": hands, "wild": wild, "open": open_card, "stock": stock}
        self._hands = {p: [parse(c) for c in hands[p]] for p in self._config.players}
        self._wild = parse(wild)
        self._open_pile = [parse(open_card)]
        self._open_from = [None]
        if stock is None:
            known = Counter(card for cards in self._hands.values() for card in cards)
            known[self._wild] += 1
            known[self._open_pile[0]] += 1
            unseen = full_deck(self._config.decks, self._config.jokers_per_deck) - known
            self._stock, self._unseen = None, list(unseen.elements())
        else:
            self._stock, self._unseen = [parse(c) for c in stock], []
        self._phase = "playing"
        self._current = self._config.players.index(self._config.first_mover)

    @event("Picked", topic="rummy_ledger:Game.Picked")
    def _picked_card(self, player: str, source: str, card: str, at: str | None) -> None:
        picked = _CARD[card]
        if source == "open":
            self._open_pile.pop()
            self._open_from.pop()
        elif self._stock is not None:
            self._stock.pop(0)
        else:
            _take(self._unseen, picked)
        self._hands[player].append(picked)
        self._picked = True
        self._misses[player] = 0  # a played turn ends a run of misses
        self._log(at, player=player, type="pick", **{"from": source}, card=card)

    @event("Discarded", topic="rummy_ledger:Game.Discarded")
    def _discarded(self, player: str, card: str, at: str | None) -> None:
        discarded = _CARD[card]
        _take(self._hands[player], discarded)
        self._open_pile.append(discarded)
        self._open_from.append(player)
        self._log(at, player=player, type="discard", card=card)
        self._end_turn(player)

    @event("Dropped", topic="rummy_ledger:Game.Dropped")
    def _dropped(self, player: str, kind: str, at: str | None) -> None:
        self._out[player] = "dropped"
        self._drop_kind[player] = kind
        self._ended_round[player] = self._round
        self._log(at, player=player, type="drop")
        self._end_turn(player)

    @event("Missed", topic="rummy_ledger:Game.Missed")
    def _missed(self, player: str, auto_drop: bool, at: str | None) -> None:
        self._misses[player] += 1
        if auto_drop:
            self._out[player] = "auto_dropped"
            self._drop_kind[player] = "auto_drop"
            self._ended_round[player] = self._round
        self._log(at, player=player, type="miss")
        self._end_turn(player)

    @event("Declared", topic="rummy_ledger:Game.Declared")
    def _declared_hand(
        self, player: str, finish: str, groups: list, valid: bool, at: str | None
    ) -> None:
        parse = _CARD.__getitem__
        finish_card = parse(finish)
        _take(self._hands[player], finish_card)
        cards = [[parse(c) for c in group] for group in groups]
        self._log(
            at,
            player=player,
            type="declare",
            finish=finish,
            groups=[list(group) for group in groups],
        )
        if valid:
            self._winner = player
            self._finish = finish_card
            self._declared = cards
            self._phase = "showing"
            self._turns[player] += 1
            # Everyone still in loses at the value of the round of the declaration.
            for other in self._config.players:
                if other not in self._out:
                    self._ended_round[other] = self._round
            self._current = None
            self._picked = False
            return
        # A wrong show: 80 points and out; the finish card goes to the open pile like a
        # discard, so play goes on from an ordinary table (docs/rules-choices.md).
        self._out[player] = "wrong_show"
        self._wrong_show_groups[player] = cards
        self._ended_round[player] = self._round
        self._open_pile.append(finish_card)
        self._open_from.append(player)
        self._end_turn(player)

    @event("Shown", topic="rummy_ledger:Game.Shown")
    def _shown_hand(self, player: str, groups: list, at: str | None) -> None:
        self._shown[player] = [[_CARD[c] for c in group] for group in groups]
        self._log(at, player=player, type="show", groups=[list(group) for group in groups])

    @event("Reshuffled", topic="rummy_ledger:Game.Reshuffled")
    def _reshuffled(self, stock: list | None, at: str | None) -> None:
        under_top = self._open_pile[:-1]
        self._open_pile = self._open_pile[-1:]
        self._open_from = self._open_from[-1:]
        if stock is None:
            self._stock, self._unseen = None, under_top
        else:
            self._stock, self._unseen = [_CARD[c] for c in stock], []
        move: dict[str, Any] = {"type": "reshuffle"}
        if stock is not None:
            move["stock"] = list(stock)
        self._log(at, **move)

    # Games stored before Settled carried the hash (and their snapshots) have none.
    _computed_hash: str | None = None

    @event("Settled", topic="rummy_ledger:Game.Settled")
    def _settled(self, settlement: dict, at: str | None, computed_hash: str | None = None) -> None:
        self._settlement = settlement
        self._computed_hash = computed_hash
        self._phase = "settled"

    @event("Reported", topic="rummy_ledger:Game.Reported")
    def _reported_figures(self, reported: dict, at: str | None) -> None:
        self._reported = reported

    def _log(self, at: str | None, **move: Any) -> None:
        if at is not None:
            move["at"] = at
        self._moves.append(move)

    def _end_turn(self, player: str) -> None:
        """Pass the turn on; the round (and a raise game's point value) goes up on leaving
        the dealer's seat, whether the dealer just played or is out and skipped."""
        self._turns[player] += 1
        self._picked = False
        players = self._config.players
        if len(players) - len(self._out) == 1:  # last player standing wins with 0 points
            self._winner = next(p for p in players if p not in self._out)
            self._ended_round[self._winner] = self._round
            self._phase = "showing"
            self._current = None
            return
        dealer = self._dealer
        position = self._current
        while True:
            if position == dealer:
                self._round += 1
            position = (position + 1) % len(players)
            if players[position] not in self._out:
                break
        self._current = position

    # == commands ==========================================================================
    def _trigger(self, event_class: type, at: Any, **fields: Any) -> None:
        try:
            # A parsed record's time is already an aware UTC datetime (parse_time's answer).
            moment = at if type(at) is datetime and at.tzinfo is UTC else parse_time(at, what="at")
        except ValueError as error:
            move_type = MOVE_OF_EVENT.get(event_class.__name__, event_class.__name__.lower())
            raise self._violation(BadMove, str(error), fields.get("player"), move_type) from None
        # parse_time gave an aware UTC time: format_time's own parse_time would be a second
        # pass for the same text (one per event).
        fields["at"] = None if moment is None else utc_z_text(moment)
        self._record(event_class, moment or self._modified_on, fields)

    def _record(self, event_class: type, timestamp: datetime, fields: dict[str, Any]) -> None:
        """What the library's ``trigger_event`` does for one of this class's own events,
        without its per-event generic work (topic lookup, keyword copies, signature
        filtering, the id and version checks of ``mutate``): the same event object, with
        its attributes in the same order (so it is stored byte for byte the same), the same
        body applied, then version, time and pending list as the library sets them.
        ``tests/test_game_event_recording.py`` compares the two on whole games."""
        names, defaults, body = _RECORDING[event_class]
        version = self._version + 1
        new_event = object.__new__(event_class)
        values = new_event.__dict__
        values["originator_id"] = self._id
        values["originator_version"] = version
        values["timestamp"] = timestamp
        if defaults:
            fields = {**defaults, **fields}
        for name in names:
            values[name] = fields[name]
        if len(fields) != len(names):
            unknown = sorted(set(fields) - set(names))
            raise TypeError(f"Can't construct event {event_class}: unexpected {unknown}")
        body(self, **fields)
        self._version = version
        self._modified_on = timestamp
        self._pending_events.append(new_event)

    def _violation(
        self,
        kind: type[RuleViolation],
        reason: str,
        player: str | None = None,
        move_type: str | None = None,
        card: Any = None,
    ) -> RuleViolation:
        return kind(reason, player=player, move_type=move_type, card=card, game_id=self.game_id)

    def _check_turn(self, player: str, move_type: str, card: Card | None = None) -> None:
        """The common guards of a player's move: dealt, not over, seated, in, their turn."""
        if self._phase == "dealing":
            raise self._violation(
                NotDealt, "the cards have not been dealt", player, move_type, card
            )
        if self._phase in ("showing", "settled"):
            raise self._violation(
                GameOver, f"the game is over ({self._winner} won)", player, move_type, card
            )
        if player not in self._hands:
            raise self._violation(
                UnknownPlayer, "not seated at this table", player, move_type, card
            )
        if player in self._out:
            raise self._violation(
                PlayerOut, f"already out of the game ({self._out[player]})", player, move_type, card
            )
        current = self._config.players[self._current]
        if player != current:
            raise self._violation(NotYourTurn, f"it is {current}'s turn", player, move_type, card)

    def deal(
        self,
        hands: Mapping[str, Sequence[Card | str]],
        wild: Card | str,
        open_card: Card | str,
        stock: Sequence[Card | str] | None = None,
        *,
        at: datetime | str | None = None,
    ) -> None:
        """Record the deal: 13 cards per player, the wild indicator, the first open card, and
        the closed stock (top first) when its order is known. Cards must come from the
        table's decks exactly (all of them when the stock is given)."""
        if self._phase != "dealing":
            raise self._violation(NotDealt, "the cards were already dealt", move_type="deal")
        try:
            dealt = Deal(hands=hands, wild=wild, open_card=open_card, stock=stock)
        except RuleViolation as error:
            error.game_id = self.game_id
            raise
        self.deal_cards(dealt, at=at)

    def deal_cards(self, dealt: Deal, *, at: datetime | str | None = None) -> None:
        """:meth:`deal` of a :class:`Deal` (its cards are already read: a record's deal is
        not read a second time)."""
        if self._phase != "dealing":
            raise self._violation(NotDealt, "the cards were already dealt", move_type="deal")
        self._check_deal(dealt)
        self._trigger(
            self.Dealt,
            at,
            hands={p: card_texts(dealt.hands[p]) for p in self._config.players},
            wild=str(dealt.wild),
            open_card=str(dealt.open_card),
            stock=None if dealt.stock is None else card_texts(dealt.stock),
        )

    def _check_deal(self, dealt: Deal) -> None:
        config = self._config
        size = config.profile.hand_size
        seated = set(config.players)
        for player in dealt.hands:
            if player not in seated:
                raise self._violation(
                    BadDeal, f"{player} has a hand but is not seated", move_type="deal"
                )
        for player in config.players:
            cards = dealt.hands.get(player)
            if cards is None:
                raise self._violation(BadDeal, f"no hand for {player}", move_type="deal")
            if len(cards) != size:
                raise self._violation(
                    BadDeal,
                    f"{player} was dealt {len(cards)} cards, a hand has {size}",
                    move_type="deal",
                )
        if dealt.stock is not None:
            # The usual deal: every card of the decks once per copy, the interned cards
            # counted by id() (in C: no Python hash per card). Anything else (a card too
            # many or missing, a card not interned) is counted again below, which says what.
            ids = Counter(
                map(
                    id,
                    chain(
                        chain.from_iterable(dealt.hands.values()),
                        (dealt.wild, dealt.open_card),
                        dealt.stock,
                    ),
                )
            )
            if dict.__eq__(ids, _deck_ids(config.decks, config.jokers_per_deck)):
                return
        dealt_cards = Counter(chain.from_iterable(dealt.hands.values()))
        dealt_cards[dealt.wild] += 1
        dealt_cards[dealt.open_card] += 1
        if dealt.stock is not None:
            dealt_cards.update(dealt.stock)
        deck = full_deck(config.decks, config.jokers_per_deck)
        too_many = sorted(dealt_cards - deck, key=lambda card: card.index)
        if too_many:
            card = too_many[0]
            raise self._violation(
                BadDeal,
                f"{card} is dealt {dealt_cards[card]} times but {config.decks} deck(s) with "
                f"{config.jokers_per_deck} printed joker(s) each hold {deck[card]}",
                move_type="deal",
                card=card,
            )
        # Neither count holds a zero, so the dicts' own equality (C, on the hashes the
        # counts keep) is Counter's (a Python loop hashing every card twice).
        if dealt.stock is not None and not dict.__eq__(dealt_cards, deck):
            missing = list((deck - dealt_cards).elements())
            raise self._violation(
                BadDeal,
                f"hands + open card + wild + stock leave out {format_cards(missing[:8])}"
                f"{' ...' if len(missing) > 8 else ''} ({len(missing)} card(s)): the deal "
                "must use the whole deck when the stock is given",
                move_type="deal",
            )

    def pick(
        self, player: str, source: str, card: Card | str, *, at: datetime | str | None = None
    ) -> None:
        """Take the top card of the open pile (``source="open"``) or of the closed stock."""
        card = _parse_card(card, player, "pick")
        self._check_turn(player, "pick", card)
        if self._picked:
            raise self._violation(
                NotYourTurn, "already picked this turn: discard or declare", player, "pick", card
            )
        if source == "open":
            self._check_open_pick(player, card)
        elif source == "closed":
            self._check_closed_pick(player, card)
        else:
            raise self._violation(
                BadMove, f"a pick is from 'open' or 'closed', not {source!r}", player, "pick", card
            )
        self._trigger(self.Picked, at, player=player, source=source, card=card_text(card))

    def _check_open_pick(self, player: str, card: Card) -> None:
        if not self._open_pile:
            raise self._violation(IllegalPick, "the open pile is empty", player, "pick", card)
        top = self._open_pile[-1]
        if card is not top and card != top:  # interned cards: identity first
            raise self._violation(
                IllegalPick, f"the open pile's top card is {top}", player, "pick", card
            )
        if not card.is_joker(self._wild):
            return
        discarded_by = self._open_from[-1]
        if discarded_by is None:
            if not self._config.profile.first_open_joker_pickable:
                raise self._violation(
                    JokerPickForbidden,
                    "the dealt open joker may not be picked at this table",
                    player,
                    "pick",
                    card,
                )
        elif discarded_by != player:
            raise self._violation(
                JokerPickForbidden,
                f"it is a joker, discarded by {discarded_by}",
                player,
                "pick",
                card,
            )

    def _check_closed_pick(self, player: str, card: Card) -> None:
        if self._stock is not None:
            if not self._stock:
                raise self._violation(
                    IllegalPick, "the stock is empty: reshuffle first", player, "pick", card
                )
            top = self._stock[0]
            if card is not top and card != top:  # interned cards: identity first
                raise self._violation(
                    StockMismatch, f"the top of the stock is {self._stock[0]}", player, "pick", card
                )
            return
        if not self._unseen:
            raise self._violation(
                IllegalPick, "the stock is empty: reshuffle first", player, "pick", card
            )
        if card not in self._unseen:
            raise self._violation(
                StockMismatch,
                "no such card is left in the stock (every copy is in a hand, on the open "
                "pile, or the wild indicator)",
                player,
                "pick",
                card,
            )

    def discard(self, player: str, card: Card | str, *, at: datetime | str | None = None) -> None:
        """Put a held card on the open pile, ending the turn."""
        card = _parse_card(card, player, "discard")
        self._check_turn(player, "discard", card)
        if not self._picked:
            raise self._violation(
                NotYourTurn, "must pick before discarding", player, "discard", card
            )
        if not _holds(self._hands[player], card):
            raise self._violation(CardNotHeld, "not in hand", player, "discard", card)
        self._trigger(self.Discarded, at, player=player, card=card_text(card))

    def drop(self, player: str, *, at: datetime | str | None = None) -> None:
        """Leave the game at the start of one's turn: first drop (20) on the first turn,
        middle drop (40) later."""
        self._check_turn(player, "drop")
        if self._picked:
            raise self._violation(
                IllegalDrop, "already picked this turn: a drop comes before picking", player, "drop"
            )
        kind = "first_drop" if self._turns[player] == 0 else "middle_drop"
        self._trigger(self.Dropped, at, player=player, kind=kind)
        self._settle_if_decided(at)

    def miss(self, player: str, *, at: datetime | str | None = None) -> None:
        """A timed-out turn; the third in a row drops the player automatically (40)."""
        self._check_turn(player, "miss")
        if self._picked:
            raise self._violation(
                IllegalMiss, "already picked this turn: discard or declare", player, "miss"
            )
        auto_drop = self._misses[player] + 1 >= self._config.profile.misses_to_auto_drop
        self._trigger(self.Missed, at, player=player, auto_drop=auto_drop)
        self._settle_if_decided(at)

    def declare(
        self,
        player: str,
        finish: Card | str,
        groups: Sequence[Sequence[Card | str]],
        *,
        at: datetime | str | None = None,
    ) -> None:
        """Put ``finish`` in the finish slot and declare the other 13 cards in ``groups``.

        A valid declaration wins; an invalid one is a wrong show (80 points, out)."""
        finish = _parse_card(finish, player, "declare")
        self._check_turn(player, "declare", finish)
        if not self._picked:
            raise self._violation(
                NotYourTurn, "must pick before declaring", player, "declare", finish
            )
        hand = Counter(self._hands[player])
        if not hand[finish]:
            raise self._violation(
                CardNotHeld, "the finish card is not in hand", player, "declare", finish
            )
        cards = _parse_groups(groups, player, "declare")
        hand[finish] -= 1
        listed = Counter(card for group in cards for card in group)
        if not dict.__eq__(listed, +hand):  # no zeros on either side: see _check_deal
            raise self._violation(
                DeclarationMismatch,
                f"the groups must be exactly the 13 cards left after the finish card: they "
                f"{_multiset_difference(+hand, listed)}",
                player,
                "declare",
                finish,
            )
        verdict = evaluate(cards, [], self._wild, self._config.profile)
        self._trigger(
            self.Declared,
            at,
            player=player,
            finish=str(finish),
            groups=[card_texts(group) for group in cards],
            valid=verdict.valid_declaration,
        )
        self._settle_if_decided(at)

    def show(
        self,
        player: str,
        groups: Sequence[Sequence[Card | str]],
        *,
        at: datetime | str | None = None,
    ) -> None:
        """A loser's final grouping after a valid declaration; unlisted cards are loose."""
        if self._phase == "settled":
            raise self._violation(GameOver, "the game is already settled", player, "show")
        if self._phase != "showing" or self._declared is None:
            raise self._violation(
                IllegalShow, "shows come only after a valid declaration", player, "show"
            )
        if player not in self._hands:
            raise self._violation(UnknownPlayer, "not seated at this table", player, "show")
        if player == self._winner:
            raise self._violation(
                IllegalShow, "the winner declared and does not show", player, "show"
            )
        if player in self._out:
            raise self._violation(
                IllegalShow, f"out of the game ({self._out[player]})", player, "show"
            )
        if player in self._shown:
            raise self._violation(IllegalShow, "already showed", player, "show")
        cards = _parse_groups(groups, player, "show")
        held = Counter(self._hands[player])
        for card in (card for group in cards for card in group):
            if not held[card]:
                raise self._violation(CardNotHeld, "not in hand", player, "show", card)
            held[card] -= 1
        self._trigger(self.Shown, at, player=player, groups=[card_texts(g) for g in cards])
        self._settle_if_decided(at)

    def reshuffle(
        self, stock: Sequence[Card | str] | None = None, *, at: datetime | str | None = None
    ) -> None:
        """Turn the open pile, except its top card, into a new closed stock (top first)."""
        if self._phase != "playing":
            kind = NotDealt if self._phase == "dealing" else GameOver
            raise self._violation(kind, f"the game is {self._phase}", move_type="reshuffle")
        left = self.stock_count
        if left:
            raise self._violation(
                IllegalReshuffle, f"the stock still has {left} card(s)", move_type="reshuffle"
            )
        if len(self._open_pile) < 2:
            raise self._violation(
                IllegalReshuffle,
                "the open pile has no cards under its top card",
                move_type="reshuffle",
            )
        new_stock = None
        if stock is not None:
            if isinstance(stock, str) or not isinstance(stock, Iterable):
                raise self._violation(
                    BadMove, "stock must be a list of cards", move_type="reshuffle"
                )
            new_stock = [_parse_card(card, None, "reshuffle") for card in stock]
            under_top = Counter(self._open_pile[:-1])
            if Counter(new_stock) != under_top:
                missing = list((under_top - Counter(new_stock)).elements())
                extra = list((Counter(new_stock) - under_top).elements())
                detail = []
                if missing:
                    detail.append(f"leaves out {format_cards(missing)}")
                if extra:
                    detail.append(f"adds {format_cards(extra)}")
                raise self._violation(
                    IllegalReshuffle,
                    "the new stock must be exactly the open pile's cards under its top card: "
                    f"it {' and '.join(detail)}",
                    move_type="reshuffle",
                )
        self._trigger(
            self.Reshuffled, at, stock=None if new_stock is None else card_texts(new_stock)
        )

    def settle(self, *, at: datetime | str | None = None) -> Settlement:
        """Compute the settlement from the events and record it (a ``Settled`` event).

        Happens by itself once nothing can change it: the last player standing, or a valid
        declaration after which every remaining loser has shown. Losers who did not show
        are scored on their best grouping."""
        if self._phase == "settled":
            raise self._violation(GameOver, "the game is already settled", move_type="settle")
        if self._phase != "showing":
            raise self._violation(
                GameNotOver, f"the game is still {self._phase}", move_type="settle"
            )
        settlement = self.compute_settlement()
        body = settlement.to_dict()
        # The hash says "this body is what the rules computed at write time": the
        # projection then takes the body as the recomputation (docs/read-models.md).
        self._trigger(self.Settled, at, settlement=body, computed_hash=settlement_hash(body))
        return settlement

    def report(self, reported: Mapping[str, Any], *, at: datetime | str | None = None) -> None:
        """Keep the operator's own figures (a record's ``reported`` block) for audits."""
        if self._phase != "settled":
            raise self._violation(
                GameNotOver,
                "reported figures are kept once the game is settled",
                move_type="report",
            )
        if self._reported is not None:
            raise self._violation(
                GameOver, "reported figures were already recorded", move_type="report"
            )
        if not isinstance(reported, Mapping):
            raise self._violation(BadMove, "reported figures must be an object", move_type="report")
        self._trigger(self.Reported, at, reported=copy.deepcopy(dict(reported)))

    def _settle_if_decided(self, at: Any) -> None:
        if self._phase != "showing":
            return
        waiting = [
            p
            for p in self._config.players
            if p != self._winner and p not in self._out and p not in self._shown
        ]
        if self._declared is None or not waiting:
            self.settle(at=at)

    # == facts and views ===================================================================
    @property
    def game_id(self) -> str:
        return self._config.game_id

    @property
    def config(self) -> TableConfig:
        return self._config

    @property
    def phase(self) -> str:
        return self._phase

    @property
    def winner(self) -> str | None:
        return self._winner

    @property
    def wild(self) -> Card | None:
        return self._wild

    @property
    def round(self) -> int:
        return self._round

    @property
    def current_player(self) -> str | None:
        if self._phase != "playing" or self._current is None:
            return None
        return self._config.players[self._current]

    @property
    def stock_count(self) -> int:
        return len(self._stock) if self._stock is not None else len(self._unseen)

    @property
    def stock_top(self) -> Card | None:
        """The next closed card when the stock's order is known (None otherwise or empty)."""
        return self._stock[0] if self._stock else None

    @property
    def moves(self) -> list[dict]:
        """The moves so far as docs/record-format.md move dicts, in play order (``at`` when recorded)."""
        return copy.deepcopy(self._moves)

    @property
    def recorded_moves(self) -> Sequence[Mapping[str, Any]]:
        """The moves themselves, not copies (read them, never change them): a record is
        built from them field by field, which copies them anyway."""
        return self._moves

    @property
    def move_count(self) -> int:
        return len(self._moves)

    @property
    def started_at(self) -> str | None:
        return self._started_at

    @property
    def reported(self) -> dict | None:
        return copy.deepcopy(self._reported)

    @property
    def settlement(self) -> Settlement | None:
        return None if self._settlement is None else Settlement.from_dict(self._settlement)

    @property
    def settled_body(self) -> Mapping[str, Any] | None:
        """The ``Settled`` event's body itself, not a copy (read it, never change it): the
        projection hashes it for every game it closes."""
        return self._settlement

    @property
    def computed_hash(self) -> str | None:
        """What ``Settled`` carries beside the body: the sha256 (:func:`settlement_hash`)
        of the settlement as the ledger computed it when it recorded it (None: a game
        stored before the ledger wrote it)."""
        return self._computed_hash

    @property
    def reported_body(self) -> Mapping[str, Any] | None:
        """The ``Reported`` body itself, not a copy (read it, never change it)."""
        return self._reported

    @property
    def recorded_settlement(self) -> dict | None:
        """The ``Settled`` event's body exactly as recorded."""
        return copy.deepcopy(self._settlement)

    @property
    def dealt(self) -> Deal | None:
        """The deal as recorded (None before the deal): with :attr:`moves`, a whole record."""
        return None if self._deal is None else Deal.from_dict(self._deal)

    def hand(self, player: str) -> tuple[Card, ...]:
        return tuple(self._hands[player])

    def player_ends(self) -> list[PlayerEnd]:
        """How each loser's game ended, in seat order: the input of the settlement."""
        if self._winner is None:
            raise self._violation(GameNotOver, "nobody has won yet", move_type="settle")
        ends = []
        for player in self._config.players:
            if player == self._winner:
                continue
            out = self._out.get(player)
            if out == "wrong_show":
                result = "wrong_show"
            elif out is not None:
                result = self._drop_kind[player]
            else:
                result = "deal_show" if self._turns[player] == 0 else "lost"
            shown = self._shown.get(player)
            ends.append(
                PlayerEnd(
                    player=player,
                    result=result,
                    ended_at_round=self._ended_round[player],
                    cards=tuple(self._hands[player]),
                    shown=None if shown is None else tuple(tuple(g) for g in shown),
                )
            )
        return ends

    def compute_settlement(self) -> Settlement:
        """The settlement the facts call for (the recorded one is :attr:`settlement`)."""
        return compute_settlement(self._config, self._winner, self.player_ends(), self._wild)

    def declaration(self) -> HandEvaluation | None:
        """The winner's declared groups, evaluated."""
        if self._declared is None:
            return None
        return evaluate(self._declared, [], self._wild, self._config.profile)

    def card_counts(self) -> Counter[Card]:
        """Every card at the table by location summed up: equals the full deck once dealt."""
        counts: Counter[Card] = Counter()
        for cards in self._hands.values():
            counts.update(cards)
        counts.update(self._open_pile)
        counts.update(self._stock or ())
        counts.update(self._unseen)
        if self._wild is not None:
            counts[self._wild] += 1
        if self._finish is not None:
            counts[self._finish] += 1
        return counts

    def _status(self, player: str) -> str:
        if player == self._winner:
            return "won"
        out = self._out.get(player)
        if out is not None:
            return out
        if self._phase in ("showing", "settled"):
            return "lost"
        return "waiting" if self._turns[player] == 0 else "playing"

    def _revealed(self) -> tuple[str, ...]:
        """The players whose cards the table has shown to everyone: a show, a wrong show,
        the winner's declaration, and, once a declaration is settled, the losers still in
        (their hands are scored face up). A game won because everyone else dropped shows
        nobody's cards: its winner's hand stays face down to the other seats."""
        shown = set(self._shown) | set(self._wrong_show_groups)
        if self._declared is not None:
            shown.add(self._winner)
            if self._phase == "settled":
                shown.update(p for p in self._config.players if p not in self._out)
        return tuple(p for p in self._config.players if p in shown)

    def table_state(self) -> TableState:
        """The table as it stands now (see :class:`~domain.rummy13.state.TableState`)."""
        config = self._config
        seats = []
        for index, player in enumerate(config.players):
            groups = self._shown.get(player) or self._wrong_show_groups.get(player)
            if player == self._winner and self._declared is not None:
                groups = self._declared
            hand = tuple(self._hands[player])
            seats.append(
                SeatState(
                    player=player,
                    seat=config.seats[index] if config.seats else index + 1,
                    hand=hand,
                    status=self._status(player),
                    drop_kind=self._drop_kind.get(player),
                    turns_taken=self._turns[player],
                    consecutive_misses=self._misses[player],
                    shown_groups=None if groups is None else tuple(tuple(g) for g in groups),
                    hand_size=len(hand),
                )
            )
        turn_step = None
        if self.current_player is not None:
            turn_step = "discard" if self._picked else "pick"
        return TableState(
            game_id=config.game_id,
            variant=config.variant,
            rules=config.rules,
            version=self.version,
            move_index=len(self._moves),
            seats=tuple(seats),
            open_pile=tuple(self._open_pile),
            stock_count=self.stock_count,
            stock_known=self._stock is not None,
            wild=self._wild,
            finish=self._finish,
            current_player=self.current_player,
            round=self._round,
            point_value=point_value_for_round(config, self._round),
            next_point_value=point_value_for_round(config, self._round + 1),
            phase=self._phase,
            winner=self._winner,
            declaration=self.declaration(),
            last_move=copy.deepcopy(self._moves[-1]) if self._moves else None,
            settlement=self.settlement,
            dealer=config.dealer_player,
            turn_step=turn_step,
            currency=config.currency,
            revealed=self._revealed(),
        )


@lru_cache(maxsize=32)
def _deck_ids(decks: int, jokers_per_deck: int) -> dict[int, int]:
    """The full deck counted by the id() of each (interned) card."""
    return {id(card): count for card, count in full_deck(decks, jokers_per_deck).items()}


def _recording_of(event_class: type) -> tuple[tuple[str, ...], dict[str, Any], Any]:
    """An event class's own fields (after the library's three), their defaults, and the body
    its ``@event`` decorator wraps."""
    # Checked once here, not once per event as trigger_event does: every event names an
    # explicit topic that resolves to its own class.
    if resolve_topic(event_class.TOPIC) is not event_class:
        raise TypeError(f"{event_class} does not own its topic {event_class.TOPIC!r}")
    own = [f for f in dataclass_fields(event_class) if f.name not in _LIBRARY_FIELDS]
    defaults = {f.name: f.default for f in own if f.default is not MISSING}
    return tuple(f.name for f in own), defaults, decorated_funcs[event_class]


_LIBRARY_FIELDS = ("originator_id", "originator_version", "timestamp")
_RECORDING = {
    event_class: _recording_of(event_class)
    for event_class in (
        Game.Dealt,
        Game.Picked,
        Game.Discarded,
        Game.Dropped,
        Game.Missed,
        Game.Declared,
        Game.Shown,
        Game.Reshuffled,
        Game.Settled,
        Game.Reported,
    )
}
