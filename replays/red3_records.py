"""Red 3 match records (``rummy-ledger/red3@1``, docs/red3-format.md) read, checked, written.

The shape is checked here (known fields, card text, players, round numbers); the rules are
checked by playing the record through the match aggregate (:meth:`Red3Record.build`). Bad
shape raises :class:`~replays.records.RecordError` naming the game and the field, such as
``rounds[1].moves[4].card``; a broken rule is a :class:`~domain.errors.RuleViolation` that
:func:`explain` places as ``round 2 move 4 (p1 discard KS)``.

>>> parse_red3_record({"format": "rummy-ledger/red3@1", "game_id": "R3-1", "variant": "red3",
...                    "players": [{"id": "p1", "seat": 1}], "round_count": 2, "rounds": []})
Traceback (most recent call last):
...
replays.records.RecordError: R3-1: field 'players': Red 3 Rummy needs at least 2 players, got 1

Parsing and writing round-trip: ``parse_red3_record(record.to_dict()) == record``; the
canonical form of a record is what its match exports (:meth:`Red3Record.canonical`), so the
same match imported twice is recognised whatever optional fields the first copy left out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from domain.cards import Card, CardError
from domain.errors import BadConfig, BadDeal, RuleViolation
from domain.red3.game import Red3Match
from domain.red3.moves import MOVE_TYPES, PICK_SOURCES, play_match, where
from domain.red3.table import Red3Config, Red3Deal
from domain.timestamps import format_time, parse_time
from replays import record_bounds as bounds
from replays.records import (
    RecordError,
    parse_with_game_id,
    record_object,
    require_format,
)

RED3_FORMAT = "rummy-ledger/red3@1"
RED3_VARIANT = "red3"
# Fields the ledger adds on export; an exported record imports again unchanged.
EXPORT_ONLY_FIELDS = ("settlement",)

_TOP_FIELDS = {
    "format",
    "game_id",
    "variant",
    "rules",
    "started_at",
    "table",
    "players",
    "first_player",
    "round_count",
    "rounds",
    "reported",
    "shuffle",
    *EXPORT_ONLY_FIELDS,
}
_ROUND_FIELDS = {"round", "at", "deal", "moves"}
_DEAL_FIELDS = {"first", "hands", "second_hands", "pile", "stock"}
_MOVE_FIELDS = {
    "pick": ({"from"}, {"card", "cards"}),
    "lay_down": (set(), {"books", "add"}),
    "discard": ({"card"}, set()),
}
_REPORTED_FIELDS = {"rounds", "totals", "winner", "winners"}


def is_red3_record(obj: Any) -> bool:
    """Whether raw record JSON claims to be a Red 3 match (by ``format`` or ``variant``)."""
    return isinstance(obj, Mapping) and (
        obj.get("format") == RED3_FORMAT or obj.get("variant") == RED3_VARIANT
    )


@dataclass(frozen=True)
class Red3Round:
    deal: Red3Deal
    moves: tuple[dict, ...] = ()  # move dicts, cards and times normalised
    at: datetime | None = None  # when the round was dealt

    def to_dict(self, number: int) -> dict:
        out: dict[str, Any] = {"round": number}
        if self.at is not None:
            out["at"] = format_time(self.at)
        deal = self.deal.to_dict()
        if deal["stock"] is None:
            del deal["stock"]
        out["deal"] = deal
        out["moves"] = [dict(move) for move in self.moves]
        return out


@dataclass(frozen=True)
class Red3Record:
    """One Red 3 match as docs/red3-format.md describes it."""

    config: Red3Config
    rounds: tuple[Red3Round, ...] = ()
    reported: dict | None = None

    variant = RED3_VARIANT

    @property
    def game_id(self) -> str:
        return self.config.game_id

    def to_dict(self) -> dict:
        """The canonical record object (key order fixed, cards and times normalised)."""
        config = self.config
        out: dict[str, Any] = {
            "format": RED3_FORMAT,
            "game_id": config.game_id,
            "variant": RED3_VARIANT,
            "rules": config.rules,
        }
        if config.started_at is not None:
            out["started_at"] = format_time(config.started_at)
        if config.table_id is not None:
            out["table"] = {"id": config.table_id}
        seats = config.seats or range(1, len(config.players) + 1)
        out["players"] = [
            {"id": player, "seat": seat} for player, seat in zip(config.players, seats, strict=True)
        ]
        if config.first_player is not None:
            out["first_player"] = config.first_player
        out["round_count"] = config.rounds
        out["rounds"] = [played.to_dict(n) for n, played in enumerate(self.rounds, start=1)]
        if self.reported is not None:
            out["reported"] = dict(self.reported)
        if config.shuffle is not None:
            out["shuffle"] = dict(config.shuffle)
        return out

    def build(self) -> Red3Match:
        """The match played in memory from this record; raises on the first broken rule."""
        rounds = [
            {"deal": played.deal, "moves": played.moves, "at": played.at} for played in self.rounds
        ]
        return play_match(self.config, rounds, reported=self.reported)

    def canonical(self) -> str:
        """The record as its match exports it: one deterministic JSON line."""
        return dump_red3(red3_record_of(self.build()))

    def settle(self) -> dict:
        """The ``settle`` summary: per-round scores, running totals, the winner(s)."""
        return self.build().settlement().to_dict()


# -- reading -----------------------------------------------------------------------------


def parse_red3_record(obj: Any) -> Red3Record:
    """Read one Red 3 record (a dict, or its JSON text) into a :class:`Red3Record`."""
    return parse_with_game_id(record_object(obj), _parse)


def _parse(obj: Mapping, game_id: str) -> Red3Record:
    require_format(obj, RED3_FORMAT, _TOP_FIELDS, "a Red 3 match record")
    if obj.get("variant", RED3_VARIANT) != RED3_VARIANT:
        raise RecordError(f"{obj['variant']!r} is not 'red3'", field="variant")
    table = obj.get("table") or {}
    if not isinstance(table, Mapping) or set(table) - {"id"}:
        raise RecordError("must be an object with an 'id' at most", field="table")
    if table.get("id") is not None and not bounds.is_id(table["id"]):
        raise RecordError(
            f"{bounds._short(table['id'])} is not a table id ({bounds.ID_EXPECTED})",
            field="table.id",
        )
    round_count = obj.get("round_count")
    # Below 1 is the domain's to refuse (a rule); above the bound is a size no page can hold.
    if isinstance(round_count, int) and round_count > bounds.RED3_ROUNDS.maximum:
        _bounded(bounds.count_in, round_count, bounds.RED3_ROUNDS, "round_count")
    players, seats = _players(obj.get("players"))
    started_at = _time(obj.get("started_at"), "started_at")
    try:
        config = Red3Config(
            game_id=game_id,
            players=players,
            seats=seats,
            rounds=round_count,
            rules=obj.get("rules", "standard"),
            first_player=obj.get("first_player"),
            table_id=table.get("id"),
            started_at=started_at,
            shuffle=obj.get("shuffle"),
        )
    except BadConfig as error:
        raise RecordError(error.reason, field=_config_field(error.reason)) from None
    rounds = obj.get("rounds")
    if not isinstance(rounds, list):
        raise RecordError("must be a list of rounds", field="rounds")
    if len(rounds) > config.rounds:
        raise RecordError(
            f"{len(rounds)} rounds played but the match has {config.rounds}", field="rounds"
        )
    parsed = tuple(_round(played, index, config) for index, played in enumerate(rounds))
    return Red3Record(
        config=config, rounds=parsed, reported=_reported(obj.get("reported"), players)
    )


def _config_field(reason: str) -> str:
    for needle, field in (
        ("rounds", "round_count"),
        ("first player", "first_player"),
        ("rules", "rules"),
        ("started_at", "started_at"),
        ("shuffle", "shuffle"),
        ("seat", "players"),
        ("player", "players"),
    ):
        if needle in reason:
            return field
    return "game_id"


def _players(value: Any) -> tuple[tuple[str, ...], tuple[int, ...]]:
    if not isinstance(value, list) or not value:
        raise RecordError("must be a list of {id, seat}", field="players")
    if len(value) > bounds.RED3_PLAYERS_MAX:
        raise RecordError(
            f"{len(value)} players: Red 3 Rummy seats at most {bounds.RED3_PLAYERS_MAX}",
            field="players",
        )
    players, seats = [], []
    for i, entry in enumerate(value):
        if not isinstance(entry, Mapping) or set(entry) - {"id", "seat"} or "id" not in entry:
            raise RecordError("must be {id, seat}", field=f"players[{i}]")
        if isinstance(entry["id"], str) and not bounds.is_id(entry["id"]):
            raise RecordError(
                f"{bounds._short(entry['id'])} is not a player id ({bounds.ID_EXPECTED})",
                field=f"players[{i}].id",
            )
        players.append(entry["id"])
        seat = entry.get("seat", i + 1)
        if isinstance(seat, int) and not isinstance(seat, bool):
            _bounded(bounds.count_in, seat, bounds.SEAT, f"players[{i}].seat")
        seats.append(seat)
    return tuple(players), tuple(seats)


def _bounded(check, value: Any, bound: Any, name: str, *what: str) -> Any:
    try:
        return check(value, bound, *what)
    except bounds.OutOfBounds as error:
        raise RecordError(str(error), field=name) from None


def _time(value: Any, name: str) -> datetime | None:
    if value is None:
        return None
    try:
        return bounds.time_in(parse_time(value, what=name))
    except ValueError as error:
        raise RecordError(str(error), field=name) from None


def _round(value: Any, index: int, config: Red3Config) -> Red3Round:
    name = f"rounds[{index}]"
    if not isinstance(value, Mapping):
        raise RecordError("must be an object with deal and moves", field=name)
    for key in value:
        if key not in _ROUND_FIELDS:
            raise RecordError("not a field of a round", field=f"{name}.{key}")
    if value.get("round", index + 1) != index + 1:
        raise RecordError(f"round {value['round']!r} listed as round {index + 1}", field=name)
    deal = value.get("deal")
    if not isinstance(deal, Mapping):
        raise RecordError("missing" if deal is None else "must be an object", field=f"{name}.deal")
    for key in deal:
        if key not in _DEAL_FIELDS:
            raise RecordError("not a field of a deal", field=f"{name}.deal.{key}")
    dealt = dict(deal)
    dealt.setdefault("first", config.first_player_of(index + 1))
    for key in ("hands", "second_hands"):
        hands = dealt.get(key)
        if not isinstance(hands, Mapping):
            raise RecordError("must map each player to a list of cards", field=f"{name}.deal.{key}")
        dealt[key] = {
            player: _cards(cards, f"{name}.deal.{key}.{player}") for player, cards in hands.items()
        }
    dealt["pile"] = _cards(dealt.get("pile"), f"{name}.deal.pile")
    if dealt.get("stock") is not None:
        dealt["stock"] = _cards(dealt["stock"], f"{name}.deal.stock")
    try:
        parsed_deal = Red3Deal.from_dict(dealt)
    except BadDeal as error:
        raise RecordError(error.reason, field=f"{name}.deal") from None
    moves = value.get("moves", [])
    if not isinstance(moves, list):
        raise RecordError("must be a list of moves", field=f"{name}.moves")
    _bounded(bounds.length_at_most, moves, bounds.RED3_ROUND_MOVES_MAX, f"{name}.moves", "moves")
    return Red3Round(
        deal=parsed_deal,
        moves=tuple(_move(move, f"{name}.moves[{i}]") for i, move in enumerate(moves)),
        at=_time(value.get("at"), f"{name}.at"),
    )


def _move(value: Any, name: str) -> dict:
    """A move dict with its cards and time in canonical text; rules are the aggregate's."""
    if not isinstance(value, Mapping):
        raise RecordError("must be an object", field=name)
    move_type = value.get("type")
    if move_type not in _MOVE_FIELDS:
        raise RecordError(
            f"{move_type!r} is not a move type (known: {', '.join(MOVE_TYPES)})",
            field=f"{name}.type",
        )
    required, optional = _MOVE_FIELDS[move_type]
    for key in value:
        if key not in {"player", "type", "at", *required, *optional}:
            raise RecordError(f"not a field of a {move_type} move", field=f"{name}.{key}")
    for key in ("player", *sorted(required)):
        if value.get(key) is None:
            raise RecordError("missing", field=f"{name}.{key}")
    if not isinstance(value["player"], str):
        raise RecordError("must be a player id", field=f"{name}.player")
    move: dict[str, Any] = {"player": value["player"], "type": move_type}
    if move_type == "pick":
        if value["from"] not in PICK_SOURCES:
            raise RecordError(f"{value['from']!r} is not 'stock' or 'pile'", field=f"{name}.from")
        move["from"] = value["from"]
        if value.get("card") is not None:
            move["card"] = str(_card(value["card"], f"{name}.card"))
        if value.get("cards") is not None:
            move["cards"] = _texts(_cards(value["cards"], f"{name}.cards"))
    elif move_type == "lay_down":
        books = value.get("books") or []
        if not isinstance(books, list):
            raise RecordError("must be a list of books", field=f"{name}.books")
        if books:
            move["books"] = [
                _texts(_cards(book, f"{name}.books[{i}]")) for i, book in enumerate(books)
            ]
        added = value.get("add") or []
        if not isinstance(added, list):
            raise RecordError("must be a list of {book, cards}", field=f"{name}.add")
        additions = []
        for i, entry in enumerate(added):
            where_ = f"{name}.add[{i}]"
            if not isinstance(entry, Mapping) or set(entry) != {"book", "cards"}:
                raise RecordError("must be {book, cards}", field=where_)
            book = entry["book"]
            if isinstance(book, bool) or not isinstance(book, int) or book < 0:
                raise RecordError(f"{book!r} is not a book index", field=f"{where_}.book")
            additions.append({"book": book, "cards": _texts(_cards(entry["cards"], where_))})
        if additions:
            move["add"] = additions
        if not books and not additions:
            raise RecordError("a lay-down needs books or cards to add", field=name)
    else:
        move["card"] = str(_card(value["card"], f"{name}.card"))
    if value.get("at") is not None:
        move["at"] = format_time(_time(value["at"], f"{name}.at"))
    return move


