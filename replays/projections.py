"""The game projection: stored game events → the read-model tables of :mod:`replays.models`.

Every game event is applied to the game aggregate itself (the same event bodies that
rebuild a game), so round, point value and outcome come from the domain, never from rules
copied here. Games seen recently stay in memory between batches; any other is loaded at
the version before the event (a snapshot plus a few events).

Per batch of notifications (see :mod:`replays.projection_runner` for the exactly-once
tracking), the projection writes:

- one ``moves`` row per move event (pick, discard, drop, miss, declare, show, reshuffle),
  with the round and point value in force when the move was made;
- one ``games`` row per game: inserted at ``Started``, brought up to date at the end of
  each batch that touched it;
- at ``Settled``: ``player_results`` (each loser as the recorded settlement states it, and
  the winner credited ``net_to_winner``), the settlement's ``ledger_entries``, and a hash
  of the recorded settlement;
- at ``Settled`` and ``Reported``: the audit (:func:`replays.audit.audit_game`) recomputes
  the settlement from the game's facts and compares it with the recorded settlement and
  the operator's reported figures; a difference flags the game as a discrepancy, so period
  reports stay pure SQL (docs/read-models.md explains the trade-off).

Entry points: :func:`catch_up` (called by the importer, the ingest API and the simulator
after they write), :func:`rebuild`, :func:`follow`, :func:`projection_status`.

>>> catch_up("sqlite:///rummy-ledger.sqlite3")  # doctest: +SKIP
0
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from functools import lru_cache
from typing import Any

import sqlalchemy as sa
from eventsourcing.persistence import Notification

from domain.game import MOVE_OF_EVENT, Game, TableConfig
from domain.raise_schedule import point_value_for_round
from domain.settlement import account_of
from domain.timestamps import parse_time
from replays.db import engine_for
from replays.dispute_projection import (
    DISPUTE_TOPICS,
    clear_disputes,
    discard_dispute,
    dispute_case_of,
    project_disputes,
)
from replays.models import SETTLED, GameRow, LedgerEntryRow, MoveRow, PlayerResultRow
from replays.projection_runner import Failure, Projection, Runner, Status
from replays.red3_projection import RED3_TOPICS, project_red3
from replays.settings import database_url

NAME = "read_models"
GAME_TOPICS = Game.TOPIC + "."  # every Game event's topic starts so (explicit topics)
SETTLEMENT_KIND = "settlement"
PLAYER_ACCOUNT = account_of("")
# Games still in play, kept between batches so the next event needs no store read. A settled
# game leaves at the end of its batch (``_forget_settled``): an import streams through games
# that all end, and memory stays flat in their number (bench/memory.py, issue 16).
CACHE_SIZE = 1024
MAX_NOTE = 2000

GAMES = GameRow.__table__
MOVES = MoveRow.__table__
RESULTS = PlayerResultRow.__table__
ENTRIES = LedgerEntryRow.__table__

# What each kind of event changes on the games row, beyond its progress columns.
_PROGRESS = ("status", "round", "moves_count", "version", "winner", "final_point_value")
_SETTLEMENT = ("ended_at", "ended_on", "gross", "fee", "net_to_winner", "settlement_hash")
_AUDIT = ("recomputed_hash", "discrepancy", "discrepancy_note")


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
            if isinstance(line, Mapping) and isinstance(line.get("groups"), list)
            else line
            for player, line in players.items()
        }
    return body


def _group_key(group) -> tuple:
    return tuple(str(card) for card in group) if isinstance(group, list | tuple) else (str(group),)


def settlement_hash(settlement: dict) -> str:
    """sha256 of a settlement body's canonical JSON (sorted keys, no spaces, each player's
    groups in :func:`canonical_settlement` order)."""
    settlement = canonical_settlement(settlement)
    text = json.dumps(settlement, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class _Batch:
    """Row changes gathered over one batch, written together at its end."""

    created: set[str] = field(default_factory=set)
    touched: dict[str, Game] = field(default_factory=dict)  # game id -> game after its last event
    settled: dict[str, dict] = field(default_factory=dict)  # game id -> settlement columns
    audit: set[str] = field(default_factory=set)
    moves: list[dict] = field(default_factory=list)
    results: list[dict] = field(default_factory=list)
    entries: list[dict] = field(default_factory=list)


class GameProjection(Projection):
    """Projects 13-card :class:`~domain.game.Game` events; other aggregates are skipped.

    ``verify=False`` leaves out the settlement recomputation (for measuring its cost).
    """

    name = NAME

    def __init__(self, ledger, *, verify: bool = True, cache_size: int = CACHE_SIZE):
        self.ledger = ledger
        self.verify = verify
        self.cache_size = cache_size
        self._games: OrderedDict[Any, Game] = OrderedDict()

    def forget(self) -> None:
        self._games.clear()

    # -- applying events ---------------------------------------------------------------
    def process(self, connection: sa.Connection, notifications: Sequence[Notification]) -> None:
        batch = _Batch()
        to_domain_event = self.ledger.mapper.to_domain_event
        red3 = []  # Red 3 matches have their own rows (replays.red3_projection)
        disputes = []  # dispute cases and adjustments (replays.dispute_projection)
        for notification in notifications:
            if notification.topic.startswith(RED3_TOPICS):
                red3.append(notification)
                continue
            if notification.topic.startswith(DISPUTE_TOPICS):
                disputes.append(notification)
                continue
            if not notification.topic.startswith(GAME_TOPICS):
                continue
            self._apply(batch, to_domain_event(notification))
        self._write(connection, batch)
        self._forget_settled(batch)
        if red3:
            project_red3(connection, self.ledger, red3)
        if disputes:  # after the games: a case's adjustment entries refer to its game's row
            project_disputes(connection, disputes, to_domain_event)

    def _game_before(self, domain_event) -> Game | None:
        version = domain_event.originator_version
        if version == 1:
            return None
        game = self._games.pop(domain_event.originator_id, None)
        if game is None or game.version != version - 1:
            game = self.ledger.get_game(domain_event.originator_id, version=version - 1)
        return game

    def _remember(self, game: Game) -> None:
        self._games[game.id] = game
        if len(self._games) > self.cache_size:
            self._games.popitem(last=False)

    def _forget_settled(self, batch: _Batch) -> None:
        """Drop the batch's settled games from the cache: no move follows a settlement, and a
        later report (rare: it comes in the same batch as the settlement when imported) reads
        the game back from the store."""
        for game in batch.touched.values():
            if game.phase == SETTLED:
                self._games.pop(game.id, None)

    def _apply(self, batch: _Batch, domain_event) -> None:
        before = self._game_before(domain_event)
        move_type = MOVE_OF_EVENT.get(type(domain_event).__name__)
        if before is not None and move_type not in (None, "deal", "settle", "report"):
            batch.moves.append(_move_row(before, domain_event, move_type))
        game = domain_event.mutate(before)
        self._remember(game)
        batch.touched[game.game_id] = game
        if before is None:
            batch.created.add(game.game_id)
        elif move_type == "settle":
            self._settled(batch, game, domain_event)
        if move_type in ("settle", "report") and game.phase == SETTLED:
            batch.audit.add(game.game_id)

    def _settled(self, batch: _Batch, game: Game, domain_event) -> None:
        columns, results, entries = settlement_rows(
            game.config, domain_event.settlement, domain_event.timestamp, game.round
        )
        batch.settled[game.game_id] = columns
        batch.results += results
        batch.entries += entries

    # -- writing rows ------------------------------------------------------------------
    def _write(self, connection: sa.Connection, batch: _Batch) -> None:
        inserts, updates = [], {}
        for game_id, game in batch.touched.items():
            row = _progress_row(game)
            columns = list(_PROGRESS)
            if game_id in batch.settled:
                row.update(batch.settled[game_id])
                columns += _SETTLEMENT
            if game_id in batch.audit:
                row.update(self._audit_row(game))
                columns += _AUDIT
            if game_id in batch.created:
                inserts.append({**_started_row(game), **row})
            else:
                updates.setdefault(tuple(columns), []).append(row)
        if inserts:
            connection.execute(GAMES.insert(), inserts)
        for columns, rows in updates.items():
            statement = (
                GAMES.update()
                .where(GAMES.c.game_id == sa.bindparam("b_game_id"))
                .values({column: sa.bindparam(f"b_{column}") for column in columns})
            )
            connection.execute(
                statement, [{f"b_{key}": value for key, value in row.items()} for row in rows]
            )
        for table, rows in (
            (MOVES, batch.moves),
            (RESULTS, batch.results),
            (ENTRIES, batch.entries),
        ):
            if rows:
                connection.execute(table.insert(), rows)

    def _audit_row(self, game: Game) -> dict:
        if not self.verify:
            return {"recomputed_hash": None, "discrepancy": False, "discrepancy_note": None}
        from replays.audit import RECORDED, _compare_recorded, audit_game

        report = audit_game(game)
        computed = canonical_settlement(report.computed.to_dict())
        found = [d for d in report.discrepancies if d.source != RECORDED]
        if game.recorded_settlement is not None:
            # Both sides in canonical order: a grouping recorded in another order is the
            # same grouping, whatever order the solver returned this time.
            recorded = canonical_settlement(game.recorded_settlement)
            found = _compare_recorded(recorded, computed) + found
        note = "; ".join(
            f"{d.source} {d.field}: {d.reported} != computed {d.computed}" for d in found
        )
        return {
            "recomputed_hash": settlement_hash(computed),
            "discrepancy": bool(found),
            "discrepancy_note": note[:MAX_NOTE] or None,
        }

    def discard(self, connection: sa.Connection, originator_id) -> None:
        """Remove a set-aside game's (or match's, or case's) rows: none half-written stay."""
        key = str(originator_id)
        game_id = connection.execute(
            sa.select(GAMES.c.game_id).where(GAMES.c.originator_id == key)
        ).scalar()
        if game_id is not None:
            for table in (ENTRIES, MOVES, RESULTS, GAMES):
                connection.execute(table.delete().where(table.c.game_id == game_id))
        discard_dispute(connection, key)
        self._games.pop(originator_id, None)

    def game_of(self, connection: sa.Connection, notification: Notification) -> str | None:
        key = str(notification.originator_id)
        game_id = connection.execute(
            sa.select(GAMES.c.game_id).where(GAMES.c.originator_id == key)
        ).scalar()
        if game_id is not None:
            return game_id
        case = dispute_case_of(connection, key)
        if case is not None:
            return case
        # Not projected yet (its first event failed): the event itself names the game.
        domain_event = self.ledger.mapper.to_domain_event(notification)
        config = getattr(domain_event, "config", None)
        for source in (config, domain_event):
            if isinstance(source, dict):
                found = source.get("game_id") or source.get("case_id")
            else:
                found = getattr(source, "game_id", None) or getattr(source, "case_id", None)
            if found:
                return str(found)
        return None

    def clear(self, connection: sa.Connection) -> None:
        # Children first: the rows go even where foreign keys are not enforced.
        clear_disputes(connection)
        connection.execute(ENTRIES.delete())
        connection.execute(MOVES.delete())
        connection.execute(RESULTS.delete())
        connection.execute(GAMES.delete())


