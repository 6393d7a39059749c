"""No import circles in ``domain/`` and ``replays/`` (issue 14).

Every module's imports are read with :mod:`ast`, those inside functions included (a lazy
import is still a dependency, only a later one), and the graph of project modules must
have no cycle. Importing ``a.b.c`` runs the ``__init__`` of ``a`` and ``a.b`` first, so those
count as imported too, except a package the importing module lies in (imported before
it). Imports under ``if TYPE_CHECKING:`` (never run) are not counted.

Package ``__init__`` files once went uncounted, and so hid a cycle: ``domain.variants``'
``__init__`` (the list of families) imports every family, and the families' modules
imported the interface from inside that package, so ``import domain.pooldeals.rows`` on its
own failed. The interface now lives outside it (``domain/variant_base.py``), and a test below
imports each family's modules first, in a fresh interpreter.

Edges known to break the rule would be listed in ``KNOWN`` with the work that removes them,
and the test fails when one of them has gone, so the list only shrinks; it is empty.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("domain", "replays")

# Known edges that break the rule, each with the work that removes it. None are left: the
# simulator's bots, the last way domain/ reached into replays/, moved into their families
# (domain/rummy13/bot.py, simulate.py, reported.py; domain/red3/bot.py; the floor and the
# dealing they share in domain/simulation/).
KNOWN: dict[tuple[str, str], str] = {}


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    hidden = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = getattr(test, "id", None) or getattr(test, "attr", None)
            if name == "TYPE_CHECKING":
                hidden.update(id(sub) for sub in ast.walk(node))
    return hidden


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (anywhere in its code)."""
    mods = modules()

    def resolve(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in mods}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        hidden = _type_checking_nodes(tree)
        for node in ast.walk(tree):
            if id(node) in hidden:
                continue
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in mods else base
                    for alias in node.names
                ]
            else:
                continue
            for target in map(resolve, targets):
                if target is None:
                    continue
                # The packages above the target, whose __init__ runs first; not those
                # this module lies in (imported before it).
                parts = target.split(".")
                packages = {".".join(parts[:n]) for n in range(1, len(parts))}
                for module in {target} | (packages & mods.keys()):
                    if module != name and not name.startswith(module + "."):
                        graph[name].add(module)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path ``[a, b, ..., a]``, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state:
            found = visit(start)
            if found:
                return found
    return None


def test_the_known_temporary_edges_still_exist():
    graph = import_graph()
    gone = [f"{a} -> {b} ({why})" for (a, b), why in KNOWN.items() if b not in graph.get(a, ())]
    assert not gone, "no longer imported, take them off KNOWN: " + "; ".join(gone)


def test_domain_and_replays_have_no_import_cycle():
    graph = import_graph()
    for source, target in KNOWN:
        graph[source].discard(target)
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_finds_a_cycle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_domain_imports_replays_only_through_the_known_edges():
    # domain/ is pure: the only ways into replays/ are the temporary ones listed above.
    graph = import_graph()
    into_replays = {
        (source, target)
        for source, targets in graph.items()
        if source.startswith("domain")
        for target in targets
        if target.startswith("replays")
    }
    assert into_replays <= set(KNOWN), sorted(into_replays - set(KNOWN))


# The modules that failed to import on their own while the interface lived in
# domain/variants/, and one entry to each family besides.
FIRST_IMPORTS = (
    "domain.pooldeals.audit",
    "domain.pooldeals.rows",
    "domain.pooldeals.variant",
    "domain.red3.variant",
    "domain.rummy13.variant",
    "domain.record_schema.published",
    "domain.variant_base",
)


def test_each_family_module_imports_first_in_a_fresh_interpreter():
    import os
    import subprocess
    import sys

    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    probe = "import {}; from domain import variants; print(','.join(variants.names()))"
    running = {  # all at once: each is a fresh interpreter's imports, a second or less
        name: subprocess.Popen(
            [sys.executable, "-c", probe.format(name)],
            cwd=ROOT,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in FIRST_IMPORTS
    }
    failed = {}
    for name, process in running.items():
        out, err = process.communicate(timeout=120)
        registered = set(out.strip().split(","))
        if process.returncode or not {"points", "raise", "red3", "pool", "deals"} <= registered:
            failed[name] = (err.strip().splitlines() or [out])[-1]
    assert not failed, failed