def _reported(value: Any, players: tuple[str, ...]) -> dict | None:
    """The operator's figures: ``rounds`` (scores per round), ``totals``, ``winner(s)``."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise RecordError("must be an object", field="reported")
    for key in value:
        if key not in _REPORTED_FIELDS:
            raise RecordError("not a reported figure", field=f"reported.{key}")
    out: dict[str, Any] = {}
    if "rounds" in value:
        if not isinstance(value["rounds"], list):
            raise RecordError("must be a list of {player: score}", field="reported.rounds")
        out["rounds"] = [
            _scores(scores, f"reported.rounds[{i}]", players)
            for i, scores in enumerate(value["rounds"])
        ]
    if "totals" in value:
        out["totals"] = _scores(value["totals"], "reported.totals", players)
    if "winner" in value:
        winner = value["winner"]
        if winner is not None and not isinstance(winner, str):
            raise RecordError(
                f"{bounds._short(winner)} is not a player id (text)", field="reported.winner"
            )
        if winner is not None and winner not in players:
            raise RecordError(f"{winner!r} is not seated", field="reported.winner")
        out["winner"] = winner
    if "winners" in value:
        winners = value["winners"]
        if not isinstance(winners, list) or any(
            not isinstance(w, str) or w not in players for w in winners
        ):
            raise RecordError("must be a list of seated players", field="reported.winners")
        out["winners"] = list(winners)
    return out


def _scores(value: Any, name: str, players: tuple[str, ...]) -> dict[str, int]:
    if not isinstance(value, Mapping):
        raise RecordError("must map players to scores", field=name)
    scores = {}
    for player, score in value.items():
        if player not in players:
            raise RecordError(f"{player!r} is not seated", field=name)
        if isinstance(score, bool) or not isinstance(score, int):
            raise RecordError(
                f"{bounds._short(score)} is not a whole number of points", field=f"{name}.{player}"
            )
        _bounded(bounds.count_in, score, bounds.RED3_SCORE, f"{name}.{player}")
        scores[player] = score
    return scores


def _card(value: Any, name: str) -> Card:
    try:
        return Card.parse(value)
    except CardError as error:
        raise RecordError(str(error), field=name) from None


def _cards(value: Any, name: str) -> tuple[Card, ...]:
    if not isinstance(value, list):
        raise RecordError("must be a list of cards", field=name)
    _bounded(bounds.length_at_most, value, bounds.RED3_CARDS_MAX, name, "cards")
    return tuple(_card(card, f"{name}[{i}]") for i, card in enumerate(value))


def _texts(cards) -> list[str]:
    return [str(card) for card in cards]


# -- writing -----------------------------------------------------------------------------


def red3_record_of(match: Red3Match) -> Red3Record:
    """The record of a match rebuilt from its events (what ``export`` writes)."""
    rounds = []
    for deal, moves, dealt_at in zip(match.deals, match.round_moves, match.deal_times, strict=True):
        rounds.append(
            Red3Round(deal=deal, moves=tuple(dict(m) for m in moves), at=parse_time(dealt_at))
        )
    return Red3Record(config=match.config, rounds=tuple(rounds), reported=match.reported)


def dump_red3(record: Red3Record | Mapping, **extra: Any) -> str:
    """One JSON line; ``extra`` fields (``settlement`` on export) go at the end."""
    obj = record.to_dict() if isinstance(record, Red3Record) else dict(record)
    obj.update(extra)
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": "))


def export_red3(match: Red3Match) -> str:
    """The match's record with the scores it recorded (``settlement``), as one JSON line."""
    return dump_red3(red3_record_of(match), settlement=match.settlement().to_dict())


