"""Period reports over the read models: pure SQL, no game is replayed.

A game belongs to a period when it was settled on a day (UTC) from ``date_from`` to
``date_to`` inclusive. The report gives games, gross, fees and net paid in total, per
table, per day and per player; it reconciles the double-entry ledger (debits = credits
for every game and for the period) and lists every discrepancy:

- ``settlement_differs``: the recorded settlement is not what the rules give when it is
  recomputed from the game's events (checked by the projection, stored as a flag);
- ``unbalanced``: the game's ledger entries' debits and credits differ;
- ``ledger_differs``: the settlement's ledger entries do not add up to the recorded gross
  (debits) or fee (fee account credit), or a settled game has no entries at all.

>>> report = period_report(session, PeriodFilter(date(2025, 3, 1), date(2025, 3, 31)))  # doctest: +SKIP
>>> report.totals.gross  # doctest: +SKIP
Decimal('12345.60')
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import date
from decimal import Decimal

import sqlalchemy as sa
from sqlalchemy.orm import Session

from domain import variants
from domain.rummy13.settlement import FEE_ACCOUNT
from domain.variant_base import SETTLEMENT_KIND
from replays.readmodels.models import SETTLED, GameRow, LedgerEntryRow, Money, PlayerResultRow

ZERO = Decimal("0.00")
ADJUSTMENT_KIND = "adjustment"  # dispute decisions (replays.disputes.projection)


class ReportError(ValueError):
    """A report request that cannot be answered as asked (the message says which part)."""


@dataclass(frozen=True)
class PeriodFilter:
    date_from: date
    date_to: date
    table: str | None = None
    player: str | None = None

    def __post_init__(self):
        if self.date_to < self.date_from:
            raise ReportError(
                f"--to {self.date_to.isoformat()} is before --from {self.date_from.isoformat()}"
            )


@dataclass(frozen=True)
class Totals:
    games: int = 0
    gross: Decimal = ZERO
    fees: Decimal = ZERO
    net_paid: Decimal = ZERO


@dataclass(frozen=True)
class TableLine:
    table: str | None
    totals: Totals


@dataclass(frozen=True)
class DayLine:
    day: date
    totals: Totals


@dataclass(frozen=True)
class PlayerLine:
    """One player over the period: paid = ledger debits, received = ledger credits."""

    player: str
    games: int
    wins: int
    points: int
    paid: Decimal
    received: Decimal

    @property
    def net(self) -> Decimal:
        return self.received - self.paid


@dataclass(frozen=True)
class PointsLine:
    """A game type without stakes (``Variant.has_money`` False; Red 3 today) over the
    period: how many of its games ended then, and each player's points in them."""

    variant: str
    games: int
    points: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"variant": self.variant, "games": self.games, "points": dict(self.points)}


@dataclass(frozen=True)
class KindLine:
    """The period's ledger entries of one kind (``settlement``, a variant's own kinds such
    as a match's ``rejoin_fee`` and ``split``, ``adjustment``): games, debits, credits."""

    kind: str
    games: int
    debits: Decimal
    credits: Decimal

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "games": self.games,
            "debits": str(self.debits),
            "credits": str(self.credits),
        }


@dataclass(frozen=True)
class Discrepancy:
    game_id: str
    ended_on: date | None
    table: str | None
    kind: str
    detail: str


@dataclass(frozen=True)
class AdjustmentLine:
    """A dispute's adjustment posted on a game of the period (replays.disputes.projection):
    ``amount`` moved from the ``debited`` account to the ``credited`` one."""

    dispute_id: str
    game_id: str
    posted_on: date | None
    amount: Decimal
    debited: str
    credited: str


@dataclass(frozen=True)
class Reconciliation:
    debits: Decimal
    credits: Decimal
    games_checked: int
    unbalanced_games: int

    @property
    def balanced(self) -> bool:
        return self.debits == self.credits and self.unbalanced_games == 0


@dataclass(frozen=True)
class PeriodVerification:
    """Whether the period's games verify: their events against the seals and the latest
    stored checkpoint, their read rows (what these figures are summed from) against the
    events. Filled in by :func:`replays.readmodels.period_verify.verify_period`."""

    games_checked: int
    failed: list[tuple[str, str]] = field(default_factory=list)  # (game id, first finding)
    not_checkpointed: list[str] = field(default_factory=list)
    checkpoint_size: int | None = None
    checkpoint_time: str | None = None
    # ``verified``, ``broken``, ``not_checkpointed`` or ``unknown`` (nothing could be
    # checked); None: worked out from the lists above.
    given_status: str | None = None

    @property
    def verified(self) -> bool:
        return not self.failed

    @property
    def status(self) -> str:
        if self.given_status is not None:
            return self.given_status
        if self.failed:
            return "broken"
        if not self.games_checked:
            return "unknown"
        return "not_checkpointed" if self.not_checkpointed else "verified"

    def to_dict(self) -> dict:
        return {
            "status": self.status,
            "verified": self.verified,
            "games_checked": self.games_checked,
            "checkpoint": None
            if self.checkpoint_size is None
            else {"size": self.checkpoint_size, "time": self.checkpoint_time},
            "failed": [{"game_id": g, "finding": f} for g, f in self.failed],
            "not_checkpointed": self.not_checkpointed,
        }


