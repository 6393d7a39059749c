"""Each deal of a match from the match's one committed shuffle seed, with a key per deal.

As Red 3 does per round (docs/integrity.md): deal ``n``'s deck order is the 13-card
derivation (``domain.shuffle``: the HMAC-SHA256 stream, uniform draws, Fisher-Yates over
the table's decks) keyed with

    deal_key = HMAC-SHA256(server_seed, "rummy-ledger/match deal " || n as 2 bytes, big-endian)

instead of the server seed itself, and the client seeds of the players dealt in, in seat
order. It is dealt as a 13-card deal: 13 cards round-robin from the seat after the deal's
dealer, then the wild indicator, the open card and the stock. Closed picks are checked
against the derived stock until a reshuffle, as for a 13-card game.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from domain.shuffle import (
    DealMismatch,
    ShuffleError,
    ShuffleSeeds,
    _picks_mismatch,
    commitment,
    deal_from_order,
    deal_mismatch,
    derive_deck_order,
)

DEAL_LABEL = b"rummy-ledger/match deal "


def deal_key(server_seed: bytes, number: int) -> bytes:
    if not 1 <= number <= 0xFFFF:
        raise ShuffleError(f"deal {number} is out of range (1 to 65535)")
    return hmac.new(server_seed, DEAL_LABEL + number.to_bytes(2, "big"), hashlib.sha256).digest()


@dataclass(frozen=True)
class MatchDealMismatch:
    """The first place where a recorded deal departs from the one its seed derives."""

    deal: int
    mismatch: DealMismatch

    @property
    def what(self) -> str:
        return self.mismatch.what

    def __str__(self) -> str:
        return f"deal {self.deal}: {self.mismatch}"


def derive_match_deal(
    shuffle: ShuffleSeeds | Mapping[str, Any],
    number: int,
    players: Sequence[str],
    dealer: str,
    *,
    decks: int = 2,
    jokers_per_deck: int = 1,
):
    """Deal ``number``'s cards (``DealtCards``) for ``players`` (dealt in, seat order)."""
    seeds = shuffle if isinstance(shuffle, ShuffleSeeds) else ShuffleSeeds.from_dict(shuffle)
    if seeds.server_seed is None:
        raise ShuffleError("the shuffle seed has not been revealed; only the commitment is known")
    if commitment(seeds.server_seed) != seeds.commitment:
        return None
    clients = [seeds.client_seeds[p] for p in players] if seeds.client_seeds else []
    order = derive_deck_order(deal_key(seeds.server_seed, number), clients, decks, jokers_per_deck)
    return deal_from_order(order, list(players), dealer)


def check_match_deals(
    deals: Sequence[Mapping[str, Any]],
    shuffle: Mapping[str, Any],
    *,
    decks: int,
    jokers_per_deck: int,
) -> MatchDealMismatch | None:
    """Every deal (``{"number", "players", "dealer", "deal", "moves"}``) against the seed;
    the first mismatch in dealing order, or None."""
    seeds = ShuffleSeeds.from_dict(shuffle)
    if seeds.client_seeds:
        seeds.seeds_for(list(seeds.client_seeds))  # hex checked; seats are checked per deal
    for played in deals:
        number = played["number"]
        if seeds.client_seeds:
            missing = [p for p in played["players"] if p not in seeds.client_seeds]
            if missing:
                raise ShuffleError(f"no client seed for seat {missing[0]}")
        derived = derive_match_deal(
            seeds,
            number,
            played["players"],
            played["dealer"],
            decks=decks,
            jokers_per_deck=jokers_per_deck,
        )
        if derived is None:
            return MatchDealMismatch(number, DealMismatch("commitment", None, None, None))
        found = deal_mismatch(played["deal"], derived) or _picks_mismatch(played["moves"], derived)
        if found is not None:
            return MatchDealMismatch(number, found)
    return None
