"""Red 3 match records (``rummy-ledger/red3@1``, docs/red3-format.md) read, checked, written.

The shape (known fields, card text, players, round numbers and every bound) is declared in
:mod:`domain.red3.record_schema` and validated with it here; the rules are checked by playing the record through the match aggregate (:meth:`Red3Record.build`). Bad
shape raises :class:`~domain.records.RecordError` naming the game and the field, such as
``rounds[1].moves[4].card``; a broken rule is a :class:`~domain.errors.RuleViolation` that
:func:`explain` places as ``round 2 move 4 (p1 discard KS)``.

>>> parse_red3_record({"format": "rummy-ledger/red3@1", "game_id": "R3-1", "variant": "red3",
...                    "players": [{"id": "p1", "seat": 1}], "round_count": 2, "rounds": []})
Traceback (most recent call last):
...
domain.records.RecordError: R3-1: field 'players': 1 given: at least 2 needed

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

from domain.errors import BadConfig, BadDeal, RuleViolation
from domain.records import RecordError, parse_with_game_id, record_object, validated
from domain.red3 import record_schema as schema
from domain.red3.game import Red3Match
from domain.red3.moves import play_match, where
from domain.red3.record_schema import RED3_FORMAT, RED3_VARIANT
from domain.red3.table import Red3Config, Red3Deal
from domain.timestamps import format_time, parse_time


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
    record = validated(schema.Red3Record, obj, "a Red 3 match record")
    try:
        config = Red3Config(
            game_id=game_id,
            players=tuple(player.id for player in record.players),
            seats=tuple(
                i + 1 if player.seat is None else player.seat
                for i, player in enumerate(record.players)
            ),
            rounds=record.round_count,
            rules=record.rules,
            first_player=record.first_player,
            table_id=None if record.table is None else record.table.id,
            started_at=record.started_at,
            shuffle=None if record.shuffle is None else record.shuffle.verbatim(),
        )
    except BadConfig as error:
        raise RecordError(error.reason, field=_config_field(error.reason)) from None
    rounds = tuple(_round(played, index, config) for index, played in enumerate(record.rounds))
    reported = None if record.reported is None else record.reported.figures()
    return Red3Record(config=config, rounds=rounds, reported=reported)


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


def _round(played: schema.Red3Round, index: int, config: Red3Config) -> Red3Round:
    parsed = deal_of(played.deal, config, index + 1, field=f"rounds[{index}].deal")
    moves = tuple(move.canonical() for move in played.moves)
    return Red3Round(deal=parsed, moves=moves, at=played.at)


def deal_of(deal: schema.Red3Deal, config: Red3Config, number: int, *, field: str) -> Red3Deal:
    """Round ``number``'s deal from its validated block (the rotation's first player when
    none is named); a deal the table cannot hold is a :class:`RecordError` at ``field``."""
    try:
        return Red3Deal(
            first=config.first_player_of(number) if deal.first is None else deal.first,
            hands={player: tuple(cards) for player, cards in deal.hands.items()},
            second_hands={player: tuple(cards) for player, cards in deal.second_hands.items()},
            pile=tuple(deal.pile),
            stock=None if deal.stock is None else tuple(deal.stock),
        )
    except BadDeal as error:
        raise RecordError(error.reason, field=field) from None


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
