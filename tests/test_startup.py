"""Start-up: `rummy-ledger --help` and `rummy-ledger hand` import only what they use.

Speed itself is measured in bench/startup.py (whole processes, against `python -c pass`);
these tests guard the cause of a slow start instead: which modules a fresh process imports.
Flask, SQLAlchemy and eventsourcing alone took most of the 0.7 s every command used to
spend before doing anything.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from web.cli import COMMANDS, load_command, main

ROOT = Path(__file__).resolve().parent.parent
# Packages that only the commands touching the database or the site need.
HEAVY = (
    "flask",
    "werkzeug",
    "jinja2",
    "sqlalchemy",
    "alembic",
    "eventsourcing",
    "eventsourcing_sqlalchemy",
    "psycopg",
    "cryptography",
    "orjson",
    "pydantic",
    "pydantic_core",
    "domain.record_schema",
    "replays",
    "web.commands.store",
)
PROBE = """
import json, sys
from web.cli import main
try:
    main(sys.argv[1:], standalone_mode=False)
finally:
    sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n")
"""


def imported_by(*arguments: str) -> tuple[set[str], str]:
    """The modules a fresh `rummy-ledger ARGUMENTS` process has imported when it ends, and
    what it printed."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *arguments],
        cwd=ROOT, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    line = done.stderr.rsplit("MODULES ", 1)[1]
    return set(json.loads(line)), done.stdout


def heavy(modules: set[str]) -> list[str]:
    return sorted(
        name for name in modules if any(name == h or name.startswith(h + ".") for h in HEAVY)
    )


def test_help_imports_no_command_module():
    modules, out = imported_by("--help")
    assert "hand" in out and "verify-proof" in out
    assert heavy(modules) == []
    assert not any(name.startswith("web.commands.") for name in modules)
    assert "domain.rummy13.solver" not in modules


@pytest.mark.parametrize(
    "arguments",
    [
        ("hand", "--joker", "7D", "--cards", "AS 2S 3S 4H 5H JK 9C 9D 9H KS KD 2C 5D"),
        ("hand", "--joker", "JK", "--groups", "AS 2S 3S | 4H 5H JK | 9C 9D 9H | KS KD 2C 5D"),
        ("hand", "--help"),
    ],
)
def test_hand_imports_only_the_rules(arguments):
    modules, out = imported_by(*arguments)
    assert out  # it did answer
    assert heavy(modules) == []
    assert {name for name in modules if name.startswith("web.")} <= {
        "web",
        "web.cli",
        "web.commands",
        "web.commands.hand",
    }


def test_hand_help_imports_no_rules():
    """`hand --help` only prints the options: neither the solver (and its tables) nor the
    rules nor the cards are imported."""
    modules, out = imported_by("hand", "--help")
    assert "--cards" in out
    for name in ("domain.rummy13.solver", "domain.rummy13.suit_tables", "domain.rummy13.melds"):
        assert name not in modules


def test_hand_answers_import_the_solver():
    modules, out = imported_by(
        "hand", "--joker", "7D", "--cards", "AS 2S 3S 4H 5H JK 9C 9D 9H KS KD 2C 5D"
    )
    assert "Hand score" in out
    assert "domain.rummy13.solver" in modules


def test_other_commands_still_load_what_they_need():
    modules, _ = imported_by("import", "--help")
    assert "web.commands.import_records" in modules and "replays" in modules


def test_help_lists_every_command_as_the_commands_describe_themselves():
    """The one-line help kept in web/cli.py is what each command's docstring gives."""
    lazy = CliRunner().invoke(main, ["--help"], terminal_width=100)
    eager = click.Group(
        "main",
        help=main.help,
        commands=[load_command(name) for name in COMMANDS],
        context_settings=main.context_settings,
    )
    loaded = CliRunner().invoke(eager, ["--help"], terminal_width=100)
    assert lazy.exit_code == loaded.exit_code == 0
    assert lazy.output == loaded.output


def test_every_listed_name_is_the_command_it_loads():
    for name in COMMANDS:
        command = load_command(name)
        assert isinstance(command, click.Command)
        assert command.name == name


def test_an_unknown_command_is_a_usage_error():
    result = CliRunner().invoke(main, ["handd"])
    assert result.exit_code == 2
    assert "No such command 'handd'" in result.output
