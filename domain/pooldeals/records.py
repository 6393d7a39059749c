"""Pool and Deals match records (docs/pool-deals-format.md) read, checked, written.

The shape is declared in :mod:`domain.pooldeals.record_schema` and validated with it here;
the rules are checked by playing the record through the match aggregate
(:meth:`MatchRecord.build`). Bad shape raises :class:`~domain.records.RecordError` naming the
game and the field (``deals[1].moves[4].card``); a broken rule is a
:class:`~domain.errors.RuleViolation` that :func:`explain` places as
``deal 2, move 4 (p1 discard KS): ...``.

Parsing and writing round-trip: ``parse_match_record(record.to_dict()) == record``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from domain.errors import RuleViolation
from domain.pooldeals import record_schema as schema
from domain.pooldeals.match import Match
from domain.pooldeals.table import DEALS, POOL, MatchConfig
from domain.records import RecordError, parse_with_game_id, record_object, validated
from domain.rummy13.records import Move
from domain.timestamps import format_time, parse_time

FORMATS = {POOL: schema.POOL_FORMAT, DEALS: schema.DEALS_FORMAT}


@dataclass(frozen=True)
class DealRecord:
    """One deal of a match record: the 13-card deal block, its moves, the rejoins before it."""

    deal: dict  # docs/record-format.md's deal block, canonical (stock None when unknown)
    moves: tuple[dict, ...] = ()
    rejoins: tuple[str, ...] = ()
    at: datetime | None = None

    def to_dict(self, number: int, variant: str) -> dict:
        out: dict[str, Any] = {"number": number}
        if self.at is not None:
            out["at"] = format_time(self.at)
        if variant == POOL:
            out["rejoins"] = list(self.rejoins)
        deal = dict(self.deal)
        if deal.get("stock") is None:
            deal.pop("stock", None)
        out["deal"] = deal
        out["moves"] = [dict(move) for move in self.moves]
        return out


@dataclass(frozen=True)
class MatchRecord:
    """One Pool or Deals match as docs/pool-deals-format.md describes it."""

    config: MatchConfig
    deals: tuple[DealRecord, ...] = ()
    split: dict | None = None  # {"accepted_by": [...], "at": ...}
    reported: dict | None = None

    @property
    def game_id(self) -> str:
        return self.config.game_id

    @property
    def variant(self) -> str:
        return self.config.variant

    @property
    def shuffle(self) -> Mapping[str, Any] | None:
        return self.config.shuffle

    def to_dict(self) -> dict:
        """The canonical record object (key order fixed, cards and times normalised)."""
        config = self.config
        out: dict[str, Any] = {
            "format": FORMATS[config.variant],
            "game_id": config.game_id,
            "variant": config.variant,
            "rules": config.rules,
        }
        if config.started_at is not None:
            out["started_at"] = format_time(config.started_at)
        table: dict[str, Any] = {}
        if config.table_id is not None:
            table["id"] = config.table_id
        table["decks"] = config.decks
        table["jokers_per_deck"] = config.jokers_per_deck
        out["table"] = table
        seats = config.seats or range(1, len(config.players) + 1)
        out["players"] = [
            {"id": player, "seat": seat} for player, seat in zip(config.players, seats, strict=True)
        ]
        if config.toss:
            out["toss"] = {player: str(card) for player, card in config.toss.items()}
        else:
            out["dealer"] = config.first_dealer
        terms: dict[str, Any] = {}
        if config.variant == POOL:
            terms["pool"] = config.pool
        else:
            terms["deals"] = config.deals
        terms["entry_fee"] = str(config.entry_fee)
        terms["currency"] = config.currency
        terms["fee_percent"] = str(config.fee_percent)
        if config.variant == POOL:
            if config.max_rejoins is not None:
                terms["max_rejoins"] = config.max_rejoins
            terms["auto_split"] = config.auto_split
        out["match"] = terms
        out["deals"] = [
            played.to_dict(n, config.variant) for n, played in enumerate(self.deals, start=1)
        ]
        if self.split is not None:
            out["split"] = dict(self.split)
        if self.reported is not None:
            out["reported"] = dict(self.reported)
        if config.shuffle is not None:
            out["shuffle"] = dict(config.shuffle)
        return out

    def build(self, *, close: bool = True) -> Match:
        """The match played in memory from this record; raises on the first broken rule.
        ``close``: score a last deal whose losers did not all show (a finished record)."""
        match = Match.start(self.config, reported=self.reported)
        for played in self.deals:
            for player in played.rejoins:
                match.rejoin(player)
            match.deal(played.deal, at=played.at)
            for move in played.moves:
                match.play(move)
        if self.split is not None:
            match.agree_split(self.split["accepted_by"], at=self.split.get("at"))
        elif close:
            match.close()
        return match

    def canonical(self) -> str:
        """The record as its match exports it: one deterministic JSON line."""
        return dump_match(match_record_of(self.build()))


# -- reading -----------------------------------------------------------------------------


def parse_match_record(obj: Any) -> MatchRecord:
    """Read one Pool or Deals record (a dict, or its JSON text) into a :class:`MatchRecord`."""
    return parse_with_game_id(record_object(obj), _parse)


def _parse(obj: Mapping, game_id: str) -> MatchRecord:
    model = schema.DealsRecord if obj.get("format") == schema.DEALS_FORMAT else schema.PoolRecord
    record = validated(model, obj, "a match record")
    config = config_of(record)
    deals = tuple(
        DealRecord(
            deal=_deal_dict(played.deal),
            moves=tuple(Move.of(move).to_dict() for move in played.moves),
            rejoins=tuple(getattr(played, "rejoins", ())),
            at=played.at,
        )
        for played in record.deals
    )
    split = None
    if getattr(record, "split", None) is not None:
        split = {"accepted_by": list(record.split.accepted_by)}
        if record.split.at is not None:
            split["at"] = format_time(record.split.at)
    reported = None if record.reported is None else record.reported.figures()
    return MatchRecord(config=config, deals=deals, split=split, reported=reported)


def config_of(header: schema.MatchHeader) -> MatchConfig:
    """The match's configuration from a validated header (a record's or the API's)."""
    players, seats = header.seating()
    terms = header.match
    try:
        return MatchConfig(
            game_id=header.game_id,
            variant=header.variant,
            players=players,
            seats=seats,
            entry_fee=terms.entry_fee,
            pool=getattr(terms, "pool", None),
            deals=getattr(terms, "deals", None),
            rules=header.rules,
            table_id=header.table.id,
            decks=header.table.decks,
            jokers_per_deck=header.table.jokers_per_deck,
            currency=terms.currency,
            fee_percent=terms.fee_percent,
            max_rejoins=getattr(terms, "max_rejoins", None),
            auto_split=getattr(terms, "auto_split", False),
            dealer=header.dealer,
            toss=None if header.toss is None else {p: str(header.toss[p]) for p in players},
            started_at=header.started_at,
            shuffle=None if header.shuffle is None else header.shuffle.verbatim(),
        )
    except RuleViolation as error:  # a table that cannot exist (a tied toss)
        raise RecordError(error.reason) from None


