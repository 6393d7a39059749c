"""Compile the solver with mypyc (:mod:`.native` says when the result runs).

    python -m domain.rummy13.compile_solver    # make setup runs this

Prints one line: compiled, or not and why (the compiler's output is in build/native/).
Compiling fails without mypyc or a C compiler and the Python headers; setup goes on and
the pure source runs.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from domain.rummy13.native import GROUP, MODULES, RECORD, fingerprint, library_path, source_path

ROOT = Path(__file__).resolve().parent.parent.parent
LOG = ROOT / "build" / "native" / "build.log"


def build() -> str:
    """Compile :data:`MODULES` with mypyc beside their sources and write :data:`RECORD`;
    returns the one line to show (the compiler's output goes to :data:`LOG`). Never
    raises: without mypyc or a C compiler, or if compiling fails, the record says so and
    the pure source runs."""
    RECORD.unlink(missing_ok=True)
    sources = {module: fingerprint(source_path(module)) for module in MODULES}
    LOG.parent.mkdir(parents=True, exist_ok=True)
    try:
        with _output_to(LOG):
            _compile()
    except (Exception, SystemExit) as error:  # mypyc exits on a type error
        last = (str(error).strip().splitlines() or [""])[-1]
        last = last if len(last) <= 120 else f"{last[:120]}..."  # a compiler's command line
        reason = f"{type(error).__name__}: {last} (see {LOG.relative_to(ROOT)})"
        _write_record({"built": False, "reason": reason})
        return f"solver not compiled ({reason}); the pure Python solver runs"
    _write_record({"built": True, "sources": sources})
    return "solver compiled with mypyc: " + ", ".join(
        module.rpartition(".")[2] for module in MODULES
    )


@contextmanager
def _output_to(path: Path) -> Iterator[None]:
    """Send this process's output, the compiler's included (it writes to the same file
    descriptors), to ``path``."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "w", encoding="utf-8") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def _compile() -> None:
    """mypyc's setuptools build, in place, its intermediate files under build/native."""
    from mypyc.build import mypycify
    from setuptools import Distribution

    before = Path.cwd()
    os.chdir(ROOT)  # mypyc names modules by their paths from here
    try:
        modules = [str(source_path(module).relative_to(ROOT)) for module in MODULES]
        # Only the compiled modules must type-check: those they import are read for
        # their types (silent), and reach the compiled code as ordinary Python objects.
        extensions = mypycify(
            ["--follow-imports=silent", *modules], group_name=GROUP, target_dir="build/native"
        )
        distribution = Distribution({"name": "rummy-ledger-native", "ext_modules": extensions})
        command = distribution.get_command_obj("build_ext")
        command.inplace = True
        command.build_temp = "build/native/temp"
        distribution.run_command("build_ext")
    finally:
        os.chdir(before)
    for module in MODULES:
        if not library_path(module).exists():
            raise FileNotFoundError(f"{library_path(module).name} was not built")


def _write_record(record: dict) -> None:
    RECORD.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    print(f"domain.rummy13.compile_solver: {build()}")
