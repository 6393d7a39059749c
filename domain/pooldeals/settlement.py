"""The prize pool of a match and who receives it: what Pool and Deals Rummy share.

Money follows docs/rules.md §1 ("Money"): exact decimals, the fee rounded half-up to 0.01
once. The entries balance by construction: each player is debited every entry fee they
paid (rejoins included), the payouts and the fee are credited, and payouts + fee = prize
pool to the paisa.

>>> s = settle_pool_money("G", "INR", Decimal("10"), Decimal("25"), {"p1": 1, "p2": 1},
...                       {"p1": None})
>>> s.prize_pool, s.fee, s.payouts
(Decimal('50.00'), Decimal('5.00'), {'p1': Decimal('45.00')})
>>> s.balanced
True
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_DOWN, Decimal
from typing import Any

from domain.money import (
    CENT,
    FEE_ACCOUNT,
    SETTLEMENT_KIND,
    LedgerEntry,
    account_of,
    money,
    money_text,
)

ZERO = Decimal("0.00")
# The ledger_entries kinds a match posts beside ``settlement`` (the first entry fees, the
# winner's payout, the fee): each rejoin's fee and each share of a split, so period reports
# can total them apart.
REJOIN_FEE_KIND = "rejoin_fee"
SPLIT_KIND = "split"
ENTRY_KINDS = (SETTLEMENT_KIND, REJOIN_FEE_KIND, SPLIT_KIND)


@dataclass(frozen=True)
class MatchMoney:
    """A settled match's money: the prize pool, the fee, each payout and the entries."""

    game_id: str
    currency: str
    fee_percent: Decimal
    entry_fee: Decimal
    entries_paid: Mapping[str, int]  # player -> entry fees paid (1 + rejoins)
    prize_pool: Decimal
    fee: Decimal
    payouts: Mapping[str, Decimal]  # the winner, or every sharer of a split
    ledger_entries: tuple[LedgerEntry, ...] = field(default=())
    entry_kinds: tuple[str, ...] = field(default=())  # each entry's kind, in order

    @property
    def net_pool(self) -> Decimal:
        return self.prize_pool - self.fee

    @property
    def balanced(self) -> bool:
        debits = sum((e.debit for e in self.ledger_entries), ZERO)
        credits = sum((e.credit for e in self.ledger_entries), ZERO)
        return debits == credits == self.prize_pool

    def to_dict(self) -> dict[str, Any]:
        return {
            "currency": self.currency,
            "entry_fee": money_text(self.entry_fee),
            "fee_percent": str(self.fee_percent),
            "entries_paid": dict(self.entries_paid),
            "prize_pool": money_text(self.prize_pool),
            "fee": money_text(self.fee),
            "net_pool": money_text(self.net_pool),
            "payouts": {p: money_text(v) for p, v in self.payouts.items()},
            "ledger_entries": [
                {**entry.to_dict(), "kind": kind}
                for entry, kind in zip(self.ledger_entries, self.entry_kinds, strict=True)
            ],
        }


def fee_of(prize_pool: Decimal, fee_percent: Decimal) -> Decimal:
    return money(prize_pool * fee_percent / 100)


def settle_pool_money(
    game_id: str,
    currency: str,
    fee_percent: Decimal,
    entry_fee: Decimal,
    entries_paid: Mapping[str, int],
    shares: Mapping[str, Decimal | None],
) -> MatchMoney:
    """The money of a match whose prize pool goes to ``shares``: one winner (share None:
    the whole net pool) or the sharers of a split (each share given, adding up to the net)."""
    prize_pool = money(entry_fee * sum(entries_paid.values()))
    fee = fee_of(prize_pool, fee_percent)
    net = prize_pool - fee
    split = not (len(shares) == 1 and next(iter(shares.values())) is None)
    if not split:
        payouts = {next(iter(shares)): net}
    else:
        payouts = {player: money(share) for player, share in shares.items()}
        if sum(payouts.values(), ZERO) != net:
            raise ValueError(
                f"shares add up to {sum(payouts.values(), ZERO)}, the net pool is {net}"
            )
    entries, kinds = [], []
    for player, paid in entries_paid.items():
        for number in range(paid):
            entries.append(LedgerEntry(account_of(player), money(entry_fee), ZERO))
            kinds.append(SETTLEMENT_KIND if number == 0 else REJOIN_FEE_KIND)
    for player, amount in payouts.items():
        entries.append(LedgerEntry(account_of(player), ZERO, amount))
        kinds.append(SPLIT_KIND if split else SETTLEMENT_KIND)
    entries.append(LedgerEntry(FEE_ACCOUNT, ZERO, fee))
    kinds.append(SETTLEMENT_KIND)
    return MatchMoney(
        game_id=game_id,
        currency=currency,
        fee_percent=fee_percent,
        entry_fee=entry_fee,
        entries_paid=dict(entries_paid),
        prize_pool=prize_pool,
        fee=fee,
        payouts=payouts,
        ledger_entries=tuple(entries),
        entry_kinds=tuple(kinds),
    )


def equal_shares(amount: Decimal, order: Sequence[str]) -> dict[str, Decimal]:
    """``amount`` shared equally: each share rounded down to 0.01, the paise left over one
    each to the players in ``order`` (lowest score first, then seat: docs/rules.md §3).

    >>> equal_shares(Decimal("50"), ["a", "b", "c"])
    {'a': Decimal('16.67'), 'b': Decimal('16.67'), 'c': Decimal('16.66')}
    """
    base = (amount / len(order)).quantize(CENT, rounding=ROUND_DOWN)
    left = int((amount - base * len(order)) / CENT)
    return {player: base + (CENT if n < left else ZERO) for n, player in enumerate(order)}
