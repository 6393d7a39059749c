"""Who pays what when a 13-card game ends (docs/rules.md §1.6 and §1.7).

:func:`compute_settlement` is a pure function of the game's facts — how each player's game
ended, the cards each held, the grouping each showed — so an audit can recompute a payout
without trusting the recorded ``Settled`` event.

Money rules (see ``docs/rules-choices.md``): each loser's ``amount`` is points × the point
value in force when that loser's game ended, rounded half-up to 0.01 once, at the end of
that loser's computation. ``gross`` is the sum of those amounts, so what the losers pay is
exactly what the ledger entries debit; ``fee`` is ``gross × fee_percent / 100`` rounded
half-up; the winner is credited ``gross − fee``. Debits always equal credits to the paisa.

>>> from domain.rummy13.table import TableConfig
>>> config = TableConfig(game_id="G", variant="points", players=("p1", "p2", "p3"),
...                      point_value="2", fee_percent="10")
>>> settlement = compute_settlement(config, "p1", [
...     PlayerEnd("p2", "first_drop", ended_at_round=0),
...     PlayerEnd("p3", "middle_drop", ended_at_round=2)], wild=None)
>>> settlement.gross, settlement.fee, settlement.net_to_winner
(Decimal('120.00'), Decimal('12.00'), Decimal('108.00'))
>>> settlement.summary()["players"]["p3"]
{'result': 'middle_drop', 'points': 40, 'point_value': '2.00', 'amount': '80.00'}
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import orjson

from domain.cards import Card
from domain.money import (  # noqa: F401 (re-exported: settlement's money words)
    CENT,
    FEE_ACCOUNT,
    LedgerEntry,
    account_of,
    money,
    money_text,
    rate_text,
)
from domain.rummy13.melds import HandEvaluation, evaluate
from domain.rummy13.raise_schedule import point_value_for_round
from domain.rummy13.solver import best_grouping, declaration, min_hand_score
from domain.rummy13.table import TableConfig

__all__ = [
    "PlayerEnd",
    "PlayerSettlement",
    "Settlement",
    "compute_settlement",
    "money",
    "point_value_for_round",
]

# Every way a player's game can end, in the settle JSON's words.
RESULTS = ("won", "lost", "deal_show", "first_drop", "middle_drop", "auto_drop", "wrong_show")
SCORED_RESULTS = ("lost", "deal_show")  # scored on their cards; the others score flat points


@dataclass(frozen=True)
class PlayerEnd:
    """The facts of how one losing player's game ended.

    ``cards``: the 13 cards the player held at that moment (for a wrong show, the 13 cards
    declared; empty when unknown). ``shown``: the groups of a recorded ``show``, or None.
    """

    player: str
    result: str
    ended_at_round: int
    cards: tuple[Card, ...] = ()
    shown: tuple[tuple[Card, ...], ...] | None = None

    def __post_init__(self) -> None:
        if self.result not in RESULTS or self.result == "won":
            raise ValueError(f"{self.player}: {self.result!r} is not a losing result")
        object.__setattr__(self, "cards", tuple(self.cards))
        if self.shown is not None:
            object.__setattr__(self, "shown", tuple(tuple(g) for g in self.shown))


@dataclass(frozen=True)
class PlayerSettlement:
    """One loser's line of the settlement."""

    player: str
    result: str
    points: int
    point_value: Decimal
    amount: Decimal
    ended_at_round: int
    hand_score: int | None = None  # scored losers: from the show, else the best grouping
    min_score: int | None = None  # the least the same 13 cards could have scored
    case: str | None = None  # scoring case of the charged grouping
    met_objective: bool = False  # deccan: the hand could have declared, so 2 points
    groups: tuple[tuple[Card, ...], ...] = ()  # the grouping charged (scored losers)
    kinds: tuple[str | None, ...] = ()
    loose: tuple[Card, ...] = ()

    def summary(self) -> dict[str, Any]:
        return {
            "result": self.result,
            "points": self.points,
            "point_value": rate_text(self.point_value),
            "amount": money_text(self.amount),
        }

    def to_dict(self) -> dict[str, Any]:
        data = self.summary()
        data.update(
            hand_score=self.hand_score,
            min_score=self.min_score,
            case=self.case,
            met_objective=self.met_objective,
            ended_at_round=self.ended_at_round,
            groups=[[str(c) for c in group] for group in self.groups],
            kinds=list(self.kinds),
            loose=[str(c) for c in self.loose],
        )
        return data

    @classmethod
    def from_dict(cls, player: str, data: Mapping[str, Any]) -> PlayerSettlement:
        return cls(
            player=player,
            result=data["result"],
            points=int(data["points"]),
            point_value=Decimal(data["point_value"]),
            amount=Decimal(data["amount"]),
            ended_at_round=int(data["ended_at_round"]),
            hand_score=data.get("hand_score"),
            min_score=data.get("min_score"),
            case=data.get("case"),
            met_objective=bool(data.get("met_objective", False)),
            groups=tuple(tuple(Card.parse(c) for c in g) for g in data.get("groups", ())),
            kinds=tuple(data.get("kinds", ())),
            loose=tuple(Card.parse(c) for c in data.get("loose", ())),
        )


