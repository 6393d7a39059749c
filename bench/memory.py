"""Peak memory of the long operations, and whether it grows with the number of games.

Each stage runs in a fresh Python process (``python -m bench.memory --stage ...``) that
reports its own peak resident set size (``ru_maxrss``) when done, so stages do not inherit
each other's heap. Stages, each run for ``N`` and for ``4 N`` games:

- ``simulate``: bots play the games and write them as JSON Lines (``simulate --out``);
- ``import``: the file is imported into a fresh SQLite ledger, read models and seals
  brought up to date (``rummy-ledger import``);
- ``rebuild``: every stored game is rebuilt from its events (what audits and ``verify`` do);
- ``export``: every game is written back out as records (``export --all``);
- ``simulate-all`` and ``import-all``: the same with tables of all five variants, whose Red 3
  matches and pools hold ten to twenty times a points game's events (a save is bounded by
  events as well as games, ``replays.records.importer.BATCH_EVENTS``).

Baseline, measured in the same run: a process that has imported the whole project (domain,
ledger application, importer, simulator, web app) and done nothing else. Figures are MiB
and ratios to that baseline; the growth row divides the ``4 N`` peak by the ``N`` peak, so
1.0 means the operation streams (memory independent of the number of games). Stages that
run the solver (simulate, import) also fill its suit-table caches, which are bounded (about
40 MB when full, ``domain/rummy13/suit_tables.py``): their growth between ``N`` and ``4 N`` is that
cache warming up, and stops at the bound.

Run: ``python -m bench memory`` (or ``python -m bench.memory [--quick]``).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SEED = 4242
STAGES = ("simulate", "import", "rebuild", "export", "simulate-all", "import-all")


def _peak_mib() -> float:
    """This process's peak resident set size, MiB: ``VmHWM``, the high-water mark of the
    memory it has had since its ``exec``. Not ``ru_maxrss``, which Linux carries over from
    the parent through ``fork`` and ``exec``: run after other benchmarks in one
    ``python -m bench``, every stage reported the parent's 201.5 MiB (2026-11-26)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _import_project() -> None:
    import domain.rummy13.solver  # noqa: F401
    import web

    web.create_app({"TESTING": True})


def _stage(stage: str, games: int, folder: Path) -> dict[str, Any]:
    """Run one stage in this process; return what it did."""
    _import_project()
    mix = "-all" if stage.endswith("-all") else ""
    stage = stage.removesuffix("-all")
    records = folder / f"games{mix}-{games}.jsonl"
    url = f"sqlite:///{folder / f'ledger{mix}-{games}.sqlite3'}"
    if stage == "baseline":
        return {}
    if stage == "simulate":
        from domain import variants
        from replays.simulation import Floor, Simulation, write_records

        floor = Floor(seed=SEED, variants=tuple(variants.names())) if mix else Floor(seed=SEED)
        written = write_records(Simulation(floor).games(games), str(records))
        return {"records": written}
    from replays.store.application import Ledger

    if stage == "import":
        from replays.records.importer import import_lines
        from replays.store.schema import migrate

        migrate(url)
        with records.open("rb") as lines:
            summary = import_lines(Ledger(url), lines)
        return {"imported": summary.imported, "rejected": summary.rejected}
    ledger = Ledger(url)
    if stage == "rebuild":
        rebuilt = sum(1 for game_id in ledger.iter_game_ids() if ledger.get_game(game_id))
        return {"rebuilt": rebuilt}
    if stage == "export":
        from replays.records.exporter import export_lines

        with open(os.devnull, "w") as sink:
            exported = sum(1 for line in export_lines(ledger) if sink.write(line + "\n"))
        return {"exported": exported}
    raise ValueError(f"unknown stage {stage!r}")


def _measure(stage: str, games: int, folder: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "bench.memory", "--stage", stage, str(games), str(folder)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"memory stage {stage} ({games} games) failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run(quick: bool = False) -> dict[str, Any]:
    small = 40 if quick else 300
    sizes = (small, 4 * small)
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        baseline = _measure("baseline", 0, folder)["peak_mib"]
        peaks: dict[str, dict[int, float]] = {stage: {} for stage in STAGES}
        details: dict[str, Any] = {}
        for games in sizes:
            for stage in STAGES:
                measured = _measure(stage, games, folder)
                peaks[stage][games] = measured.pop("peak_mib")
                details[f"{stage}_{games}"] = measured
    rows = []
    for stage in STAGES:
        large = peaks[stage][sizes[1]]
        rows.append(
            {
                "benchmark": f"peak memory: {stage} {sizes[1]} games (MiB)",
                "figure": round(large, 1),
                "baseline": round(baseline, 1),
                "baseline_is": "the project imported, idle",
                "ratio": round(large / baseline, 2),
            }
        )
        rows.append(
            {
                "benchmark": f"memory growth: {stage} {sizes[1]} vs {sizes[0]} games",
                "figure": round(large, 1),
                "baseline": round(peaks[stage][sizes[0]], 1),
                "baseline_is": f"the same stage with {sizes[0]} games",
                "ratio": round(large / peaks[stage][sizes[0]], 2),
            }
        )
    return {
        "sizes": list(sizes),
        "baseline_mib": round(baseline, 1),
        "peak_mib": {
            stage: {str(n): round(v, 1) for n, v in p.items()} for stage, p in peaks.items()
        },
        "stages": details,
        "rows": rows,
    }


if __name__ == "__main__":
    if "--stage" in sys.argv:
        stage, games, folder = sys.argv[sys.argv.index("--stage") + 1 :][:3]
        outcome = _stage(stage, int(games), Path(folder))
        outcome["peak_mib"] = _peak_mib()
        print(json.dumps(outcome))
    else:
        print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
