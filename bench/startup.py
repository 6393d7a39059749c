"""Start-up: whole-process wall time of short `rummy-ledger` commands.

Each command runs as a fresh process, as a person at a terminal runs it (byte code already
compiled, as after the first run), ``RUNS`` times in turn with the baseline; the median and
the least of each are reported. The baseline, measured in the same run and interleaved
with the commands so machine load touches both alike, is ``python -c pass``: the
interpreter's own start-up, which no change to the project can remove.

Also measured, for comparison: a process that imports every subcommand's module, which is
what every `rummy-ledger` invocation did before the subcommands were loaded lazily
(web/cli.py). The issue's target (under 150 ms for ``--help`` and ``hand``) is reported,
never asserted.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNS = 21
HAND = ["--joker", "7D", "--cards", "AS 2S 3S 4H 5H JK 9C 9D 9H KS KD 2C 5D"]
CLI = "from web.cli import main; main()"
CASES = {
    "python -c pass (baseline)": ["-c", "pass"],
    "rummy-ledger --help": ["-c", CLI, "--help"],
    "rummy-ledger hand --cards ...": ["-c", CLI, "hand", *HAND],
    "rummy-ledger hand --help": ["-c", CLI, "hand", "--help"],
    "import every subcommand (the CLI before lazy loading)": [
        "-c",
        "from web.cli import COMMANDS, load_command\nfor name in COMMANDS: load_command(name)",
    ],
}
TARGET_MS = 150


def _once(arguments: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, *arguments], cwd=ROOT, check=True, capture_output=True, env=_env()
    )
    return (time.perf_counter() - started) * 1000


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT)
    # Byte code compiled, as after a person's first run: a PYTHONDONTWRITEBYTECODE set for
    # the benchmark's own process (as in some shells and CI) would have every command
    # compile every module it imports, every time.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run(quick: bool = False) -> dict:
    runs = 5 if quick else RUNS
    load = os.getloadavg()[0]
    for arguments in CASES.values():  # compile byte code, warm the file cache
        _once(arguments)
    times: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(runs):
        for name, arguments in CASES.items():
            times[name].append(_once(arguments))
    figures = {
        name: {
            "median_ms": round(statistics.median(ms), 1),
            "least_ms": round(min(ms), 1),
        }
        for name, ms in times.items()
    }
    baseline = figures["python -c pass (baseline)"]["median_ms"]
    rows = [
        {
            "benchmark": f"start-up ms, {name} (median of {runs} processes)",
            "figure": figure["median_ms"],
            "baseline": baseline,
            "baseline_is": "python -c pass, same run",
            "ratio": round(figure["median_ms"] / baseline, 1),
        }
        for name, figure in figures.items()
        if "baseline" not in name
    ]
    return {
        "runs": runs,
        "clock": "wall time of the whole process (time.perf_counter around subprocess.run)",
        "load_average": {"start": round(load, 2), "end": round(os.getloadavg()[0], 2)},
        "python": sys.version.split()[0],
        "byte_code": "compiled by the first run of each command, then read",
        "figures": figures,
        "targets": {
            "help_under_150_ms": figures["rummy-ledger --help"]["median_ms"] < TARGET_MS,
            "hand_under_150_ms": figures["rummy-ledger hand --cards ..."]["median_ms"] < TARGET_MS,
        },
        "rows": rows,
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
