"""A Red 3 match's state in plain JSON, for snapshots.

The match holds frozen value types (configuration, deals, books, round scores, a Counter of
unseen cards) that the event store's transcoder does not know. Rather than teach the store
each of them, a snapshot carries the match's state in the same text forms its events use,
and a restored match is rebuilt from that text. What follows from other attributes is not
stored twice (see ``_DERIVED``).

>>> from domain.red3.table import Red3Config
>>> from domain.red3.game import Red3Match
>>> match = Red3Match.start(Red3Config(game_id="R3-doc", players=("p1", "p2"), rounds=1))
>>> restore_state(snapshot_state(vars(match))) == {
...     k: v for k, v in vars(match).items() if k not in ("_id", "_version", "_pending_events")
... }
True
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from domain.cards import Card
from domain.red3.rules import Book, BookKind
from domain.red3.scoring import RoundScore
from domain.red3.table import Red3Config, Red3Deal
from domain.snapshots import AttributeCodecs, same, time_in, time_out

# Rebuilt on restore: ``rules`` and ``players`` exactly as ``Started`` sets them from the
# configuration; ``round_moves`` from ``steps``, which hold every move once more with its
# round (half a long match's snapshot would otherwise be the same moves twice).
_DERIVED = ("rules", "players", "round_moves")


# A long match's snapshot holds thousands of cards (every past deal): restoring one looks
# each text up here rather than going through the validating parser and the deal's checks,
# which the events already passed when the match was first built.
_CARDS: dict[str, Card] = {}


def _card(text: str) -> Card:
    card = _CARDS.get(text)
    if card is None:
        card = _CARDS[text] = Card.parse(text)
    return card


def _texts(cards) -> list[str]:
    return [str(card) for card in cards]


def _parsed(texts) -> list[Card]:
    return [_CARDS.get(text) or _card(text) for text in texts]


def _deal_in(data: Mapping) -> Red3Deal:
    deal = object.__new__(Red3Deal)
    put = object.__setattr__  # the fields exactly as Red3Deal.__post_init__ leaves them
    put(deal, "first", data["first"])
    put(deal, "hands", {p: tuple(_parsed(cards)) for p, cards in data["hands"].items()})
    put(
        deal,
        "second_hands",
        {p: tuple(_parsed(cards)) for p, cards in data["second_hands"].items()},
    )
    put(deal, "pile", tuple(_parsed(data["pile"])))
    put(deal, "stock", None if data["stock"] is None else tuple(_parsed(data["stock"])))
    return deal


def _book_out(book: Book) -> dict:
    return {
        "kind": str(book.kind),
        "cards": _texts(book.cards),
        "rank": book.rank,
        "suit": book.suit,
        "low": book.low,
        "wild_at": book.wild_at,
    }


def _book_in(data: Mapping) -> Book:
    return Book(
        kind=BookKind(data["kind"]),
        cards=tuple(_parsed(data["cards"])),
        rank=data["rank"],
        suit=data["suit"],
        low=data["low"],
        wild_at=data["wild_at"],
    )


def _per_player(encode: Callable) -> Callable:
    return lambda by_player: {p: encode(value) for p, value in by_player.items()}


def _maybe(encode: Callable) -> Callable:
    return lambda value: None if value is None else encode(value)


# attribute: (to plain JSON, back). Anything not listed is refused, so a new attribute on
# the match cannot silently go missing from its snapshots.
_CODECS: dict[str, tuple[Callable, Callable]] = {
    "game_id": (same, same),
    "config": (Red3Config.to_dict, Red3Config.from_dict),
    "reported": (same, same),
    "started_at": (time_out, time_in),
    "round": (same, same),
    "phase": (same, same),
    "round_scores": (
        lambda scores: [s.to_dict() for s in scores],
        lambda data: [RoundScore.from_dict(s) for s in data],
    ),
    "totals": (dict, dict),
    "winners": (list, tuple),
    "computed_hash": (same, same),
    "deals": (
        lambda deals: [d.to_dict() for d in deals],
        lambda data: [_deal_in(d) for d in data],
    ),
    "deal_times": (list, list),
    "steps": (same, same),
    "step_versions": (list, list),
    "hands": (_per_player(_texts), _per_player(_parsed)),
    "second_hands": (_per_player(_maybe(_texts)), _per_player(_maybe(_parsed))),
    "books": (
        _per_player(lambda books: [_book_out(b) for b in books]),
        _per_player(lambda data: [_book_in(b) for b in data]),
    ),
    "opening": (dict, dict),
    "pile": (_texts, _parsed),
    "stock": (_maybe(_texts), _maybe(_parsed)),
    "unseen": (
        lambda unseen: {str(card): count for card, count in unseen.items()},
        lambda data: Counter({_card(text): count for text, count in data.items()}),
    ),
    "current": (same, same),
    "out": (same, same),
    "_created_on": (time_out, time_in),
    "_modified_on": (time_out, time_in),
}


_MATCH = AttributeCodecs(_CODECS, derived=_DERIVED, what="Red 3")


def snapshot_state(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """The match's attributes (``vars(match)``) as plain JSON values."""
    return _MATCH.encode(attributes)


def restore_state(state: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes a match had, from :func:`snapshot_state`'s output."""
    attributes = _MATCH.decode(state)
    config = attributes["config"]
    attributes["rules"] = config.profile
    attributes["players"] = config.players
    attributes["round_moves"] = _round_moves(attributes["steps"])
    return attributes


def _round_moves(steps: list[dict]) -> list[list[dict]]:
    """Each round's moves from the steps: a deal starts a round, every other step is a move
    of the round in progress (``Red3Match._dealt`` and ``_record`` build both this way)."""
    rounds: list[list[dict]] = []
    for step in steps:
        if step["type"] == "deal":
            rounds.append([])
        else:
            rounds[-1].append({key: value for key, value in step.items() if key != "round"})
    return rounds
