"""Missed chances in the deals of Pool and Deals matches (issue 30 item 6).

A match is a run of 13-card deals, each played by the 13-card ``Game``: its replay lists each
deal's missed chances as moments at the match's own steps, and the player history's
"Missed chance" cell links to the same moves. The oracle here is the aggregate itself: the
match is played through its commands, and before every discard the test writes down the
step the replay will count and the hand ``match.game`` holds, then asks the domain's
``missed_chances`` about each deal (its own wild card) without the code under test.
"""

from __future__ import annotations

import html
import json
import re

import pytest
from auth_support import signed_in
from match_player import config, next_deal
from red3_factory import example_record as red3_record
from web_support import load_games, sample_records

from domain.cards import Card
from domain.pooldeals.match import FINISHED, Match
from domain.pooldeals.records import match_record_of
from domain.rummy13.analysis import Solver, Turn, deal_turns, missed_chances
from replays.access.accounts import PLAYER
from web import create_app

GAME = "W-MISSED"
PLAYERS = ("p1", "p2", "p3")
ROUNDS = 4  # turns each player plays before the others drop


def played_deal(match: Match, winner: str, turns: list[Turn]) -> None:
    """Deal the next deal and play it: every player picks (the open pile every third turn,
    so that a discard can feed the next player) and discards the first card of the hand,
    not the best, for ``ROUNDS`` rounds; then everyone but ``winner`` drops at their next
    turn (the winner plays on until they have)."""
    match.deal(next_deal(match))
    game = match.game
    played = 0
    while game.phase == "playing":
        player = game.current_player
        if played >= ROUNDS * len(game.config.players) and player != winner:
            match.play({"player": player, "type": "drop"})
            continue
        pile = game.table_state().open_pile
        # A joker another player discarded may not be picked (docs/rules.md): the stock then.
        open_pick = played % 3 == 2 and bool(pile) and not pile[-1].is_joker(game.wild)
        if open_pick:
            top = str(game.table_state().open_pile[-1])
            match.play({"player": player, "type": "pick", "from": "open", "card": top})
        else:
            top = str(game.stock_top)
            match.play({"player": player, "type": "pick", "from": "closed", "card": top})
        held = game.hand(player)
        card = held[0] if str(held[0]) != top or not open_pick else held[1]
        # The replay's position after this discard: every step so far, then this one.
        turns.append(
            Turn(
                len(match.steps) + 1,
                player,
                held,
                card,
                picked_from_open=Card.parse(top) if open_pick else None,
            )
        )
        match.play({"player": player, "type": "discard", "card": str(card)})
        played += 1


def match_and_oracle() -> tuple[dict, list]:
    """A Deals match of three deals played to its end (the history lists settled games), its
    record, and the chances each deal's turns give, from the aggregate's own hands."""
    # Three decks: each deal's table profile (its decks) differs from the rules' own.
    match = Match.start(config(GAME, "deals", players=PLAYERS, deals=3, seed=7, decks=3))
    expected, profiles = [], []
    for winner in ("p1", "p2", "p1"):
        turns: list[Turn] = []
        played_deal(match, winner, turns)
        match.close()
        profiles.append(match.game.config.profile)
        solver = Solver.plain(match.game.wild, match.game.config.profile)
        expected += missed_chances(turns, solver)
    assert match.phase == FINISHED, match.phase
    from domain import variants

    # What the pages read each deal's hands under is the profile its Game played by.
    assert variants.get("deals").deal_profiles(match) == profiles
    assert profiles[0].decks == 3
    record = json.loads(json.dumps(match_record_of(match).to_dict()))
    return record, sorted(expected, key=lambda c: (c.move, c.kind))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    record, expected = match_and_oracle()
    url = f"sqlite:///{tmp_path_factory.mktemp('missed') / 'ledger.sqlite3'}"
    load_games(url, [*sample_records(), red3_record(), record])
    app = create_app({"DATABASE_URL": url, "TESTING": True})
    return app, record, expected


def moments_of(page: str) -> list[tuple[int, str, str]]:
    return [
        (int(move), kind, html.unescape(re.sub(r"<[^>]+>", "", text)).split(". ", 1)[1])
        for move, kind, text in re.findall(
            r'<a href="[^"]*" data-move="(\d+)" class="moment moment-(missed_\w+)">(.*?)</a>',
            page,
        )
    ]


def history_cell(page: str, game_id: str) -> str:
    row = re.search(rf'<tr data-game="{re.escape(game_id)}".*?</tr>', page, re.S)
    assert row, f"no history row for {game_id}"
    cell = re.search(r'<td class="missed-chance"[^>]*>(.*?)</td>', row.group(0), re.S)
    return cell.group(1)


