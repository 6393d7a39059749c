"""deploy/systemd: `systemd-analyze verify` accepts every unit (with the installed
`rummy-ledger` in place of /opt/...), and every command a unit runs is one the CLI takes."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from web.cli import main

ROOT = Path(__file__).resolve().parent.parent
UNITS = ROOT / "deploy" / "systemd"
INSTALLED = "/opt/rummy-ledger/venv/bin/rummy-ledger"


def unit_files() -> list[Path]:
    return sorted(p for p in UNITS.iterdir() if p.suffix in (".service", ".timer"))


def rendered(folder: Path) -> list[Path]:
    """The units as installed on this machine: the venv's rummy-ledger for /opt's."""
    here = str(Path(sys.executable).with_name("rummy-ledger"))
    paths = []
    for unit in unit_files():
        target = folder / unit.name
        target.write_text(unit.read_text().replace(INSTALLED, here))
        paths.append(target)
    return paths


def test_systemd_analyze_verify_accepts_the_units(tmp_path):
    tool = shutil.which("systemd-analyze")
    if tool is None:
        if os.environ.get("CI") == "true":
            pytest.fail("systemd-analyze is required in CI (.ci/run installs systemd)")
        pytest.skip("systemd-analyze is not installed")
    units = rendered(tmp_path)
    result = subprocess.run(
        [tool, "verify", *map(str, units)], capture_output=True, text=True, timeout=120
    )
    # verify exits 0 on some mistakes (an unknown Type= is only "ignoring"): any line about
    # our files is a failure.
    ours = [
        line
        for line in (result.stdout + result.stderr).splitlines()
        if "rummy-ledger" in line and "Permission denied" not in line
    ]
    assert result.returncode == 0 and not ours, result.stdout + result.stderr


def exec_commands() -> list[tuple[str, list[str]]]:
    commands = []
    for unit in unit_files():
        for line in unit.read_text().splitlines():
            if not line.startswith("ExecStart="):
                continue
            words = shlex.split(line.removeprefix("ExecStart="))
            if words[0] == "/bin/sh":  # sh -c '[exec] rummy-ledger ... [> file; ...]'
                script = words[2].split(";")[0].split(">")[0]
                words = [w for w in shlex.split(script) if w != "exec"]
            assert words[0] == INSTALLED, f"{unit.name}: runs {words[0]}"
            commands.append((unit.name, words[1:]))
    return commands


def test_every_unit_runs_a_command_the_cli_takes():
    commands = exec_commands()
    assert {name for name, _ in commands} == {
        "rummy-ledger-migrate.service",
        "rummy-ledger-web.service",
        "rummy-ledger-worker.service",
        "rummy-ledger-checkpoint.service",
        "rummy-ledger-verify.service",
        "rummy-ledger-import@.service",
    }
    for name, arguments in commands:
        # --help after the arguments: click parses them (an unknown option or command
        # fails) and then prints the help instead of running.
        result = CliRunner().invoke(main, [*arguments, "--help"])
        assert result.exit_code == 0, f"{name}: {arguments}: {result.output}"
