"""Money as the ledger counts it, for every family: exact decimals rounded half-up to the
paisa at the end of a computation (docs/rules.md, "Money"), ledger accounts and entries.

>>> money(Decimal("29.705")), money_text(Decimal("3")), rate_text(Decimal("1.1"))
(Decimal('29.71'), '3.00', '1.10')
>>> LedgerEntry(account_of("p1"), Decimal("0"), Decimal("44.73")).to_dict()
{'account': 'player:p1', 'debit': '0.00', 'credit': '44.73'}
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")
FEE_ACCOUNT = "operator:fee"
SETTLEMENT_KIND = "settlement"  # the ledger_entries kind of a settlement's lines


def money(value: Decimal) -> Decimal:
    """Round half-up to 0.01: ``money(Decimal('29.705')) == Decimal('29.71')``."""
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def money_text(value: Decimal) -> str:
    return str(money(value))


def rate_text(value: Decimal) -> str:
    """A point value as text with at least two decimals (``1.1`` → ``1.10``, ``0.125`` kept)."""
    if value == value.quantize(CENT):
        return str(value.quantize(CENT))
    return str(value.normalize())


def account_of(player: str) -> str:
    return f"player:{player}"


@dataclass(frozen=True)
class LedgerEntry:
    account: str
    debit: Decimal
    credit: Decimal

    def to_dict(self) -> dict[str, str]:
        return {
            "account": self.account,
            "debit": money_text(self.debit),
            "credit": money_text(self.credit),
        }
