"""Red 3 matches in the read models (SQLite and PostgreSQL): listed, scored, audited, rebuilt."""

import copy
import json
from pathlib import Path

import sqlalchemy as sa

from replays.readmodels.models import GameRow, MoveRow, PlayerResultRow
from replays.readmodels.projections import catch_up, rebuild
from replays.records.importer import import_lines
from replays.store.application import Ledger
from replays.store.db import engine_for
from replays.store.schema import migrate

DATA = Path(__file__).parent / "data"


def load(url, extra=()):
    migrate(url)
    lines = (DATA / "red3_example.jsonl").read_text().splitlines()
    lines += (DATA / "red3_matches.jsonl").read_text().splitlines()
    lines += (DATA / "games.jsonl").read_text().splitlines()[:2]
    lines += [json.dumps(record) for record in extra]
    summary = import_lines(Ledger(url, env={"CREATE_TABLE": "no"}), lines, follow=False)
    assert summary.ok, summary.line()
    catch_up(url)


def rows(url, model, **where):
    with engine_for(url).connect() as connection:
        query = sa.select(model.__table__)
        for column, value in where.items():
            query = query.where(model.__table__.c[column] == value)
        return [dict(row._mapping) for row in connection.execute(query)]


def test_matches_appear_in_the_games_table_with_their_result(database_url):
    wrong = json.loads((DATA / "red3_example.jsonl").read_text().splitlines()[0])
    wrong = copy.deepcopy(wrong)
    wrong["game_id"] = "R3-MISREPORTED"
    wrong["reported"]["totals"]["p2"] = 185
    load(database_url, [wrong])
    games = {row["game_id"]: row for row in rows(database_url, GameRow, variant="red3")}
    assert len(games) == 1 + 6 + 1
    example = games["R3-EXAMPLE"]
    assert (example["status"], example["winner"], example["round"]) == ("finished", "p2", 2)
    assert example["moves_count"] == 18 and example["players"] == ["p1", "p2"]
    assert example["gross"] is None and not example["discrepancy"]
    assert example["ended_at"] is not None
    flagged = games["R3-MISREPORTED"]
    assert (
        flagged["discrepancy"] and "totals.p2: 185 != computed 175" in flagged["discrepancy_note"]
    )
    results = {r["player"]: r for r in rows(database_url, PlayerResultRow, game_id="R3-EXAMPLE")}
    assert {p: (r["result"], r["points"]) for p, r in results.items()} == {
        "p1": ("lost", 10),
        "p2": ("won", 175),
    }
    moves = rows(database_url, MoveRow, game_id="R3-EXAMPLE")
    assert [m["move_index"] for m in sorted(moves, key=lambda m: m["move_index"])] == list(
        range(18)
    )
    first = min(moves, key=lambda m: m["move_index"])
    assert (first["move_type"], first["card"], first["source"], first["round"]) == (
        "pick",
        "9C",
        "stock",
        1,
    )
    # 13-card games are projected beside them as before.
    assert len(rows(database_url, GameRow)) == len(games) + 2


def test_a_rebuild_gives_the_same_rows(database_url):
    load(database_url)
    before = sorted(rows(database_url, GameRow), key=lambda r: r["game_id"])
    results = sorted(rows(database_url, PlayerResultRow), key=lambda r: (r["game_id"], r["player"]))
    rebuild(database_url)
    assert sorted(rows(database_url, GameRow), key=lambda r: r["game_id"]) == before
    assert (
        sorted(rows(database_url, PlayerResultRow), key=lambda r: (r["game_id"], r["player"]))
        == results
    )
