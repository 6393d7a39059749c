"""The seat filter (``domain.seat_view``): one mechanism for every variant's seat view.

A player signed in over HTTP (Flask's test client, the real login form) steps through a
13-card game and a Red 3 match from their own seat. At every move where another player
drew from the face-down stock, the replay page, its move list and the ``/replay/table``
fragment must say only that the card came from the stock, never which card it was.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from auth_support import signed_in
from web_support import load_games, sample_records

from domain.seat_view import move_for_view, move_seen_by
from web import create_app

DATA = Path(__file__).parent / "data"

# (a game of the variant, the player signed in)
VARIANTS = {
    "points": ("T2-000451", "p1"),
    "red3": ("R3-EXAMPLE", "p2"),
}


def _red3_record() -> dict:
    return json.loads((DATA / "red3_example.jsonl").read_text().splitlines()[0])


@pytest.fixture
def site(database_url):
    load_games(database_url, [*sample_records(), _red3_record()])
    return create_app({"DATABASE_URL": database_url, "TESTING": True})


def _stock_draws_by_others(game_id: str, viewer: str) -> list[tuple[int, str]]:
    """(table position after the move, who drew) for every other player's stock draw."""
    from replays.store.application import Ledger

    ledger = Ledger()
    found = []
    if game_id.startswith("R3-"):
        from domain import variants
        from replays.store.timeline import game_of

        steps = game_of(ledger, game_id, variants.get("red3")).steps
        for index, step in enumerate(steps):
            if step.get("type") == "pick" and step["from"] == "stock" and step["player"] != viewer:
                found.append((index, step["player"]))
    else:
        record = next(r for r in sample_records() if r["game_id"] == game_id)
        for index, move in enumerate(record["moves"]):
            if move["type"] == "pick" and move["from"] == "closed" and move["player"] != viewer:
                found.append((index + 1, move["player"]))
    return found


def _leaks(html: str, player: str) -> list[str]:
    return re.findall(rf"{player} picks (?!from the stock)[^<\"]*? from the stock", html)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_player_never_sees_another_players_stock_draw(site, variant):
    game_id, viewer = VARIANTS[variant]
    client = signed_in(site, "player", player=viewer)
    draws = _stock_draws_by_others(game_id, viewer)
    assert draws, f"{game_id} has no stock draw by another player to hide"
    for move, drawer in draws:
        query = f"?move={move}&seat={viewer}"
        page = client.get(f"/games/{game_id}/replay{query}")
        fragment = client.get(f"/games/{game_id}/replay/table{query}")
        assert page.status_code == fragment.status_code == 200
        page_html, fragment_html = page.get_data(as_text=True), fragment.get_data(as_text=True)
        moves_list = page_html[page_html.index('id="moves"') :]
        for name, html in (("page", page_html), ("move list", moves_list)):
            assert _leaks(html, drawer) == [], f"{variant} {name} at move {move}"
        assert _leaks(fragment_html, drawer) == [], f"{variant} fragment at move {move}"
        # The move is still there, in the seat's words.
        assert f"{drawer} picks from the stock" in fragment_html
        assert f"{drawer} picks from the stock" in moves_list


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_staff_full_view_still_names_the_card(site, variant):
    game_id, viewer = VARIANTS[variant]
    client = signed_in(site, "auditor")
    move, drawer = _stock_draws_by_others(game_id, viewer)[0]
    html = client.get(f"/games/{game_id}/replay/table?move={move}").get_data(as_text=True)
    assert _leaks(html, drawer), "the full view names the card drawn"


@pytest.mark.parametrize(
    ("move", "hidden"),
    [
        ({"player": "p1", "type": "pick", "from": "closed", "card": "4H"}, True),
        ({"player": "p1", "type": "pick", "from": "stock", "card": "3C"}, True),
        ({"player": "p1", "type": "pick", "from": "open", "card": "4H"}, False),
        ({"player": "p1", "type": "discard", "card": "4H"}, False),
    ],
)
def test_the_filter_hides_face_down_draws_in_every_variant(move, hidden):
    assert ("card" not in move_seen_by(move, "p2")) is hidden
    assert ("card" not in move_for_view(move, "p2")) is hidden
    assert move_for_view(move, "p1") == move  # the drawer saw the card
    assert move_for_view(move, None) == move  # the full view shows all
    assert "stock" not in move_seen_by({"type": "reshuffle", "stock": ["AS"]}, "p2")
