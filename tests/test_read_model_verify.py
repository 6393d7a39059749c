"""`verify` covers the read models, and nothing it reads can stop it (issue 13, part C).

Simulated games are stored and projected through the real ledger on SQLite and
PostgreSQL; the read rows and event rows are then edited with SQL, as an insider would.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from sql_support import sql

from replays.integrity.evidence import make_checkpoint, verify_store
from replays.integrity.report import Report
from replays.integrity.verify import verify_read_models
from replays.store.db import engine_for
from web.cli import main


def run(*args):
    result = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.output


@pytest.fixture
def games(database_url):
    return store_simulated(database_url)


def store_simulated(database_url):
    from replays.readmodels.projections import catch_up
    from replays.simulation import Floor, Simulation, store_games
    from replays.store.schema import migrate

    migrate(database_url)
    records = list(Simulation(Floor(seed=11, tables=3, players=12)).games(6))
    store_games(records, url=database_url, warn=lambda message: None)
    catch_up(database_url)
    return [record["game_id"] for record in records]


def settled_game(url, game_ids):
    for game_id in game_ids:
        row = sql(url, "SELECT winner, gross FROM games WHERE game_id = :g", g=game_id).first()
        if row is not None and row.gross is not None:
            return game_id, row.winner
    raise AssertionError("no settled game among the simulated ones")


def forge_consistently(url, game_id, winner):
    """Raise the winner's amount by 5.00 and keep the books balanced: the games row's gross,
    the winner's credit and a loser's debit move together."""
    loser = sql(
        url,
        "SELECT player FROM player_results WHERE game_id = :g AND player != :w LIMIT 1",
        g=game_id,
        w=winner,
    ).scalar_one()
    from replays.readmodels.models import GameRow, LedgerEntryRow, PlayerResultRow

    five = Decimal("5.00")
    with engine_for(url).begin() as connection:
        gross = connection.execute(
            sa.select(GameRow.gross).where(GameRow.game_id == game_id)
        ).scalar_one()
        connection.execute(
            sa.update(GameRow).where(GameRow.game_id == game_id).values(gross=gross + five)
        )
        for player in (winner, loser):
            amount = connection.execute(
                sa.select(PlayerResultRow.amount).where(
                    PlayerResultRow.game_id == game_id, PlayerResultRow.player == player
                )
            ).scalar_one()
            change = five if player == winner else -five
            connection.execute(
                sa.update(PlayerResultRow)
                .where(PlayerResultRow.game_id == game_id, PlayerResultRow.player == player)
                .values(amount=amount + change)
            )
        for player, column in ((winner, "credit"), (loser, "debit")):
            entry = connection.execute(
                sa.select(LedgerEntryRow.id, getattr(LedgerEntryRow, column)).where(
                    LedgerEntryRow.game_id == game_id,
                    LedgerEntryRow.player == player,
                    getattr(LedgerEntryRow, column) > 0,
                )
            ).first()
            if entry is not None:
                connection.execute(
                    sa.update(LedgerEntryRow)
                    .where(LedgerEntryRow.id == entry[0])
                    .values({column: entry[1] + five})
                )
    return loser


def test_untouched_read_models_verify(games, database_url):
    report = verify_store(database_url, check_snapshots=False)
    assert report.ok, report.problems
    assert f"{len(games)} game(s)' read rows checked against their events" in report.notes


def test_read_model_tampering_is_found_field_by_field(games, database_url):
    game_id, winner = settled_game(database_url, games)
    loser = forge_consistently(database_url, game_id, winner)

    report = verify_store(database_url, check_snapshots=False)
    messages = [p.message for p in report.problems]
    assert not report.ok
    assert {p.game_id for p in report.problems} == {game_id}
    assert any(m.startswith("games.gross: stored ") for m in messages), messages
    assert any(m.startswith(f"player_results[{winner}].amount: stored ") for m in messages)
    assert any(m.startswith(f"player_results[{loser}].amount: stored ") for m in messages)
    assert any(m.startswith("ledger_entries[settlement line ") for m in messages), messages

    only = verify_read_models(database_url, game_id=game_id)
    assert {p.game_id for p in only.problems} == {game_id} and not only.ok
    assert verify_read_models(
        database_url, game_id=games[0] if games[0] != game_id else games[1]
    ).ok

    code, out = run("verify", "--read-models")
    assert code == 1
    # Settlement rows name the event they come from (the settle event).
    assert f": read_model: player_results[{winner}].amount: stored" in out
    assert f"FAIL game {game_id}, event " in out
    code, out = run("verify", "--json", "--no-snapshots")
    assert code == 1
    assert {p["game_id"] for p in json.loads(out)["problems"]} == {game_id}
    code, out = run("verify", "--game", game_id, "--no-snapshots")
    assert code == 1 and "games.gross" in out


def test_rows_without_events_and_missing_rows_are_found(games, database_url):
    game_id, _ = settled_game(database_url, games)
    sql(database_url, "DELETE FROM moves WHERE game_id = :g AND move_index = 0", g=game_id)
    other = next(g for g in games if g != game_id)
    sql(
        database_url,
        "INSERT INTO moves (game_id, move_index, version, player, move_type, round, point_value)"
        " SELECT game_id, 9999, version, player, move_type, round, point_value FROM moves"
        " WHERE game_id = :g AND move_index = 1",
        g=other,
    )
    report = verify_read_models(database_url)
    assert sorted((p.game_id, p.message) for p in report.problems) == sorted(
        [
            (game_id, "moves[0]: missing, the events give one"),
            (other, "moves[9999]: stored, but the game's events give no such row"),
        ]
    )


def test_rows_without_events_are_named_in_the_same_order_in_every_process(games, database_url):
    """Rows the events do not give are named in the order they were read, not in a set's
    order, which Python's string hashing changes from one process to the next: two runs
    of the same verify on the same store print the same report."""
    import os
    import subprocess
    import sys

    game_id, winner = settled_game(database_url, games)
    for place in range(6):
        sql(
            database_url,
            "INSERT INTO player_results (game_id, player, seat, result, points, point_value,"
            " amount) SELECT game_id, :p, seat, result, points, point_value, amount"
            " FROM player_results WHERE game_id = :g AND player = :w",
            g=game_id,
            w=winner,
            p=f"forged-{place}",
        )

    def report(seed: str) -> list[str]:
        environment = dict(os.environ, PYTHONHASHSEED=seed, RUMMY_LEDGER_DATABASE_URL=database_url)
        command = [sys.executable, "-c", "from web.cli import main; main()", "verify"]
        command += ["--read-models", "--game", game_id]
        done = subprocess.run(command, env=environment, capture_output=True, text=True)
        assert done.returncode == 1, done.stderr
        return [line for line in done.stdout.splitlines() if "no such row" in line]

    first = report("1")
    assert len(first) == 6, first
    assert all(report(seed) == first for seed in ("2", "3"))


def test_a_state_stored_as_text_is_a_finding_not_a_crash(games, database_url):
    game_id = games[2]
    from replays.store.application import Ledger

    originator = Ledger.aggregate_id(game_id)
    if database_url.startswith("sqlite"):
        sql(
            database_url,
            "UPDATE ledger_events SET state = CAST(state AS TEXT) "
            "WHERE originator_id = :o AND originator_version = 3",
            o=originator.bytes,
        )
    else:
        # PostgreSQL types its columns: the closest forgery is bytes no decoder accepts.
        sql(
            database_url,
            "UPDATE ledger_events SET state = substring(state from 1 for 5) "
            "WHERE originator_id = :o AND originator_version = 3",
            o=originator,
        )
    report = verify_store(database_url, check_snapshots=False)
    assert not report.ok
    named = {(p.game_id, p.event) for p in report.problems if p.game_id is not None}
    assert named == {(game_id, 3)}, report.problems
    code, out = run("verify", "--game", game_id)
    assert code == 1 and f"game {game_id}, event 3" in out
    for other in games[:2]:
        assert run("verify", "--game", other, "--no-snapshots")[0] == 0, other


# -- the badge on the site ---------------------------------------------------------------------
def pages(game_id):
    return (f"/games/{game_id}", f"/games/{game_id}/audit", f"/games/{game_id}/replay")


def test_a_forged_read_row_is_named_on_the_game_pages(games, database_url, keys):
    from auth_support import signed_in

    from web import create_app

    make_checkpoint(database_url)
    game_id, winner = settled_game(database_url, games)
    app = create_app({"DATABASE_URL": database_url, "TESTING": True})
    staff = signed_in(app)
    for page in pages(game_id):
        html = staff.get(page).get_data(as_text=True)
        assert "Ledger verified" in html, page

    forge_consistently(database_url, game_id, winner)
    for page in pages(game_id):
        response = staff.get(page)
        html = response.get_data(as_text=True)
        assert response.status_code == 200, page
        assert "Ledger verified" not in html, page
        assert "Read model differs from the ledger" in html, page
        assert f"player_results[{winner}].amount: stored" in html, page
    player = signed_in(
        create_app({"DATABASE_URL": database_url, "TESTING": True}), "player", player=winner
    )
    # The replay reuses the verdict staff just saw (``fresh=False``): still in the player's words.
    for page in pages(game_id):
        response = player.get(page, follow_redirects=True)
        if response.status_code == 403:  # a page players may not open (the audit)
            continue
        html = response.get_data(as_text=True)
        assert "Failed verification" in html and "Ledger verified" not in html, page
        assert "player_results[" not in html and "Read model differs" not in html, page


def test_a_game_with_a_text_state_still_answers_200(sqlite_url, keys):
    from auth_support import signed_in

    from replays.store.application import Ledger
    from web import create_app

    # SQLite only: a PostgreSQL bytea column cannot hold text.
    database_url = sqlite_url
    games = store_simulated(database_url)
    make_checkpoint(database_url)
    game_id = games[2]
    sql(
        database_url,
        "UPDATE ledger_events SET state = CAST(state AS TEXT) "
        "WHERE originator_id = :o AND originator_version = 3",
        o=Ledger.aggregate_id(game_id).bytes,
    )
    staff = signed_in(create_app({"DATABASE_URL": database_url, "TESTING": True}))
    for page in pages(game_id):
        response = staff.get(page)
        assert response.status_code == 200, page
        assert "Cannot be verified (event 3)" in response.get_data(as_text=True), page


# -- reports say whether their period verified ---------------------------------------------
def test_a_report_says_its_period_does_not_verify(games, database_url, keys):
    make_checkpoint(database_url)
    game_id, winner = settled_game(database_url, games)
    ended = sql(database_url, "SELECT ended_on FROM games WHERE game_id = :g", g=game_id).scalar()
    day = str(ended)[:10]
    period = ["report", "--from", day, "--to", day, "--url", database_url]

    code, out = run(*period)
    assert code == 0 and "Verification: verified: " in out, out
    forge_consistently(database_url, game_id, winner)
    code, out = run(*period)
    assert "Reconciliation:" in out and "balanced" in out  # the forgery keeps the books even
    assert "Verification: NOT VERIFIED" in out
    assert game_id in out.split("Games that fail verification")[1]
    data = json.loads(run(*period, "--format", "json")[1])
    assert data["verification"]["verified"] is False
    assert [f["game_id"] for f in data["verification"]["failed"]] == [game_id]
    assert "read_model" in data["verification"]["failed"][0]["finding"]
    code, out = run(*period, "--format", "csv")
    assert f"verification,{game_id},,,,,,,,,,,,,failed," in out
    assert run(*period, "--strict")[0] == 3


# -- dispute adjustments against the case's events ------------------------------------------
def test_a_forged_adjustment_line_is_found(database_url):
    from web_support import load_games

    from replays.access import accounts
    from replays.disputes.cases import Disputes
    from replays.integrity.verify import verify_read_models
    from replays.readmodels.projections import catch_up
    from replays.store.application import Ledger

    load_games(database_url)
    officer = accounts.add_user("officer-1", "dispute_officer", "password-123", url=database_url)
    p2 = accounts.add_user("player-p2", "player", "password-123", player="p2", url=database_url)
    disputes = Disputes(Ledger(database_url))
    case = disputes.open_case(p2, "T7-000123", 3, "my drop was recorded a turn early")
    disputes.close_case(
        officer, case.case_id, "adjusted", reason="early drop", amount="5.00",
        credited="p2", debited="p1",
    )  # fmt: skip
    catch_up(database_url)
    assert verify_read_models(database_url).ok

    for account, column in (("player:p1", "debit"), ("player:p2", "credit")):
        sql(
            database_url,
            # Money columns hold paise: 900 is 9.00.
            f"UPDATE ledger_entries SET {column} = 900 WHERE dispute_id = :d AND account = :a",
            d=case.case_id,
            a=account,
        )
    report = verify_read_models(database_url)
    messages = sorted(p.message for p in report.problems)
    assert {p.game_id for p in report.problems} == {"T7-000123"}
    assert messages == [
        f"ledger_entries[dispute {case.case_id}][line 1].debit: stored 9.00, from events 5.00",
        f"ledger_entries[dispute {case.case_id}][line 2].credit: stored 9.00, from events 5.00",
    ]


# -- Red 3 matches, one game's adjustments, unknown games (issue 13 part C, the gaps) ----------
def store_red3(database_url):
    from test_red3_projection import load

    load(database_url)
    return "R3-EXAMPLE"


def test_a_forged_red3_row_is_found_field_by_field(database_url):
    game_id = store_red3(database_url)
    report = verify_read_models(database_url)
    assert report.ok, report.problems
    assert verify_read_models(database_url, game_id=game_id).ok

    sql(
        database_url,
        "UPDATE player_results SET points = 185 WHERE game_id = :g AND player = 'p2'",
        g=game_id,
    )
    sql(
        database_url,
        "UPDATE moves SET card = NULL WHERE game_id = :g AND move_index = 0",
        g=game_id,
    )
    expected = "player_results[p2].points: stored 185, from events 175"
    for report in (
        verify_read_models(database_url),
        verify_read_models(database_url, game_id=game_id),
        verify_store(database_url, check_snapshots=False),
        verify_store(database_url, game_id=game_id, check_snapshots=False),
    ):
        messages = [p.message for p in report.problems]
        assert {p.game_id for p in report.problems} == {game_id}, report.problems
        assert expected in messages, messages
        assert any(m.startswith("moves[0].card: stored nothing, from events ") for m in messages)
    code, out = run("verify", "--read-models", "--game", game_id)
    assert code == 1 and expected in out, out


def test_a_forged_red3_row_is_named_on_the_match_pages_and_in_the_period(database_url, keys):
    from auth_support import signed_in

    from web import create_app

    game_id = store_red3(database_url)
    make_checkpoint(database_url)
    ended = sql(database_url, "SELECT ended_on FROM games WHERE game_id = :g", g=game_id).scalar()
    day = str(ended)[:10]
    period = ["report", "--from", day, "--to", day, "--url", database_url, "--format", "json"]
    assert json.loads(run(*period)[1])["verification"]["failed"] == []
    # The replay page reuses a recent verdict; this test wants each one fresh.
    app = create_app({"DATABASE_URL": database_url, "TESTING": True, "INTEGRITY_CACHE_SECONDS": 0})
    staff = signed_in(app)
    # A match's page opens on its replay.
    html = staff.get(f"/games/{game_id}", follow_redirects=True).get_data(as_text=True)
    assert "Ledger verified" in html

    sql(database_url, "UPDATE player_results SET points = 5 WHERE game_id = :g", g=game_id)
    for page in (f"/games/{game_id}", f"/games/{game_id}/audit"):
        response = staff.get(page, follow_redirects=True)
        html = response.get_data(as_text=True)
        assert response.status_code == 200, page
        assert "Read model differs from the ledger" in html, page
        assert "player_results[p2].points: stored 5, from events 175" in html, page
    failed = json.loads(run(*period)[1])["verification"]["failed"]
    assert game_id in [f["game_id"] for f in failed], failed


def test_one_games_adjustment_lines_are_checked_with_the_game(database_url, keys):
    from auth_support import signed_in
    from web_support import load_games

    from replays.access import accounts
    from replays.disputes.cases import Disputes
    from replays.readmodels.projections import catch_up
    from replays.store.application import Ledger
    from web import create_app

    load_games(database_url)
    officer = accounts.add_user("officer-1", "dispute_officer", "password-123", url=database_url)
    p2 = accounts.add_user("player-p2", "player", "password-123", player="p2", url=database_url)
    disputes = Disputes(Ledger(database_url))
    case = disputes.open_case(p2, "T7-000123", 3, "my drop was recorded a turn early")
    disputes.close_case(
        officer, case.case_id, "adjusted", reason="early drop", amount="5.00",
        credited="p2", debited="p1",
    )  # fmt: skip
    catch_up(database_url)
    make_checkpoint(database_url)
    assert verify_read_models(database_url, game_id="T7-000123").ok

    sql(
        database_url,
        "UPDATE ledger_entries SET credit = 900 WHERE dispute_id = :d AND account = 'player:p2'",
        d=case.case_id,
    )
    expected = (
        f"ledger_entries[dispute {case.case_id}][line 2].credit: stored 9.00, from events 5.00"
    )
    for report in (
        verify_read_models(database_url, game_id="T7-000123"),
        verify_store(database_url, game_id="T7-000123", check_snapshots=False),
    ):
        assert [p.message for p in report.problems] == [expected], report.problems
    code, out = run("verify", "--game", "T7-000123", "--no-snapshots")
    assert code == 1 and expected in out, out
    staff = signed_in(create_app({"DATABASE_URL": database_url, "TESTING": True}))
    html = staff.get("/games/T7-000123").get_data(as_text=True)
    assert "Read model differs from the ledger" in html and expected in html
    # Another game's check is not troubled by this case's lines.
    other = sql(
        database_url, "SELECT game_id FROM games WHERE game_id != 'T7-000123' LIMIT 1"
    ).scalar()
    assert verify_read_models(database_url, game_id=other).ok


def test_an_unknown_game_is_an_error_in_every_verify_form(games, database_url):
    import replays.integrity.evidence as integrity

    with pytest.raises(integrity.UnknownGame, match="NO-SUCH-GAME"):
        verify_read_models(database_url, game_id="NO-SUCH-GAME")
    for extra in (("--read-models",), (), ("--no-snapshots",)):
        code, out = run("verify", "--game", "NO-SUCH-GAME", *extra)
        assert code != 0 and "no game NO-SUCH-GAME in the ledger" in out, (extra, out)
    assert run("verify", "--read-models", "--game", games[0])[0] == 0


# -- the audit columns: the same whatever order the solver returns a player's groups in -------
def test_the_audit_does_not_depend_on_the_order_of_a_players_groups(
    games, database_url, monkeypatch
):
    from domain.rummy13.game import Game
    from replays.readmodels.projections import GameProjection, settlement_hash
    from replays.store.application import Ledger

    game_id, _ = settled_game(database_url, games)
    game = Ledger(database_url).get_game(game_id)
    projection = GameProjection(Ledger(database_url))
    as_solved = projection._audit_row(game)
    body = game.recorded_settlement
    grouped = [p for p, line in body["players"].items() if len(line.get("groups") or ()) > 1]
    assert grouped, "no loser with two or more groups among the simulated games"

    # The solver handing back the same groups in the other order (as a warm cache can).
    compute = Game.compute_settlement

    def reversed_groups(self):
        settlement = compute(self)
        for line in settlement.players.values():
            object.__setattr__(line, "groups", tuple(reversed(line.groups)))
        return settlement

    monkeypatch.setattr(Game, "compute_settlement", reversed_groups)
    assert projection._audit_row(game) == as_solved
    assert as_solved["discrepancy"] is False, as_solved
    flipped = {**body, "players": {**body["players"]}}
    player = grouped[0]
    flipped["players"][player] = {
        **body["players"][player],
        "groups": list(reversed(body["players"][player]["groups"])),
    }
    assert settlement_hash(flipped) == settlement_hash(body)


def test_forged_audit_columns_are_found(games, database_url):
    game_id, _ = settled_game(database_url, games)
    sql(
        database_url,
        "UPDATE games SET discrepancy = :t, discrepancy_note = 'forged', "
        "recomputed_hash = :h WHERE game_id = :g",
        t=True,
        h="0" * 64,
        g=game_id,
    )
    report = verify_read_models(database_url)
    fields = sorted(p.message.split(":")[0] for p in report.problems)
    assert fields == ["games.discrepancy", "games.discrepancy_note", "games.recomputed_hash"]
    assert {p.game_id for p in report.problems} == {game_id}


def test_sqlite_read_rows_are_sqlalchemys_value_for_value(sqlite_url):
    # verify reads SQLite's read rows from its cursor with each column's own processor
    # (read_model_checks._sqlite_dicts); they must be the values SQLAlchemy gives, of the
    # same types, forged odd values included (a NULL amount, a fraction of a paisa).
    from replays.readmodels import read_model_checks as checks
    from replays.readmodels.projections import ENTRIES, GAMES, MOVES, RESULTS

    game_ids = store_simulated(sqlite_url)
    game_id, winner = settled_game(sqlite_url, game_ids)
    sql(sqlite_url, "UPDATE games SET gross = NULL, fee = 1 WHERE game_id = :g", g=game_id)
    sql(sqlite_url, "UPDATE player_results SET amount = 123457 WHERE player = :p", p=winner)
    with engine_for(sqlite_url).connect() as connection:
        for table in (GAMES, RESULTS, MOVES, ENTRIES):
            query = sa.select(table).where(table.c.game_id.in_(game_ids))
            reference = sorted(checks._dicts(connection, query), key=_as_text)
            mine = sorted(checks._sqlite_dicts(connection, table, game_ids), key=_as_text)
            assert len(mine) == len(reference) > 0, table.name
            for theirs, ours in zip(reference, mine, strict=True):
                assert list(ours) == list(theirs)
                assert [(type(v), repr(v)) for v in ours.values()] == [
                    (type(v), repr(v)) for v in theirs.values()
                ], table.name


def _as_text(row: dict) -> str:
    return repr(list(row.values()))


def _stored_and_replayed(url):
    """A simulated store's game ids, its read rows as verify reads them on SQLite, and
    each game's events (projected) with the rows ``expected_rows`` gives for them."""
    from domain import variants
    from replays.readmodels import read_model_checks as checks
    from replays.store.schema import EVENTS_TABLE

    game_ids = store_simulated(url)
    ledger = checks.ledger_for(url)
    with engine_for(url).connect() as connection:
        position = checks.projection_position(connection)
        stored = checks._stored_rows(connection, game_ids)
        # On SQLite a game's move rows are read as they are only when looked up (verify
        # settles most from one JSON text a game, read_model_checks._MovesByGame): read
        # here, while the connection is open.
        for game_id in game_ids:
            stored.moves.get(game_id)
        replayed = [
            (rows, checks.expected_rows(ledger, rows))
            for prefix in variants.topic_prefixes()
            for rows in checks._events_by_aggregate(connection, position, EVENTS_TABLE, prefix)
        ]
    return game_ids, stored, replayed