def test_the_oracle_has_chances_of_each_kind_worth_testing():
    _, expected = match_and_oracle()
    kinds = {c.kind for c in expected}
    # Discarding the first card of the hand is seldom the best discard.
    assert "costly_discard" in kinds, expected
    assert {c.player for c in expected if c.kind == "costly_discard"} == set(PLAYERS)


def test_a_deal_is_walked_from_its_record_as_the_game_holds_it():
    record, expected = match_and_oracle()
    from domain import variants

    variant = variants.get(record["variant"])
    parts = variant.thirteen_card_deals(record)
    assert len(parts) == 3
    found = []
    profile = Match.start(config("X", "deals", players=PLAYERS, deals=3, decks=3))
    profile = profile.config.deal_table(1, PLAYERS, "p1").profile
    for step, part in parts:
        wild = Card.parse(part["deal"]["wild"])
        turns = deal_turns(part["deal"]["hands"], part["moves"], step)
        found += missed_chances(turns, Solver.plain(wild, profile))
    assert sorted(found, key=lambda c: (c.move, c.kind)) == expected


def test_the_replay_lists_every_deals_chances_at_the_match_steps(site):
    app, _record, expected = site
    client = signed_in(app)  # an auditor: the full view, every player's chances
    page = client.get(f"/games/{GAME}/replay?move=1").get_data(as_text=True)
    assert moments_of(page) == [(c.move, f"missed_{c.kind}", c.words()) for c in expected]
    # Each moment opens the match at that step, showing the deal it names.
    move, _, _ = moments_of(page)[0]
    at = client.get(f"/games/{GAME}/replay?move={move}").get_data(as_text=True)
    discarded = expected[0].card.symbol
    assert f"discards {discarded}" in html.unescape(at)


def test_a_player_sees_their_own_chances_in_the_replay_and_the_history(site):
    app, _record, expected = site
    client = signed_in(app, PLAYER, player="p2")
    own = [c for c in expected if c.player == "p2" and c.kind != "fed_next"]
    assert own
    replay = client.get(f"/games/{GAME}/replay?move=1&seat=p2").get_data(as_text=True)
    assert moments_of(replay) == [(c.move, f"missed_{c.kind}", c.words()) for c in own]
    history = client.get("/players/p2").get_data(as_text=True)
    cell = html.unescape(history_cell(history, GAME))
    links = re.findall(r'href="([^"]+)"[^>]*>move (\d+)</a>', cell)
    assert [int(n) for _, n in links] == [c.move for c in own]
    for href, number in links:
        assert href == f"/games/{GAME}/replay?move={number}&seat=p2"
        assert client.get(href).status_code == 200
    # A match's points add up over its deals: no "charged ..., could have had" line.
    assert "charged" not in cell


def test_a_stored_13_card_game_walks_to_the_same_turns_from_its_record(site):
    # The match's walk (deal_turns, from a record) against the 13-card walk (walk_turns,
    # from the stored events through the aggregate): the same turns, hands in the same order.
    from sqlalchemy.orm import Session

    from domain import variants
    from replays.readmodels.hand_analysis import walk_turns
    from replays.store.application import Ledger
    from replays.store.db import engine_for
    from web import queries

    app, _, _ = site
    url = app.config["DATABASE_URL"]
    ledger = Ledger(url)
    compared = 0
    for record in sample_records():
        variant = variants.get(record["variant"])
        if not variant.analyses_hands or variant.web_pages is not None:
            continue
        with Session(engine_for(url)) as session:
            timeline = queries.move_timeline(session, record["game_id"])
        walked, _, _ = walk_turns(ledger, record["game_id"], timeline)
        [(step, part)] = variant.thirteen_card_deals(record)
        assert deal_turns(part["deal"]["hands"], part["moves"], step) == walked, record["game_id"]
        compared += len(walked)
    assert compared > 50


def test_a_game_without_hand_analysis_says_so_in_its_cell(site):
    from domain import variants

    app, _, _ = site
    record = red3_record()
    variant = variants.get(record["variant"])
    assert not variant.analyses_hands
    client = signed_in(app, PLAYER, player="p1")
    page = html.unescape(client.get("/players/p1").get_data(as_text=True))
    cell = history_cell(page, record["game_id"])
    assert f'title="{variant.no_analysis_words}">—' in cell and "move" not in cell
    # A 13-card game in the same history is analysed: its cell lists no such reason.
    assert variant.no_analysis_words not in history_cell(page, GAME)
