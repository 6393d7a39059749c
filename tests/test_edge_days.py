"""The first and last days a date can hold (0001-01-01, 9999-12-31) as a period's bounds.

A person may type any day into a period's ``from`` and ``to``. The pages once worked out
a day next to the one asked for (the day after ``to``, 30 days before it, the end of its
month) and failed with a 500 at the ends of the calendar; the fair-play command printed a
traceback. Each now answers for the period asked: every game in it, nothing lost.
"""

from __future__ import annotations

import json

import pytest
from auth_support import signed_in
from click.testing import CliRunner
from web_support import load_games

from web import create_app
from web.cli import main

WHOLE = "from=0001-01-01&to=9999-12-31"


@pytest.fixture
def site(database_url):
    load_games(database_url)
    return create_app({"DATABASE_URL": database_url, "TESTING": True})


@pytest.mark.parametrize(
    "path",
    [
        "/reports?to=0001-01-01",
        "/reports.csv?to=0001-01-15",
        "/reports.json?to=0001-01-01",
        "/reports/integrity?to=0001-01-01",
        f"/reports?{WHOLE}",
        "/fairplay?to=0001-01-01",
        "/fairplay?to=9999-12-31",
        "/fairplay?from=9999-12-05",
        f"/fairplay?{WHOLE}",
        "/games?to=9999-12-31",
        f"/games?{WHOLE}",
        "/admin/access-log?to=9999-12-31",
        f"/admin/access-log?{WHOLE}",
    ],
)
def test_a_period_at_the_ends_of_the_calendar_is_answered(site, path):
    response = signed_in(site, "admin").get(path)
    assert response.status_code == 200, response.get_data(as_text=True)[:300]


def test_the_whole_calendar_holds_every_game(site):
    client = signed_in(site, "admin")
    everything = client.get("/reports.json?from=2000-01-01&to=2100-12-31").get_json()
    whole = client.get(f"/reports.json?{WHOLE}").get_json()
    assert whole["totals"] == everything["totals"] and whole["totals"]["games"] > 0
    listed = client.get(f"/games?{WHOLE}").get_data(as_text=True)
    assert listed.count('href="/games/') == client.get("/games").get_data(as_text=True).count(
        'href="/games/'
    )


def test_a_player_s_games_up_to_the_last_day(site):
    from replays.store.db import engine_for

    with engine_for(site.config["DATABASE_URL"]).connect() as connection:
        players = connection.exec_driver_sql("SELECT players FROM games").scalar()
    player = (json.loads(players) if isinstance(players, str) else players)[0]  # JSON on PG
    client = signed_in(site, "player", player=player)
    response = client.get(f"/games?player={player}&to=9999-12-31")
    assert response.status_code == 200 and 'href="/games/' in response.get_data(as_text=True)


def test_the_fairplay_command_takes_the_last_month_of_the_calendar(database_url):
    load_games(database_url)
    result = CliRunner().invoke(
        main, ["fairplay", "--from", "9999-12-01", "--to", "9999-12-31", "--url", database_url]
    )
    assert result.exit_code == 0, result.output
    assert "fair-play review 9999-12-01 .. 9999-12-31: 0 games" in result.output
