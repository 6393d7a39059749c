"""Game records (FORMAT.md, ``rummy-ledger/game@1``) read into typed values and written back.

One module reads and writes records, apart from the rules (the aggregate checks every move);
this one checks only the *shape*: known fields, card text, decimal strings, who is at the
table. A bad record raises :class:`RecordError`, which names the game, the move index (0-based,
the same number as the ingest API's ``seq``) and the field:

>>> parse_record({"format": "rummy-ledger/game@1", "game_id": "G1"})
Traceback (most recent call last):
...
replays.records.RecordError: G1: field 'variant': missing (expected 'points' or 'raise')

Parsing and writing round-trip: ``parse_record(record.to_dict()) == record``, and
:func:`dump_record` gives one deterministic JSON line (the canonical form compared when the
same game is imported twice).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import IO, Any

from domain import variants
from domain.cards import Card, CardError
from domain.errors import RuleViolation
from domain.game import Game
from domain.profiles import DEFAULT_PROFILE, UnknownProfile, get_profile
from domain.table import Deal, TableConfig
from domain.timestamps import format_time, parse_time
from replays import record_bounds as bounds
from replays.record_bounds import ID_PATTERN, OutOfBounds

FORMAT_TAG = "rummy-ledger/game@1"
VARIANTS = ("points", "raise")
MOVE_TYPES = ("pick", "discard", "drop", "miss", "declare", "show", "reshuffle")
PICK_SOURCES = ("open", "closed")
# Fields the ledger adds on export; an exported record imports again unchanged.
EXPORT_ONLY_FIELDS = ("settlement",)

_TOP_FIELDS = {
    "format",
    "game_id",
    "variant",
    "rules",
    "started_at",
    "table",
    "stakes",
    "players",
    "dealer",
    "toss",
    "deal",
    "moves",
    "reported",
    "shuffle",
    *EXPORT_ONLY_FIELDS,
}
_MOVE_FIELDS = {
    "pick": {"from", "card"},
    "discard": {"card"},
    "drop": set(),
    "miss": set(),
    "declare": {"finish", "groups"},
    "show": {"groups"},
    "reshuffle": {"stock"},
}
_REPORTED_MONEY = ("gross", "fee", "net_to_winner")


class RecordError(ValueError):
    """A record that does not follow FORMAT.md; says which game, move and field.

    ``str(error)`` is ``"GAME: move 4, field 'card': reason"``; :attr:`detail` is the same
    without the game id (the ``settle`` output carries the game id in its own key).
    """

    def __init__(
        self,
        reason: str,
        *,
        game_id: str | None = None,
        move: int | None = None,
        field: str | None = None,
        line: int | None = None,
    ):
        self.reason = reason
        self.game_id = game_id
        self.move = move
        self.field = field
        self.line = line
        super().__init__(str(self))

    @property
    def detail(self) -> str:
        where = []
        if self.line is not None and self.game_id is None:
            where.append(f"line {self.line}")
        if self.move is not None:
            where.append(f"move {self.move}")
        if self.field is not None:
            where.append(f"field '{self.field}'")
        return ", ".join(where) + ": " + self.reason if where else self.reason

    def __str__(self) -> str:
        return f"{self.game_id}: {self.detail}" if self.game_id else self.detail


# -- values ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Move:
    """One move in FORMAT.md's vocabulary.

    >>> move = Move.from_dict({"player": "p3", "type": "discard", "card": "9c"})
    >>> move.describe(), move.to_dict()
    ('p3 discard 9C', {'player': 'p3', 'type': 'discard', 'card': '9C'})
    """

    type: str
    player: str | None = None
    source: str | None = None  # pick: "open" or "closed" (FORMAT.md's `from`)
    card: Card | None = None
    finish: Card | None = None
    groups: tuple[tuple[Card, ...], ...] | None = None
    stock: tuple[Card, ...] | None = None
    at: datetime | None = None

    @classmethod
    def from_dict(
        cls, obj: Any, *, index: int | None = None, players: Iterable[str] | None = None
    ) -> Move:
        """Read one move; :class:`RecordError` names ``index`` and the field at fault."""

        def fail(reason: str, name: str | None = None) -> RecordError:
            return RecordError(reason, move=index, field=name)

        if not isinstance(obj, Mapping):
            raise fail("a move must be a JSON object")
        kind = obj.get("type")
        if kind is None:
            raise fail(f"missing (expected one of {', '.join(MOVE_TYPES)})", "type")
        if kind not in MOVE_TYPES:
            raise fail(f"unknown move type {kind!r} (expected one of {', '.join(MOVE_TYPES)})")
        allowed = _MOVE_FIELDS[kind] | {"type", "player", "at"}
        for name in obj:
            if name not in allowed:
                raise fail(f"not a field of a {kind} move", name)
        player = obj.get("player")
        # A reshuffle is the table's doing, not a player's: a player given with it is ignored.
        if kind == "reshuffle":
            player = None
        elif player is None:
            raise fail("missing", "player")
        elif players is not None and player not in players:
            raise fail(f"{player!r} is not a player at this table", "player")
        elif not isinstance(player, str):
            raise fail("must be a player id (text)", "player")
        try:
            at = _timestamp(obj["at"], "at") if obj.get("at") is not None else None
        except RecordError as error:
            raise fail(error.reason, "at") from None

        def card(name: str) -> Card:
            if name not in obj:
                raise fail("missing", name)
            try:
                return _card(obj[name], name)
            except RecordError as error:
                raise fail(error.reason, error.field) from None

        def cards(name: str) -> tuple[Card, ...]:
            if name not in obj:
                raise fail("missing", name)
            try:
                return _cards(obj[name], name)
            except RecordError as error:
                raise fail(error.reason, error.field) from None

        def groups(name: str) -> tuple[tuple[Card, ...], ...]:
            value = obj.get(name)
            if not isinstance(value, list):
                raise fail("missing" if value is None else "must be a list of groups", name)
            if len(value) > bounds.GROUPS_MAX:
                raise fail(f"{len(value)} groups: at most {bounds.GROUPS_MAX}", name)
            try:
                return tuple(_cards(group, f"{name}[{i}]") for i, group in enumerate(value))
            except RecordError as error:
                raise fail(error.reason, error.field) from None

        if kind == "pick":
            source = obj.get("from")
            if source not in PICK_SOURCES:
                reason = "missing" if source is None else f"{source!r} is not a pile"
                raise fail(f"{reason} (expected 'open' or 'closed')", "from")
            return cls(kind, player, source=source, card=card("card"), at=at)
        if kind == "discard":
            return cls(kind, player, card=card("card"), at=at)
        if kind == "declare":
            return cls(kind, player, finish=card("finish"), groups=groups("groups"), at=at)
        if kind == "show":
            return cls(kind, player, groups=groups("groups"), at=at)
        if kind == "reshuffle":
            # Without a known stock order the new order may be unknown too.
            stock = cards("stock") if obj.get("stock") is not None else None
            return cls(kind, None, stock=stock, at=at)
        return cls(kind, player, at=at)

    def to_dict(self) -> dict:
        out: dict[str, Any] = {}
        if self.player is not None:
            out["player"] = self.player
        out["type"] = self.type
        if self.source is not None:
            out["from"] = self.source
        if self.card is not None:
            out["card"] = str(self.card)
        if self.finish is not None:
            out["finish"] = str(self.finish)
        if self.groups is not None:
            out["groups"] = [_texts(group) for group in self.groups]
        if self.stock is not None:
            out["stock"] = _texts(self.stock)
        if self.at is not None:
            out["at"] = format_time(self.at)
        return out

    def describe(self) -> str:
        """``player type card`` as error messages show it: ``p3 discard 9C``, ``p2 drop``."""
        words = [self.player or "table", self.type]
        shown = self.card or self.finish
        if shown is not None:
            words.append(str(shown))
        return " ".join(words)


@dataclass(frozen=True)
class Reported:
    """What the operator says it settled; any subset of the fields."""

    winner: str | None = None
    points: Mapping[str, int] | None = None
    gross: Decimal | None = None
    fee: Decimal | None = None
    net_to_winner: Decimal | None = None

    def to_dict(self) -> dict:
        out: dict[str, Any] = {}
        if self.winner is not None:
            out["winner"] = self.winner
        if self.points is not None:
            out["points"] = dict(self.points)
        for name in _REPORTED_MONEY:
            value = getattr(self, name)
            if value is not None:
                out[name] = str(value)
        return out

    @classmethod
    def from_dict(cls, obj: Any, players: Iterable[str] = ()) -> Reported:
        if not isinstance(obj, Mapping):
            raise RecordError("must be an object", field="reported")
        players = set(players)
        for name in obj:
            if name not in ("winner", "points", *_REPORTED_MONEY):
                raise RecordError("not a field of the reported block", field=f"reported.{name}")
        winner = obj.get("winner")
        if winner is not None and not isinstance(winner, str):
            raise RecordError(
                f"{bounds._short(winner)} is not a player id (text)", field="reported.winner"
            )
        if winner is not None and winner not in players:
            raise RecordError(f"{winner!r} is not a player", field="reported.winner")
        points = obj.get("points")
        if points is not None:
            if not isinstance(points, Mapping):
                raise RecordError("must map players to points", field="reported.points")
            for player, value in points.items():
                if player not in players:
                    raise RecordError("not a player", field=f"reported.points.{player}")
                if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                    raise RecordError(
                        f"{bounds._short(value)} is not a whole number of points",
                        field=f"reported.points.{player}",
                    )
                _count(value, f"reported.points.{player}", bounds.REPORTED_POINTS)
            points = dict(points)
        money = {
            name: _decimal(obj[name], f"reported.{name}", bounds.REPORTED_MONEY)
            if obj.get(name) is not None
            else None
            for name in _REPORTED_MONEY
        }
        return cls(winner=winner, points=points, **money)


@dataclass(frozen=True)
class GameRecord:
    """One whole game as FORMAT.md describes it."""

    config: TableConfig
    deal: Deal
    moves: tuple[Move, ...] = ()
    reported: Reported | None = None

    @property
    def game_id(self) -> str:
        return self.config.game_id

    @property
    def shuffle(self) -> Mapping[str, Any] | None:
        """The verifiable-shuffle block, kept on the table configuration."""
        return self.config.shuffle

    def move_dicts(self) -> list[dict]:
        return [move.to_dict() for move in self.moves]

    def to_dict(self) -> dict:
        """The canonical FORMAT.md object (key order fixed, cards and times normalised)."""
        config = self.config
        table: dict[str, Any] = {}
        if config.table_id is not None:
            table["id"] = config.table_id
        table["decks"] = config.decks
        table["jokers_per_deck"] = config.jokers_per_deck
        stakes: dict[str, Any] = {
            "currency": config.currency,
            "point_value": str(config.point_value),
        }
        if config.raise_schedule is not None:
            stakes["raise"] = {"schedule": [str(value) for value in config.raise_schedule]}
        elif config.raise_step is not None or config.raise_max is not None:
            stakes["raise"] = {"step": str(config.raise_step), "max": str(config.raise_max)}
        stakes["fee_percent"] = str(config.fee_percent)
        out: dict[str, Any] = {
            "format": FORMAT_TAG,
            "game_id": config.game_id,
            "variant": config.variant,
            "rules": config.rules,
        }
        if config.started_at is not None:
            out["started_at"] = format_time(config.started_at)
        out["table"] = table
        out["stakes"] = stakes
        seats = config.seats or range(1, len(config.players) + 1)
        out["players"] = [
            {"id": player, "seat": seat} for player, seat in zip(config.players, seats, strict=True)
        ]
        if config.toss:
            out["toss"] = {player: str(card) for player, card in config.toss.items()}
        else:
            out["dealer"] = config.dealer
        deal = self.deal.to_dict()
        if deal["stock"] is None:
            del deal["stock"]
        out["deal"] = deal
        out["moves"] = self.move_dicts()
        if self.reported is not None:
            out["reported"] = self.reported.to_dict()
        if config.shuffle is not None:
            out["shuffle"] = dict(config.shuffle)
        return out

    def canonical(self) -> str:
        return dump_record(self)


# -- reading -----------------------------------------------------------------------------


def parse_record(obj: Any) -> GameRecord:
    """Read one record (a dict, or its JSON text) into a :class:`GameRecord`."""
    obj = record_object(obj)
    variant = variants.for_record(obj)  # each family parses its own record shape
    if variant is None:  # no registered format: the 13-card parser names the bad field
        return parse_game_record(obj)
    return variant.parse_record(obj)


def parse_game_record(obj: Mapping) -> GameRecord:
    """A 13-card ``rummy-ledger/game@1`` record (docs/record-format.md)."""
    return parse_with_game_id(obj, _parse)


# The header checks every record shape shares (13-card games and Red 3 matches alike).
def record_object(obj: Any) -> Mapping:
    """A record as a mapping: JSON text is decoded, anything but an object is refused."""
    if isinstance(obj, str | bytes):
        try:
            obj = json.loads(obj)
        except ValueError as error:
            raise RecordError(f"not valid JSON: {error}") from None
        except RecursionError:
            raise RecordError(f"not valid JSON: {TOO_DEEP}") from None
    if not isinstance(obj, Mapping):
        raise RecordError("a record must be a JSON object")
    return obj


def parse_with_game_id(obj: Mapping, parse: Callable[[Mapping, str], Any]) -> Any:
    """Check ``game_id``, then ``parse(obj, game_id)``; any error it raises names the game."""
    game_id = obj.get("game_id")
    if not isinstance(game_id, str) or not ID_PATTERN.match(game_id):
        raise RecordError(
            "missing"
            if game_id is None
            else f"{game_id!r} is not a game id (1-64 letters, digits, '_', '.', ':' or '-')",
            field="game_id",
        )
    try:
        return parse(obj, game_id)
    except RecordError as error:
        error.game_id = game_id
        error.args = (str(error),)
        raise


def require_format(obj: Mapping, expected: str, fields: Iterable[str], what: str) -> None:
    """``format`` must be ``expected`` and every top-level name one of ``fields``."""
    if obj.get("format") != expected:
        found = obj.get("format")
        raise RecordError(
            f"{'missing' if found is None else repr(found) + ' is not supported'} "
            f"(expected {expected!r})",
            field="format",
        )
    for name in obj:
        if name not in fields:
            raise RecordError(f"not a field of {what}", field=name)


def _parse(obj: Mapping, game_id: str) -> GameRecord:
    require_format(obj, FORMAT_TAG, _TOP_FIELDS, "a game record")
    variant = obj.get("variant")
    if variant not in VARIANTS:
        raise RecordError(
            f"{'missing' if variant is None else repr(variant) + ' is not a variant'} "
            "(expected 'points' or 'raise')",
            field="variant",
        )
    rules = obj.get("rules", DEFAULT_PROFILE)
    try:
        profile = get_profile(rules)
    except (UnknownProfile, TypeError) as error:
        raise RecordError(str(error), field="rules") from None
    started_at = _timestamp(obj["started_at"], "started_at") if obj.get("started_at") else None

    table = _object(obj.get("table", {}), "table", {"id", "decks", "jokers_per_deck"})
    table_id = table.get("id")
    if table_id is not None and not bounds.is_id(table_id):
        raise RecordError(
            f"{bounds._short(table_id)} is not a table id ({bounds.ID_EXPECTED})", field="table.id"
        )
    decks = _count(table.get("decks", profile.decks), "table.decks", bounds.DECKS)
    jokers_per_deck = _count(
        table.get("jokers_per_deck", profile.jokers_per_deck),
        "table.jokers_per_deck",
        bounds.JOKERS_PER_DECK,
    )

    stakes = _object(
        obj.get("stakes"), "stakes", {"currency", "point_value", "raise", "fee_percent"}
    )
    currency = stakes.get("currency")
    if not isinstance(currency, str) or not currency:
        raise RecordError(
            "missing" if currency is None else "must be text", field="stakes.currency"
        )
    if not bounds.CURRENCY_PATTERN.match(currency):
        raise RecordError(
            f"{bounds._short(currency)} is not {bounds.CURRENCY_EXPECTED}", field="stakes.currency"
        )
    point_value = _decimal(stakes.get("point_value"), "stakes.point_value", bounds.POINT_VALUE)
    fee = stakes.get("fee_percent", "0")
    try:
        # Kept apart from the bound so that 120 still reads as what it is.
        if not isinstance(fee, bool) and isinstance(fee, str | int) and Decimal(str(fee)) > 100:
            raise RecordError("a fee above 100% is not a fee", field="stakes.fee_percent")
    except ArithmeticError:
        pass  # not a number at all: the bound below says so
    fee_percent = _decimal(fee, "stakes.fee_percent", bounds.FEE_PERCENT)
    raise_step = raise_max = raise_schedule = None
    if "raise" in stakes:
        if variant != "raise":
            raise RecordError("only a 'raise' game has a raise", field="stakes.raise")
        block = _object(stakes["raise"], "stakes.raise", {"step", "max", "schedule"})
        if "schedule" in block:
            if "step" in block or "max" in block:
                raise RecordError(
                    "give either a schedule or step and max, not both", field="stakes.raise"
                )
            schedule = block["schedule"]
            if not isinstance(schedule, list) or not schedule:
                raise RecordError(
                    "must be a non-empty list of decimal strings", field="stakes.raise.schedule"
                )
            _length(schedule, bounds.RAISE_SCHEDULE_MAX, "values", "stakes.raise.schedule")
            raise_schedule = tuple(
                _decimal(value, f"stakes.raise.schedule[{i}]", bounds.POINT_VALUE)
                for i, value in enumerate(schedule)
            )
        else:
            raise_step = _decimal(block.get("step"), "stakes.raise.step", bounds.RAISE_STEP)
            raise_max = _decimal(block.get("max"), "stakes.raise.max", bounds.POINT_VALUE)
            if raise_max < point_value:
                raise RecordError(
                    f"{raise_max} is below the starting point value {point_value}",
                    field="stakes.raise.max",
                )
    elif variant == "raise":
        raise RecordError(
            "missing: a raise game needs {step, max} or {schedule}", field="stakes.raise"
        )

    players, seats = _players(obj.get("players"))
    dealer = obj.get("dealer")
    toss = None
    if "toss" in obj:
        if dealer is not None:
            raise RecordError("give either a dealer or a toss, not both", field="toss")
        toss_block = _object(obj["toss"], "toss", set(players))
        if set(toss_block) != set(players):
            missing = sorted(set(players) - set(toss_block))
            raise RecordError(f"no toss card for {', '.join(missing)}", field="toss")
        toss = {player: _card(toss_block[player], f"toss.{player}") for player in players}
    elif dealer is None:
        raise RecordError("missing: give the dealer (or a toss)", field="dealer")
    elif dealer not in players:
        raise RecordError(f"{dealer!r} is not a player at this table", field="dealer")

    shuffle = None
    if obj.get("shuffle") is not None:
        shuffle = _object(obj["shuffle"], "shuffle", None)
        _shuffle_bounds(shuffle)
        shuffle = json.loads(json.dumps(shuffle, sort_keys=True))

    try:
        config = TableConfig(
            game_id=game_id,
            variant=variant,
            rules=profile.name,
            table_id=table_id,
            decks=decks,
            jokers_per_deck=jokers_per_deck,
            currency=currency,
            point_value=point_value,
            raise_step=raise_step,
            raise_max=raise_max,
            raise_schedule=raise_schedule,
            fee_percent=fee_percent,
            players=players,
            dealer=dealer,
            toss=toss,
            started_at=started_at,
            seats=tuple(seats[player] for player in players),
            shuffle=shuffle,
        )
    except RuleViolation as error:  # a table that cannot exist (seat count, tied toss)
        raise RecordError(error.reason) from None
    deal = _deal(obj.get("deal"), players)
    moves_in = obj.get("moves", [])
    if not isinstance(moves_in, list):
        raise RecordError("must be a list of moves", field="moves")
    _length(moves_in, bounds.MOVES_MAX, "moves", "moves")
    moves = tuple(
        Move.from_dict(move, index=index, players=players) for index, move in enumerate(moves_in)
    )
    reported = Reported.from_dict(obj["reported"], players) if "reported" in obj else None
    return GameRecord(config=config, deal=deal, moves=moves, reported=reported)


def _players(value: Any) -> tuple[tuple[str, ...], dict[str, int]]:
    if not isinstance(value, list) or not value:
        raise RecordError("must be a list of {id, seat}", field="players")
    seats: dict[str, int] = {}
    for i, entry in enumerate(value):
        entry = _object(entry, f"players[{i}]", {"id", "seat"})
        player = entry.get("id")
        if not isinstance(player, str) or not ID_PATTERN.match(player):
            raise RecordError(
                "missing"
                if player is None
                else f"{bounds._short(player)} is not a player id ({bounds.ID_EXPECTED})",
                field=f"players[{i}].id",
            )
        if player in seats:
            raise RecordError(f"{player} sits twice", field=f"players[{i}].id")
        seat = _count(entry.get("seat", i + 1), f"players[{i}].seat", bounds.SEAT)
        if seat in seats.values():
            raise RecordError(f"seat {seat} is taken twice", field=f"players[{i}].seat")
        seats[player] = seat
    # Seat order is turn order, whatever order the list was written in.
    ordered = tuple(sorted(seats, key=seats.__getitem__))
    return ordered, {player: seats[player] for player in ordered}


def _deal(value: Any, players: tuple[str, ...]) -> Deal:
    block = _object(value, "deal", {"hands", "wild", "open", "stock"})
    hands_in = _object(block.get("hands"), "deal.hands", set(players))
    missing = [player for player in players if player not in hands_in]
    if missing:
        raise RecordError(f"no hand for {', '.join(missing)}", field="deal.hands")
    hands = {player: _cards(hands_in[player], f"deal.hands.{player}") for player in players}
    wild = _card(block.get("wild"), "deal.wild")
    open_card = _card(block.get("open"), "deal.open")
    stock = _cards(block["stock"], "deal.stock") if block.get("stock") is not None else None
    return Deal(hands=hands, wild=wild, open_card=open_card, stock=stock)


TOO_DEEP = "nested too deeply to be a game record"


def read_records(lines: Iterable[str | bytes]) -> Iterator[tuple[int, GameRecord | RecordError]]:
    """Yield ``(line number, record or RecordError)`` for each non-blank JSON line."""
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if _line_bytes(line) > bounds.LINE_BYTES_MAX:
            yield (
                number,
                RecordError(
                    f"the line is longer than {bounds.LINE_LIMIT_TEXT}: "
                    "a record line must be at most 1,048,576 bytes",
                    line=number,
                ),
            )
            continue
        try:
            obj = json.loads(line)
        except ValueError as error:
            yield number, RecordError(f"not valid JSON: {error}", line=number)
            continue
        except RecursionError:  # a hostile line: arrays in arrays thousands deep
            yield number, RecordError(f"not valid JSON: {TOO_DEEP}", line=number)
            continue
        try:
            yield number, parse_record(obj)
        except RecordError as error:
            error.line = number
            yield number, error
        except Exception as error:  # a shape no check foresaw: that record's refusal only
            yield (
                number,
                RecordError(
                    f"could not be read ({type(error).__name__}: {error})",
                    game_id=game_id_of(obj),
                    line=number,
                ),
            )


def _line_bytes(line: str | bytes) -> int:
    if isinstance(line, bytes):
        return len(line)
    # Cheap first: a line of few characters cannot be many bytes (UTF-8: at most 4 each).
    return len(line) if len(line) * 4 <= bounds.LINE_BYTES_MAX else len(line.encode())


def bounded_lines(file: IO) -> Iterator[str | bytes]:
    """The lines of ``file``, never holding more than one line's limit in memory: a longer
    line is yielded cut just past the limit (so :func:`read_records` refuses it by number)
    and the rest of it is skipped in pieces."""
    limit = bounds.LINE_BYTES_MAX + 1
    while True:
        line = file.readline(limit)
        if not line:
            return
        newline = "\n" if isinstance(line, str) else b"\n"
        if len(line) >= limit and not line.endswith(newline):
            rest = line
            while rest and not rest.endswith(newline):
                rest = file.readline(limit)
        yield line


def game_id_of(obj: Any) -> str | None:
    """The ``game_id`` of raw record JSON if it has a usable one (for error lines)."""
    if isinstance(obj, Mapping) and isinstance(obj.get("game_id"), str):
        return obj["game_id"]
    return None


# -- writing -----------------------------------------------------------------------------


def dump_record(record: GameRecord | Mapping, **extra: Any) -> str:
    """One JSON line; ``extra`` fields (such as ``settlement`` on export) go at the end."""
    obj = record.to_dict() if hasattr(record, "to_dict") else dict(record)
    obj.update(extra)
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": "), default=_json_default)


def _json_default(value: Any) -> Any:
    if isinstance(value, Decimal | Card):
        return str(value)
    if isinstance(value, datetime):
        return format_time(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


# -- field readers -----------------------------------------------------------------------


def _texts(cards: Iterable[Card]) -> list[str]:
    return [str(card) for card in cards]


def _object(value: Any, name: str, allowed: set[str] | None) -> dict:
    if value is None:
        raise RecordError("missing", field=name)
    if not isinstance(value, Mapping):
        raise RecordError("must be an object", field=name)
    if allowed is not None:
        for key in value:
            if key not in allowed:
                raise RecordError("not expected here", field=f"{name}.{key}")
    return dict(value)


def _card(value: Any, name: str) -> Card:
    if value is None:
        raise RecordError("missing", field=name)
    try:
        return Card.parse(value)
    except CardError as error:
        raise RecordError(str(error), field=name) from None


def _cards(value: Any, name: str) -> tuple[Card, ...]:
    if not isinstance(value, list):
        raise RecordError("must be a list of cards", field=name)
    _length(value, bounds.CARDS_MAX, "cards", name)
    return tuple(_card(card, f"{name}[{i}]") for i, card in enumerate(value))


def _length(value: list, maximum: int, what: str, name: str) -> None:
    try:
        bounds.length_at_most(value, maximum, what)
    except OutOfBounds as error:
        raise RecordError(str(error), field=name) from None


def _count(value: Any, name: str, bound: bounds.CountBound) -> int:
    try:
        return bounds.count_in(value, bound)
    except OutOfBounds as error:
        raise RecordError(str(error), field=name) from None


def _decimal(value: Any, name: str, bound: bounds.DecimalBound) -> Decimal:
    # JSON numbers with a fraction would pass through float; money is exact, so text only.
    if value is None:
        raise RecordError("missing", field=name)
    try:
        return bounds.decimal_in(value, bound)
    except OutOfBounds as error:
        raise RecordError(str(error), field=name) from None


def _timestamp(value: Any, name: str) -> datetime:
    try:
        return bounds.time_in(parse_time(value, what=name))
    except ValueError as error:
        raise RecordError(str(error), field=name) from None


def _shuffle_bounds(shuffle: Mapping) -> None:
    """The shuffle block is kept verbatim in the game's first event: keep it small."""
    for name in ("commitment", "seed"):
        if name in shuffle and not isinstance(shuffle[name], str):
            raise RecordError("must be text", field=f"shuffle.{name}")
        if name in shuffle and len(shuffle[name]) > bounds.SHUFFLE_TEXT_MAX:
            raise RecordError(
                f"{len(shuffle[name])} characters: at most {bounds.SHUFFLE_TEXT_MAX}",
                field=f"shuffle.{name}",
            )
    size = len(json.dumps(shuffle))
    if size > bounds.SHUFFLE_BYTES_MAX:
        raise RecordError(
            f"{size} characters of JSON: at most {bounds.SHUFFLE_BYTES_MAX}", field="shuffle"
        )