@dataclass(frozen=True)
class Settlement:
    """The payout of one game; ``to_dict()`` is deterministic and JSON-able."""

    game_id: str
    winner: str
    currency: str
    fee_percent: Decimal
    gross: Decimal
    fee: Decimal
    net_to_winner: Decimal
    players: Mapping[str, PlayerSettlement]
    ledger_entries: tuple[LedgerEntry, ...] = field(default=())

    @property
    def balanced(self) -> bool:
        debits = sum((e.debit for e in self.ledger_entries), Decimal(0))
        credits = sum((e.credit for e in self.ledger_entries), Decimal(0))
        return debits == credits

    def summary(self) -> dict[str, Any]:
        """Exactly the ``rummy-ledger settle`` JSON shape (players: every loser)."""
        return {
            "game_id": self.game_id,
            "winner": self.winner,
            "gross": money_text(self.gross),
            "fee": money_text(self.fee),
            "net_to_winner": money_text(self.net_to_winner),
            "players": {p: line.summary() for p, line in self.players.items()},
        }

    def to_dict(self) -> dict[str, Any]:
        """:meth:`summary` plus currency, fee percent, per-loser detail and ledger entries."""
        data = self.summary()
        data["currency"] = self.currency
        data["fee_percent"] = str(self.fee_percent)
        data["players"] = {p: line.to_dict() for p, line in self.players.items()}
        data["ledger_entries"] = [entry.to_dict() for entry in self.ledger_entries]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Settlement:
        return cls(
            game_id=data["game_id"],
            winner=data["winner"],
            currency=data.get("currency", "INR"),
            fee_percent=Decimal(data.get("fee_percent", "0")),
            gross=Decimal(data["gross"]),
            fee=Decimal(data["fee"]),
            net_to_winner=Decimal(data["net_to_winner"]),
            players={p: PlayerSettlement.from_dict(p, line) for p, line in data["players"].items()},
            ledger_entries=tuple(
                LedgerEntry(e["account"], Decimal(e["debit"]), Decimal(e["credit"]))
                for e in data.get("ledger_entries", ())
            ),
        )


def _charged_grouping(end: PlayerEnd, wild: Card, config: TableConfig) -> HandEvaluation:
    """The grouping a scored loser is charged for: the show when recorded, else the best."""
    if end.shown is None:
        return best_grouping(end.cards, wild, config.profile)
    listed = Counter(card for group in end.shown for card in group)
    loose = list((Counter(end.cards) - listed).elements())
    # Keep the hand's own order for the loose cards so the record reads naturally.
    remaining = Counter(loose)
    ordered_loose = []
    for card in end.cards:
        if remaining[card]:
            ordered_loose.append(card)
            remaining[card] -= 1
    return evaluate([list(g) for g in end.shown], ordered_loose, wild, config.profile)


