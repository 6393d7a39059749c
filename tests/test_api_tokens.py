"""Operator API tokens: shown once, stored as a hash, revocable (SQLite and PostgreSQL)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from replays.access import tokens
from replays.store.db import engine_for
from web.cli import main


@pytest.fixture
def token_db(database_url):
    from api_support import ensure_schema

    ensure_schema(database_url)
    return database_url


def test_a_created_token_authenticates_and_only_its_hash_is_stored(token_db):
    issued = tokens.create_token("acme-games")
    info = tokens.authenticate(issued.token)
    assert info is not None and info.operator == "acme-games" and info.active
    with engine_for(token_db).connect() as conn:
        rows = conn.execute(sa.text("SELECT * FROM api_tokens")).mappings().all()
    assert len(rows) == 1
    stored = " ".join(str(value) for value in rows[0].values())
    assert issued.token not in stored
    # The secret is everything after the id: token_urlsafe may put "_" anywhere in it,
    # even first (split without a limit once gave "", which is in every text).
    assert issued.token.split("_", 2)[2] not in stored
    assert rows[0]["token_hash"] == tokens.token_hash(issued.token)


def test_wrong_malformed_and_revoked_tokens_are_refused(token_db):
    issued = tokens.create_token("acme")
    other = tokens.create_token("acme")
    assert tokens.authenticate(None) is None
    assert tokens.authenticate("") is None
    assert tokens.authenticate(issued.token + "x") is None
    assert tokens.authenticate("Bearer " + issued.token) is None
    tokens.revoke_token(issued.token_id)
    assert tokens.authenticate(issued.token) is None
    assert tokens.authenticate(other.token) is not None  # revoking one leaves the other
    tokens.revoke_operator("acme")
    assert tokens.authenticate(other.token) is None
    assert [t.active for t in tokens.list_tokens(operator="acme")] == [False, False]


def test_bad_operator_names_and_unknown_ids_are_clear_errors(token_db):
    with pytest.raises(tokens.TokenError, match="not an operator name"):
        tokens.create_token("Ravi Kumar <ravi@example.com>")
    with pytest.raises(tokens.TokenError, match="no token with id 'nope'"):
        tokens.revoke_token("nope")


def test_tokens_cli_prints_the_token_once_then_revokes_it(token_db):
    runner = CliRunner()
    created = runner.invoke(main, ["tokens", "create", "acme"])
    assert created.exit_code == 0, created.output
    token = created.stdout.strip().splitlines()[-1]
    info = tokens.authenticate(token)
    assert info is not None and info.operator == "acme"
    listed = runner.invoke(main, ["tokens", "list"])
    assert info.token_id in listed.output and "active" in listed.output
    assert token not in listed.output
    revoked = runner.invoke(main, ["tokens", "revoke", info.token_id])
    assert revoked.exit_code == 0 and "revoked" in revoked.output
    assert tokens.authenticate(token) is None
    unknown = runner.invoke(main, ["tokens", "revoke", "ffffffffffff"])
    assert unknown.exit_code == 1 and "no token with id" in unknown.output
    assert "Traceback" not in unknown.output


def test_tokens_cli_without_a_table_says_to_migrate(sqlite_url):
    result = CliRunner().invoke(main, ["tokens", "create", "acme"])
    assert result.exit_code == 1
    assert "db upgrade" in result.output


def _corrupt_token(url: str, token_id: str, column: str, value: str) -> None:
    from corruption_support import corrupt_one

    corrupt_one(url, "api_tokens", ("token_id", token_id), column, value)


@pytest.mark.parametrize(("column", "value"), [("revoked_at", ""), ("created_at", "zzz")])
def test_a_token_row_holding_a_wrong_value_is_refused_named_and_leaves_the_rest(
    token_db, column, value
):
    """The API answered 500 to that token and `tokens list` ended in a traceback: the token
    is refused with a 401 that says why (fail closed: its revocation cannot be read), the
    other tokens still work, and the listing names the row and lists the rest (exit 1)."""
    from web import create_app

    bad, good = tokens.create_token("acme"), tokens.create_token("other")
    _corrupt_token(token_db, bad.token_id, column, value)
    client = create_app({"DATABASE_URL": token_db, "TESTING": True}).test_client()

    def get(token: str):
        return client.get("/api/v1/games/NOPE-1", headers={"Authorization": f"Bearer {token}"})

    refused = get(bad.token)
    assert refused.status_code == 401, refused.get_data(as_text=True)
    assert "stored row cannot be read" in refused.get_json()["error"]
    assert get(good.token).status_code == 404  # the other token still reaches the API
    listed = CliRunner().invoke(main, ["tokens", "list"])
    assert listed.exit_code == 1, listed.output
    assert "Traceback" not in listed.output
    assert good.token_id in listed.stdout and bad.token_id not in listed.stdout
    assert f"unreadable: api_tokens token_id='{bad.token_id}'" in listed.stderr, listed.output
    assert f"{column} holds '{value}'" in listed.stderr, listed.output


def test_a_token_whose_revocation_cannot_be_read_is_revoked_all_the_same(token_db):
    """`tokens revoke` ended in a traceback on a token whose revoked_at held '': the token is
    revoked (its revocation reads back), the value named on stderr, and no other token is
    touched."""
    bad, good = tokens.create_token("acme"), tokens.create_token("acme")
    _corrupt_token(token_db, bad.token_id, "revoked_at", "")
    result = CliRunner().invoke(main, ["tokens", "revoke", bad.token_id])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert f"revoked token {bad.token_id}" in result.stdout
    assert f"unreadable: api_tokens token_id='{bad.token_id}': revoked_at holds ''" in (
        result.stderr
    )
    assert tokens.authenticate(bad.token) is None
    assert tokens.authenticate(good.token) is not None
    revoked = {t.token_id: t.active for t in tokens.list_tokens()}
    assert revoked == {bad.token_id: False, good.token_id: True}


def test_revoking_an_operators_tokens_revokes_one_whose_creation_cannot_be_read(token_db):
    """`tokens revoke --operator` read every token of the operator through its row: one
    whose created_at held 'zzz' ended the command in a traceback with nothing revoked. All
    the operator's tokens are revoked, the value named on stderr; no other operator's."""
    bad, good = tokens.create_token("acme"), tokens.create_token("acme")
    other = tokens.create_token("other")
    _corrupt_token(token_db, bad.token_id, "created_at", "zzz")
    result = CliRunner().invoke(main, ["tokens", "revoke", "--operator", "acme"])
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert "revoked 2 token(s) of acme" in result.stdout
    assert f"unreadable: api_tokens token_id='{bad.token_id}': created_at holds 'zzz'" in (
        result.stderr
    )
    with engine_for(token_db).connect() as connection:
        active = connection.execute(
            sa.text("SELECT token_id FROM api_tokens WHERE revoked_at IS NULL")
        ).scalars()
        assert set(active) == {other.token_id}
    assert tokens.authenticate(good.token) is None
    assert tokens.authenticate(other.token) is not None
