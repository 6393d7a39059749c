"""Hand analysis and missed chances: the rules (domain.rummy13.analysis), the stored-game walk and its
caches (replays.readmodels.hand_analysis), and what the replay and player pages show to whom.

The sample game T7-000123 (tests/data/games.jsonl) has a missed declaration built in: p1
picks 4H at move 1 and holds AS 2S 3S | 4H 5H JK | 9D 9H 9S | KS KD KC KH plus TC, a valid
declaration finishing with TC, but discards TC at move 2 and declares only at move 6.
"""

from __future__ import annotations

import re

import pytest
from auth_support import signed_in
from web_support import load_games

from domain.cards import parse_cards
from domain.rummy13.analysis import Solver, Turn, analyse_hand, best_keep, missed_chances
from domain.rummy13.solver import min_hand_score
from replays.readmodels import hand_analysis
from web import create_app

WILD = parse_cards("7D")[0]
DECLARABLE_14 = parse_cards("AS 2S 3S 4H 5H JK 9D 9H 9S KS KD KC KH TC")


class CountingSolver:
    """The plain solver, counting how often each question is asked."""

    def __init__(self):
        plain = Solver.plain(WILD)
        self.calls = 0

        def score(cards):
            self.calls += 1
            return plain.score(cards)

        self.solver = Solver(best=plain.best, score=score)


# -- domain.rummy13.analysis -------------------------------------------------------------------------


def test_a_13_card_hand_is_read_as_the_solver_groups_it():
    cards = parse_cards("AS 2S 3S 4H 5H JK 9C 9D 9H KS KD 2C 5D")
    analysis = analyse_hand(cards, WILD)
    assert analysis.hand_score == min_hand_score(cards, WILD) == 27
    assert analysis.kinds == ["pure", "impure", "set"]
    assert not analysis.could_declare and analysis.best_discard is None


def test_a_14_card_hand_is_read_as_its_best_13_and_the_discard_that_leaves_them():
    analysis = analyse_hand(DECLARABLE_14, WILD)
    assert str(analysis.best_discard) == "TC"
    assert analysis.hand_score == 0 and analysis.could_declare
    assert analysis.grouping.valid_declaration


def test_best_keep_breaks_ties_by_the_hands_own_order():
    cards = parse_cards("AS 2S 3S 4H 5H 6H 9C 9D 9H KS KD KC 5D 8C")
    card, score = best_keep(cards, Solver.plain(WILD))
    # 5D and 8C both leave 5 and 8 respectively: the lower wins, not the first
    assert (str(card), score) == ("8C", 5)


def test_missed_chances_find_a_declaration_discarded_away():
    # Discarding TC keeps the declaration in hand, but the game goes on: still a miss.
    kept = Turn(2, "p1", tuple(DECLARABLE_14), parse_cards("TC")[0])
    (chance,) = missed_chances([kept], Solver.plain(WILD))
    assert (chance.kind, chance.score, str(chance.better_card)) == ("could_declare", 0, "TC")
    wrong = Turn(2, "p1", tuple(DECLARABLE_14), parse_cards("KH")[0])
    (chance,) = missed_chances([wrong], Solver.plain(WILD))
    assert (chance.kind, chance.player, chance.move, str(chance.better_card)) == (
        "could_declare",
        "p1",
        2,
        "TC",
    )
    assert chance.best == 0 and chance.score == 10  # TC left loose after keeping it
    assert "could have declared" in chance.words()


def test_the_costliest_discard_per_player_is_kept_only_when_it_cost_something():
    held = parse_cards("AS 2S 3S 4H 5H 6H 9C 9D 9H KS KD KC 5D 8C")
    cheap = Turn(2, "p1", tuple(held), parse_cards("8C")[0])  # the best discard
    costly = Turn(4, "p1", tuple(held), parse_cards("9C")[0])  # breaks the set
    chances = missed_chances([cheap, costly], Solver.plain(WILD))
    assert [(c.kind, c.move, str(c.card), str(c.better_card)) for c in chances] == [
        ("costly_discard", 4, "9C", "8C")
    ]
    assert chances[0].cost == chances[0].score - 5 > 0


