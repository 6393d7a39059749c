"""`rummy-ledger serve` and `flask --app web run` both serve the site over real HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from auth_support import http_opener
from web_support import load_games

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def fetch(url: str, timeout: float = 20.0, opener=None) -> tuple[int, str]:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with (opener or urllib.request.build_opener()).open(url, timeout=5) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


@pytest.fixture(scope="module")
def filled_url(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('serve') / 'ledger.sqlite3'}"
    load_games(url)
    return url


@pytest.mark.parametrize("how", ["rummy-ledger serve", "flask run"])
def test_the_site_is_served(filled_url, how):
    port = free_port()
    if how == "rummy-ledger serve":
        command = [sys.executable, "-c", "from web.cli import main; main()", "serve"]
        command += ["--host", "127.0.0.1", "--port", str(port)]
    else:
        command = [sys.executable, "-m", "flask", "--app", "web", "run", "--port", str(port)]
    # Plain HTTP on loopback: `serve` turns Secure cookies off itself, `flask run` is told.
    env = dict(os.environ, RUMMY_LEDGER_DATABASE_URL=filled_url)
    if how == "flask run":
        env["RUMMY_LEDGER_SECURE_COOKIES"] = "0"
    server = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        base = f"http://127.0.0.1:{port}"
        assert fetch(base + "/healthz")[0] == 200
        signed_in = http_opener(base, filled_url)
        status, page = fetch(base + "/games/T7-000123/replay?move=3", opener=signed_in)
        assert status == 200 and "p2 drops" in page
        status, page = fetch(base + "/games/T7-000123/replay?move=99", opener=signed_in)
        assert status == 400 and "there is no move 99" in page
    finally:
        server.terminate()
        output = server.communicate(timeout=10)[0]
    if how == "rummy-ledger serve":
        assert f"Rummy Ledger on http://127.0.0.1:{port}/" in output
