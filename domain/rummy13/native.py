"""The solver compiled with mypyc: what is compiled, and when the build runs.

:mod:`.solver` and :mod:`.suit_tables` are pure Python and stay the one source of truth.
:mod:`.compile_solver` (``make setup`` runs it) compiles them with mypyc, as black and mypy
ship themselves, into C extension modules beside them: the same answers in a little over
half the instructions. What is built is no part of the repository (.gitignore), and a
machine without a compiler runs the pure source.

The build records the CRC-32 and length of each source it compiled (:data:`RECORD`). When
the package is imported, :func:`install` puts a finder first on ``sys.meta_path`` that
loads both modules compiled only if each source is still the one compiled, and neither
otherwise (the compiled solver calls the compiled suit tables directly, so half of each
would run old code): an edited source runs as it now reads, with a warning, until the
build runs again. ``RUMMY_LEDGER_PURE=1`` runs the pure source whatever was built.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
import warnings
import zlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

# Compiled together, in this order (the solver imports the suit tables).
MODULES = ("domain.rummy13.suit_tables", "domain.rummy13.solver")
# mypyc's group: its shared library is domain/rummy13/native_solver__mypyc.<suffix>.
GROUP = "domain.rummy13.native_solver"
HERE = Path(__file__).resolve().parent
RECORD = HERE / "native_build.json"
PURE = "RUMMY_LEDGER_PURE"


class StaleBuild(RuntimeWarning):
    """A compiled module's source changed since it was built: the pure source runs."""


def _name(module: str) -> str:
    return module.rpartition(".")[2]


def source_path(module: str) -> Path:
    return HERE / f"{_name(module)}.py"


def library_path(module: str) -> Path:
    """The compiled module for this interpreter (its ABI is in the file's name)."""
    return HERE / f"{_name(module)}{importlib.machinery.EXTENSION_SUFFIXES[0]}"


def fingerprint(path: Path) -> str:
    """CRC-32 and length of a file (as the tables kept for good name their source)."""
    text = path.read_bytes()
    return f"{zlib.crc32(text):08x}-{len(text)}"


def refusal(record_path: Path = RECORD) -> tuple[str | None, bool]:
    """(why the compiled modules are not used, None when they are; whether to warn).

    Forced pure, never built, or a build that failed (setup said so): quietly pure. A
    build that is there but not what the sources now say (a source edited since, a
    library gone): pure, with a warning.
    """
    if os.environ.get(PURE):
        return f"{PURE} is set", False
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "not built", False
    if not record.get("built"):
        return f"the build failed: {record.get('reason')}", False
    sources = record.get("sources", {})
    for module in MODULES:
        if not library_path(module).exists():
            return f"{library_path(module).name} is missing", True
        if sources.get(module) != fingerprint(source_path(module)):
            return f"{source_path(module).name} changed since it was compiled", True
    return None, False


class _Finder(importlib.abc.MetaPathFinder):
    """Loads :data:`MODULES` compiled or from source, both the same way."""

    def __init__(self, compiled: bool) -> None:
        self.compiled = compiled

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MODULES:
            return None
        loader: importlib.abc.Loader
        if self.compiled:
            location = str(library_path(fullname))
            loader = importlib.machinery.ExtensionFileLoader(fullname, location)
        else:
            location = str(source_path(fullname))
            loader = importlib.machinery.SourceFileLoader(fullname, location)
        return importlib.util.spec_from_file_location(fullname, location, loader=loader)


_FINDER = _Finder(compiled=False)


def install() -> None:
    """Decide, once a process, whether the solver runs compiled, and put the finder first
    on ``sys.meta_path`` (the package's ``__init__`` calls this before anything imports
    the solver)."""
    if _FINDER in sys.meta_path:
        return
    reason, warn = refusal()
    _FINDER.compiled = reason is None
    if warn:
        warnings.warn(
            f"the compiled solver is not used: {reason}; the pure Python solver runs "
            "(make setup compiles it again)",
            StaleBuild,
            stacklevel=2,
        )
    sys.meta_path.insert(0, _FINDER)


def compiled() -> bool:
    """Whether the solver imported in this process runs compiled."""
    solver = sys.modules.get("domain.rummy13.solver")
    return solver is not None and not str(solver.__file__).endswith(".py")


@contextmanager
def _modules_set_aside() -> Iterator[None]:
    """Import :data:`MODULES` afresh inside, and put back the ones imported before."""
    package = sys.modules["domain.rummy13"]
    saved = {module: sys.modules.pop(module, None) for module in MODULES}
    attributes = {module: package.__dict__.pop(_name(module), None) for module in MODULES}
    try:
        yield
    finally:
        for module in MODULES:
            sys.modules.pop(module, None)
            package.__dict__.pop(_name(module), None)
            before, attribute = saved[module], attributes[module]
            if before is not None:
                sys.modules[module] = before
            if attribute is not None:
                setattr(package, _name(module), attribute)


_PURE_COPIES: list[ModuleType] = []


def pure_modules() -> tuple[ModuleType, ModuleType]:
    """(suit_tables, solver) as the pure source runs them: the modules imported when they
    run pure, else copies of their own (made once a process) beside the compiled ones.

    For tests that replace a module's functions or classes (a compiled module calls its
    own directly), and for holding the compiled answers to the pure ones.
    """
    if not _FINDER.compiled:
        suit_tables = importlib.import_module(MODULES[0])
        return suit_tables, importlib.import_module(MODULES[1])
    if not _PURE_COPIES:
        with _modules_set_aside():
            _FINDER.compiled = False
            try:
                _PURE_COPIES.extend(importlib.import_module(module) for module in MODULES)
            finally:
                _FINDER.compiled = True
    return _PURE_COPIES[0], _PURE_COPIES[1]
