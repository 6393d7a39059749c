"""What the pages read from the read-model tables (:mod:`replays.readmodels.models`).

Plain SQL over the projected tables: the list, the header of a game, its move timeline and a
player's history never replay a game. Each function takes a SQLAlchemy ``Session``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from decimal import Decimal

import sqlalchemy as sa
from sqlalchemy.orm import Session

from domain import variants
from domain.timestamps import after_day
from replays.readmodels.models import GameRow, LedgerEntryRow, MoveRow, PlayerResultRow
from replays.readmodels.nets import PlayerMoney, player_nets
from replays.readmodels.reports import flagged_discrepancy

VARIANTS = variants.names()  # every registered game type (domain.variants)
RESULTS = ("won", "lost", "deal_show", "first_drop", "middle_drop", "auto_drop", "wrong_show")


class FilterError(ValueError):
    """A games-list filter that cannot be understood; the message names the field."""


@dataclass(frozen=True)
class GameFilters:
    """The games list's filters, parsed from the query string.

    >>> GameFilters.from_args({"variant": "raise", "from": "2025-03-01"}).date_from
    datetime.date(2025, 3, 1)
    """

    date_from: date | None = None
    date_to: date | None = None
    table: str | None = None
    variant: str | None = None
    player: str | None = None
    result: str | None = None
    discrepancies: bool = False
    page: int = 1

    @classmethod
    def from_args(cls, args) -> GameFilters:
        def text(name: str) -> str | None:
            value = (args.get(name) or "").strip()
            return value or None

        def day(name: str) -> date | None:
            value = text(name)
            if value is None:
                return None
            try:
                return date.fromisoformat(value)
            except ValueError:
                raise FilterError(
                    f"'{name}' must be a date like 2025-03-01, not {value!r}"
                ) from None

        variant = text("variant")
        if variant is not None and variant not in VARIANTS:
            raise FilterError(f"'variant' must be one of {', '.join(VARIANTS)}, not {variant!r}")
        result = text("result")
        if result is not None and result not in RESULTS:
            raise FilterError(f"'result' must be one of {', '.join(RESULTS)}, not {result!r}")
        page_text = text("page") or "1"
        if not page_text.isdecimal() or int(page_text) < 1:
            raise FilterError(f"'page' must be a whole number from 1, not {page_text!r}")
        filters = cls(
            date_from=day("from"),
            date_to=day("to"),
            table=text("table"),
            variant=variant,
            player=text("player"),
            result=result,
            discrepancies=text("discrepancies") in ("1", "on", "true", "yes"),
            page=int(page_text),
        )
        if filters.date_from and filters.date_to and filters.date_from > filters.date_to:
            raise FilterError("'from' is after 'to'")
        return filters

    def as_args(self) -> dict[str, str]:
        """The filters as query-string arguments (for pagination links), without the page."""
        args = {
            "from": self.date_from.isoformat() if self.date_from else None,
            "to": self.date_to.isoformat() if self.date_to else None,
            "table": self.table,
            "variant": self.variant,
            "player": self.player,
            "result": self.result,
            "discrepancies": "1" if self.discrepancies else None,
        }
        return {name: value for name, value in args.items() if value}


@dataclass
class GamePage:
    games: list[GameRow]
    total: int
    page: int
    pages: int
    # The player's own result row per game when the list is filtered by player, and the
    # player's ledger money in each (replays.readmodels.nets).
    player_results: dict[str, PlayerResultRow] = field(default_factory=dict)
    player_money: dict[str, PlayerMoney] = field(default_factory=dict)


def _day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def list_games(session: Session, filters: GameFilters, per_page: int = 25) -> GamePage:
    """One page of games, newest first, matching ``filters``."""
    query = sa.select(GameRow)
    # A game's day is when it started, or when it ended if the record has no start time.
    when = sa.func.coalesce(GameRow.started_at, GameRow.ended_at)
    if filters.date_from:
        query = query.where(when >= _day_start(filters.date_from))
    if filters.date_to and (end := after_day(filters.date_to)) is not None:
        query = query.where(when < end)
    if filters.table:
        query = query.where(GameRow.table_id == filters.table)
    if filters.variant:
        query = query.where(GameRow.variant == filters.variant)
    if filters.discrepancies:
        query = query.where(flagged_discrepancy())
    if filters.player or filters.result:
        results = sa.select(PlayerResultRow.game_id)
        if filters.player:
            results = results.where(PlayerResultRow.player == filters.player)
        if filters.result:
            results = results.where(PlayerResultRow.result == filters.result)
        condition = GameRow.game_id.in_(results)
        if filters.player and not filters.result:
            # Games still in play have no results yet; their player list still names them.
            condition = sa.or_(
                condition,
                sa.and_(
                    GameRow.winner.is_(None),
                    sa.cast(GameRow.players, sa.String).like(
                        f"%{_like_escape(json.dumps(filters.player))}%", escape="\\"
                    ),
                ),
            )
        query = query.where(condition)
    total = session.scalar(sa.select(sa.func.count()).select_from(query.subquery())) or 0
    pages = max(1, -(-total // per_page))
    page = min(filters.page, pages)
    games = list(
        session.scalars(
            query.order_by(when.desc(), GameRow.game_id.desc())
            .limit(per_page)
            .offset((page - 1) * per_page)
        )
    )
    own: dict[str, PlayerResultRow] = {}
    money: dict[str, PlayerMoney] = {}
    if filters.player and games:
        money = player_nets(session, filters.player, [g.game_id for g in games])
        own = {
            row.game_id: row
            for row in session.scalars(
                sa.select(PlayerResultRow).where(
                    PlayerResultRow.player == filters.player,
                    PlayerResultRow.game_id.in_([g.game_id for g in games]),
                )
            )
        }
    return GamePage(games, total, page, pages, own, money)


def _like_escape(text: str) -> str:
    """``text`` matched literally by LIKE (with ``escape="\\"``)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def table_ids(session: Session) -> list[str]:
    """Every table that has games, for the filter's choices."""
    return list(
        session.scalars(
            sa.select(GameRow.table_id)
            .where(GameRow.table_id.isnot(None))
            .distinct()
            .order_by(GameRow.table_id)
        )
    )


