"""Pool Rummy's rules and money, pure (docs/rules.md §3): running scores, elimination,
rejoins, the split by drops and the auto split.

The split example of docs/rules.md §3 (101 pool, entry 25, fee 0, pool 150, three players
with 3, 1 and 0 drops):

>>> split = split_by_drops(POOL_TYPES[101], Decimal("25"), Decimal("0"), Decimal("150"),
...                        {"a": 40, "b": 80, "c": 99}, ("a", "b", "c"))
>>> {p: str(v) for p, v in split.shares.items()}
{'a': '91.67', 'b': '41.67', 'c': '16.66'}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from domain.money import money, money_text
from domain.pooldeals.profile import POOL_TYPES, PoolType
from domain.pooldeals.settlement import ZERO, equal_shares, fee_of

__all__ = [
    "POOL_TYPES",
    "Split",
    "add_deal_points",
    "auto_split_applies",
    "rejoin_refusal",
    "rejoin_score",
    "split_by_drops",
    "split_refusal",
]


def add_deal_points(
    pool: PoolType, scores: Mapping[str, int], points: Mapping[str, int]
) -> tuple[dict[str, int], list[str]]:
    """The scores after a deal (each player's deal points added; the winner's are 0) and
    the players the deal eliminates, in seat order (``scores``' order)."""
    after = {player: score + points.get(player, 0) for player, score in scores.items()}
    eliminated = [p for p in points if scores[p] < pool.limit <= after[p]]
    return after, eliminated


def by_score(scores: Mapping[str, int], players: Sequence[str], seats: Sequence[str]) -> list[str]:
    """``players`` lowest score first, then by seat: the order the paise left over go in."""
    return sorted(players, key=lambda p: (scores[p], seats.index(p)))


def rejoin_refusal(
    pool: PoolType,
    player: str,
    scores: Mapping[str, int],
    remaining: Sequence[str],
    rejoins: int,
    max_rejoins: int | None,
) -> str | None:
    """Why ``player`` may not rejoin now (None: allowed). ``remaining``: players still in."""
    if player in remaining:
        return f"{player} is still in the pool (score {scores[player]})"
    if len(remaining) < 2:
        return f"only {len(remaining)} player(s) remain: a rejoin needs at least 2"
    above = [p for p in remaining if scores[p] > pool.rejoin_threshold]
    if above:
        named = ", ".join(f"{p} has {scores[p]}" for p in above)
        return f"{named}, above {pool.rejoin_threshold}: rejoins are closed in a {pool.limit} pool"
    if max_rejoins is not None and rejoins >= max_rejoins:
        return f"{player} already rejoined {rejoins} time(s), the most this pool allows"
    return None


def rejoin_score(scores: Mapping[str, int], remaining: Sequence[str]) -> int:
    """The highest remaining score + 1 (never at the limit: no remaining score is above the
    rejoin threshold, which is below the limit - 1)."""
    return max(scores[p] for p in remaining) + 1


@dataclass(frozen=True)
class Split:
    """A split's arithmetic, every figure kept so a replay and an audit can show it."""

    drops: dict[str, int]
    drop_worth: Decimal
    net_pool: Decimal
    first: dict[str, Decimal]  # (drops - least drops) x one drop
    rest: Decimal
    equal: dict[str, Decimal]
    shares: dict[str, Decimal]
    kind: str = "drops"  # "drops", or "equal" for the auto split

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "drops": dict(self.drops),
            "drop_worth": money_text(self.drop_worth),
            "net_pool": money_text(self.net_pool),
            "first": {p: money_text(v) for p, v in self.first.items()},
            "rest": money_text(self.rest),
            "equal": {p: money_text(v) for p, v in self.equal.items()},
            "shares": {p: money_text(v) for p, v in self.shares.items()},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Split:
        def amounts(values: Mapping[str, str]) -> dict[str, Decimal]:
            return {p: Decimal(v) for p, v in values.items()}

        return cls(
            drops=dict(data["drops"]),
            drop_worth=Decimal(data["drop_worth"]),
            net_pool=Decimal(data["net_pool"]),
            first=amounts(data["first"]),
            rest=Decimal(data["rest"]),
            equal=amounts(data["equal"]),
            shares=amounts(data["shares"]),
            kind=data.get("kind", "drops"),
        )

    def describe(self) -> list[str]:
        """The arithmetic in words, a line per player."""
        lines = []
        for player, share in self.shares.items():
            if self.kind == "equal":
                lines.append(f"{player}: {money_text(share)} (an equal share)")
            else:
                drops = self.drops[player]
                lines.append(
                    f"{player}: {drops} drop{'' if drops == 1 else 's'}, "
                    f"{money_text(self.first[player])} + {money_text(self.equal[player])} = "
                    f"{money_text(share)}"
                )
        return lines


def split_by_drops(
    pool: PoolType,
    entry_fee: Decimal,
    fee_percent: Decimal,
    prize_pool: Decimal,
    scores: Mapping[str, int],
    seats: Sequence[str],
) -> Split:
    """The split of the net pool by drops among the players of ``scores`` (docs/rules.md §3)."""
    players = list(scores)
    net = prize_pool - fee_of(prize_pool, fee_percent)
    drops = {p: pool.drops(scores[p]) for p in players}
    least = min(drops.values())
    worth = money(entry_fee * (1 - fee_percent / 100))
    first = {p: (drops[p] - least) * worth for p in players}
    rest = net - sum(first.values(), ZERO)
    equal = equal_shares(rest, by_score(scores, players, seats)) if rest > 0 else {}
    equal = {p: equal.get(p, ZERO) for p in players}
    shares = {p: first[p] + equal[p] for p in players}
    return Split(drops, worth, net, first, rest, equal, shares)


def equal_split(
    fee_percent: Decimal, prize_pool: Decimal, scores: Mapping[str, int], seats: Sequence[str]
) -> Split:
    """The auto split: the net pool shared equally (paise left over by lowest score)."""
    players = list(scores)
    net = prize_pool - fee_of(prize_pool, fee_percent)
    equal = equal_shares(net, by_score(scores, players, seats))
    zero = dict.fromkeys(players, ZERO)
    drops = dict.fromkeys(players, 0)
    return Split(drops, ZERO, net, zero, net, equal, dict(equal), kind="equal")


def split_refusal(
    pool: PoolType,
    started_with: int,
    remaining: Sequence[str],
    accepted_by: Sequence[str],
    split: Split | None,
) -> str | None:
    """Why a split is not allowed (None: it is). ``split``: its arithmetic, when the table
    qualifies."""
    if started_with > 3:
        allowed = (2, 3)
    elif started_with == 3:
        allowed = (2,)
    else:
        return f"a table that started with {started_with} players cannot split"
    if len(remaining) not in allowed:
        counts = " or ".join(str(n) for n in allowed)
        return (
            f"{len(remaining)} players remain: a table that started with {started_with} "
            f"splits only when {counts} remain"
        )
    twice = sorted({p for p in accepted_by if list(accepted_by).count(p) > 1})
    if twice:
        return f"{', '.join(twice)} accepted twice"
    missing = [p for p in remaining if p not in accepted_by]
    if missing:
        return f"{', '.join(missing)} did not accept the split: every remaining player must"
    strangers = [p for p in accepted_by if p not in remaining]
    if strangers:
        return f"{', '.join(strangers)} accepted but is not in the pool"
    if split is not None and split.rest < split.drop_worth:
        return (
            f"after paying for drops ({', '.join(f'{p} {d}' for p, d in split.drops.items())}) "
            f"the rest is {money_text(split.rest)}, less than one drop's worth "
            f"({money_text(split.drop_worth)})"
        )
    return None


def auto_split_applies(pool: PoolType, remaining: Sequence[str], scores: Mapping[str, int]) -> bool:
    """2 or 3 remain and every one of their scores is at least the auto-split score."""
    return len(remaining) in (2, 3) and all(scores[p] >= pool.auto_split_at for p in remaining)