def test_sqlite_rows_settled_in_stored_form_only_where_the_comparison_agrees(sqlite_url):
    # On SQLite verify settles a read row by comparing it, as stored, with the stored
    # form of the row the events give (read_model_checks._SqliteTable.same), and reads it
    # as a dict only when they differ. Every row of an untouched store is settled so,
    # and a row is never settled where the column-by-column comparison finds a difference.
    from datetime import UTC, timedelta, timezone

    from replays.readmodels import read_model_checks as checks

    game_ids, stored, replayed = _stored_and_replayed(sqlite_url)
    settled = 0
    for _, expected in replayed:
        game_id = expected.game_id
        assert stored.games.same(game_id, expected.game)
        for table, computed in (
            (stored.results, expected.results),
            (stored.moves, expected.moves),
            (stored.entries, expected.entries),
        ):
            for key, row in computed.items():
                assert table[game_id].same(key, row), (game_id, key)
                settled += 1
    assert settled > len(game_ids) * 20

    moves = stored.moves[game_ids[0]]
    key, row = next((k, r) for k, r in sorted(moves.items()) if r["at"] is not None)
    base = dict(row)
    at = base["at"].replace(tzinfo=UTC)
    india = timezone(timedelta(hours=5, minutes=30))
    variations = {
        "the same moment elsewhere": {"at": at.astimezone(india)},
        "the same wall clock elsewhere": {"at": at.replace(tzinfo=india)},
        "a naive time": {"at": at.replace(tzinfo=None)},
        "a later time": {"at": at + timedelta(microseconds=1)},
        "a date for a time": {"at": at.date()},
        "a finer rate": {"point_value": base["point_value"] + Decimal("0.0000001")},
        "an equal rate written longer": {
            "point_value": base["point_value"].quantize(Decimal("1.000000"))
        },
        "a float rate": {"point_value": float(base["point_value"])},
        "a flag for a number": {"version": True},
        "a number as text": {"version": str(base["version"])},
        "groups as tuples": {"groups": [("AS", "2S", "3S")]},
        "groups": {"groups": [["AS", "2S", "3S"]]},
        "another player": {"player": "someone else"},
    }
    agreed = set()
    for name, change in variations.items():
        candidate = {**base, "at": at, **change}
        report = Report()
        checks._compare_row(report, "G", "moves", moves[key], candidate)
        if moves.same(key, candidate):
            assert not report.problems, name
            agreed.add(name)
    assert agreed == {"the same moment elsewhere", "a naive time", "an equal rate written longer"}


