"""Rule profiles: every number docs/rules.md lets an operator set differently, as data.

>>> get_profile("deccan").deal_show
'flat'
>>> get_profile("nope")
Traceback (most recent call last):
...
domain.errors.UnknownProfile: unknown rule profile 'nope' (known: deccan, rummycircle)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from domain.errors import UnknownProfile

DEFAULT_PROFILE = "rummycircle"


@dataclass(frozen=True)
class RuleProfile:
    name: str
    # Table (docs/rules.md §1.2); a record's `table` block may override decks.
    decks: int = 2
    jokers_per_deck: int = 1
    min_players: int = 2
    max_players: int = 6
    hand_size: int = 13
    # Groups: a wild-rank card in its own natural place keeps a sequence pure.
    wild_natural_is_pure: bool = True
    # A joker turned up as the first open card may be picked; one another player discarded may not.
    first_open_joker_pickable: bool = True
    # Scoring a losing hand.
    max_points: int = 80
    first_drop: int = 20
    middle_drop: int = 40
    wrong_show: int = 80
    misses_to_auto_drop: int = 3
    auto_drop: int = 40
    # Deal show: a loser who had no first turn when the valid declaration came.
    #   "half": half the hand score rounded down, clamped to [deal_show_min, deal_show_max]
    #   "flat": deal_show_flat points
    deal_show: str = "half"
    deal_show_min: int = 2
    deal_show_max: int = 40
    deal_show_flat: int = 20
    # deccan: a loser whose hand already met the objective but who did not declare.
    met_objective_points: int | None = None

    def deal_show_points(self, hand_score: int) -> int:
        if self.deal_show == "flat":
            return self.deal_show_flat
        return max(self.deal_show_min, min(self.deal_show_max, hand_score // 2))

    def as_dict(self) -> dict:
        return asdict(self)


PROFILES: dict[str, RuleProfile] = {
    "rummycircle": RuleProfile(name="rummycircle"),
    "deccan": RuleProfile(name="deccan", deal_show="flat", met_objective_points=2),
}


def get_profile(name: str | RuleProfile | None = None) -> RuleProfile:
    """The profile called ``name`` (default ``rummycircle``); :class:`UnknownProfile` otherwise."""
    if isinstance(name, RuleProfile):
        return name
    if name is None:
        name = DEFAULT_PROFILE
    try:
        return PROFILES[name]
    except KeyError:
        known = ", ".join(sorted(PROFILES))
        raise UnknownProfile(f"unknown rule profile {name!r} (known: {known})") from None
