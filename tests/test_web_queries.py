"""The pages' read-model queries and the replay page on both engines (SQLite and PostgreSQL)."""

from __future__ import annotations

from decimal import Decimal

from auth_support import signed_in
from web_support import MISREPORTED, load_games

from web import create_app, queries
from web.ledger import read_session


def test_queries_and_pages_on_both_engines(database_url):
    records = load_games(database_url)
    app = create_app({"DATABASE_URL": database_url, "TESTING": True})
    with app.app_context(), read_session() as session:

        def games(**filters) -> set[str]:
            page = queries.list_games(session, queries.GameFilters(**filters), per_page=50)
            return {game.game_id for game in page.games}

        assert games() == set(records)
        assert games(variant="raise") == {"T7-000123", MISREPORTED, "seed-raise-122", "T5-000300"}
        assert games(player="a1") == {"T9-000777"}
        assert games(player="p2", result="auto_drop") == {"T2-000451"}
        assert games(discrepancies=True) == {MISREPORTED}
        from datetime import date

        assert games(date_from=date(2025, 3, 2)) == {MISREPORTED}
        assert games(date_to=date(2025, 3, 1), table="T7") == {"T7-000123"}
        page = queries.list_games(session, queries.GameFilters(page=2), per_page=4)
        assert (page.total, page.pages, len(page.games)) == (9, 3, 4)
        assert queries.table_ids(session) == ["T1", "T2", "T3", "T4", "T5", "T7", "T9"]

        history = queries.player_history(session, "p3")
        assert history[-1].running_total == sum((line.net for line in history), Decimal("0"))
        t7 = next(line for line in history if line.game.game_id == "T7-000123")
        assert (t7.result.result, t7.net) == ("lost", Decimal("-29.70"))

    client = signed_in(app)
    replay = client.get("/games/seed-raise-122/replay?move=70&seat=p3")
    assert replay.status_code == 200
    assert "Move 70 of 70" in replay.get_data(as_text=True)
    assert client.get("/games/seed-raise-122/replay?move=71").status_code == 400
    assert client.get(f"/games/{MISREPORTED}/audit").status_code == 200
    assert client.get("/players/p3").status_code == 200
