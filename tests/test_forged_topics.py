"""A stored topic never imports code (issue 29): rows forged with the topics of real
installed modules are findings of `verify` and of the pages that read them, and the
modules they name are not imported.

The store is read in a fresh interpreter (a subprocess), so that ``sys.modules`` shows
exactly what reading it imported.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import sqlalchemy as sa
from web_support import load_games, sample_records

from replays.integrity.store import id_param, raw_id
from replays.store.db import engine_for

TESTS = Path(__file__).parent
# Installed modules that nothing in the ledger imports, and a project module that is no event.
FORGED = {
    "this:s": "this",
    "antigravity:x": "antigravity",
    "os:system": None,  # always imported; what matters is that it is refused
    "bench.verify:main": "bench.verify",
}

READER = r"""
import json, sys
sys.path.insert(0, sys.argv[2])
from replays.integrity.evidence import verify_store
from web import create_app
from auth_support import signed_in

url, games = sys.argv[1], json.loads(sys.argv[3])
report = verify_store(url)
results = {"problems": [str(p) for p in report.problems], "pages": {}}
client = signed_in(create_app({"DATABASE_URL": url, "TESTING": True}))
for game in games:
    for page in ("audit", "audit.json", "replay"):
        response = client.get(f"/games/{game}/{page}")
        results["pages"][f"{game}/{page}"] = response.status_code
one = verify_store(url, game_id=games[0])
results["game_problems"] = [str(p) for p in one.problems]
results["modules"] = sorted(m for m in ("this", "antigravity", "webbrowser", "bench.verify") if m in sys.modules)
print(json.dumps(results))
"""


def _forge(url: str, games: list[str]) -> None:
    """Each forged topic replaces the topic of the third event of one game."""
    with engine_for(url).begin() as connection:
        for game, topic in zip(games, FORGED, strict=True):
            originator = connection.execute(
                sa.text("SELECT originator_id FROM integrity_games WHERE game_id = :g"),
                {"g": game},
            ).scalar_one()
            connection.execute(
                sa.text(
                    "UPDATE ledger_events SET topic = :t "
                    "WHERE originator_id = :o AND originator_version = 3"
                ),
                {"t": topic, "o": id_param(connection, raw_id(originator))},
            )


def _read_in_a_fresh_interpreter(reader: str, database_url: str, *args) -> tuple[dict, str]:
    """Run ``reader`` (argv: the URL, the tests' folder, ``args``) in a fresh interpreter and
    return what it printed last, as JSON, and its standard error; it must have imported none
    of the forged modules (its ``modules``), nor run ``this``."""
    env = dict(os.environ, RUMMY_LEDGER_DATABASE_URL=database_url)
    done = subprocess.run(
        [sys.executable, "-c", reader, database_url, str(TESTS), *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=TESTS.parent,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    assert results["modules"] == [], results["modules"]
    assert "The Zen of Python" not in done.stdout + done.stderr
    return results, done.stderr


def test_forged_topics_are_findings_and_import_nothing(database_url):
    load_games(database_url)
    games = [r["game_id"] for r in sample_records()][: len(FORGED)]
    _forge(database_url, games)
    results, _ = _read_in_a_fresh_interpreter(READER, database_url, json.dumps(games))
    for game, topic in zip(games, FORGED, strict=True):
        named = [
            p
            for p in results["problems"]
            if p.startswith(f"game {game}, event 3: unreadable")
            and f"ledger_events: unknown topic {topic!r}" in p
        ]
        assert named, (game, topic, results["problems"])
    assert any("unknown topic 'this:s'" in p for p in results["game_problems"])


# -- a topic inside an event's state ---------------------------------------------------------
STATE_READER = r"""
import json, sys
sys.path.insert(0, sys.argv[2])
from replays.integrity.evidence import verify_store
from replays.integrity.incremental import verify_since
from replays.integrity.signing import Checkpoint
from web import create_app
from auth_support import signed_in

url, games, state = sys.argv[1], json.loads(sys.argv[3]), sys.argv[4]
results = {"problems": [str(p) for p in verify_store(url).problems], "pages": {}}
kept = Checkpoint.load(state + "/checkpoint.json")
results["since"] = [str(p) for p in verify_since(url, kept, state)[0].problems]
client = signed_in(create_app({"DATABASE_URL": url, "TESTING": True}))
for game in games:
    for page in ("audit", "replay"):
        results["pages"][f"{game}/{page}"] = client.get(f"/games/{game}/{page}").status_code
results["modules"] = sorted(m for m in ("this", "antigravity", "webbrowser", "bench.verify") if m in sys.modules)
print(json.dumps(results))
"""


def test_forged_state_topics_are_findings_and_import_nothing(database_url, keys, tmp_path):
    """A game's first event names the class it creates (``originator_topic``, which the
    library resolves): forged in the state and resealed by an insider, it is a finding of
    `verify`, of `verify --since` and of the replay page, and imports nothing."""
    from click.testing import CliRunner
    from test_resealed_edit import edit_event, reseal_seal_and_chain

    from web.cli import main

    load_games(database_url)
    games = [r["game_id"] for r in sample_records()][: len(FORGED)]
    kept, state = tmp_path / "kept.json", tmp_path / "state"
    for args in (["checkpoint", "--out", kept], ["verify", "--since", kept, "--state", state]):
        result = CliRunner().invoke(main, [str(a) for a in args])
        assert result.exit_code == 0, result.output
    for game, topic in zip(games, FORGED, strict=True):
        edit_event(database_url, game, 1, lambda s, t=topic: s.__setitem__("originator_topic", t))
        reseal_seal_and_chain(database_url, game)
    results, stderr = _read_in_a_fresh_interpreter(
        STATE_READER, database_url, json.dumps(games), state
    )
    assert not any("stopped early" in p for p in results["problems"] + results["since"])
    for game, topic in zip(games, FORGED, strict=True):
        for run in ("problems", "since"):
            named = [
                p
                for p in results[run]
                if p.startswith(f"game {game}, event 1: ")
                and f"unknown topic {topic!r} (its state's originator_topic)" in p
            ]
            assert named, (run, game, topic, results[run])
        assert results["pages"][f"{game}/replay"] == 200
    assert f"unknown topic {next(iter(FORGED))!r}" in stderr  # the replay page's warning