def test_sqlite_moves_settled_from_their_fields_only_where_the_rows_agree(sqlite_url):
    # A 13-card game's move rows come from the replay as their values (Variant.move_fields,
    # a ...Z time kept as its text) and are settled on SQLite by one comparison with the
    # stored rows (read_model_checks._StoredTable.holds). Their dicts are the rows
    # Variant.move_row gives, and any change to a stored row sends the game to the dicts.
    from domain import variants
    from replays.readmodels import read_model_checks as checks

    game_ids, stored, replayed = _stored_and_replayed(sqlite_url)
    replayer = checks.replayer_for(checks.ledger_for(sqlite_url).mapper)
    games = []
    for rows, expected in replayed:
        if expected.move_fields is None:
            continue
        variant, game, dicts = variants.for_topic(rows[0].topic), None, {}
        for row in rows:
            event = replayer.event(row.originator_id, row.version, row.topic, row.state)
            move = variant.move_row(game, event)
            if move is not None:
                dicts[move["move_index"]] = move
            game = replayer.apply(event, game)
        moves = expected.moves
        assert [(k, list(r.items())) for k, r in moves.items()] == [
            (k, list(r.items())) for k, r in dicts.items()
        ]
        assert all(type(r["at"]) is type(dicts[k]["at"]) for k, r in moves.items())
        assert any(type(f[-1]) is str for f in expected.move_fields)
        assert stored.moves[expected.game_id].holds(expected.move_fields)
        games.append((expected.game_id, expected.move_fields))
    assert len(games) == len(game_ids)

    game_id, fields = games[0]
    table = stored.moves[game_id]
    first = fields[0]
    later = first[-1][:17] + ("00" if first[-1][17:19] != "00" else "01") + first[-1][19:]
    changed = {
        "another time": [(*first[:-1], later), *fields[1:]],
        "another card": [(*first[:5], "ZZ", *first[6:]), *fields[1:]],
        "a row fewer": fields[1:],
        "a row more": [*fields, (*fields[-1][:1], 10_000, *fields[-1][2:])],
        "two rows under one key": [*fields[:-1], (*fields[-1][:1], 0, *fields[-1][2:])],
        "a naive time": [(*first[:-1], checks.parse_time(first[-1]).replace(tzinfo=None))],
    }
    for name, candidate in changed.items():
        assert not table.holds(candidate), name
        # Nor by the game's rows as one JSON text (a naive time has no stored form).
        assert not stored.moves.holds(game_id, candidate), name
    assert all(stored.moves.holds(game, fields) for game, fields in games)
    # The same moment as a datetime is settled as its text is.
    assert table.holds([(*first[:-1], checks.parse_time(first[-1])), *fields[1:]])