# -- from a stored game ------------------------------------------------------------------


def record_of(game: Game) -> GameRecord:
    """The record of a game rebuilt from its events (what ``export`` writes).

    ``record_of(play_game(r.config, r.deal, r.move_dicts())) == r`` for any record ``r``
    without a ``reported`` block (that one is kept once the game is settled).
    """
    return variants.for_game(game).record_of(game)


def game_record_of(game: Game) -> GameRecord:
    """The record of a stored 13-card game."""
    if game.dealt is None:
        raise RecordError(
            "the game has not been dealt yet: there is no record to write", game_id=game.game_id
        )
    moves = tuple(Move.from_dict(move, index=index) for index, move in enumerate(game.moves))
    reported = Reported.from_dict(game.reported, game.config.players) if game.reported else None
    return GameRecord(config=game.config, deal=game.dealt, moves=moves, reported=reported)


def explain(error: Exception, record: GameRecord | None = None) -> str:
    """Why a record was refused, without the game id: ``move 17 (p3 discard 9C): ...``.

    Rule violations name the move by its 0-based index and ``player type card`` (the finish
    card for a declaration); format errors name the field.
    """
    if record is None:
        return explain_game(error, record)
    return variants.for_parsed(record).explain(error, record)


def explain_game(error: Exception, record: GameRecord | None = None) -> str:
    """Why a 13-card record was refused (see :func:`explain`)."""
    if isinstance(error, RecordError):
        return error.detail
    if isinstance(error, RuleViolation):
        index = error.move_index
        if index is None:
            return str(error) if error.move_type != "deal" else f"deal: {error}"
        if record is not None and 0 <= index < len(record.moves):
            described = record.moves[index].describe()
        else:
            described = error.where().partition("(")[2].rstrip(")")
        return f"move {index} ({described}): {error}"
    return str(error)
