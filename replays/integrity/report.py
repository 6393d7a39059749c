"""What `verify` finds: the kinds of problem, one :class:`Problem` each, and the
:class:`Report` that collects them.

Its own module so that every check (the verifier, and the deal, snapshot and read-model
checks it calls) reports in the same terms without importing the verifier back.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from replays.integrity import locate as locating
from replays.integrity.signing import Checkpoint

# Kinds of problem. Every one makes `verify` fail. Saves seal their own events, so a row
# without a seal is "inserted"; only on a store written before that (no tree head yet) is
# a row after the last seal merely "unsealed": waiting for `rummy-ledger seal`.
ALTERED, DELETED, INSERTED, UNSEALED = "altered", "deleted", "inserted", "unsealed"
CHAIN, TREE, CHECKPOINT = "chain", "tree", "checkpoint"
# An event edited with its seal and chain rewritten to match, located by the tree hashes
# that still hold the old one (replays.integrity.locate): at its game and event when a
# witness names it, else at the block of events it lies in.
RESEALED = locating.RESEALED
# A row the ledger cannot have written in that form (state as TEXT or NULL, a NULL topic):
# reported with its game and event; its bytes are still compared as far as they go.
UNREADABLE = "unreadable"


@dataclass(frozen=True)
class Problem:
    kind: str
    message: str
    game_id: str | None = None
    event: int | None = None

    def __str__(self) -> str:
        where = ", ".join(
            part
            for part in (
                None if self.game_id is None else f"game {self.game_id}",
                None if self.event is None else f"event {self.event}",
            )
            if part
        )
        return f"{where}: {self.kind}: {self.message}" if where else f"{self.kind}: {self.message}"


@dataclass
class Report:
    problems: list[Problem] = field(default_factory=list)
    events: int = 0
    sealed: int = 0
    games: int = 0
    root: bytes | None = None
    checkpoints: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # For one game: the latest checkpoint issued and the game's last tree position.
    latest: Checkpoint | None = None
    last_position: int = -1

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, kind: str, message: str, game_id: str | None = None, event: int | None = None):
        self.problems.append(Problem(kind, message, game_id, event))

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "events": self.events,
            "sealed": self.sealed,
            "games": self.games,
            "root": None if self.root is None else self.root.hex(),
            "checkpoints_checked": self.checkpoints,
            "problems": [asdict(p) for p in self.problems],
            "notes": self.notes,
        }
