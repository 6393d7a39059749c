"""A match's outcome as ``rummy-ledger settle`` prints it: the score (or chip) table after
every deal, eliminations, rejoins with their scores, the split with its arithmetic, the
prize pool, payouts and fee.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from domain.money import money_text
from domain.pooldeals.pool import Split
from domain.pooldeals.table import FINISHED, POOL

if TYPE_CHECKING:  # the match settles through outcome_hash: no import back at run time
    from domain.pooldeals.match import Match


def match_outcome(
    match: Match, *, settling: tuple[str | None, Mapping[str, Any]] | None = None
) -> dict[str, Any]:
    """The outcome of a match, also of one still running (``complete`` false, no money).

    ``settling``: the winner and settlement of the ``Settled`` event the match is about to
    record; the outcome is then the one the match will have once it has."""
    if settling is None:
        complete, winner, settled = match.phase == FINISHED, match.winner, match.settlement
    else:
        complete, (winner, settled) = True, settling
    config = match.config
    pool = config.variant == POOL
    out: dict[str, Any] = {
        "game_id": config.game_id,
        "variant": config.variant,
        ("pool" if pool else "deals_planned"): config.pool if pool else config.deals,
        "complete": complete,
        "winner": winner,
        "deals": [
            {
                "number": result["number"],
                "dealer": dealt["dealer"],
                "winner": result["winner"],
                "points": dict(result["points"]),
                ("scores" if pool else "chips"): dict(result["after"]),
                **(
                    {"eliminated": list(result["eliminated"])}
                    if pool
                    else {"given": dict(result["given"]), "shortfalls": dict(result["shortfalls"])}
                ),
            }
            for dealt, result in zip(match.deals, match.results, strict=False)
        ],
        ("scores" if pool else "chips"): dict(match.scores),
        "entry_fee": money_text(config.entry_fee),
        "currency": config.currency,
        "prize_pool": money_text(match.prize_pool),
    }
    if pool:
        out["eliminated"] = dict(match.eliminated)
        out["rejoins"] = [dict(entry) for entry in match.rejoin_log]
        out["drops_left"] = match.drops_left()
        out["split"] = None if match.split is None else dict(match.split)
    else:
        out["tiebreak"] = match.tiebreak
    settled = settled or {}
    out["fee"] = settled.get("fee")
    out["net_pool"] = settled.get("net_pool")
    out["payouts"] = settled.get("payouts")
    out["ledger_entries"] = settled.get("ledger_entries")
    return out


def outcome_hash(outcome: Mapping[str, Any]) -> str:
    """The sha256 of an outcome in canonical JSON (sorted keys): every figure a match's
    audit compares, from each deal's points to the payouts."""
    text = json.dumps(outcome, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def describe_outcome(outcome: Mapping[str, Any]) -> str:
    """The outcome for people: a line per deal, then the money."""
    pool = outcome["variant"] == POOL
    kind = f"{outcome['pool']} pool" if pool else f"best of {outcome['deals_planned']} deals"
    if not outcome["complete"]:
        verdict = "match running"
    elif outcome["winner"]:
        verdict = f"{outcome['winner']} wins the {kind}"
    else:
        verdict = f"the {kind} is split"
    lines = [f"{outcome['game_id']}: {verdict}, {len(outcome['deals'])} deal(s)"]
    rejoins = {}
    for entry in outcome.get("rejoins") or ():
        rejoins.setdefault(entry["before_deal"], []).append(entry)
    column = "scores" if pool else "chips"
    for played in outcome["deals"]:
        for entry in rejoins.get(played["number"], ()):
            lines.append(f"  {entry['player']} rejoins at {entry['score']}")
        after = ", ".join(f"{p} {v}" for p, v in played[column].items())
        points = ", ".join(f"{p} +{v}" for p, v in played["points"].items())
        lines.append(f"  deal {played['number']}: {played['winner']} wins ({points}) -> {after}")
        if played.get("eliminated"):
            lines.append(f"    eliminated: {', '.join(played['eliminated'])}")
        if played.get("shortfalls"):
            short = ", ".join(f"{p} {v}" for p, v in played["shortfalls"].items())
            lines.append(f"    short of chips: {short}")
    split = outcome.get("split")
    if split:
        who = ", ".join(split["accepted_by"]) or "automatically"
        lines.append(f"  split ({who}), net pool {split['net_pool']}:")
        lines += [f"    {line}" for line in Split.from_dict(split).describe()]
    if outcome["complete"]:
        lines.append(
            f"  prize pool {outcome['prize_pool']} {outcome['currency']}, fee {outcome['fee']}"
        )
        for player, amount in outcome["payouts"].items():
            lines.append(f"    {player:<12} receives {amount}")
    return "\n".join(lines)