def _decimal(text: str | None) -> Decimal | None:
    return None if text is None else Decimal(text)


def settlement_rows(
    config: TableConfig, recorded: dict, ended_at: datetime | None, final_round: int
) -> tuple[dict, list[dict], list[dict]]:
    """The rows a recorded settlement gives: the games row's settlement columns, one
    ``player_results`` row per player (the winner credited ``net_to_winner``) and the
    settlement's ``ledger_entries`` lines, in order."""
    game_id = config.game_id
    columns = {
        "ended_at": ended_at,
        "ended_on": ended_at.date() if ended_at else None,
        "gross": _decimal(recorded["gross"]),
        "fee": _decimal(recorded["fee"]),
        "net_to_winner": _decimal(recorded["net_to_winner"]),
        "settlement_hash": settlement_hash(recorded),
    }
    seats = dict(zip(config.players, config.seats or range(1, 99), strict=False))
    winner = recorded["winner"]
    results = [
        {
            "game_id": game_id,
            "player": winner,
            "seat": seats.get(winner, 0),
            "result": "won",
            "points": 0,
            "point_value": point_value_for_round(config, final_round),
            "amount": _decimal(recorded["net_to_winner"]),
            "hand_score": None,
            "min_score": None,
            "scoring_case": None,
            "ended_at_round": final_round,
        }
    ]
    for player, line in recorded["players"].items():
        results.append(
            {
                "game_id": game_id,
                "player": player,
                "seat": seats.get(player, 0),
                "result": line["result"],
                "points": int(line["points"]),
                "point_value": _decimal(line["point_value"]),
                "amount": _decimal(line["amount"]),
                "hand_score": line.get("hand_score"),
                "min_score": line.get("min_score"),
                "scoring_case": line.get("case"),
                "ended_at_round": line.get("ended_at_round"),
            }
        )
    entries = []
    for number, entry in enumerate(recorded.get("ledger_entries", ()), 1):
        account = entry["account"]
        entries.append(
            {
                "game_id": game_id,
                "dispute_id": None,
                "kind": SETTLEMENT_KIND,
                "line": number,
                "account": account,
                "player": account[len(PLAYER_ACCOUNT) :]
                if account.startswith(PLAYER_ACCOUNT)
                else None,
                "debit": _decimal(entry["debit"]),
                "credit": _decimal(entry["credit"]),
                "currency": recorded.get("currency", config.currency),
                "posted_at": ended_at,
                "posted_on": ended_at.date() if ended_at else None,
            }
        )
    return columns, results, entries


