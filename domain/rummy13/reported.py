"""The operator's ``reported`` block for a simulated game: usually right, now and then not.

The figures are the ledger's own settlement of the record (replayed through the game
aggregate in memory), so a correct report matches an audit to the paisa. With a
discrepancy rate, some reports carry one of the mistakes operators actually make — a fee
at the wrong percentage, a loser charged the wrong points, a payout rounded the wrong way —
so the audit pages have something true to find.
"""

from __future__ import annotations

import random
from decimal import ROUND_DOWN, Decimal

PAISA = Decimal("0.01")
MISTAKES = ("fee_percent", "loser_points", "net_rounding")


def settle(record: dict) -> dict:
    """The settlement of a 13-card record (``settle`` JSON shape), through the aggregate."""
    from domain.rummy13.moves import play_game
    from domain.rummy13.records import parse_game_record

    parsed = parse_game_record(record)
    game = play_game(parsed.config, parsed.deal, parsed.move_dicts(), settle=True)
    return game.settlement.summary()


def reported_block(record: dict, rng: random.Random, discrepancy_rate: float) -> dict:
    """A 13-card game's ``reported`` block: the settlement, misreported at the given rate."""
    settlement = settle(record)
    losers = settlement["players"]
    reported = {
        "winner": settlement["winner"],
        "points": {player: result["points"] for player, result in losers.items()},
        "gross": settlement["gross"],
        "fee": settlement["fee"],
        "net_to_winner": settlement["net_to_winner"],
    }
    if rng.random() < discrepancy_rate:
        misreport(reported, rng.choice(MISTAKES), record)
    return reported


def misreport(reported: dict, mistake: str, record: dict) -> None:
    """Change ``reported`` the way an operator's ``mistake`` would."""
    gross = Decimal(reported["gross"])
    if mistake == "fee_percent" or not reported["points"]:
        # The fee taken at 2.5 points more than the table's rate.
        rate = Decimal(record["stakes"]["fee_percent"]) + Decimal("2.5")
        fee = (gross * rate / 100).quantize(PAISA)
        reported["fee"] = str(fee)
        reported["net_to_winner"] = str((gross - fee).quantize(PAISA))
    elif mistake == "loser_points":
        # One loser charged ten points too many (a show scored by hand, badly).
        loser = sorted(reported["points"])[0]
        reported["points"][loser] += 10
    else:
        # The winner's net truncated to the rupee instead of rounded to the paisa.
        exact = Decimal(reported["net_to_winner"])
        net = exact.quantize(Decimal("1"), rounding=ROUND_DOWN)
        reported["net_to_winner"] = str((net - 1 if net == exact else net).quantize(PAISA))
