"""What a player's view must not tell about cards they never saw (issue 17, "A leak first").

A hand dropped face down is never shown; its "minimum possible" score (the best grouping of
those cards) would describe it, so only staff see it. The games list's discrepancy tooltip
likewise quotes other players' reported points to staff only.
"""

from __future__ import annotations

import copy
import html
import re

import pytest
from auth_support import signed_in
from web_support import load_games, sample_records

from web import create_app

GAME = "seed-points-200"  # p2 and p3 drop face down, p1 declares, p4 shows
MISREPORTED = "seed-points-201"  # the same game, the operator's points for p2 wrong


def _records() -> list[dict]:
    records = sample_records()
    wrong = copy.deepcopy(next(r for r in records if r["game_id"] == GAME))
    wrong["game_id"] = MISREPORTED
    wrong["reported"] = dict(wrong["reported"], points=dict(wrong["reported"]["points"], p2=62))
    return [*records, wrong]


@pytest.fixture
def site(database_url):
    load_games(database_url, _records())
    return create_app({"DATABASE_URL": database_url, "TESTING": True})


def _final_hand(page: str, player: str) -> str:
    found = re.search(
        rf'<article class="final-hand" data-player="{player}">.*?</article>', page, re.S
    )
    assert found, player
    return found.group(0)


def _result_row(page: str, player: str) -> list[str]:
    # The id is a link for staff, plain text for another player (web/auth.py may_open_player).
    found = re.search(
        rf"<tr>\s*<th scope=\"row\"><(?:a|span) [^>]*>{player}</(?:a|span)></th>(.*?)</tr>",
        page,
        re.S,
    )
    assert found, player
    return [
        re.sub(r"<[^>]+>", "", cell).strip()
        for cell in re.findall(r"<td[^>]*>(.*?)</td>", found.group(1), re.S)
    ]


def test_a_player_does_not_see_the_minimum_of_hands_dropped_face_down(site):
    staff = signed_in(site, "auditor").get(f"/games/{GAME}").get_data(as_text=True)
    assert "Minimum possible" in _final_hand(staff, "p2")
    staff_minimum = _result_row(staff, "p2")[2]
    assert staff_minimum.isdigit()

    player = signed_in(site, "player", player="p4")
    page = player.get(f"/games/{GAME}").get_data(as_text=True)
    for dropped in ("p2", "p3"):
        assert "Minimum possible" not in _final_hand(page, dropped), dropped
        assert _result_row(page, dropped)[2] == "—", dropped
    # The player's own shown hand keeps its minimum.
    assert "Minimum possible" in _final_hand(page, "p4")
    # The replay's last move shows the same final hands, with the same rule.
    total = len(next(r for r in _records() if r["game_id"] == GAME)["moves"])
    replay = player.get(f"/games/{GAME}/replay?move={total}&seat=p4").get_data(as_text=True)
    assert "Minimum possible" not in _final_hand(replay, "p2")


def _tooltips(page: str) -> list[str]:
    return [html.unescape(t) for t in re.findall(r'<strong class="flag" title="([^"]*)"', page)]


def test_the_discrepancy_tooltip_quotes_other_players_points_to_staff_only(site):
    staff = signed_in(site, "auditor").get("/").get_data(as_text=True)
    assert any("points.p2: 62" in tip for tip in _tooltips(staff))

    player = signed_in(site, "player", player="p4")
    tips = _tooltips(player.get("/", follow_redirects=True).get_data(as_text=True))
    assert tips, "the player's list flags the misreported game"
    assert not any("p2" in tip or "62" in tip for tip in tips), tips
    assert any("more about other players" in tip for tip in tips)