def started_row(config: TableConfig, originator_id: str, started_at: datetime | None) -> dict:
    """The games row of a game just started (settlement columns empty)."""
    return {
        "game_id": config.game_id,
        "originator_id": originator_id,
        "variant": config.variant,
        "rules": config.rules,
        "table_id": config.table_id,
        "currency": config.currency,
        "players": list(config.players),
        "player_count": len(config.players),
        "dealer": config.dealer_player,
        "started_at": started_at,
        "ended_at": None,
        "ended_on": None,
        "point_value": config.point_value,
        "fee_percent": config.fee_percent,
        "gross": None,
        "fee": None,
        "net_to_winner": None,
        "settlement_hash": None,
        "recomputed_hash": None,
        "discrepancy": False,
        "discrepancy_note": None,
    }


def _started_row(game: Game) -> dict:
    return started_row(game.config, str(game.id), parse_time(game.started_at) or game.created_on)


def _progress_row(game: Game) -> dict:
    return {
        "game_id": game.game_id,
        "status": game.phase,
        "round": game.round,
        "moves_count": game.move_count,
        "version": game.version,
        "winner": game.winner,
        "final_point_value": point_value_for_round(game.config, game.round),
    }


def _move_row(before: Game, domain_event, move_type: str) -> dict:
    """The move as the event states it, with the round and point value in force before it."""
    card = getattr(domain_event, "card", None) or getattr(domain_event, "finish", None)
    groups = getattr(domain_event, "groups", None)
    return {
        "game_id": before.game_id,
        "move_index": before.move_count,
        "version": domain_event.originator_version,
        "player": getattr(domain_event, "player", None),
        "move_type": move_type,
        "card": card,
        "source": getattr(domain_event, "source", None),
        "groups": None if groups is None else [list(group) for group in groups],
        "round": before.round,
        "point_value": point_value_for_round(before.config, before.round),
        "at": parse_time(getattr(domain_event, "at", None)),
    }


