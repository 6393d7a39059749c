"""Red 3 Rummy's rule choices as data, the way `domain/rummy13/profiles.py` holds 13-card rummy's.

Every number docs/rules.md §2 fixes, and every reading it takes where play leaves room, sits here once
(docs/red3-rules.md explains each choice). A match names its rules; ``standard`` is the only
profile today, and tests build variations with :func:`dataclasses.replace`.

>>> rules = get_red3_rules()
>>> rules.opening_minimum, rules.hand_size, rules.min_book
(70, 7, 3)
>>> get_red3_rules("house")
Traceback (most recent call last):
...
domain.errors.UnknownProfile: unknown Red 3 rules 'house' (known: standard)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from domain.errors import UnknownProfile

DEFAULT_RED3_RULES = "standard"


@dataclass(frozen=True)
class Red3Rules:
    name: str = DEFAULT_RED3_RULES
    # Table: one pack with its two printed jokers per player (docs/rules.md §2).
    min_players: int = 2
    jokers_per_pack: int = 2
    hand_size: int = 7  # each player gets two hands of this size
    pile_start: int = 2  # stock cards turned up to start the discard pile
    # Books.
    min_book: int = 3
    # The first lay-down of a round must reach this many points by book values.
    opening_minimum: int = 70
    # Card values in a kind (and, negated, for cards still held at the end of a round).
    low_value: int = 5  # 3 to 9 (black threes included)
    high_value: int = 10  # T J Q K
    ace_value: int = 15
    wild_value: int = 15  # any 2 or printed joker
    run_card_value: int = 15  # every card of a run, wild or not
    red_three_held: int = 30  # subtracted for each red three still held

    def deck_size(self, players: int) -> int:
        return players * (52 + self.jokers_per_pack)

    def as_dict(self) -> dict:
        return asdict(self)


RED3_RULES: dict[str, Red3Rules] = {"standard": Red3Rules()}


def get_red3_rules(name: str | Red3Rules | None = None) -> Red3Rules:
    """The Red 3 rules called ``name`` (default ``standard``); :class:`UnknownProfile` otherwise."""
    if isinstance(name, Red3Rules):
        return name
    if name is None:
        name = DEFAULT_RED3_RULES
    try:
        return RED3_RULES[name]
    except KeyError:
        known = ", ".join(sorted(RED3_RULES))
        raise UnknownProfile(f"unknown Red 3 rules {name!r} (known: {known})") from None
