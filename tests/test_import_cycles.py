"""No import circles in ``domain/`` and ``replays/`` (issue 14).

Every module's imports are read with :mod:`ast`, those inside functions included (a lazy
import is still a dependency, only a later one), and the graph of project modules must
have no cycle. Two things are not counted, each for a reason: imports under
``if TYPE_CHECKING:`` (never run), and the implicit import of a package's ``__init__`` when
one of its submodules is imported (``domain.variants``' ``__init__`` is the registry's list
and imports every family, whose modules import ``domain.variants.base``: the design of
docs/adding-a-variant.md §3).

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
                if target is not None and target != name:
                    graph[name].add(target)
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
