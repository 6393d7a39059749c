"""`rummy-ledger demo` (what `make run` calls): a fresh database filled once, then reused."""

from __future__ import annotations

from click.testing import CliRunner

from replays.demo import create_demo_accounts, prepare_demo, stored_games
from replays.store.application import Ledger
from web.cli import main


def test_fresh_database_is_migrated_and_filled_then_reused(sqlite_url):
    assert stored_games(sqlite_url) == 0  # no tables yet: a fresh clone
    first = prepare_demo(sqlite_url, games=10, echo=lambda _: None)
    assert (first.games_before, first.games_after, first.reused) == (0, 10, False)
    assert any("stored 10 games" in line for line in first.stored)
    ids = Ledger(sqlite_url).list_game_ids()
    assert len(ids) == 10

    said: list[str] = []
    second = prepare_demo(sqlite_url, games=10, echo=said.append)
    assert second.reused and second.games_after == 10
    assert said == ["Reusing the demo database: 10 games already stored."]
    assert Ledger(sqlite_url).list_game_ids() == ids


def test_an_interrupted_demo_is_topped_up_with_the_same_games(sqlite_url):
    prepare_demo(sqlite_url, games=6, echo=lambda _: None)
    before = Ledger(sqlite_url).list_game_ids()
    setup = prepare_demo(sqlite_url, games=9, echo=lambda _: None)
    assert any("stored 3 games (6 already recorded)" in line for line in setup.stored)
    after = Ledger(sqlite_url).list_game_ids()
    assert after[:6] == before and len(after) == 9


def test_demo_games_reach_the_read_models_and_the_site(sqlite_url):
    prepare_demo(sqlite_url, games=5, echo=lambda _: None)
    from auth_support import signed_in

    from web import create_app

    client = signed_in(create_app({"DATABASE_URL": sqlite_url, "TESTING": True}))
    page = client.get("/games")
    assert page.status_code == 200
    game_id = Ledger(sqlite_url).list_game_ids()[0]
    assert game_id in page.get_data(as_text=True)


def test_demo_command_prepares_then_serves(sqlite_url, monkeypatch, tmp_path):
    monkeypatch.setenv("RUMMY_LEDGER_KEY_DIR", str(tmp_path / "keys"))
    served = {}

    def fake_run_simple(host, port, app, **options):
        served.update(host=host, port=port, app=app)

    monkeypatch.setattr("werkzeug.serving.run_simple", fake_run_simple)
    result = CliRunner().invoke(main, ["demo", "--games", "4", "--port", "5077"])
    assert result.exit_code == 0, result.output
    assert "Simulating 4 demo games" in result.output
    assert "stored 4 games" in result.output
    assert "Demo accounts (role, user, password):" in result.output
    for role in ("player", "auditor", "dispute_officer", "admin"):
        assert role in result.output
    assert (served["host"], served["port"]) == ("127.0.0.1", 5077)
    assert served["app"].config["DATABASE_URL"] == sqlite_url

    again = CliRunner().invoke(main, ["demo", "--games", "4", "--no-serve"])
    assert again.exit_code == 0, again.output
    # The 4 simulated games and the demo's deccan game (replays/demo.py, DECCAN_GAME).
    assert "stored a deccan game" in result.output
    assert "Reusing the demo database: 5 games already stored." in again.output
    assert "Signed checkpoint" not in again.output  # nothing new to sign


def test_demo_signs_a_checkpoint_so_its_games_verify(sqlite_url, monkeypatch, tmp_path):
    from replays.demo import checkpoint_demo
    from replays.integrity.evidence import VERIFIED, integrity_verdict

    monkeypatch.setenv("RUMMY_LEDGER_KEY_DIR", str(tmp_path / "keys"))
    setup = prepare_demo(sqlite_url, games=3, echo=lambda _: None)
    game_id = Ledger(sqlite_url).list_game_ids()[0]
    assert integrity_verdict(sqlite_url, game_id).status != VERIFIED
    line = checkpoint_demo(setup)
    assert line and line.startswith("Signed checkpoint over ")
    assert (tmp_path / "keys" / "signing-key.pem").exists()
    assert integrity_verdict(sqlite_url, game_id).status == VERIFIED


def test_demo_accounts_one_per_role_linked_and_idempotent(sqlite_url):
    from replays.access import accounts

    prepare_demo(sqlite_url, games=3, echo=lambda _: None)
    made = create_demo_accounts(sqlite_url)
    assert [account.role for account in made] == list(accounts.ROLES)
    for account in made:
        signed_in = accounts.authenticate(
            account.username, account.password, remote_addr="127.0.0.1", url=sqlite_url
        )
        assert signed_in.role == account.role
    player = accounts.find_user("demo-player", url=sqlite_url)
    assert (
        player.player_id
        in Ledger(sqlite_url).get_game(Ledger(sqlite_url).list_game_ids()[0]).config.players
    )
    again = create_demo_accounts(sqlite_url)
    assert again == made
    assert len(accounts.list_users(url=sqlite_url)) == len(accounts.ROLES)


def test_demo_seeds_dispute_cases_once(sqlite_url):
    import sqlalchemy as sa

    from replays.demo import seed_dispute_cases
    from replays.disputes.projection import CASES
    from replays.store.db import engine_for

    prepare_demo(sqlite_url, games=40, echo=lambda _: None)
    made = seed_dispute_cases(sqlite_url)
    assert len(made) >= 3
    with engine_for(sqlite_url).connect() as connection:
        rows = connection.execute(sa.select(CASES)).mappings().all()
    assert {row["case_id"] for row in rows} == set(made)
    assert any(row["status"] == "open" for row in rows)
    assert any(row["decision"] == "rejected" for row in rows)
    adjusted = [row for row in rows if row["decision"] == "adjusted"]
    assert adjusted and all(row["amount"] is not None for row in adjusted)
    from replays.readmodels.models import PlayerResultRow

    with engine_for(sqlite_url).connect() as connection:
        wrong_shows = connection.execute(
            sa.select(PlayerResultRow.game_id).where(PlayerResultRow.result == "wrong_show")
        ).all()
    if wrong_shows:  # the fourth case contests a wrong show, at its declaration
        assert any(row["game_id"] in {g for (g,) in wrong_shows} for row in rows)
        assert len(made) == 4
    assert seed_dispute_cases(sqlite_url) == []  # a second run adds nothing


def test_the_demo_has_pool_and_deals_tables_among_its_games(sqlite_url):
    from domain import variants
    from replays.demo import demo_variants

    assert {"pool", "deals"} <= set(demo_variants())
    prepare_demo(sqlite_url, games=6, echo=lambda _: None)
    ledger = Ledger(sqlite_url)
    played = {variants.for_game(ledger.get_game(g)).name for g in ledger.list_game_ids()}
    assert {"pool", "deals"} <= played, played
