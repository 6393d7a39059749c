"""Cheating players the simulator can seat among honest ones, so fair-play review can be measured.

Four kinds, each a share of the floor's player pool (``--cheaters pair:0.02,peek:0.02``):

- ``pair``: two players who feed each other through the open pile. When they share a table
  they sit next to each other (the feeder just before the partner, so the feeder's discard
  is the partner's open card); the feeder discards the card the partner can use, the
  partner picks it; and the feeder drops early (in its first turns) when the partner holds a
  strong hand.
- ``peek``: a player who sees the top of the stock (an insider, a leaked order) and chooses
  between the open card and the stock by it.
- ``dump``: a dumper and the beneficiary they play for at Pool and Deals tables: with a strong
  hand the dumper drops, or declares a hand that is not finished, while the beneficiary is
  still in the deal.
- ``bot``: a program at the seat: its moves come at machine-regular times, it is never
  careless, and it takes the solver's own discard (the card leaving the least score, with
  no eye for links) on a share of its turns.

``strength`` (0..1) is how often a cheat acts when it can: the chance of peeking at a turn, of
feeding or dumping when the partner is there, of sitting with the partner; for a bot, how
regular its timing is and how often it takes the solver's discard. The roles are drawn from the run's seed and a separate generator,
so a floor without cheats deals exactly the games it always dealt.

Ground truth (:meth:`Cheats.truth`) is written to its own file; nothing of it goes into the
game records.

>>> cheats = Cheats.parse("pair:0.1,peek:0.05", strength=0.8)
>>> roles = cheats.roles(seed=1, players=[f"p{n:04d}" for n in range(1, 101)])
>>> sorted({role.kind for role in roles.values()})
['pair', 'peek']
>>> sum(role.kind == "pair" for role in roles.values()), sum(r.kind == "peek" for r in roles.values())
(10, 5)
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

KINDS = ("pair", "peek", "dump", "bot")
PAIRED = ("pair", "dump")


class CheatsError(ValueError):
    """A ``--cheaters`` or ``--cheat-strength`` value that cannot be read."""


@dataclass(frozen=True)
class Role:
    """One cheating player's part: its kind, its partner (pairs and dumps) and, in a pair,
    whether it is the one who gives (the feeder, the dumper)."""

    kind: str
    partner: str | None = None
    gives: bool = False


@dataclass(frozen=True)
class Cheats:
    """Which shares of the player pool cheat, and how hard."""

    shares: tuple[tuple[str, float], ...] = ()
    strength: float = 0.5
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False, hash=False)

    @classmethod
    def parse(cls, text: str, strength: float = 0.5) -> Cheats:
        """``"pair:0.02,peek:0.02"`` (kind:share of the players)."""
        if not 0 <= strength <= 1:
            raise CheatsError(f"--cheat-strength must be between 0 and 1, got {strength}")
        shares = []
        for part in filter(None, (p.strip() for p in text.split(","))):
            kind, _, share = part.partition(":")
            if kind not in KINDS:
                raise CheatsError(
                    f"{part!r}: unknown kind of cheat {kind!r} (known: {', '.join(KINDS)})"
                )
            try:
                value = float(share)
            except ValueError:
                raise CheatsError(
                    f"{part!r}: give a share of the players, such as {kind}:0.02"
                ) from None
            if not 0 <= value <= 0.25:
                raise CheatsError(f"{part!r}: a share between 0 and 0.25 of the players")
            shares.append((kind, value))
        if sum(value for _, value in shares) > 0.5:
            raise CheatsError(f"{text!r}: cheats are a minority, at most half the players together")
        return cls(tuple(shares), strength)

    def roles(self, seed: int, players: list[str]) -> dict[str, Role]:
        """Each cheating player's role, drawn from ``seed`` (the same every run)."""
        key = (seed, len(players))
        if key not in self._cache:
            self._cache[key] = self._draw(seed, players)
        return self._cache[key]

    def known_roles(self, seed: int, count: int) -> dict[str, Role] | None:
        """The roles already drawn for ``seed`` and a pool of ``count`` players, if any."""
        return self._cache.get((seed, count))

    def _draw(self, seed: int, players: list[str]) -> dict[str, Role]:
        rng = random.Random(f"cheats:{seed}")
        pool = list(players)
        rng.shuffle(pool)
        roles: dict[str, Role] = {}
        for kind, share in self.shares:
            count = round(len(players) * share)
            if kind in PAIRED:
                count -= count % 2
                for _ in range(count // 2):
                    giver, taker = pool.pop(), pool.pop()
                    roles[giver] = Role(kind, taker, gives=True)
                    roles[taker] = Role(kind, giver, gives=False)
            else:
                for _ in range(count):
                    roles[pool.pop()] = Role(kind)
        return roles

    def truth(self, seed: int, players: list[str]) -> dict:
        """The ground truth as JSON-ready data: who cheats, how, with whom."""
        found = []
        for player, role in sorted(self.roles(seed, players).items()):
            if role.kind in PAIRED:
                if role.gives:
                    found.append({"kind": role.kind, "players": [player, role.partner]})
            else:
                found.append({"kind": role.kind, "players": [player]})
        return {
            "seed": seed,
            "strength": self.strength,
            "shares": dict(self.shares),
            "cheaters": found,
        }
