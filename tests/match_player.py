"""A small random player for Pool and Deals matches, for the tests (the simulator's bots are
another helper's work): it plays a match in memory through the aggregate's own commands and
gives back the match, whose record (``match_record_of(match).to_dict()``) imports as it is.

Deals come from a shuffle seed with the match's key per deal
(:func:`domain.pooldeals.shuffle.derive_match_deal`), so every record it makes also passes
the seed check. Players drop, miss, reshuffle, declare when the hand allows, show or not,
make the odd wrong show, rejoin and agree to splits at the given rates.
"""

from __future__ import annotations

import contextlib
import hashlib
import random
from collections import Counter

from domain.errors import RuleViolation
from domain.pooldeals.match import FINISHED, Match
from domain.pooldeals.shuffle import derive_match_deal
from domain.pooldeals.table import MatchConfig
from domain.rummy13.solver import best_grouping, min_hand_score
from domain.shuffle import commitment


def shuffle_block(seed: int, players) -> dict:
    server = hashlib.sha256(f"server {seed}".encode()).digest()
    return {
        "commitment": commitment(server),
        "seed": server.hex(),
        "client_seeds": {p: hashlib.sha256(f"{seed} {p}".encode()).hexdigest() for p in players},
    }


def config(game_id: str, variant: str, players=("p1", "p2", "p3"), **terms) -> MatchConfig:
    seed = terms.pop("seed", 1)
    return MatchConfig(
        game_id=game_id,
        variant=variant,
        players=tuple(players),
        entry_fee=terms.pop("entry_fee", "25"),
        dealer=terms.pop("dealer", players[-1]),
        shuffle=terms.pop("shuffle", shuffle_block(seed, players)),
        started_at=terms.pop("started_at", "2025-03-01T18:00:00Z"),
        **terms,
    )


def next_deal(match: Match) -> dict:
    """The next deal's cards from the match's seed (who is dealt in and the dealer as the
    match will decide them)."""
    players = match.dealt_in()
    cfg = match.config
    dealer = (
        cfg.first_dealer if not match.deals else cfg.next_dealer(match.deals[-1]["dealer"], players)
    )
    dealt = derive_match_deal(
        cfg.shuffle,
        len(match.deals) + 1,
        players,
        dealer,
        decks=cfg.decks,
        jokers_per_deck=cfg.jokers_per_deck,
    )
    return dealt.to_dict()


def play_deal(match: Match, rng: random.Random, *, drop=0.12, miss=0.02, wrong_show=0.01):
    game = match.game
    profile = game.config.profile
    wild = game.wild
    turns = 0
    while game.phase == "playing":
        turns += 1
        player = game.current_player
        roll = rng.random()
        if roll < miss:
            match.play({"player": player, "type": "miss"})
            continue
        if roll < miss + drop or turns > 400:
            match.play({"player": player, "type": "drop"})
            continue
        if game.stock_count == 0:
            pile = [str(c) for c in game.table_state().open_pile[:-1]]
            rng.shuffle(pile)
            match.play({"type": "reshuffle", "stock": pile})
        match.play(
            {"player": player, "type": "pick", "from": "closed", "card": str(game.stock_top)}
        )
        hand = list(game.hand(player))
        if rng.random() < wrong_show:
            finish, rest = hand[0], hand[1:]
            groups = [[str(c) for c in rest[i : i + 3]] for i in range(0, 12, 3)]
            groups[-1] += [str(rest[12])]
            match.play(
                {"player": player, "type": "declare", "finish": str(finish), "groups": groups}
            )
            continue
        best = None
        for card in dict.fromkeys(hand):  # in hand order: a set's order moves with the hash seed
            left = list((Counter(hand) - Counter([card])).elements())
            score = min_hand_score(left, wild, profile)
            if best is None or score < best[0]:
                best = (score, card, left)
        score, card, left = best
        if score == 0:
            grouping = best_grouping(left, wild, profile)
            if grouping.valid_declaration:
                groups = [[str(c) for c in g.cards] for g in grouping.groups]
                match.play(
                    {"player": player, "type": "declare", "finish": str(card), "groups": groups}
                )
                continue
        match.play({"player": player, "type": "discard", "card": str(card)})
    if game.phase == "showing":
        for seat in game.table_state().seats:
            if seat.status in ("playing", "waiting") and rng.random() < 0.5:
                grouping = best_grouping(game.hand(seat.player), wild, profile)
                groups = [[str(c) for c in g.cards] for g in grouping.groups]
                match.play({"player": seat.player, "type": "show", "groups": groups})


def play_match(
    cfg: MatchConfig,
    seed: int = 0,
    *,
    rejoin=0.5,
    split=0.3,
    max_deals=60,
    reported=None,
    **rates,
) -> Match:
    rng = random.Random(seed)
    match = Match.start(cfg, reported=reported)
    while match.phase != FINISHED and len(match.deals) < max_deals:
        if match.deals and cfg.variant == "pool":
            for player in list(match.eliminated):
                if rng.random() < rejoin:
                    with contextlib.suppress(RuleViolation):  # refused: stays out
                        match.rejoin(player)
            if rng.random() < split:
                try:
                    match.agree_split(match.remaining())
                    break
                except RuleViolation:
                    pass
        match.deal(next_deal(match))
        play_deal(match, rng, **rates)
        match.close()
    return match


def planned_deal(match: Match, winner: str, losers: dict[str, str]) -> None:
    """Deal the next deal from the seed and play it so that ``winner`` is the last player
    left and each loser ends as planned: ``first`` (a first drop), ``middle`` (a turn, then
    a drop), ``wrong`` (a wrong show on the first turn). Deal points are then exactly the
    pool's (or the 13-card) values for those endings."""
    match.deal(next_deal(match))
    game = match.game
    turns: Counter = Counter()
    while game.phase == "playing":
        player = game.current_player
        plan = losers.get(player)
        if player != winner and (plan == "first" or (plan == "middle" and turns[player])):
            match.play({"player": player, "type": "drop"})
            continue
        top = str(game.stock_top)
        match.play({"player": player, "type": "pick", "from": "closed", "card": top})
        if plan == "wrong":
            hand = [str(c) for c in game.hand(player)]
            finish, rest = hand[0], hand[1:]
            groups = [rest[0:4], rest[4:8], rest[8:13]]
            match.play({"player": player, "type": "declare", "finish": finish, "groups": groups})
        else:
            match.play({"player": player, "type": "discard", "card": top})
        turns[player] += 1
    assert match.results[-1]["winner"] == winner, match.results[-1]
