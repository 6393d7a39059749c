"""Valid records at the edges of every bound (docs/record-format.md, "Bounds"), built from a
verifiable shuffle so that any deck size, joker count and table size can be dealt honestly.

``dropped_game`` deals a table from seeds and lets every player but the last drop (a
complete, settled game of a few moves); ``long_game`` plays a two-player table for exactly
``moves`` moves, picking the stock's top card and throwing it back, reshuffling the open
pile whenever the stock runs out, until a last drop ends it.
"""

from __future__ import annotations

import json

from domain.shuffle import commitment, deal_from_order, derive_deck_order, first_mover

FORMAT = "rummy-ledger/game@1"


def seeded_deal(game_id: str, players: list[str], dealer: str, decks: int, jokers: int):
    """The deal a seeded shuffle gives, and the shuffle block that proves it."""
    server = game_id.encode()
    clients = {p: f"{i:02x}" * 4 for i, p in enumerate(players, start=1)}
    order = derive_deck_order(server, [bytes.fromhex(clients[p]) for p in players], decks, jokers)
    dealt = deal_from_order(order, players, dealer)
    shuffle = {"commitment": commitment(server), "seed": server.hex(), "client_seeds": clients}
    deal = {
        "hands": {p: [str(c) for c in cards] for p, cards in dealt.hands.items()},
        "wild": str(dealt.wild),
        "open": str(dealt.open_card),
        "stock": [str(c) for c in dealt.stock],
    }
    return dealt, deal, shuffle


def header(game_id, players, *, decks, jokers, stakes, table_id="T1", started_at=None):
    return {
        "format": FORMAT,
        "game_id": game_id,
        "variant": "raise" if "raise" in stakes else "points",
        "rules": "rummycircle",
        "started_at": started_at or "2025-03-01T18:00:00Z",
        "table": {"id": table_id, "decks": decks, "jokers_per_deck": jokers},
        "stakes": stakes,
        "players": [
            {"id": p, "seat": seat} for p, seat in zip(players, seats(len(players)), strict=True)
        ],
        "dealer": players[-1],
    }


def seats(count: int) -> list[int]:
    """Seat numbers at both ends of their bound (1 and 99), in increasing order."""
    return [1, *range(2, count), 99][:count] if count > 1 else [1]


def in_turn_order(players: list[str], dealer: str) -> list[str]:
    start = players.index(first_mover(players, dealer))
    return [players[(start + k) % len(players)] for k in range(len(players))]


def dropped_game(
    game_id: str,
    players: list[str],
    *,
    decks: int = 2,
    jokers: int = 1,
    stakes: dict | None = None,
    table_id: str = "T1",
    started_at: str | None = None,
    reported: dict | None = None,
    with_shuffle: bool = True,
) -> dict:
    """A settled game: every player but the last in turn order drops before picking."""
    stakes = stakes or {"currency": "INR", "point_value": "1.00", "fee_percent": "10"}
    record = header(
        game_id,
        players,
        decks=decks,
        jokers=jokers,
        stakes=stakes,
        table_id=table_id,
        started_at=started_at,
    )
    _, deal, shuffle = seeded_deal(game_id, players, record["dealer"], decks, jokers)
    record["deal"] = deal
    order = in_turn_order(players, record["dealer"])
    record["moves"] = [{"player": p, "type": "drop"} for p in order[:-1]]
    if reported is not None:
        record["reported"] = {"winner": order[-1], **reported}
    if with_shuffle:
        record["shuffle"] = shuffle
    return record


def long_game(game_id: str, moves: int, *, decks: int = 1, jokers: int = 0) -> dict:
    """A two-player game of exactly ``moves`` moves: quiet turns, reshuffles, a last drop
    (and a missed turn when the count needs one more move)."""
    players = ["p1", "p2"]
    record = header(
        game_id,
        players,
        decks=decks,
        jokers=jokers,
        stakes={"currency": "INR", "point_value": "1.00", "fee_percent": "10"},
    )
    dealt, deal, shuffle = seeded_deal(game_id, players, "p2", decks, jokers)
    record["deal"], record["shuffle"] = deal, shuffle
    stock, pile = [str(c) for c in dealt.stock], [str(dealt.open_card)]
    turn, out = in_turn_order(players, "p2"), []
    while len(out) < moves - 1:
        if not stock:
            stock, pile = list(reversed(pile[:-1])), pile[-1:]
            out.append({"type": "reshuffle", "stock": list(stock)})
            continue
        if len(out) + 2 > moves - 1:  # one move to go before the drop: a missed turn
            out.append({"player": turn[0], "type": "miss"})
            turn.reverse()
            break
        player = turn[0]
        card = stock.pop(0)
        out.append({"player": player, "type": "pick", "from": "closed", "card": card})
        out.append({"player": player, "type": "discard", "card": card})
        pile.append(card)
        turn.reverse()
    out.append({"player": turn[0], "type": "drop"})
    record["moves"] = out
    return record


def renamed(record: dict, names: dict[str, str]) -> dict:
    """``record`` with each player id renamed everywhere it appears (keys and values)."""
    text = json.dumps(record)
    for old, new in names.items():
        text = text.replace(json.dumps(old), json.dumps(new))
    return json.loads(text)
