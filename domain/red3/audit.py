"""Red 3's audit: every round's scores recomputed from the stored facts and compared.

The audit recomputes every round's scores from the books on the table and the cards held
at the moment the round ended, rebuilt event by event, without reading the recorded
``RoundScored`` numbers; it then compares them with those recorded numbers and with the
operator's ``reported`` figures (docs/red3-rules.md).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from domain.red3.game import Red3Match
from domain.red3.scoring import (
    RoundScore,
    leaders,
    running_totals,
    score_round,
    scores_hash,
    settle_match,
)
from domain.variant_base import RECORDED, REPORTED, Discrepancy, discrepancy_lines


@dataclass(frozen=True)
class Red3Audit:
    game_id: str
    players: tuple[str, ...]
    rounds_planned: int
    computed: tuple[RoundScore, ...]  # recomputed from the table at each round's end
    recorded: tuple[RoundScore, ...]  # the RoundScored events
    recorded_winners: tuple[str, ...] | None  # the MatchEnded event (None while running)
    reported: Mapping[str, Any] | None
    discrepancies: tuple[Discrepancy, ...]

    @property
    def clean(self) -> bool:
        return not self.discrepancies

    @property
    def totals(self) -> dict[str, int]:
        after = running_totals(self.players, self.computed)
        return after[-1] if after else dict.fromkeys(self.players, 0)

    @property
    def winners(self) -> tuple[str, ...]:
        return leaders(self.totals) if len(self.computed) == self.rounds_planned else ()

    def to_dict(self) -> dict[str, Any]:
        """The ``settle`` shape of the recomputation plus ``discrepancies``."""
        out = settle_match(
            self.game_id, self.players, self.computed, rounds_planned=self.rounds_planned
        ).to_dict()
        out["discrepancies"] = [found.to_dict() for found in self.discrepancies]
        out["recorded"] = [score.to_dict() for score in self.recorded]
        out["reported"] = None if self.reported is None else dict(self.reported)
        return out

    def for_people(self) -> str:
        lines = [
            f"Audit of Red 3 match {self.game_id}: "
            f"{len(self.computed)} of {self.rounds_planned} rounds played"
        ]
        header = "  round  out        " + "".join(f"{p:>12}" for p in self.players)
        lines += ["", header]
        after = running_totals(self.players, self.computed)
        for score, totals in zip(self.computed, after, strict=True):
            cells = "".join(f"{f'{s.books}-{s.held}={s.score}':>12}" for s in score.players)
            lines.append(f"  {score.round:>5}  {score.out or '(stock)':<10} {cells}")
            lines.append(
                f"  {'':>5}  {'total':<10} " + "".join(f"{totals[p]:>12}" for p in self.players)
            )
        if self.winners:
            lines += ["", f"  winner: {', '.join(self.winners)}"]
        lines.append("")
        agree = "No discrepancies: recomputation, recorded scores and report agree."
        lines += discrepancy_lines(self.discrepancies, agree)
        return "\n".join(lines)


def audit_events(events) -> Red3Audit:
    """Replay a match's events, recomputing each round's scores just before its
    ``RoundScored`` event from the books and hands as they stood then."""
    auditor = MatchAuditor()
    match: Red3Match | None = None
    for domain_event in events:
        auditor.before(match, domain_event)
        match = domain_event.mutate(match)
    return auditor.report(match)


class MatchAuditor:
    """The audit fed by a replay someone already runs: ``before(match, event)`` just
    before each event is applied, then ``report(match)`` with the match after the last.
    Whatever fails while it watches fails in :meth:`report`, as it would have in
    :func:`audit_events` (a replay for the read rows must not stop on an audit's error)."""

    def __init__(self, to_columns: Callable[[Red3Audit], dict] | None = None) -> None:
        self.to_columns = to_columns  # the read model's audit columns from a report
        self.computed: list[RoundScore] = []
        self.recorded: list[RoundScore] = []
        self.recorded_winners: tuple[str, ...] | None = None
        self.error: Exception | None = None

    def before(self, match: Red3Match | None, domain_event: Any) -> None:
        if self.error is not None:
            return
        try:
            if isinstance(domain_event, Red3Match.RoundScored):
                held = {p: match.held(p) for p in match.players}
                self.computed.append(
                    score_round(
                        match.round, _out(match), match.players, match.books, held, match.rules
                    )
                )
                self.recorded.append(RoundScore.from_dict(domain_event.score))
            elif isinstance(domain_event, Red3Match.MatchEnded):
                self.recorded_winners = tuple(domain_event.winners)
        except Exception as error:  # raised again by report(), where audit_events raised
            self.error = error

    def columns(self, match: Red3Match) -> dict:
        """The audit columns (``Variant.audit_watch``), through ``to_columns``."""
        return self.to_columns(self.report(match))

    def report(self, match: Red3Match) -> Red3Audit:
        if self.error is not None:
            raise self.error
        return _audit(match, self.computed, self.recorded, self.recorded_winners)


def written_audit(match: Red3Match) -> Red3Audit | None:
    """The audit from what the write already knew, or None when only a replay can say.

    A match the ledger ended carries the hash of its round scores and winners as the rules
    computed them (``MatchEnded.computed_hash``). When the stored match's scores still hash
    to it, the recomputation *is* those scores, and only the operator's report (which the
    write did not compute) can differ. Anything else (no hash: stored before it existed; a
    different one: changed in the store since) is None: :func:`audit_events` replays the
    match, as ``audit`` and ``verify`` always do."""
    if match.phase != "finished" or match.computed_hash is None:
        return None
    if scores_hash(match.round_scores, match.winners) != match.computed_hash:
        return None
    scores = list(match.round_scores)
    return _audit(match, scores, scores, match.winners)


def _audit(match: Red3Match, computed, recorded, recorded_winners) -> Red3Audit:
    """The audit of ``match``: the ``computed`` round scores against the ``recorded`` ones
    and winners, and against the operator's report."""
    return Red3Audit(
        game_id=match.game_id,
        players=match.players,
        rounds_planned=match.config.rounds,
        computed=tuple(computed),
        recorded=tuple(recorded),
        recorded_winners=recorded_winners,
        reported=match.reported,
        discrepancies=tuple(_compare(match, computed, recorded, recorded_winners)),
    )


def _out(match: Red3Match) -> str | None:
    """Who went out: the player with no card left in either hand (None: the stock ran out)."""
    return next((p for p in match.players if not match.held(p)), None)


def _compare(match, computed, recorded, recorded_winners) -> list[Discrepancy]:
    found = []
    for index, (mine, theirs) in enumerate(zip(computed, recorded, strict=True)):
        if mine.out != theirs.out:
            found.append(Discrepancy(f"rounds[{index}].out", theirs.out, mine.out, RECORDED))
        for line in mine.players:
            other = next((s for s in theirs.players if s.player == line.player), None)
            for name in ("books", "held", "red_threes", "score"):
                recorded_value = None if other is None else getattr(other, name)
                if recorded_value != getattr(line, name):
                    found.append(
                        Discrepancy(
                            f"rounds[{index}].scores.{line.player}.{name}",
                            recorded_value,
                            getattr(line, name),
                            RECORDED,
                        )
                    )
    players = match.players
    complete = len(computed) == match.config.rounds
    winners = leaders(running_totals(players, computed)[-1]) if complete and computed else ()
    if recorded_winners is not None and tuple(recorded_winners) != tuple(winners):
        found.append(Discrepancy("winners", list(recorded_winners), list(winners), RECORDED))
    reported = match.reported or {}
    for index, scores in enumerate(reported.get("rounds") or []):
        mine = computed[index] if index < len(computed) else None
        for player, score in scores.items():
            value = None if mine is None else mine.score_of(player)
            if score != value:
                found.append(Discrepancy(f"rounds[{index}].{player}", score, value, REPORTED))
    totals = running_totals(players, computed)[-1] if computed else dict.fromkeys(players, 0)
    for player, total in (reported.get("totals") or {}).items():
        if total != totals.get(player):
            found.append(Discrepancy(f"totals.{player}", total, totals.get(player), REPORTED))
    single = winners[0] if len(winners) == 1 else None
    if "winner" in reported and reported["winner"] != single:
        found.append(Discrepancy("winner", reported["winner"], single, REPORTED))
    if "winners" in reported and list(reported["winners"]) != list(winners):
        found.append(Discrepancy("winners", reported["winners"], list(winners), REPORTED))
    return found
