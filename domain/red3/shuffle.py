"""Red 3 deals derived from committed shuffle seeds, and the check of a recorded deal.

A match has one shuffle block, the same shape as a 13-card game's (``commitment``,
``seed``, ``client_seeds``; see ``docs/integrity.md``): the server commits to one secret
seed for the whole match and reveals it afterwards. Each round gets its own key from it,
so no two rounds share a deck order, and every deck order can be re-derived by anyone:

1. ``round_key = HMAC-SHA256(key=server_seed, msg=b"rummy-ledger/red3 round " ‖ r)``, with
   the round number ``r`` as 2 bytes big-endian (round 1 is ``00 01``);
2. the byte stream, the unbiased draws and Fisher-Yates exactly as for 13-card games
   (:mod:`domain.shuffle`), with ``round_key`` in place of the server seed, the client
   seeds in seat order, over :func:`domain.cards.deck_order` of one pack with its two
   jokers per player;
3. the deal as :func:`domain.red3.table.deal_from_order` deals: one card at a time to each
   player from the round's first player, 7 times for the first hands and 7 more for the
   second hands, then the two pile cards (bottom first), then the stock, top first.

>>> seeds = {"commitment": commitment(b"server"), "seed": b"server".hex()}
>>> round_key(b"server", 1).hex()[:16]
'dfbb5c5bb1c5df00'
>>> deal = derive_red3_deal(seeds, ["p1", "p2"], 1, first="p1")
>>> [str(card) for card in deal.hands["p1"]], len(deal.stock)
(['9D', '2D', '8H', '7C', '9S', '3S', '3D'], 78)
>>> check_red3_deal(deal, seeds, ["p1", "p2"], 1) is None
True
>>> other = derive_red3_deal(seeds, ["p1", "p2"], 2, first="p1")
>>> print(check_red3_deal(other, seeds, ["p1", "p2"], 1))  # round 2's cards as round 1's
round 1: p1's first hand holds AD, but the shuffle deals 9D to p1 (deck position 0)
"""

from __future__ import annotations

import hashlib
import hmac
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from domain.cards import Card, deck_order
from domain.red3.profile import Red3Rules, get_red3_rules
from domain.red3.table import Red3Deal, deal_from_order
from domain.shuffle import (
    ShuffleError,
    ShuffleSeeds,
    UniformDraws,
    _field,
    commitment,
    fisher_yates,
    shuffle_blocks,
)

__all__ = [
    "Red3DealMismatch",
    "ShuffleError",
    "check_red3_deal",
    "check_red3_match",
    "commitment",
    "derive_red3_deal",
    "derive_red3_order",
    "round_key",
]

ROUND_LABEL = b"rummy-ledger/red3 round "


def round_key(server_seed: bytes, round_number: int) -> bytes:
    """The key of round ``round_number`` (1-based): step 1 above."""
    if not 1 <= round_number <= 0xFFFF:
        raise ShuffleError(f"round {round_number} is out of range (1 to 65535)")
    label = ROUND_LABEL + round_number.to_bytes(2, "big")
    return hmac.new(server_seed, label, hashlib.sha256).digest()


def derive_red3_order(
    server_seed: bytes,
    client_seeds: Sequence[bytes],
    round_number: int,
    players: int,
    rules: Red3Rules | None = None,
) -> list[Card]:
    """Round ``round_number``'s whole deck, top first, for ``players`` players."""
    rules = get_red3_rules(rules)
    draws = UniformDraws(shuffle_blocks(round_key(server_seed, round_number), client_seeds))
    return fisher_yates(deck_order(players, rules.jokers_per_pack), draws)


def _seeds(shuffle: ShuffleSeeds | Mapping[str, Any]) -> ShuffleSeeds:
    return shuffle if isinstance(shuffle, ShuffleSeeds) else ShuffleSeeds.from_dict(shuffle)