def _deal_dict(deal: Any) -> dict:
    return {
        "hands": {player: [str(card) for card in cards] for player, cards in deal.hands.items()},
        "wild": str(deal.wild),
        "open": str(deal.open),
        "stock": None if deal.stock is None else [str(card) for card in deal.stock],
    }


# -- writing -----------------------------------------------------------------------------


def match_record_of(match: Match) -> MatchRecord:
    """The record of a match rebuilt from its events (what ``export`` writes)."""
    deals = tuple(
        DealRecord(
            deal=dict(played["deal"]),
            moves=tuple(dict(move) for move in played["moves"]),
            rejoins=tuple(played["rejoins"]),
            at=parse_time(played["at"]),
        )
        for played in match.deals
    )
    split = None
    if match.split is not None and match.split.get("accepted_by"):
        split = {"accepted_by": list(match.split["accepted_by"])}
        if match.split.get("at"):
            split["at"] = match.split["at"]
    return MatchRecord(config=match.config, deals=deals, split=split, reported=match.reported)


def dump_match(record: MatchRecord | Mapping, **extra: Any) -> str:
    obj = record.to_dict() if isinstance(record, MatchRecord) else dict(record)
    obj.update(extra)
    return json.dumps(obj, ensure_ascii=False, separators=(", ", ": "))


def where(error: Exception) -> str:
    """``deal 2, move 4 (p1 discard KS)``: the place of a broken rule in a match."""
    deal = getattr(error, "deal", None)
    if deal is None:
        return ""
    place = f"deal {deal}"
    if isinstance(error, RuleViolation) and error.move_index is not None:
        place += f", {error.where()}"
    return place


def explain(error: Exception) -> str:
    """Why a match record was refused, without the game id."""
    if isinstance(error, RecordError):
        return error.detail
    if isinstance(error, RuleViolation):
        text = str(error)
        place = where(error)
        if text.startswith(f"deal {getattr(error, 'deal', None)}: "):
            return text
        return f"{place}: {text}" if place else text
    return str(error)