def explain(error: Exception) -> str:
    """Why a Red 3 record was refused, without the game id."""
    if isinstance(error, RecordError):
        return error.detail
    if isinstance(error, RuleViolation):
        place = where(error)
        return f"{place}: {error}" if place else str(error)
    return str(error)


def describe_settlement(settled: Mapping[str, Any]) -> str:
    """The ``settle`` summary of a Red 3 match for people: rounds, running totals, winner.

    >>> print(describe_settlement({"game_id": "R3-1", "complete": True, "winner": "p2",
    ...     "winners": ["p2"], "rounds_planned": 1, "totals": {"p1": -15, "p2": 90},
    ...     "rounds": [{"round": 1, "out": "p2", "totals": {"p1": -15, "p2": 90}, "scores": {
    ...         "p1": {"books": 45, "held": 60, "red_threes": 1, "score": -15},
    ...         "p2": {"books": 90, "held": 0, "red_threes": 0, "score": 90}}}]}))
    R3-1: p2 wins the Red 3 match, 1 of 1 rounds
      round 1, p2 went out
        p1              45 laid -  60 held =   -15   total   -15
        p2              90 laid -   0 held =    90   total    90
    """
    winners = settled["winners"]
    if not settled["complete"]:
        verdict = "match running"
    elif len(winners) == 1:
        verdict = f"{winners[0]} wins the Red 3 match"
    else:
        verdict = f"{' and '.join(winners)} share the Red 3 match"
    lines = [
        f"{settled['game_id']}: {verdict}, {len(settled['rounds'])} of "
        f"{settled['rounds_planned']} rounds"
    ]
    for played in settled["rounds"]:
        out = f"{played['out']} went out" if played["out"] else "the stock ran out"
        lines.append(f"  round {played['round']}, {out}")
        for player, score in played["scores"].items():
            lines.append(
                f"    {player:<12} {score['books']:>5} laid - {score['held']:>3} held = "
                f"{score['score']:>5}   total {played['totals'][player]:>5}"
            )
    return "\n".join(lines)
