"""Dispute cases in the read models: the case list, and adjustments in the ledger entries.

The read-model projection (:mod:`replays.readmodels.projections`) hands every ``DisputeCase``
notification of a batch to :func:`project_disputes`, inside the transaction that also moves
its tracking position, so each event is applied exactly once and a rebuild recreates the
rows from the events alone. Rows written:

- ``dispute_cases``: one per case (status, decision, counts of notes and evidence), for the
  list of open cases and their age;
- ``ledger_entries`` (kind ``adjustment``, with the case id as ``dispute_id``): the two
  balanced lines of an adjusted decision (:func:`domain.dispute.adjustment_entries`), dated
  when the case was closed. Reports read them beside the settlement lines.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from decimal import Decimal

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from domain.dispute import OPEN, DisputeCase, adjustment_entries
from domain.rummy13.settlement import account_of
from domain.timestamps import parse_time
from replays.readmodels.models import LedgerEntryRow, Money
from replays.store.db import Base, StoredLongText, StoredText

DISPUTE_TOPICS = DisputeCase.TOPIC + "."
ADJUSTMENT_KIND = "adjustment"
PLAYER_ACCOUNT = account_of("")


class DisputeCaseRow(Base):
    """One dispute case as the lists show it; the case's events hold the whole story."""

    __tablename__ = "dispute_cases"

    case_id: Mapped[str] = mapped_column(StoredText(64), primary_key=True)
    originator_id: Mapped[str] = mapped_column(StoredText(36), unique=True)
    game_id: Mapped[str] = mapped_column(StoredText(64))
    move: Mapped[int] = mapped_column(sa.Integer)
    status: Mapped[str] = mapped_column(StoredText(8))
    opened_by: Mapped[str] = mapped_column(StoredText(64))
    opener_role: Mapped[str] = mapped_column(StoredText(16))
    opened_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    description: Mapped[str] = mapped_column(StoredLongText)
    currency: Mapped[str] = mapped_column(StoredText(8))
    notes: Mapped[int] = mapped_column(sa.Integer, default=0)
    evidence: Mapped[int] = mapped_column(sa.Integer, default=0)
    version: Mapped[int] = mapped_column(sa.Integer)
    updated_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    closed_at: Mapped[datetime | None] = mapped_column(sa.DateTime(timezone=True))
    closed_by: Mapped[str | None] = mapped_column(StoredText(64))
    decision: Mapped[str | None] = mapped_column(StoredText(16))
    amount: Mapped[Decimal | None] = mapped_column(Money)
    credited: Mapped[str | None] = mapped_column(StoredText(64))
    debited: Mapped[str | None] = mapped_column(StoredText(64))

    __table_args__ = (
        sa.Index("ix_dispute_cases_status_opened_at", "status", "opened_at"),
        sa.Index("ix_dispute_cases_game_id", "game_id"),
        sa.Index("ix_dispute_cases_opened_by", "opened_by"),
    )


CASES = DisputeCaseRow.__table__
ENTRIES = LedgerEntryRow.__table__


def _when(at: str | None, domain_event) -> datetime:
    return parse_time(at) or domain_event.timestamp


def project_disputes(
    connection: sa.Connection,
    notifications: Sequence,
    to_domain_event: Callable,
) -> None:
    """Apply a batch of DisputeCase notifications, in order."""
    c = CASES.c
    for notification in notifications:
        domain_event = to_domain_event(notification)
        kind = type(domain_event).__name__
        originator = str(domain_event.originator_id)
        version = domain_event.originator_version
        this_case = c.originator_id == originator
        when = _when(getattr(domain_event, "at", None), domain_event)
        if kind == "CaseOpened":
            connection.execute(
                CASES.insert().values(
                    case_id=domain_event.case_id,
                    originator_id=originator,
                    game_id=domain_event.game,
                    move=domain_event.move,
                    status=OPEN,
                    opened_by=domain_event.opened_by,
                    opener_role=domain_event.opener_role,
                    opened_at=when,
                    description=domain_event.description,
                    currency=domain_event.currency,
                    notes=0,
                    evidence=0,
                    version=version,
                    updated_at=when,
                )
            )
        elif kind == "NoteAdded":
            connection.execute(
                CASES.update()
                .where(this_case)
                .values(notes=c.notes + 1, version=version, updated_at=when)
            )
        elif kind in ("EvidenceAdded", "FlagAttached"):  # a fair-play flag is evidence too
            connection.execute(
                CASES.update()
                .where(this_case)
                .values(evidence=c.evidence + 1, version=version, updated_at=when)
            )
        elif kind == "CaseClosed":
            _closed(connection, domain_event, this_case, version, when)


def _closed(connection, domain_event, this_case, version: int, when: datetime) -> None:
    amount = domain_event.amount
    connection.execute(
        CASES.update()
        .where(this_case)
        .values(
            status="closed",
            version=version,
            updated_at=when,
            closed_at=when,
            closed_by=domain_event.by,
            decision=domain_event.decision,
            amount=None if amount is None else Decimal(amount),
            credited=domain_event.credited,
            debited=domain_event.debited,
        )
    )
    entries = adjustment_entries(amount, domain_event.credited, domain_event.debited)
    if not entries:
        return
    case = connection.execute(
        sa.select(CASES.c.case_id, CASES.c.game_id, CASES.c.currency).where(this_case)
    ).one()
    connection.execute(
        ENTRIES.insert(),
        adjustment_rows(case.game_id, case.case_id, case.currency, when, entries),
    )


def adjustment_rows(game_id: str, case_id: str, currency, when, entries) -> list[dict]:
    """The ``ledger_entries`` rows of a closed case's adjustment (also what verify expects)."""
    return [
        {
            "game_id": game_id,
            "dispute_id": case_id,
            "kind": ADJUSTMENT_KIND,
            "line": number,
            "account": entry.account,
            "player": entry.account[len(PLAYER_ACCOUNT) :]
            if entry.account.startswith(PLAYER_ACCOUNT)
            else None,
            "debit": entry.debit,
            "credit": entry.credit,
            "currency": currency,
            "posted_at": when,
            "posted_on": when.date(),
        }
        for number, entry in enumerate(entries, 1)
    ]


def dispute_case_of(connection: sa.Connection, originator_id: str) -> str | None:
    """The case id of a dispute aggregate that has a row (for naming a failure)."""
    return connection.execute(
        sa.select(CASES.c.case_id).where(CASES.c.originator_id == originator_id)
    ).scalar()


def discard_dispute(connection: sa.Connection, originator_id: str) -> None:
    """Remove a set-aside case's row and its adjustment entries."""
    case_id = dispute_case_of(connection, originator_id)
    if case_id is None:
        return
    connection.execute(ENTRIES.delete().where(ENTRIES.c.dispute_id == case_id))
    connection.execute(CASES.delete().where(CASES.c.case_id == case_id))


def clear_disputes(connection: sa.Connection) -> None:
    """Delete the case rows (the projection's rebuild already empties ledger_entries)."""
    connection.execute(CASES.delete())