def derive_red3_deal(
    shuffle: ShuffleSeeds | Mapping[str, Any],
    players: Sequence[str],
    round_number: int,
    *,
    first: str,
    rules: Red3Rules | None = None,
) -> Red3Deal:
    """The deal of round ``round_number`` that the revealed seed gives.

    :class:`ShuffleError` when the seed is not revealed or breaks its commitment (a deal
    cannot be derived from a seed the match did not commit to)."""
    seeds = _seeds(shuffle)
    if seeds.server_seed is None:
        raise ShuffleError("the shuffle seed has not been revealed; only the commitment is known")
    if commitment(seeds.server_seed) != seeds.commitment:
        raise ShuffleError("the revealed seed does not match the shuffle commitment")
    players = list(players)
    order = derive_red3_order(
        seeds.server_seed, seeds.seeds_for(players), round_number, len(players), rules
    )
    return deal_from_order(order, players, first, get_red3_rules(rules))


@dataclass(frozen=True)
class Red3DealMismatch:
    """The first place where a recorded round's deal departs from the one its seed derives."""

    round: int
    what: str  # "commitment", "first hand", "second hand", "pile", "stock", "pick"
    position: int | None = None  # deck position (0 = top of the round's shuffled deck)
    expected: Card | None = None
    found: Card | None = None
    player: str | None = None
    move: int | None = None  # 0-based index of the move within the round, for "pick"

    def __str__(self) -> str:
        where = f"round {self.round}: "
        at = f" (deck position {self.position})" if self.position is not None else ""
        if self.what == "commitment":
            return where + "the revealed seed does not match the shuffle commitment"
        if self.what in ("first hand", "second hand"):
            return (
                f"{where}{self.player}'s {self.what} holds {self.found}, but the shuffle "
                f"deals {self.expected} to {self.player}{at}"
            )
        if self.what == "pick":
            return (
                f"{where}move {self.move} ({self.player} pick stock {self.found}): the "
                f"shuffled stock has {self.expected} on top{at}"
            )
        return (
            f"{where}the {self.what} card is {self.found}, but the shuffle puts {self.expected}{at}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "what": self.what,
            "position": self.position,
            "expected": None if self.expected is None else str(self.expected),
            "found": None if self.found is None else str(self.found),
            "player": self.player,
            "move": self.move,
            "message": str(self),
        }


def check_red3_deal(
    deal: Red3Deal | Mapping[str, Any],
    shuffle: ShuffleSeeds | Mapping[str, Any],
    players: Sequence[str],
    round_number: int,
    *,
    moves: Iterable[Any] = (),
    rules: Red3Rules | None = None,
) -> Red3DealMismatch | None:
    """Check one recorded round against the deal its seed derives.

    ``deal`` is a ``red3@1`` round's ``deal`` block (or a :class:`Red3Deal`); its ``first``
    player (the rotation's, checked elsewhere) starts the dealing. Hands are compared as
    sets of cards (a record may sort them), the pile and a recorded stock card by card;
    with no recorded stock, each stock pick in ``moves`` (the round's moves, as records
    write them) must take the derived stock's next card. Returns ``None`` when every card
    matches, else the first difference in dealing order. A block without a revealed seed
    raises :class:`ShuffleError`; a seed that breaks its commitment is a ``commitment``
    mismatch.
    """
    rules = get_red3_rules(rules)
    recorded = deal if isinstance(deal, Red3Deal) else Red3Deal.from_dict(deal)
    players = list(players)
    seeds = _seeds(shuffle)
    if seeds.server_seed is None:
        raise ShuffleError("the shuffle seed has not been revealed; only the commitment is known")
    if commitment(seeds.server_seed) != seeds.commitment:
        return Red3DealMismatch(round_number, "commitment")
    for player in (*recorded.hands, *recorded.second_hands):
        if player not in players:
            raise ShuffleError(
                f"round {round_number}: the deal has a hand for {player}, who is not seated"
            )
    derived = derive_red3_deal(seeds, players, round_number, first=recorded.first, rules=rules)
    return _deal_mismatch(round_number, recorded, derived, players, rules) or _picks_mismatch(
        round_number, recorded, derived, moves, players, rules
    )