def test_a_move_time_is_kept_as_text_only_in_format_times_form():
    from domain.timestamps import parse_time, z_text
    from replays.readmodels.read_model_checks import _read_time

    for text in (
        "2025-03-18T13:59:41Z",
        "2025-03-18T13:59:41.000250Z",
        "2025-03-18T13:59:41.000000Z",
    ):
        assert z_text(text) == text and _read_time(text) == text
    for text in (
        "2025-02-30T13:59:41Z",  # no such day
        "2025-03-18T24:00:00Z",
        "2025-03-18T13:59:41+00:00",
        "2025-03-18 13:59:41Z",
        "2025-03-18T13:59:41.25Z",
        " 2025-03-18T13:59:41Z",
        "2025-03-18T19:29:41+05:30",
        "2025-03-18T13:59:4\u0663Z",  # an Arabic-Indic digit: no ASCII digit
        "2025-03-18T13:59:Z\x00Z",  # which fromisoformat reads up to the NUL
        "2025-03-18T13:59:4\ud800Z",  # a lone surrogate: no UTF-8
    ):
        assert z_text(text) is None
        try:
            moment = parse_time(text)
        except ValueError as error:
            with pytest.raises(ValueError) as found:
                _read_time(text)
            assert str(found.value) == str(error)
        else:
            assert _read_time(text) == moment
    assert z_text(None) is None and _read_time(None) is None