def settle_player(end: PlayerEnd, wild: Card | None, config: TableConfig) -> PlayerSettlement:
    """One loser's points, point value and amount."""
    profile = config.profile
    point_value = point_value_for_round(config, end.ended_at_round)
    full_hand = len(end.cards) == profile.hand_size and wild is not None
    flat = {
        "first_drop": profile.first_drop,
        "middle_drop": profile.middle_drop,
        "auto_drop": profile.auto_drop,
        "wrong_show": profile.wrong_show,
    }
    if end.result in flat:
        min_score = min_hand_score(end.cards, wild, profile) if full_hand else None
        points = flat[end.result]
        return PlayerSettlement(
            player=end.player,
            result=end.result,
            points=points,
            point_value=point_value,
            amount=money(points * point_value),
            ended_at_round=end.ended_at_round,
            min_score=min_score,
        )
    if not full_hand:
        raise ValueError(f"{end.player}: a {end.result} loser needs 13 cards to be scored")
    charged = _charged_grouping(end, wild, config)
    # A loser who did not show is charged the best grouping, whose score is the least the
    # cards can score: the solver is not asked the same question twice.
    if end.shown is None:
        min_score = charged.hand_score
    else:
        min_score = min_hand_score(end.cards, wild, profile)
    # A declaration scores 0, so cards that cannot score 0 hold none: no search for one.
    met_objective = (
        profile.met_objective_points is not None
        and min_score == 0
        and declaration(end.cards, wild, profile) is not None
    )
    if met_objective:
        points = profile.met_objective_points
    elif end.result == "deal_show":
        points = profile.deal_show_points(charged.hand_score)
    else:
        points = min(charged.hand_score, profile.max_points)
    return PlayerSettlement(
        player=end.player,
        result=end.result,
        points=points,
        point_value=point_value,
        amount=money(points * point_value),
        ended_at_round=end.ended_at_round,
        hand_score=charged.hand_score,
        min_score=min_score,
        case=charged.case.value,
        met_objective=met_objective,
        groups=tuple(group.cards for group in charged.groups),
        kinds=tuple(charged.kinds),
        loose=tuple(charged.loose),
    )


def compute_settlement(
    config: TableConfig,
    winner: str,
    ends: Iterable[PlayerEnd],
    wild: Card | None,
) -> Settlement:
    """The settlement of a game won by ``winner``; ``ends`` holds every other player once."""
    lines: dict[str, PlayerSettlement] = {}
    for end in ends:
        if end.player == winner:
            raise ValueError(f"{winner} won the game and cannot also lose it")
        if end.player in lines:
            raise ValueError(f"{end.player} ended the game twice")
        lines[end.player] = settle_player(end, wild, config)
    expected = [p for p in config.players if p != winner]
    missing = [p for p in expected if p not in lines]
    if missing or winner not in config.players:
        raise ValueError(f"settlement needs every loser: missing {', '.join(missing) or winner}")
    ordered = {p: lines[p] for p in expected}  # seat order, so to_dict() is deterministic
    gross = sum((line.amount for line in ordered.values()), Decimal("0.00"))
    fee = money(gross * config.fee_percent / 100)
    net = gross - fee
    entries = [LedgerEntry(account_of(p), line.amount, Decimal(0)) for p, line in ordered.items()]
    entries.append(LedgerEntry(account_of(winner), Decimal(0), net))
    entries.append(LedgerEntry(FEE_ACCOUNT, Decimal(0), fee))
    return Settlement(
        game_id=config.game_id,
        winner=winner,
        currency=config.currency,
        fee_percent=config.fee_percent,
        gross=money(gross),
        fee=fee,
        net_to_winner=money(net),
        players=ordered,
        ledger_entries=tuple(entries),
    )