# -- entry points ----------------------------------------------------------------------


@lru_cache(maxsize=8)
def _ledger(url: str):
    from replays.application import Ledger

    return Ledger(url, env={"CREATE_TABLE": "no"})


def runner(
    url: str | None = None,
    *,
    ledger=None,
    batch_size: int | None = None,
    verify: bool = True,
    hook: Callable[[str, int], None] | None = None,
) -> Runner:
    """The read-model runner for the database at ``url`` (default: the project setting)."""
    url = database_url(url if ledger is None else ledger.url)
    projection = GameProjection(ledger or _ledger(url), verify=verify)
    options = {} if batch_size is None else {"batch_size": batch_size}
    return Runner(engine_for(url), projection, hook=hook, **options)


class _StatusOnly(Projection):
    name = NAME

    def process(self, connection, notifications):  # pragma: no cover - never run
        raise NotImplementedError

    def clear(self, connection):  # pragma: no cover - never run
        raise NotImplementedError


def projection_status(
    url: str | None = None, *, engine: sa.Engine | None = None, failures: bool = True
) -> Status:
    """Position, head of the store, lag and recorded failures of the read models (no
    Ledger needed); ``failures=False`` skips reading the failures (the idle catch-up)."""
    return Runner(engine or engine_for(database_url(url)), _StatusOnly()).status(failures=failures)


def retry(url: str | None = None, *, ledger=None) -> tuple[list[Failure], list[Failure]]:
    """Project every set-aside game again, whole; (cleared, still failing)."""
    return runner(url, ledger=ledger).retry()


def catch_up(
    url: str | None = None, *, limit: int | None = None, progress: bool = False, ledger=None
) -> int:
    """Project every new event (at most ``limit``); return how many were applied.

    Called after writing by the importer, the API and the simulator. When nothing is new
    it costs two indexed reads and no write, and no Ledger is built.
    """
    url = database_url(url if ledger is None else ledger.url)
    if projection_status(url, failures=False).lag == 0:
        return 0
    return runner(url, ledger=ledger).catch_up(limit=limit, progress=progress)


def rebuild(
    url: str | None = None, *, progress: bool = False, ledger=None, keep_failed: bool = False
) -> int:
    """Project every stored event again into empty read models, in one transaction: the old
    rows stay until it commits (see :meth:`Runner.rebuild` for failures)."""
    return runner(url, ledger=ledger).rebuild(progress=progress, keep_failed=keep_failed)


def follow(
    url: str | None = None,
    *,
    interval: float = 1.0,
    stop: Callable[[], bool] = lambda: False,
    ledger=None,
) -> int:
    """Keep the read models current until ``stop()``; poll every ``interval`` seconds."""
    return runner(url, ledger=ledger).follow(interval=interval, stop=stop)