def test_sqlite_batch_texts_settle_a_game_only_where_the_comparison_agrees(sqlite_url):
    # On SQLite verify reads a batch's games row, results and settlement lines as one JSON
    # text a game and settles the game when the text is that of the rows the events give
    # in their stored form (read_model_checks._BatchRows.settles). Every game of an
    # untouched store is settled so, and after any edit of a read row a game is settled
    # only where the comparison column by column (read_model_checks.compare_game on the
    # rows read as before) finds nothing.
    import dataclasses
    import math

    from domain import variants
    from replays.readmodels import read_model_checks as checks
    from replays.store.schema import EVENTS_TABLE

    game_ids = store_simulated(sqlite_url)
    game_id, winner = settled_game(sqlite_url, game_ids)
    ledger = checks.ledger_for(sqlite_url)
    edits = {
        "gross": "UPDATE games SET gross = gross + 1 WHERE game_id = :g",
        "gross as a float": "UPDATE games SET gross = gross + 0.5 WHERE game_id = :g",
        "no winner": "UPDATE games SET winner = NULL WHERE game_id = :g",
        "a flag": "UPDATE games SET discrepancy = 2 WHERE game_id = :g",
        "a day": "UPDATE games SET ended_on = '2001-01-01' WHERE game_id = :g",
        "a time": "UPDATE games SET started_at = '2001-01-01 00:00:00.000000' WHERE game_id = :g",
        "a time written otherwise": "UPDATE games SET started_at = replace(started_at, ' ', 'T') "
        "WHERE game_id = :g",
        "players spaced otherwise": "UPDATE games SET players = json(players) WHERE game_id = :g",
        "a note": "UPDATE games SET discrepancy_note = 'x' WHERE game_id = :g",
        "an amount": "UPDATE player_results SET amount = amount + 1 WHERE game_id = :g "
        "AND player = :w",
        "a seat as text": "UPDATE player_results SET seat = 'one' WHERE game_id = :g",
        "a result row fewer": "DELETE FROM player_results WHERE game_id = :g AND player = :w",
        "a result row more": "INSERT INTO player_results SELECT game_id, 'zz', seat, result, "
        "points, point_value, amount, hand_score, min_score, scoring_case, ended_at_round "
        "FROM player_results WHERE game_id = :g AND player = :w",
        "a debit": "UPDATE ledger_entries SET debit = debit + 1 WHERE game_id = :g AND line = 1",
        "an account": "UPDATE ledger_entries SET account = 'x' WHERE game_id = :g AND line = 1",
        "a line fewer": "DELETE FROM ledger_entries WHERE game_id = :g AND line = 1",
        "a line twice": "INSERT INTO ledger_entries (game_id, dispute_id, kind, line, account, "
        "player, debit, credit, currency, posted_at, posted_on) SELECT game_id, dispute_id, "
        "kind, line, account, player, debit, credit, currency, posted_at, posted_on FROM "
        "ledger_entries WHERE game_id = :g AND line = 1",
        "a line moved to the end": "UPDATE ledger_entries SET id = id + 1000000 WHERE "
        "game_id = :g AND line = 1",
        "a line a dispute's": "UPDATE ledger_entries SET dispute_id = 'd' WHERE game_id = :g "
        "AND line = 1",
        "a line's day": "UPDATE ledger_entries SET posted_on = NULL WHERE game_id = :g",
        "another game's line": "UPDATE ledger_entries SET game_id = :o WHERE game_id = :g "
        "AND line = 1",
    }
    other = next(g for g in game_ids if g != game_id)
    with engine_for(sqlite_url).connect() as connection:
        position = checks.projection_position(connection)
        replayed = {}
        for prefix in variants.topic_prefixes():
            for rows in checks._events_by_aggregate(connection, position, EVENTS_TABLE, prefix):
                expected = checks.expected_rows(ledger, rows)
                replayed[expected.game_id] = expected
        batch = checks._batch_rows(connection, game_ids)
        assert isinstance(batch, checks._BatchRows)
        assert all(batch.settles(replayed[g]) for g in game_ids)
        # No float has a form: orjson writes NaN as null, as SQLite writes a NULL.
        unsure = dataclasses.replace(
            replayed[game_id], game={**replayed[game_id].game, "discrepancy_note": math.nan}
        )
        report = Report()
        checks.compare_game(report, unsure, checks._stored_rows(connection, [game_id]))
        assert report.problems and not batch.settles(unsure)
        found = {}
        connection.rollback()  # each edit in a transaction of its own, undone
        for name, edit in edits.items():
            connection.execute(sa.text(edit), {"g": game_id, "w": winner, "o": other})
            report = Report()
            stored = checks._stored_rows(connection, [game_id, other])
            checks.compare_game(report, replayed[game_id], stored)
            batch = checks._batch_rows(connection, [game_id, other])
            settled = batch.settles(replayed[game_id])
            found[name] = bool(report.problems)
            assert not (settled and report.problems), name
            # As compare_game does with the texts: the same findings, in order.
            again = Report()
            checks.compare_game(again, replayed[game_id], batch)
            assert [p.message for p in again.problems] == [p.message for p in report.problems], name
            connection.rollback()
    # Most edits are findings (a settlement line twice too: a payout paid twice); the rest
    # leave rows that read back equal.
    assert {name for name, finding in found.items() if not finding} == {
        "players spaced otherwise",
        "a time written otherwise",
        "a line moved to the end",
    }