def check_red3_match(
    rounds: Iterable[tuple[Red3Deal | Mapping[str, Any], Iterable[Any]]],
    shuffle: ShuffleSeeds | Mapping[str, Any],
    players: Sequence[str],
    *,
    rules: Red3Rules | None = None,
) -> Red3DealMismatch | None:
    """:func:`check_red3_deal` for each ``(deal, moves)`` of a match, round 1 first; the
    first mismatch of the earliest round that has one."""
    for number, (deal, moves) in enumerate(rounds, start=1):
        mismatch = check_red3_deal(deal, shuffle, players, number, moves=moves, rules=rules)
        if mismatch is not None:
            return mismatch
    return None


def _hand_positions(players: Sequence[str], first: str, hand: int, size: int) -> dict:
    """Deck positions each player's first (``hand`` 0) or second (1) hand was dealt from."""
    start = players.index(first)
    seating = [*players[start:], *players[:start]]
    base = hand * size * len(players)
    return {
        player: [base + k * len(players) + seat for k in range(size)]
        for seat, player in enumerate(seating)
    }


def _deal_mismatch(round_number, recorded, derived, players, rules) -> Red3DealMismatch | None:
    size = rules.hand_size
    for index, what, mine, theirs in (
        (0, "first hand", derived.hands, recorded.hands),
        (1, "second hand", derived.second_hands, recorded.second_hands),
    ):
        positions = _hand_positions(players, derived.first, index, size)
        # In dealing order: the first card dealt to anyone that the record lacks.
        found = []
        for player in players:
            want, got = Counter(mine[player]), Counter(theirs.get(player, ()))
            if want == got:
                continue
            missing = want - got
            extra = [card for card in theirs.get(player, ()) if (got - want)[card]]
            for position, card in zip(positions[player], mine[player], strict=True):
                if missing[card]:
                    found.append((position, card, player, extra[0] if extra else None))
                    break
            else:  # only extra cards (a hand longer than dealt)
                found.append((positions[player][-1] + 1, None, player, extra[0]))
        if found:
            position, expected, player, extra = min(found, key=lambda item: item[0])
            return Red3DealMismatch(round_number, what, position, expected, extra, player)
    pile_start = 2 * size * len(players)
    for offset, (want, got) in enumerate(zip(derived.pile, recorded.pile, strict=False)):
        if want != got:
            return Red3DealMismatch(round_number, "pile", pile_start + offset, want, got)
    if recorded.stock is not None:
        stock_start = pile_start + len(derived.pile)
        for offset, (want, got) in enumerate(zip(derived.stock, recorded.stock, strict=False)):
            if want != got:
                return Red3DealMismatch(round_number, "stock", stock_start + offset, want, got)
        if len(recorded.stock) != len(derived.stock):
            offset = min(len(recorded.stock), len(derived.stock))
            extra = len(recorded.stock) > len(derived.stock)
            return Red3DealMismatch(
                round_number,
                "stock",
                stock_start + offset,
                None if extra else derived.stock[offset],
                recorded.stock[offset] if extra else None,
            )
    return None


def _picks_mismatch(round_number, recorded, derived, moves, players, rules):
    stock_start = 2 * rules.hand_size * len(players) + len(derived.pile)
    taken = 0
    for index, move in enumerate(moves):
        if _field(move, "type") != "pick" or _field(move, "from", "source") != "stock":
            continue
        named = _field(move, "card")
        if named is not None:  # with a recorded stock the match itself checks the card
            card = Card.parse(named)
            expected = derived.stock[taken] if taken < len(derived.stock) else None
            if card != expected:
                return Red3DealMismatch(
                    round_number,
                    "pick",
                    stock_start + taken,
                    expected,
                    card,
                    _field(move, "player"),
                    index,
                )
        taken += 1
    return None
