"""Fuzzing the ingest API with random and mutated headers, moves and bodies: every answer is a
documented status with a JSON error that says what is wrong (never a 500), a refused
request stores nothing, and the games already recorded never change."""

from __future__ import annotations

import copy
import itertools
import json

import pytest
from api_support import check_response, header_of, make_app
from fuzz_support import (
    FUZZ_SETTINGS,
    assert_untouched,
    json_values,
    mutated_records,
    sample_records,
    store_fingerprint,
)
from hypothesis import event, given
from hypothesis import strategies as st

from replays.access import tokens

RECORDS = sample_records()
LIVE_GAMES = itertools.count(1)
ERRORS = (400, 404, 409, 422)


@pytest.fixture(scope="module")
def api(tmp_path_factory):
    from web_support import load_games

    url = f"sqlite:///{tmp_path_factory.mktemp('fuzz-api') / 'ledger.sqlite3'}"
    load_games(url, RECORDS)
    app = make_app(url, API_FOLLOW_WRITES=False)
    token = tokens.create_token("fuzzer", url=url).token
    return url, app.test_client(), {"Authorization": f"Bearer {token}"}


def post(client, headers, path: str, body) -> tuple[int, dict]:
    data = body if isinstance(body, bytes | str) else json.dumps(body)
    response = client.post(path, data=data, headers={**headers, "Content-Type": "application/json"})
    assert response.status_code != 500, response.get_data(as_text=True)
    assert response.is_json, response.get_data(as_text=True)[:300]
    answer = response.get_json()
    if response.status_code in ERRORS:
        assert isinstance(answer["error"], str) and answer["error"].strip()
        assert "Traceback" not in answer["error"]
    return response.status_code, answer


headers_strategy = st.one_of(
    mutated_records(RECORDS).map(header_of),
    json_values,
    st.binary(max_size=64),
)


@FUZZ_SETTINGS
@given(body=headers_strategy)
def test_random_and_mutated_game_headers(api, body):
    url, client, headers = api
    before = store_fingerprint(url)
    status, answer = post(client, headers, "/api/v1/games", body)
    event(str(status))
    after = store_fingerprint(url)
    assert_untouched(before, after)
    new = set(after) - set(before)
    if status == 201:
        check_response("POST", "/games", status, answer)
        assert len(new) <= 1  # a retried identical header stores nothing new
    else:
        assert status in ERRORS, status
        check_response("POST", "/games", status, answer)
        assert not new


moves_strategy = st.lists(
    st.tuples(
        st.sampled_from(["as recorded", "as recorded", "as recorded", "mutated", "random"]),
        json_values,
        st.sampled_from(["same seq", "same seq", "same seq", "repeat", "skip", "odd seq"]),
    ),
    min_size=1,
    max_size=30,
)


@FUZZ_SETTINGS
@given(
    record=st.sampled_from(RECORDS),
    plan=moves_strategy,
    noise=st.data(),
)
def test_a_live_game_fed_mutated_moves(api, record, plan, noise):
    """Moves posted one by one, some changed, repeated, skipped or junk: each refused move
    leaves the game as it was, and the game only ever holds moves that were accepted."""
    url, client, headers = api
    header = header_of(copy.deepcopy(record))
    header["game_id"] = f"FZ-live-{next(LIVE_GAMES)}"  # a new game every example
    status, _ = post(client, headers, "/api/v1/games", header)
    assert status == 201
    moves = record["moves"]
    accepted: list[dict] = []
    for step, (how, junk, seq_how) in enumerate(plan):
        index = len(accepted)
        if index >= len(moves):
            break
        move = dict(moves[index])
        if how == "mutated":
            key = noise.draw(st.sampled_from([*move, "type", "card", "player", "extra"]))
            move[key] = junk
        elif how == "random":
            move = junk if isinstance(junk, dict) else {"value": junk}
        seq = {
            "same seq": index,
            "repeat": max(0, index - 1),
            "skip": index + 1,
            "odd seq": junk,
        }[seq_how]
        body = {**move, "seq": seq} if isinstance(move, dict) else move
        before = store_fingerprint(url)
        status, answer = post(client, headers, f"/api/v1/games/{header['game_id']}/moves", body)
        event(f"move {status}")
        after = store_fingerprint(url)
        check_response("POST", "/games/{game_id}/moves", status, answer)
        new_move = type(seq) is int and seq == index
        if status == 201 and new_move:
            accepted.append({k: v for k, v in body.items() if k != "seq"})
            continue
        # Anything else (a retry of an earlier seq included) records nothing.
        assert after == before, f"step {step}: {status} {answer} changed the store"
    view = client.get(f"/api/v1/games/{header['game_id']}", headers=headers)
    assert view.status_code == 200
    check_response("GET", "/games/{game_id}", 200, view.get_json())
    from replays.store.application import Ledger

    stored = Ledger(url).get_game(header["game_id"]).moves
    assert len(stored) == len(accepted)


@FUZZ_SETTINGS
@given(
    game_id=st.sampled_from([r["game_id"] for r in RECORDS]),
    seq=st.one_of(st.integers(min_value=-3, max_value=200), json_values),
    move=json_values,
)
def test_recorded_games_never_change(api, game_id, seq, move):
    url, client, headers = api
    before = store_fingerprint(url)
    body = {**move, "seq": seq} if isinstance(move, dict) else {"seq": seq, "value": move}
    status, answer = post(client, headers, f"/api/v1/games/{game_id}/moves", body)
    assert status in (201, *ERRORS), status
    check_response("POST", "/games/{game_id}/moves", status, answer)
    settled = post(client, headers, f"/api/v1/games/{game_id}/settle", move)
    assert settled[0] in (200, *ERRORS)
    assert store_fingerprint(url) == before


def test_hostile_bodies(api):
    url, client, headers = api
    before = store_fingerprint(url)
    for path in (
        "/api/v1/games",
        "/api/v1/games/T7-000123/moves",
        "/api/v1/games/T7-000123/settle",
    ):
        for body in (
            "[" * 50_000 + "]" * 50_000,
            '{"seq": 1e999}',
            b"\xff\xfe\x00",
            '{"seq": 0, "player": "' + "p" * 100_000 + '"}',
            "null",
        ):
            status, _answer = post(client, headers, path, body)
            # Settling a settled game again, with no figures (null), just shows it.
            allowed = (200, *ERRORS) if path.endswith("/settle") and body == "null" else ERRORS
            assert status in allowed, (path, body[:20], status)
    assert store_fingerprint(url) == before