def test_a_discard_the_next_player_picked_and_used_fed_them():
    p1 = Turn(
        2,
        "p1",
        tuple(parse_cards("AS 2S 3S 4H 5H 6H 9C 9D 9H KS KD KC 5D 8C")),
        parse_cards("8C")[0],
    )
    # p2 picks the 8C from the open pile: it completes 6C 7C(wild) 8C and lowers p2's score.
    p2_held = parse_cards("6C JK 2D 3D 4D KH KS QD QH JD JH TD 9S 8C")
    p2 = Turn(4, "p2", tuple(p2_held), parse_cards("KH")[0], picked_from_open=parse_cards("8C")[0])
    chances = missed_chances([p1, p2], Solver.plain(WILD))
    fed = [c for c in chances if c.kind == "fed_next"]
    assert len(fed) == 1
    assert (fed[0].player, fed[0].helped, fed[0].move, str(fed[0].card)) == ("p1", "p2", 2, "8C")
    assert fed[0].best < fed[0].score
    # The same pick from the stock feeds nobody.
    blind = Turn(4, "p2", tuple(p2_held), parse_cards("KH")[0])
    assert not [c for c in missed_chances([p1, blind], Solver.plain(WILD)) if c.kind == "fed_next"]


def test_the_cached_solver_answers_a_hand_once_whatever_the_card_order():
    hand_analysis.clear_caches()
    profile = hand_analysis.get_profile("rummycircle")
    first = hand_analysis.analyse(DECLARABLE_14, WILD, profile)
    before = hand_analysis._score.cache_info()
    again = hand_analysis.analyse(list(reversed(DECLARABLE_14)), WILD, profile)
    after = hand_analysis._score.cache_info()
    assert again == first
    assert after.misses == before.misses and after.hits >= before.hits + 13


# -- stored games ----------------------------------------------------------------------------


def test_a_stored_game_is_walked_from_its_events(database_url):
    load_games(database_url)
    from sqlalchemy.orm import Session

    from replays.store.application import Ledger
    from replays.store.db import engine_for
    from web import queries

    with Session(engine_for(database_url)) as session:
        timeline = queries.move_timeline(session, "T7-000123")
    chances = hand_analysis.game_chances(Ledger(database_url), "T7-000123", timeline, "stamp")
    assert [(t.move, t.player, str(t.discarded), len(t.held)) for t in chances.turns] == [
        (2, "p1", "TC", 14)
    ]
    assert [(c.kind, c.player, c.move) for c in chances.chances] == [("could_declare", "p1", 2)]
    assert chances.of("p2", staff=False) == []
    assert chances.lowest("p1") == (2, 0)


# -- pages -----------------------------------------------------------------------------------


@pytest.fixture
def site(database_url):
    load_games(database_url)
    app = create_app({"DATABASE_URL": database_url, "TESTING": True})
    return app


def _analyses(html: str) -> dict[str, tuple[str, str]]:
    return {
        m.group(1): (m.group(2), m.group(3))
        for m in re.finditer(
            r'class="hand-analysis" data-player="([^"]+)" data-hand-score="(\d+)" '
            r'data-could-declare="(yes|no)"',
            html,
        )
    }


def test_the_full_view_analyses_every_hand_and_marks_a_possible_declaration(site):
    with signed_in(site, "auditor") as client:
        html = client.get("/games/T7-000123/replay?move=1").get_data(as_text=True)
    found = _analyses(html)
    assert set(found) == {"p1", "p2", "p3"}
    assert found["p1"] == ("0", "yes")
    assert "could declare" in html and "after discarding" in html


def test_a_players_seat_view_analyses_only_their_own_hand(site):
    with signed_in(site, "player", player="p2") as client:
        html = client.get("/games/T7-000123/replay?move=1&seat=p2").get_data(as_text=True)
        fragment = client.get("/games/T7-000123/replay/table?move=1&seat=p2").get_data(as_text=True)
    assert set(_analyses(html)) == {"p2"}
    assert set(_analyses(fragment)) == {"p2"}


