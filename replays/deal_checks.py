"""Checking stored deals against their verifiable-shuffle seeds, for `verify`.

A game whose record carried a ``shuffle`` block with a revealed seed (kept in the table
configuration of its ``Started`` event) is re-dealt with :mod:`domain.shuffle`: the hands,
the wild indicator, the open card, the stock (when recorded) and every closed pick before
the first reshuffle must match. Games are found by reading ``Started`` events only, so the
pass replays just the games that carry seeds.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from domain.shuffle import ShuffleError, verify_deal
from replays.settings import database_url

if TYPE_CHECKING:
    from replays.integrity import Report

DEAL = "deal"


def seeded_games(ledger: Any, batch: int = 1000) -> Iterator[tuple[str, dict]]:
    """``(game_id, shuffle block)`` of every stored game whose record carried one."""
    from domain.game import Game

    start = 1
    while True:
        notifications = ledger.recorder.select_notifications(
            start, batch, topics=[Game.Started.TOPIC]
        )
        for notification in notifications:
            started = ledger.mapper.to_domain_event(notification)
            config = started.config
            if config.get("shuffle"):
                yield config["game_id"], config["shuffle"]
        if len(notifications) < batch:
            return
        start = notifications[-1].id + 1


def rebuild_from_events(ledger: Any, game_id: str) -> Any:
    """The game from its events alone: snapshots are not sealed, so they are not trusted."""
    from replays.application import project_game

    return project_game(None, ledger.events.get(ledger.aggregate_id(game_id)))


def check_game_deal(ledger: Any, game_id: str, report: Report) -> bool:
    """Check one stored game's deal and closed picks; ``False`` when it has no seed yet."""
    try:
        game = rebuild_from_events(ledger, game_id)
    except Exception as error:  # a store whose events no longer replay is itself the finding
        report.add(
            DEAL, f"the game's events no longer replay ({error!r}): deal not checked", game_id
        )
        return True
    if game is None:
        return False
    config = game.config
    if not config.shuffle or config.shuffle.get("seed") is None:
        return False
    dealt = game.dealt
    if dealt is None:
        return False
    moves = game.moves
    try:
        mismatch = verify_deal(
            dealt,
            config.shuffle,
            list(config.players),
            dealer=config.dealer_player,
            decks=config.decks,
            jokers_per_deck=config.jokers_per_deck,
            moves=moves,
        )
    except (ShuffleError, ValueError) as error:
        report.add(DEAL, f"the shuffle block cannot be checked: {error}", game_id, 1)
        return True
    if mismatch is not None:
        # Versions: 1 Started, 2 Dealt, then one event per move.
        event = (
            2 if mismatch.move is None else ledger.version_after_move(game_id, mismatch.move + 1)
        )
        report.add(
            DEAL, f"the deal does not come from its committed shuffle: {mismatch}", game_id, event
        )
    return True


@lru_cache(maxsize=4)
def _ledger(url: str | None) -> Any:
    from replays.application import Ledger

    return Ledger(url, env={"CREATE_TABLE": "no"})


def check_deals(
    url: str | None,
    report: Report,
    *,
    progress: bool = False,
    game_id: str | None = None,
    skip: frozenset[str] = frozenset(),
) -> int:
    """Check every stored game that carries revealed seeds; add problems to ``report``.

    Games in ``skip`` (already found broken) are not replayed: their events are suspect.
    """
    from replays.integrity import _progress

    ledger = _ledger(database_url(url))
    if game_id is not None:
        checked = 0 if game_id in skip else int(check_game_deal(ledger, game_id, report))
    else:
        checked, unrevealed = 0, 0
        with _progress(None, "deals", progress) as bar:
            for seeded_id, block in seeded_games(ledger):
                if block.get("seed") is None:
                    unrevealed += 1
                    continue
                if seeded_id in skip:
                    continue
                checked += check_game_deal(ledger, seeded_id, report)
                bar.update(1)
        if unrevealed:
            report.notes.append(
                f"{unrevealed} game(s) commit to a shuffle whose seed is not revealed yet"
            )
    if checked:
        report.notes.append(f"{checked} deal(s) checked against their shuffle seeds")
    return checked
