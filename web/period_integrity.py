"""Does a period verify? One answer for the reports page from the per-game verdicts.

Each game of the period is put to :func:`web.integrity.integrity_badge` (the events, their
seals and chain, and the latest signed checkpoint); the period verifies when every game
does. This is the one place the reports page asks, so a check that also covers the read
models can take its place without the page changing.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from replays.readmodels.reports import PeriodVerification
from web.integrity import integrity_badge

# Badge statuses that are no failure: verified, waiting for a checkpoint, or not checked.
FINE = frozenset({"verified", "not_checkpointed", "unknown"})


@dataclass(frozen=True)
class PeriodIntegrity:
    """``status``: ``verified`` (every game), ``broken`` (any game), ``not_checkpointed``
    (nothing wrong, but some game is not in a signed checkpoint yet), ``unknown`` (no check
    installed, or no game in the period)."""

    status: str
    games: int
    counts: dict[str, int] = field(default_factory=dict)
    problems: list[tuple[str, str]] = field(default_factory=list)  # (game id, what)
    broken: list[str] = field(default_factory=list)  # the games among ``problems`` that fail

    def as_verification(self) -> PeriodVerification:
        """The verdict as the report's ``verification`` (what ``rummy-ledger report`` fills
        in), so the page's JSON and CSV carry it in the one place the command's do."""
        failed = [(game_id, what) for game_id, what in self.problems if game_id in self.broken]
        waiting = [game_id for game_id, _ in self.problems if game_id not in self.broken]
        return PeriodVerification(self.games, failed, waiting, given_status=self.status)

    @property
    def words(self) -> str:
        if self.status == "verified":
            return f"All {self.games} games verify against the latest checkpoint"
        if self.status == "broken":
            return f"{len(self.broken)} of {self.games} games do not verify"
        if self.status == "not_checkpointed":
            waiting = self.games - self.counts.get("verified", 0)
            return f"Nothing wrong found, but {waiting} of {self.games} games are not in a signed checkpoint yet"
        if not self.games:
            return "No settled games in the period to verify"
        return "Integrity not checked (no integrity check installed)"


def period_integrity(game_ids: list[str]) -> PeriodIntegrity:
    counts: Counter[str] = Counter()
    problems = []
    broken = []
    for game_id in game_ids:
        badge = integrity_badge(game_id, fresh=False)
        if badge is None:
            return PeriodIntegrity("unknown", len(game_ids))
        counts[badge.status] += 1
        if badge.status != "verified":
            problems.append((game_id, f"{badge.text}: {badge.detail}".rstrip(": ")))
        if badge.status not in FINE:
            broken.append(game_id)
    if not game_ids:
        status = "unknown"
    elif broken:  # an altered event, or read rows (what the report sums) that differ from it
        status = "broken"
    elif counts["verified"] == len(game_ids):
        status = "verified"
    elif counts["unknown"]:
        status = "unknown"
    else:
        status = "not_checkpointed"
    return PeriodIntegrity(status, len(game_ids), dict(counts), problems, broken)