@dataclass(frozen=True)
class PeriodReport:
    filter: PeriodFilter
    totals: Totals
    by_table: list[TableLine] = field(default_factory=list)
    by_day: list[DayLine] = field(default_factory=list)
    by_player: list[PlayerLine] = field(default_factory=list)
    discrepancies: list[Discrepancy] = field(default_factory=list)
    reconciliation: Reconciliation | None = None
    adjustments: list[AdjustmentLine] = field(default_factory=list)
    verification: PeriodVerification | None = None
    points_only: list[PointsLine] = field(default_factory=list)
    by_kind: list[KindLine] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-ready: money as 2-decimal strings, dates as ISO text."""

        def money(totals: Totals) -> dict:
            return {
                "games": totals.games,
                "gross": str(totals.gross),
                "fees": str(totals.fees),
                "net_paid": str(totals.net_paid),
            }

        f = self.filter
        r = self.reconciliation
        return {
            "period": {
                "from": f.date_from.isoformat(),
                "to": f.date_to.isoformat(),
                "table": f.table,
                "player": f.player,
            },
            "totals": money(self.totals),
            "by_table": [{"table": t.table, **money(t.totals)} for t in self.by_table],
            "by_day": [{"day": d.day.isoformat(), **money(d.totals)} for d in self.by_day],
            "by_player": [
                {
                    "player": p.player,
                    "games": p.games,
                    "wins": p.wins,
                    "points": p.points,
                    "paid": str(p.paid),
                    "received": str(p.received),
                    "net": str(p.net),
                }
                for p in self.by_player
            ],
            "adjustments": [
                {
                    "dispute_id": a.dispute_id,
                    "game_id": a.game_id,
                    "posted_on": a.posted_on.isoformat() if a.posted_on else None,
                    "amount": str(a.amount),
                    "debited": a.debited,
                    "credited": a.credited,
                }
                for a in self.adjustments
            ],
            "reconciliation": {
                "debits": str(r.debits),
                "credits": str(r.credits),
                "games_checked": r.games_checked,
                "unbalanced_games": r.unbalanced_games,
                "balanced": r.balanced,
            },
            "discrepancies": [
                {**asdict(d), "ended_on": d.ended_on.isoformat() if d.ended_on else None}
                for d in self.discrepancies
            ],
            "verification": None if self.verification is None else self.verification.to_dict(),
            "points_only": [line.to_dict() for line in self.points_only],
            "by_kind": [line.to_dict() for line in self.by_kind],
        }


def flagged_discrepancy() -> sa.ColumnElement[bool]:
    """Which ``games`` rows have a discrepancy: the projection's audit found a recorded or
    reported figure (a settlement, a match's payouts, a Red 3 winner) that differs from
    the recomputation. The one definition the games list's flag and filter and the
    period report's list share, for every variant, settled or finished."""
    return GameRow.__table__.c.discrepancy.is_(True)


def _sum(column) -> sa.ColumnElement:
    return sa.type_coerce(sa.func.coalesce(sa.func.sum(column), 0), Money)


def _period_conditions(f: PeriodFilter) -> list[sa.ColumnElement]:
    """Which games rows are in the period (settled then, at the table, with the player)."""
    return [GameRow.__table__.c.status == SETTLED, *ended_in(f)]


def ended_in(f: PeriodFilter) -> list[sa.ColumnElement]:
    """Which games rows ended in the period, at the table, with the player (any variant:
    a game's ``ended_on`` is set when it is over, settled or finished)."""
    g = GameRow.__table__.c
    conditions = [g.ended_on >= f.date_from, g.ended_on <= f.date_to]
    if f.table is not None:
        conditions.append(g.table_id == f.table)
    if f.player is not None:
        r = PlayerResultRow.__table__.c
        conditions.append(g.game_id.in_(sa.select(r.game_id).where(r.player == f.player)))
    return conditions


def period_game_ids(session: Session | sa.Connection, f: PeriodFilter) -> list[str]:
    """The games the period's figures are summed from."""
    g = GameRow.__table__.c
    query = sa.select(g.game_id).where(*_period_conditions(f)).order_by(g.game_id)
    return list(session.execute(query).scalars())


def _totals(row) -> Totals:
    return Totals(row.games, row.gross, row.fees, row.net_paid)


def period_report(session: Session | sa.Connection, f: PeriodFilter) -> PeriodReport:
    g = GameRow.__table__.c
    in_period = sa.and_(*_period_conditions(f))
    money = (
        sa.func.count().label("games"),
        _sum(g.gross).label("gross"),
        _sum(g.fee).label("fees"),
        _sum(g.net_to_winner).label("net_paid"),
    )
    totals = _totals(session.execute(sa.select(*money).where(in_period)).one())
    by_table = [
        TableLine(row.table_id, _totals(row))
        for row in session.execute(
            sa.select(g.table_id, *money).where(in_period).group_by(g.table_id).order_by(g.table_id)
        )
    ]
    by_day = [
        DayLine(row.ended_on, _totals(row))
        for row in session.execute(
            sa.select(g.ended_on, *money).where(in_period).group_by(g.ended_on).order_by(g.ended_on)
        )
    ]
    by_player = _players(session, f, in_period)
    unbalanced, ledger_differs = _ledger_checks(session, in_period)
    by_kind = _by_kind(session, in_period)
    # Every entry of the period's games is in exactly one kind's line: their sums are the
    # period's debits and credits, without another pass over the entries.
    reconciliation = Reconciliation(
        sum((line.debits for line in by_kind), ZERO),
        sum((line.credits for line in by_kind), ZERO),
        totals.games,
        len(unbalanced),
    )

    # Every flagged game that ended in the period, whatever its variant and status: a game
    # without stakes (Red 3) is no part of the money totals, but its misreported winner is
    # a discrepancy all the same.
    discrepancies = [
        Discrepancy(row.game_id, row.ended_on, row.table_id, "settlement_differs", row.note or "")
        for row in session.execute(
            sa.select(g.game_id, g.ended_on, g.table_id, g.discrepancy_note.label("note")).where(
                *ended_in(f), flagged_discrepancy()
            )
        )
    ]
    discrepancies += unbalanced + ledger_differs
    discrepancies.sort(key=lambda d: (d.ended_on or date.min, d.game_id, d.kind))
    return PeriodReport(
        f,
        totals,
        by_table,
        by_day,
        by_player,
        discrepancies,
        reconciliation,
        adjustments=_adjustments(session, in_period),
        points_only=points_only(session, f),
        by_kind=by_kind,
    )


def _by_kind(session, in_period) -> list[KindLine]:
    """Each kind of ledger entry posted on the period's games, totalled. Summed per game
    first and then per kind: a hash aggregate on (kind, game), where counting distinct games
    within each kind would sort every entry of the period."""
    g = GameRow.__table__.c
    e = LedgerEntryRow.__table__.c
    per_game = (
        sa.select(
            e.kind,
            sa.func.sum(e.debit).label("debits"),
            sa.func.sum(e.credit).label("credits"),
        )
        .where(e.game_id.in_(sa.select(g.game_id).where(in_period)))
        .group_by(e.kind, e.game_id)
        .subquery()
    )
    rows = session.execute(
        sa.select(
            per_game.c.kind,
            sa.func.count().label("games"),
            _sum(per_game.c.debits).label("debits"),
            _sum(per_game.c.credits).label("credits"),
        )
        .group_by(per_game.c.kind)
        .order_by(per_game.c.kind)
    )
    return [KindLine(row.kind, row.games, row.debits, row.credits) for row in rows]


def points_only(session: Session | sa.Connection, f: PeriodFilter) -> list[PointsLine]:
    """Each game type without money: games that ended in the period, and the points each
    player scored in them (the money totals above leave these games out)."""
    names = [v.name for v in variants.all_variants() if not v.has_money]
    if not names:
        return []
    g = GameRow.__table__.c
    r = PlayerResultRow.__table__.c
    ended = sa.and_(*ended_in(f), g.variant.in_(names))
    counts = session.execute(
        sa.select(g.variant, sa.func.count()).where(ended).group_by(g.variant).order_by(g.variant)
    ).all()
    points: dict[str, dict[str, int]] = {}
    rows = session.execute(
        sa.select(g.variant, r.player, sa.func.sum(r.points))
        .join(PlayerResultRow.__table__, r.game_id == g.game_id)
        .where(ended)
        .group_by(g.variant, r.player)
        .order_by(g.variant, r.player)
    )
    for variant, player, total in rows:
        points.setdefault(variant, {})[player] = int(total or 0)
    return [PointsLine(variant, count, points.get(variant, {})) for variant, count in counts]


def _adjustments(session, in_period) -> list[AdjustmentLine]:
    """Each dispute adjustment on the period's games: its two balanced lines as one."""
    g = GameRow.__table__.c
    e = LedgerEntryRow.__table__.c
    rows = session.execute(
        sa.select(e.dispute_id, e.game_id, e.posted_on, e.account, e.debit, e.credit)
        .where(
            e.kind == ADJUSTMENT_KIND,
            e.game_id.in_(sa.select(g.game_id).where(in_period)),
        )
        .order_by(e.posted_on, e.dispute_id, e.line)
    )
    found: dict[str, dict] = {}
    for row in rows:
        line = found.setdefault(
            row.dispute_id or "",
            {"game_id": row.game_id, "posted_on": row.posted_on, "amount": ZERO},
        )
        if row.debit:
            line["amount"] += row.debit
            line["debited"] = row.account
        if row.credit:
            line["credited"] = row.account
    return [
        AdjustmentLine(
            dispute_id,
            line["game_id"],
            line["posted_on"],
            line["amount"],
            line.get("debited", ""),
            line.get("credited", ""),
        )
        for dispute_id, line in found.items()
    ]


def _players(session, f: PeriodFilter, in_period) -> list[PlayerLine]:
    g = GameRow.__table__.c
    r = PlayerResultRow.__table__.c
    e = LedgerEntryRow.__table__.c
    results = sa.select(
        r.player,
        sa.func.count().label("games"),
        sa.func.sum(sa.case((r.result == "won", 1), else_=0)).label("wins"),
        sa.func.coalesce(sa.func.sum(r.points), 0).label("points"),
    ).where(r.game_id.in_(sa.select(g.game_id).where(in_period)))
    money = sa.select(
        e.player, _sum(e.debit).label("paid"), _sum(e.credit).label("received")
    ).where(e.player.is_not(None), e.game_id.in_(sa.select(g.game_id).where(in_period)))
    if f.player is not None:
        results = results.where(r.player == f.player)
        money = money.where(e.player == f.player)
    counts = {row.player: row for row in session.execute(results.group_by(r.player))}
    paid = {row.player: row for row in session.execute(money.group_by(e.player))}
    lines = []
    for player in sorted(set(counts) | set(paid)):
        c, p = counts.get(player), paid.get(player)
        lines.append(
            PlayerLine(
                player,
                games=c.games if c else 0,
                wins=int(c.wins or 0) if c else 0,
                points=int(c.points or 0) if c else 0,
                paid=p.paid if p else ZERO,
                received=p.received if p else ZERO,
            )
        )
    return lines


def _ledger_checks(session, in_period) -> tuple[list[Discrepancy], list[Discrepancy]]:
    g = GameRow.__table__.c
    e = LedgerEntryRow.__table__.c
    per_game = (
        sa.select(
            e.game_id,
            _sum(e.debit).label("debits"),
            _sum(e.credit).label("credits"),
            _sum(sa.case((e.kind.in_(variants.settlement_kinds()), e.debit), else_=0)).label(
                "settled_debits"
            ),
            _sum(
                sa.case(
                    (
                        sa.and_(e.kind == SETTLEMENT_KIND, e.account == FEE_ACCOUNT),
                        e.credit,
                    ),
                    else_=0,
                )
            ).label("settled_fee"),
            sa.func.count().label("entries"),
        )
        .where(e.game_id.in_(sa.select(g.game_id).where(in_period)))
        .group_by(e.game_id)
        .subquery()
    )
    rows = session.execute(
        sa.select(
            g.game_id,
            g.ended_on,
            g.table_id,
            g.gross,
            g.fee,
            per_game.c.debits,
            per_game.c.credits,
            per_game.c.settled_debits,
            per_game.c.settled_fee,
            per_game.c.entries,
        )
        .select_from(GameRow.__table__.outerjoin(per_game, per_game.c.game_id == g.game_id))
        .where(in_period)
        .where(
            sa.or_(
                per_game.c.entries.is_(None),
                per_game.c.debits != per_game.c.credits,
                per_game.c.settled_debits != g.gross,
                per_game.c.settled_fee != g.fee,
            )
        )
    )
    unbalanced, differs = [], []
    for row in rows:
        where = (row.game_id, row.ended_on, row.table_id)
        if row.entries is None:
            differs.append(Discrepancy(*where, "ledger_differs", "no ledger entries"))
            continue
        if row.debits != row.credits:
            unbalanced.append(
                Discrepancy(*where, "unbalanced", f"debits {row.debits} != credits {row.credits}")
            )
        notes = []
        if row.settled_debits != row.gross:
            notes.append(f"settlement debits {row.settled_debits} != gross {row.gross}")
        if row.settled_fee != row.fee:
            notes.append(f"fee account credit {row.settled_fee} != fee {row.fee}")
        if notes:
            differs.append(Discrepancy(*where, "ledger_differs", "; ".join(notes)))
    return unbalanced, differs
