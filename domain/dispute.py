"""A dispute over one game, as an event-sourced aggregate: handled as carefully as the game.

A case is opened on a game at the contested move with a description; dispute officers add
notes and evidence links; it is closed once, with a decision: ``upheld``, ``rejected``, or
``adjusted`` with an amount and the player credited and/or debited. Every step is an
immutable event (``CaseOpened``, ``NoteAdded``, ``EvidenceAdded``, ``CaseClosed``); the
case's timeline is nothing but those events. An adjustment is money, so it is also a
balanced double-entry posting (:meth:`DisputeCase.adjustment_entries`), which the
read-model projection writes beside the game's settlement entries.

Commands check everything first and raise :class:`DisputeError` (naming the field) before
any event is triggered, so a refused step records nothing. Event bodies hold no clock: the
time of each step (``at``) is an argument.

>>> case = DisputeCase.open(
...     "DC-0001", game="T7-000123", move=17, moves=40, players=("p1", "p2", "p3"),
...     currency="INR", description="p3 picked a joker from the open pile",
...     opened_by="p3", opener_role="player", at="2025-03-02T10:00:00Z")
>>> case.status, case.move
('open', 17)
>>> case.close("adjusted", by="officer1", reason="pick was illegal", amount="12.50",
...            credited="p3", debited="p1", at="2025-03-03T09:00:00Z")
>>> [(e.account, str(e.debit), str(e.credit)) for e in case.adjustment_entries()]
[('player:p1', '12.50', '0.00'), ('player:p3', '0.00', '12.50')]
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any
from urllib.parse import urlsplit

from eventsourcing.domain import Aggregate, event

from domain.money import CENT, LedgerEntry, account_of, money_text
from domain.timestamps import format_time, parse_time

__all__ = [
    "ADJUSTMENT_ACCOUNT",
    "DECISIONS",
    "DisputeCase",
    "DisputeError",
    "TimelineEntry",
]

# Fixed forever: case ids map to aggregate ids through it.
CASE_NAMESPACE = uuid.UUID("9b7c1f0e-2d4a-4c3b-8f61-5e2a7d9c0b14")

OPEN, CLOSED = "open", "closed"
UPHELD, REJECTED, ADJUSTED = "upheld", "rejected", "adjusted"
DECISIONS = (UPHELD, REJECTED, ADJUSTED)
# The house's side of an adjustment that names only one player.
ADJUSTMENT_ACCOUNT = "operator:adjustments"

CASE_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
MAX_TEXT = 4000
MAX_LINK = 2000
MAX_LABEL = 200
MAX_NAME = 64
# An adjustment is a correction of one game's payout, not a transfer of fortunes.
MAX_AMOUNT = Decimal("10000000.00")


class DisputeError(ValueError):
    """A case step that cannot be taken; ``field`` names the input at fault, if any.

    >>> str(DisputeError("must not be empty", field="description"))
    'description: must not be empty'
    """

    def __init__(self, reason: str, *, field: str | None = None, case_id: str | None = None):
        self.reason = reason
        self.field = field
        self.case_id = case_id
        super().__init__(f"{field}: {reason}" if field else reason)


@dataclass(frozen=True)
class TimelineEntry:
    """One step of a case as its page lists it."""

    kind: str  # opened, note, evidence, flag, closed
    at: str | None
    by: str
    text: str = ""
    link: str | None = None
    # A fair-play flag's evidence moves: (game id, move, what happened there).
    moves: tuple[tuple[str, int, str], ...] = ()
    decision: str | None = None
    amount: str | None = None
    credited: str | None = None
    debited: str | None = None


def _text(value: Any, field: str, *, limit: int = MAX_TEXT, required: bool = True) -> str:
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise DisputeError("must be text", field=field)
    value = value.strip()
    if required and not value:
        raise DisputeError("must not be empty", field=field)
    if len(value) > limit:
        raise DisputeError(f"is {len(value)} characters long; at most {limit}", field=field)
    if any(ord(ch) < 32 and ch not in "\n\r\t" for ch in value):
        raise DisputeError("holds control characters", field=field)
    return value


def _name(value: Any, field: str) -> str:
    name = _text(value, field, limit=MAX_NAME)
    if any(ch.isspace() for ch in name):
        raise DisputeError(f"{name!r} is not a name (no spaces)", field=field)
    return name


def _optional_name(value: Any, field: str) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return _name(value, field)


def _time(value: Any) -> str | None:
    try:
        return format_time(parse_time(value, what="at"))
    except ValueError as error:
        raise DisputeError(str(error), field="at") from None


def parse_amount(value: Any) -> Decimal:
    """A positive amount of money with at most two decimals (never rounded silently).

    >>> parse_amount(" 12.5 ")
    Decimal('12.50')
    >>> parse_amount("0.001")  # doctest: +IGNORE_EXCEPTION_DETAIL
    Traceback (most recent call last):
    DisputeError: amount: 0.001 has more than two decimals
    """
    if isinstance(value, float | bool):
        raise DisputeError("must be given as text or a Decimal, not a float", field="amount")
    if isinstance(value, int):
        value = Decimal(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            value = Decimal(text)
        except InvalidOperation:
            raise DisputeError(f"{text!r} is not an amount like 12.50", field="amount") from None
    if not isinstance(value, Decimal) or not value.is_finite():
        raise DisputeError(f"{value!r} is not an amount like 12.50", field="amount")
    if value <= 0:
        raise DisputeError(f"{value} must be more than 0", field="amount")
    if value > MAX_AMOUNT:
        raise DisputeError(f"{value} is more than {MAX_AMOUNT}", field="amount")
    if value != value.quantize(CENT):
        raise DisputeError(f"{value} has more than two decimals", field="amount")
    return value.quantize(CENT)


def check_link(value: Any) -> str:
    """An evidence link: an absolute http(s) URL (anything else could run in a browser).

    >>> check_link("https://files.example/hand-17.png")
    'https://files.example/hand-17.png'
    """
    link = _text(value, "link", limit=MAX_LINK)
    if any(ch.isspace() for ch in link):
        raise DisputeError("must not contain spaces", field="link")
    parts = urlsplit(link)
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        raise DisputeError(
            f"{link[:80]!r} is not a web address starting with https:// or http://", field="link"
        )
    return link


class DisputeCase(Aggregate):
    """One dispute case. Create with :meth:`open`; commands :meth:`add_note`,
    :meth:`add_evidence`, :meth:`close`."""

    # Explicit topics: stored events name these, so classes can move without breaking them.
    TOPIC = "rummy_ledger:DisputeCase"

    class Event(Aggregate.Event):
        TOPIC = "rummy_ledger:DisputeCase.Event"

    class Created(Event, Aggregate.Created):
        TOPIC = "rummy_ledger:DisputeCase.Created"

    class Snapshot(Aggregate.Snapshot):
        TOPIC = "rummy_ledger:DisputeCase.Snapshot"

    @staticmethod
    def create_id(case_id: str) -> uuid.UUID:
        return uuid.uuid5(CASE_NAMESPACE, case_id)

    # == opening ===========================================================================
    @classmethod
    def open(
        cls,
        case_id: str,
        *,
        game: str,
        move: int,
        moves: int,
        players: Sequence[str],
        currency: str,
        description: str,
        opened_by: str,
        opener_role: str,
        at: Any,
    ) -> DisputeCase:
        """Open a case on ``game`` at ``move`` (0 is the deal, ``moves`` the last move)."""
        if not isinstance(case_id, str) or not CASE_ID_PATTERN.match(case_id):
            raise DisputeError(f"{case_id!r} is not a case id", field="case_id")
        game = _name(game, "game")
        if isinstance(move, bool) or not isinstance(move, int):
            raise DisputeError(f"{move!r} is not a whole number", field="move")
        if not 0 <= move <= moves:
            raise DisputeError(
                f"game {game} has {moves} moves: there is no move {move} "
                f"(0 is the deal, {moves} the last move)",
                field="move",
            )
        if not players:
            raise DisputeError(f"game {game} has no players", field="game")
        return cls(
            case_id=case_id,
            # Named ``game``, not ``game_id``: tamper evidence labels a chain with the first
            # ``game_id`` in its first event, and a case's chain is not the game's.
            game=game,
            move=move,
            players=[_name(p, "players") for p in players],
            currency=_name(currency, "currency"),
            description=_text(description, "description"),
            opened_by=_name(opened_by, "opened_by"),
            opener_role=_name(opener_role, "opener_role"),
            at=_time(at),
        )

    @event("CaseOpened", topic="rummy_ledger:DisputeCase.CaseOpened")
    def __init__(
        self,
        case_id: str,
        game: str,
        move: int,
        players: list,
        currency: str,
        description: str,
        opened_by: str,
        opener_role: str,
        at: str | None,
    ) -> None:
        self._case_id = case_id
        self._game = game
        self._move = move
        self._players = tuple(players)
        self._currency = currency
        self._opened_by = opened_by
        self._opener_role = opener_role
        self._opened_at = at
        self._closed_at: str | None = None
        self._status = OPEN
        self._decision: str | None = None
        self._amount: str | None = None
        self._credited: str | None = None
        self._debited: str | None = None
        self._timeline = [TimelineEntry("opened", at, opened_by, description)]

    # == working the case ==================================================================
    def _require_open(self, step: str) -> None:
        if self._status != OPEN:
            raise DisputeError(
                f"case {self._case_id} is closed ({self._decision}); cannot {step}",
                case_id=self._case_id,
            )

    def add_note(self, text: str, *, by: str, at: Any) -> None:
        self._require_open("add a note")
        self._note_added(by=_name(by, "by"), text=_text(text, "note"), at=_time(at))

    @event("NoteAdded", topic="rummy_ledger:DisputeCase.NoteAdded")
    def _note_added(self, by: str, text: str, at: str | None) -> None:
        self._timeline.append(TimelineEntry("note", at, by, text))

    def add_evidence(self, link: str, *, by: str, at: Any, label: str = "") -> None:
        self._require_open("add evidence")
        self._evidence_added(
            by=_name(by, "by"),
            link=check_link(link),
            label=_text(label, "label", limit=MAX_LABEL, required=False),
            at=_time(at),
        )

    @event("EvidenceAdded", topic="rummy_ledger:DisputeCase.EvidenceAdded")
    def _evidence_added(self, by: str, link: str, label: str, at: str | None) -> None:
        self._timeline.append(TimelineEntry("evidence", at, by, label, link=link))

    def attach_flag(self, flag: dict, *, by: str, at: Any) -> None:
        """Record a fair-play flag (docs/fair-play.md) on the case: its signal, players,
        strength and evidence moves, as the review gave them when the case was opened."""
        self._require_open("attach a fair-play flag")
        if not isinstance(flag, dict):
            raise DisputeError("a flag is a mapping of its fields", field="flag")
        players = [_name(p, "players") for p in flag.get("players") or ()]
        if not players:
            raise DisputeError("a flag names its players", field="flag")
        moves = []
        for evidence in flag.get("evidence") or ():
            move = evidence.get("move")
            if isinstance(move, bool) or not isinstance(move, int) or move < 0:
                raise DisputeError(f"{move!r} is not a move number", field="flag")
            moves.append(
                {
                    "game_id": _name(evidence.get("game_id"), "flag"),
                    "move": move,
                    "note": _text(
                        evidence.get("note", ""), "flag", limit=MAX_LABEL, required=False
                    ),
                }
            )
        self._flag_attached(
            by=_name(by, "by"),
            key=_text(flag.get("key"), "flag", limit=MAX_LABEL),
            signal=_text(flag.get("label") or flag.get("signal"), "flag", limit=MAX_LABEL),
            players=players,
            statistic=_text(flag.get("statistic", ""), "flag", required=False),
            p=str(flag.get("p", "")),
            q=str(flag.get("q", "")),
            evidence=moves,
            at=_time(at),
        )

    @event("FlagAttached", topic="rummy_ledger:DisputeCase.FlagAttached")
    def _flag_attached(
        self,
        by: str,
        key: str,
        signal: str,
        players: list,
        statistic: str,
        p: str,
        q: str,
        evidence: list,
        at: str | None,
    ) -> None:
        text = f"{signal}: {' + '.join(players)} (p {p}, q {q}). {statistic}"
        moves = tuple((e["game_id"], e["move"], e["note"]) for e in evidence)
        self._timeline.append(TimelineEntry("flag", at, by, text, moves=moves))

    def close(
        self,
        decision: str,
        *,
        by: str,
        reason: str,
        at: Any,
        amount: Any = None,
        credited: str | None = None,
        debited: str | None = None,
    ) -> None:
        """Close with ``upheld``, ``rejected`` or ``adjusted`` (the last with ``amount`` and
        ``credited`` and/or ``debited``, players of the game; the house takes the other
        side when only one is named)."""
        self._require_open("close it again")
        if decision not in DECISIONS:
            raise DisputeError(
                f"{decision!r} is not a decision ({', '.join(DECISIONS)})", field="decision"
            )
        by = _name(by, "by")
        reason = _text(reason, "reason")
        credited = _optional_name(credited, "credited")
        debited = _optional_name(debited, "debited")
        if decision != ADJUSTED:
            given = [
                name
                for name, value in (
                    ("amount", amount),
                    ("credited", credited),
                    ("debited", debited),
                )
                if value not in (None, "")
            ]
            if given:
                raise DisputeError(
                    f"only an adjusted decision moves money; leave it empty for {decision}",
                    field=given[0],
                )
            self._closed(
                by=by,
                decision=decision,
                reason=reason,
                amount=None,
                credited=None,
                debited=None,
                at=_time(at),
            )
            return
        if amount is None or (isinstance(amount, str) and not amount.strip()):
            raise DisputeError(
                "an adjusted decision posts money: give the amount, like 12.50", field="amount"
            )
        value = parse_amount(amount)
        if credited is None and debited is None:
            raise DisputeError("name the player credited or the player debited", field="credited")
        for field, player in (("credited", credited), ("debited", debited)):
            if player is not None and player not in self._players:
                raise DisputeError(
                    f"{player!r} did not play game {self._game} "
                    f"(players: {', '.join(self._players)})",
                    field=field,
                )
        if credited is not None and credited == debited:
            raise DisputeError("a player cannot be both credited and debited", field="debited")
        self._closed(
            by=by,
            decision=decision,
            reason=reason,
            amount=money_text(value),
            credited=credited,
            debited=debited,
            at=_time(at),
        )

    @event("CaseClosed", topic="rummy_ledger:DisputeCase.CaseClosed")
    def _closed(
        self,
        by: str,
        decision: str,
        reason: str,
        amount: str | None,
        credited: str | None,
        debited: str | None,
        at: str | None,
    ) -> None:
        self._status = CLOSED
        self._decision = decision
        self._amount = amount
        self._credited = credited
        self._debited = debited
        self._closed_at = at
        self._timeline.append(
            TimelineEntry(
                "closed",
                at,
                by,
                reason,
                decision=decision,
                amount=amount,
                credited=credited,
                debited=debited,
            )
        )

    # == views =============================================================================
    @property
    def case_id(self) -> str:
        return self._case_id

    @property
    def game_id(self) -> str:
        return self._game

    @property
    def move(self) -> int:
        return self._move

    @property
    def players(self) -> tuple[str, ...]:
        return self._players

    @property
    def currency(self) -> str:
        return self._currency

    @property
    def description(self) -> str:
        return self._timeline[0].text

    @property
    def opened_by(self) -> str:
        return self._opened_by

    @property
    def opener_role(self) -> str:
        return self._opener_role

    @property
    def opened_at(self) -> str | None:
        return self._opened_at

    @property
    def closed_at(self) -> str | None:
        return self._closed_at

    @property
    def status(self) -> str:
        return self._status

    @property
    def decision(self) -> str | None:
        return self._decision

    @property
    def amount(self) -> Decimal | None:
        return None if self._amount is None else Decimal(self._amount)

    @property
    def credited(self) -> str | None:
        return self._credited

    @property
    def debited(self) -> str | None:
        return self._debited

    @property
    def timeline(self) -> tuple[TimelineEntry, ...]:
        return tuple(self._timeline)

    def adjustment_entries(self) -> tuple[LedgerEntry, ...]:
        """The posting an adjusted decision makes (empty otherwise): the debited side pays,
        the credited side receives; they balance."""
        return adjustment_entries(self._amount, self._credited, self._debited)


def adjustment_entries(
    amount: str | Decimal | None, credited: str | None, debited: str | None
) -> tuple[LedgerEntry, ...]:
    """The two lines of an adjustment: debit first, then credit (``ADJUSTMENT_ACCOUNT``
    for the side no player takes).

    >>> [e.account for e in adjustment_entries("5.00", "p2", None)]
    ['operator:adjustments', 'player:p2']
    """
    if amount is None:
        return ()
    value = Decimal(amount)
    zero = Decimal("0.00")
    paying = account_of(debited) if debited else ADJUSTMENT_ACCOUNT
    receiving = account_of(credited) if credited else ADJUSTMENT_ACCOUNT
    return (LedgerEntry(paying, value, zero), LedgerEntry(receiving, zero, value))
