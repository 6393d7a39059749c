"""Whether a period report's games verify (``rummy-ledger report`` states it).

Each game of the period is checked as its page's verdict checks it
(:func:`replays.integrity.verify.verify_game`): its events against their seals, its
inclusion in the latest stored checkpoint, and its read rows, which the report's figures
are summed from, against its events. Snapshots are left out: the report reads no game.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from domain import variants
from replays.integrity.store import IntegrityError, progress_bar
from replays.integrity.verify import UNSEALED, verify_game
from replays.readmodels.models import GameRow
from replays.readmodels.reports import PeriodFilter, PeriodVerification, ended_in, period_game_ids


def period_verified_ids(connection: sa.Connection, period: PeriodFilter) -> list[str]:
    """The games whose verification the report states: those its figures are summed from,
    and the games of variants without money that ended in the period (no money, but their
    rows are read models all the same, and a forged total must not pass unnoticed)."""
    g = GameRow.__table__.c
    points_only = [v.name for v in variants.all_variants() if not v.has_money]
    query = sa.select(g.game_id).where(*ended_in(period), g.variant.in_(points_only))
    query = query.order_by(g.game_id)
    return sorted({*period_game_ids(connection, period), *connection.execute(query).scalars()})


def verify_period(
    url: str | None, game_ids: Sequence[str], *, progress: bool = False
) -> PeriodVerification:
    failed: list[tuple[str, str]] = []
    waiting: list[str] = []
    latest = None
    with progress_bar(len(game_ids), "verifying the period", progress) as bar:
        for game_id in game_ids:
            try:
                report = verify_game(url, game_id, check_snapshots=False)
            except IntegrityError as error:
                failed.append((game_id, str(error)))
                continue
            finally:
                bar.update(1)
            latest = report.latest or latest
            problems = [p for p in report.problems if p.kind != UNSEALED]
            if problems:
                failed.append((game_id, str(problems[0])))
            elif report.problems or latest is None or report.last_position >= latest.size:
                waiting.append(game_id)
    return PeriodVerification(
        len(game_ids),
        failed,
        waiting,
        None if latest is None else latest.size,
        None if latest is None else latest.time,
    )
