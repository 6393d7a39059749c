"""Red 3 Rummy's own rule violations, beside the shared ones in :mod:`domain.errors`.

A Red 3 match raises the shared errors where the rule is the same kind of thing (whose turn,
a card not held, a pick that does not match the stock, a bad deal) and these where the rule is
Red 3 Rummy's own. All say who, what and why:

>>> str(OpeningTooLow("the first lay-down is worth 45, at least 70 needed",
...                   player="p2", move_type="lay down", card="9S 9H 9D"))
'p2 cannot lay down 9S 9H 9D: the first lay-down is worth 45, at least 70 needed'
"""

from __future__ import annotations

from domain.errors import RuleViolation


class IllegalBook(RuleViolation):
    """Laid-down cards that make no book (docs/rules.md §2.3)."""


class OpeningTooLow(RuleViolation):
    """A player's first lay-down of the round worth less than the opening minimum (70)."""


class IllegalAddition(RuleViolation):
    """Adding to a book that is not the player's, before opening, or cards that do not fit."""


class RoundOver(RuleViolation):
    """A move after a player went out and before the next round is dealt."""