def canonical_settlement(settlement: Mapping) -> dict:
    """A settlement body with each player's groups in a fixed order (by their cards).

    The solver may return the same grouping in another order depending on what it has
    cached in the process, so an audit over the groups as returned depended on how the
    game happened to be loaded; the order of a player's groups carries no meaning.
    """
    body = dict(settlement)
    players = body.get("players")
    if isinstance(players, Mapping):
        body["players"] = {
            player: {**line, "groups": sorted(line["groups"], key=_group_key)}
            # type(line) is dict: the usual line, without asking the Mapping ABC
            if (type(line) is dict or isinstance(line, Mapping))
            and isinstance(line.get("groups"), list)
            else line
            for player, line in players.items()
        }
    return body


def _group_key(group) -> tuple:
    # tuple(map(str, ...)): each card's text, as a generator would give it, made in C.
    return tuple(map(str, group)) if isinstance(group, list | tuple) else (str(group),)


def settlement_hash(settlement: Mapping) -> str:
    """sha256 of a settlement body's canonical JSON (sorted keys, no spaces, each player's
    groups in :func:`canonical_settlement` order)."""
    return canonical_hash(canonical_settlement(settlement))


def canonical_hash(settlement: Mapping) -> str:
    """:func:`settlement_hash` of a body already in :func:`canonical_settlement` order (the
    audit's, which compares it so): the same digest, without ordering it again."""
    return hashlib.sha256(canonical_json(settlement)).hexdigest()


# -- canonical JSON ----------------------------------------------------------------------------
# Every settlement hash ever stored is sha256 of ``json.dumps(body, sort_keys=True,
# separators=(",", ":"), ensure_ascii=False)`` encoded as UTF-8, so those bytes must never
# change. orjson writes them about ten times faster, and for plain JSON values the very same
# bytes: keys sorted by code point (UTF-8 byte order is code point order), the same escapes
# (\" \\ \b \f \n \r \t, \u00XX for other control characters, everything else as UTF-8),
# integers in full, true/false/null. Where they differ it is on what a body read from the
# store or built in code should not hold, but might: floats (1e-07, NaN, Infinity written
# otherwise), integers beyond 64 bits and lone surrogates (orjson refuses them), keys that
# are not exact text (orjson refuses them; json converts them, or sorts them by their own
# ``<``), subclasses of str/int/dict/list (json may read them through their own methods),
# values json refuses but orjson writes (datetimes, UUIDs, enums, dataclasses). So orjson
# writes a body only when :func:`_plain_json` finds it made of exact dict, list, str, int,
# bool and None alone, and json.dumps writes anything else, or anything orjson refuses,
# exactly as before
# (tests/test_canonical_json.py holds the two to the same bytes, or the same error).
_NONE = type(None)


def canonical_json(value: Any) -> bytes:
    """``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)``
    encoded as UTF-8 (raising as that does), by orjson wherever its bytes are the same."""
    try:
        # First, so that what _plain_json walks is known to be finite: orjson refuses
        # anything nested over 254 deep (a circular body included).
        data = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:  # beyond 64 bits, a lone surrogate, not JSON at all...
        data = None
    if data is None or not _plain_json(value):
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        data = text.encode()
    return data


def _plain_json(value: Any) -> bool:
    """Whether ``value`` is made of exact dicts, lists, text, integers, booleans and None
    alone (see above: anything else, a tuple included, is left to json.dumps). Called
    once orjson has written ``value``, which it does only where every key is exact text:
    the keys are not looked at again. A list's lists (a player's groups) are walked in
    place, without a call each."""
    kind = type(value)
    if kind is dict:
        items = value.values()
    elif kind is list:
        items = value
    else:
        return kind is str or kind is int or kind is bool or kind is _NONE
    for item in items:
        kind = type(item)
        if kind is str or kind is int or kind is bool or kind is _NONE:
            continue
        if kind is list:
            for inner in item:
                kind = type(inner)
                if kind is str or kind is int or kind is bool or kind is _NONE:
                    continue
                if (kind is dict or kind is list) and _plain_json(inner):
                    continue
                return False
            continue
        if kind is dict and _plain_json(item):
            continue
        return False
    return True