def game_header(session: Session, game_id: str) -> GameRow | None:
    return session.get(GameRow, game_id)


_RESULTS = PlayerResultRow.__table__.c


def game_results(session: Session, game_id: str) -> list[sa.Row]:
    """Each player's result in seat order, as plain rows with :class:`PlayerResultRow`'s
    columns (as :func:`move_timeline`: no ORM object per row for a page to read)."""
    return list(
        session.execute(
            sa.select(*_RESULTS).where(_RESULTS.game_id == game_id).order_by(_RESULTS.seat)
        )
    )


_MOVES = MoveRow.__table__.c


def move_timeline(session: Session, game_id: str) -> list[sa.Row]:
    """The game's moves in play order, as plain rows with :class:`MoveRow`'s columns (the same
    values by the same names, without building an ORM object per move: a page reads them)."""
    return list(
        session.execute(
            sa.select(*_MOVES).where(_MOVES.game_id == game_id).order_by(_MOVES.move_index)
        )
    )


def ledger_entries(session: Session, game_id: str) -> list[LedgerEntryRow]:
    return list(
        session.scalars(
            sa.select(LedgerEntryRow)
            .where(LedgerEntryRow.game_id == game_id)
            .order_by(LedgerEntryRow.id)
        )
    )


@dataclass(frozen=True)
class HistoryLine:
    game: GameRow
    result: PlayerResultRow
    # What the game did to the player's balance: the sum of the player's ledger entries
    # for it (replays.readmodels.nets); None for a game without stakes.
    net: Decimal | None
    running_total: Decimal
    stake: str  # what the player staked, in the variant's words (Variant.stake_words)


def player_history(session: Session, player: str) -> list[HistoryLine]:
    """A player's settled games in the order they ended, with the running total of net amounts.

    Each net is the ledger's: the player's credits minus debits for the game, so a match's
    entry and rejoin fees count against its prize or share, as a 13-card loser's charge does.
    """
    rows = session.execute(
        sa.select(GameRow, PlayerResultRow)
        .join(PlayerResultRow, PlayerResultRow.game_id == GameRow.game_id)
        .where(PlayerResultRow.player == player)
        .order_by(
            sa.func.coalesce(GameRow.ended_at, GameRow.started_at).asc(), GameRow.game_id.asc()
        )
    ).all()
    nets = player_nets(session, player)
    total = Decimal("0.00")
    lines = []
    for game, result in rows:
        variant = variants.get(game.variant)
        money = nets.get(game.game_id, PlayerMoney())
        net = money.net if variant.has_money else None
        total += net or Decimal("0.00")
        stake = variant.stake_words(result.point_value, money.paid_by_kind)
        lines.append(HistoryLine(game, result, net, total, stake))
    return lines