def test_missed_chances_are_moments_for_staff_and_for_the_player_who_missed_them(site):
    with signed_in(site, "auditor") as client:
        staff = client.get("/games/T7-000123/replay?move=0").get_data(as_text=True)
    with signed_in(site, "player", player="p1") as client:
        own = client.get("/games/T7-000123/replay?move=0&seat=p1").get_data(as_text=True)
    with signed_in(site, "player", player="p2") as client:
        other = client.get("/games/T7-000123/replay?move=0&seat=p2").get_data(as_text=True)
    moment = 'data-move="2" class="moment moment-missed_could_declare"'
    assert moment in staff and moment in own
    assert "missed_" not in other
    assert "2. p1 could have declared, finishing with 10♣, but discarded it" in staff


def test_the_player_history_has_a_missed_chance_line_per_game(site):
    from replays.store.application import Ledger

    with signed_in(site, "auditor") as client:
        html = client.get("/players/p3").get_data(as_text=True)
    assert "Missed chance" in html
    rows = dict(
        re.findall(
            r'<th scope="row"><a href="[^"]*">([^<]+)</a></th>.*?'
            r'<td class="missed-chance"[^>]*>(.*?)</td>',
            html,
            re.S,
        )
    )
    cell = re.sub(r"<[^>]+>", "", rows["T2-000451"])
    line = re.search(r"move (\d+): charged (\d+), could have had (\d+)", cell)
    assert line, rows
    move, charged, could = map(int, line.groups())
    assert charged == 80  # p3's wrong show
    # Checked another way: the table as Ledger.state_at gives it before that discard, and
    # the plain solver over every card p3 could have let go.
    state = Ledger(site.config["DATABASE_URL"]).state_at("T2-000451", move - 1)
    held = state.seat_of("p3").hand
    assert len(held) == 14
    least = min(
        min_hand_score([c for i, c in enumerate(held) if i != skip], state.wild)
        for skip in range(len(held))
    )
    assert could == least < charged


# -- deccan's own rule, made visible ---------------------------------------------------------


def test_deccans_two_point_charge_says_why_on_the_replay_and_the_audit(database_url):
    from game_tables import THREE_HANDS, complete_deal, config_for

    from replays.readmodels.projections import catch_up
    from replays.store.application import Ledger
    from replays.store.schema import migrate

    migrate(database_url)
    # p1 declares on the first turn; p2's dealt hand already made a valid declaration.
    hands = {
        "p1": THREE_HANDS["p1"],
        "p2": "AD 2D 3D 4C 5C 6C 8H 8S 8D QH QS QC QD",
        "p3": THREE_HANDS["p3"],
    }
    config = config_for("p1 p2 p3", rules="deccan", dealer="p3", game_id="DC-000001")
    moves = [
        {"player": "p1", "type": "pick", "from": "closed", "card": "4H"},
        {
            "player": "p1",
            "type": "declare",
            "finish": "TC",
            "groups": [
                ["AS", "2S", "3S"],
                ["4H", "5H", "JK"],
                ["9D", "9H", "9S"],
                ["KS", "KD", "KC", "KH"],
            ],
        },
    ]
    game = Ledger(database_url).record_game(config, complete_deal(hands, "7D", "KC", "4H"), moves)
    assert game.settlement.players["p2"].met_objective and game.settlement.players["p2"].points == 2
    catch_up(database_url)
    app = create_app({"DATABASE_URL": database_url, "TESTING": True})
    client = signed_in(app, "auditor")
    words = "met the objective without declaring: the deccan profile charges a flat 2 points"
    replay = client.get(f"/games/DC-000001/replay?move={len(moves)}").get_data(as_text=True)
    final = re.search(r'<article class="final-hand" data-player="p2">.*?</article>', replay, re.S)
    assert final and words in final.group(0)
    other = re.search(r'<article class="final-hand" data-player="p3">.*?</article>', replay, re.S)
    assert other and "met the objective" not in other.group(0)
    audit = client.get("/games/DC-000001/audit").get_data(as_text=True)
    assert audit.count(words) == 1
