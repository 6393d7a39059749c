"""schemathesis against the live API (issue 29): ``st run --checks all`` with its examples,
coverage, fuzzing and stateful phases, over real HTTP on loopback, with an operator token,
on SQLite and PostgreSQL. It must find no failure and reach every operation of the
contract; the server records what it answered so that "reached" is checked, not assumed.

Bounded by ``--max-examples`` (15 an operation and phase) and ``--max-time`` (30 s): about
40 s an engine.

What ``positive_data_acceptance`` expects of a body the schema calls valid is widened to
what the contract documents for such a body: 422 when it breaks a rule of play (a move that
is not this player's turn, a deal that is not the decks' cards), 400 for what JSON Schema
cannot say (a player named who is not seated, a 13-card move posted to a Red 3 match: the
moves body is one schema for every game type), 404 for a game that is not there and 409 for
a seq already taken. Everything else schemathesis checks is checked as it ships.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

from api_support import make_app, openapi_document
from werkzeug.serving import make_server

from replays.access import tokens

ST = Path(sys.executable).with_name("st")
CONFIG = """\
[checks.positive_data_acceptance]
expected-statuses = ["2xx", "400", "404", "409", "422"]
"""


class Recorder:
    """WSGI middleware noting (method, url rule, status) of every answer."""

    def __init__(self, wsgi_app, url_map):
        self.wsgi_app = wsgi_app
        self.url_map = url_map
        self.seen: Counter = Counter()
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        adapter = self.url_map.bind_to_environ(environ)
        try:
            rule, _args = adapter.match(return_rule=True)
            template = rule.rule
        except Exception:  # unknown path or method: counted apart
            template = None

        def recording(status, headers, exc_info=None):
            with self.lock:
                self.seen[(environ["REQUEST_METHOD"], template, int(status[:3]))] += 1
            return start_response(status, headers, exc_info)

        return self.wsgi_app(environ, recording)


def test_schemathesis_finds_no_failure_and_reaches_every_operation(database_url, tmp_path):
    app = make_app(database_url, API_FOLLOW_WRITES=False)
    recorder = app.wsgi_app = Recorder(app.wsgi_app, app.url_map)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    token = tokens.create_token("acme-schemathesis", url=database_url).token
    # Read from the working directory, as `st` reads a project's schemathesis.toml.
    (tmp_path / "schemathesis.toml").write_text(CONFIG)
    report = tmp_path / "report.json"
    try:
        run = subprocess.run(
            [
                str(ST),
                "run",
                f"http://127.0.0.1:{server.server_port}/api/v1/openapi.json",
                "--checks",
                "all",
                "--phases",
                "examples,coverage,fuzzing,stateful",
                "--max-examples",
                "15",
                "--max-time",
                "30",
                "--workers",
                "1",
                "--seed",
                "29",
                "--no-shrink",
                "--request-timeout",
                "30",
                "--header",
                f"Authorization: Bearer {token}",
                "--report",
                "json",
                "--report-json-path",
                str(report),
            ],
            capture_output=True,
            text=True,
            timeout=240,
            cwd=tmp_path,
            env={**os.environ, "NO_COLOR": "1"},
        )
    finally:
        server.shutdown()
        thread.join(timeout=10)
    output = run.stdout + run.stderr
    assert run.returncode == 0, output[-6000:]

    # Every operation of the contract was reached with a token and answered by its own
    # handler: at least one answer that is neither 401 nor a routing 404/405.
    seen = recorder.seen
    for path, operations in openapi_document()["paths"].items():
        rule = "/api/v1" + path.replace("{game_id}", "<game_id>").replace("{name}", "<name>")
        for method in operations:
            answers = {
                status: n for (m, r, status), n in seen.items() if m == method.upper() and r == rule
            }
            assert any(status not in (401,) for status in answers), (method, path, answers)
    # The walk went past the doors: a game was started, moved, looked at and closed.
    statuses = {(m, r): set() for (m, r, _s) in seen}
    for (m, r, s), _n in seen.items():
        statuses[(m, r)].add(s)
    assert 201 in statuses[("POST", "/api/v1/games")]
    assert 201 in statuses[("POST", "/api/v1/games/<game_id>/moves")]
    assert 200 in statuses[("GET", "/api/v1/games/<game_id>")]
    assert statuses[("POST", "/api/v1/games/<game_id>/settle")] - {401, 404}
    assert not any(s >= 500 for (_m, _r, s) in seen), sorted(seen)
    assert json.loads(report.read_text())
