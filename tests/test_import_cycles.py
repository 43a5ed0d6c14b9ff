"""No import cycle between project modules.

Every ``import`` / ``from ... import`` of a project module counts, wherever it stands: at module level, in a
function (a lazy import), under ``if TYPE_CHECKING:`` or in a ``try``. A lazy import hides a cycle from the
interpreter but not from the design: the two modules still need each other. Run this file as a script to
print the graph's cycles (``python tests/test_import_cycles.py``).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Folders of .py files that are not packages but belong to the project (their modules are named by path).
SCRIPT_DIRS = ("scripts",)
#: Folders whose .py files are data (replayed repositories, bundled samples), not project modules.
SKIP_PARTS = {".venv", "__pycache__", "node_modules", "build", "dist", ".git"}


def _is_package_chain(path: Path) -> bool:
    """Every folder from the repository root down to ``path`` is a package (has ``__init__.py``)."""
    rel = path.relative_to(ROOT)
    return all((ROOT.joinpath(*rel.parts[:i]) / "__init__.py").is_file() for i in range(1, len(rel.parts)))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    """Module name -> file, for every module of the project's packages (and the script folders)."""
    out: dict[str, Path] = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if SKIP_PARTS & set(rel.parts) or rel.parts[0].startswith("."):
            continue
        if len(rel.parts) > 1 and (_is_package_chain(path) or rel.parts[0] in SCRIPT_DIRS):
            out[_module_name(path)] = path
    return out


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The project module ``name`` names: itself, else its longest prefix that is a module."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        cand = ".".join(parts[:i])
        if cand in modules:
            return cand
    return None


def imported(mod: str, source: str, modules: dict[str, Path], *, is_package: bool = False) -> Iterator[str]:
    """Project modules that module ``mod`` (whose text is ``source``) imports, anywhere in its text."""
    tree = ast.parse(source)
    package = mod if is_package else mod.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _resolve(alias.name, modules)
                if target is not None:
                    yield target
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                parent = ".".join(base + ([node.module] if node.module else []))
            else:
                parent = node.module or ""
            for alias in node.names:
                # ``from pkg import sub`` imports the submodule; ``from mod import name`` imports mod
                target = _resolve(f"{parent}.{alias.name}", modules) if alias.name != "*" else None
                target = target or _resolve(parent, modules)
                if target is not None:
                    yield target


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    return {mod: {t for t in imported(mod, path.read_text(encoding="utf-8"), modules,
                                      is_package=path.name == "__init__.py") if t != mod}
            for mod, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def a_cycle(graph: dict[str, set[str]], comp: list[str]) -> list[str]:
    """One closed path through the first module of a component, for the message (BFS, shortest)."""
    members = set(comp)
    start = comp[0]
    prev: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return [start, *reversed(path[:-1]), start] if node != start else [start, start]
                if child not in prev:
                    prev[child] = node
                    nxt.append(child)
        frontier = nxt
    return comp


def describe(graph: dict[str, set[str]]) -> str:
    return "\n".join(f"{len(c)} modules: {', '.join(c)}\n  e.g. {' -> '.join(a_cycle(graph, c))}"
                     for c in cycles(graph))


def test_the_graph_sees_the_project() -> None:
    graph = import_graph()
    assert {"extract.relevance", "extract.learned.features", "reprodiag.schema", "tests.conftest"} <= set(graph)
    assert "reprodiag.schema" in graph["extract.relevance"]
    assert not any(m.startswith("sandbox.cases.") and ".repo" in m for m in graph)  # replayed repos are data


def test_the_cycle_finder_finds_lazy_and_type_checking_cycles() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"f"}, "f": {"e"}, "g": set()}
    assert cycles(graph) == [["a", "b", "c"], ["e", "f"]]
    assert a_cycle(graph, ["a", "b", "c"]) == ["a", "b", "c", "a"]
    src = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from extract.rules import Reading\n"
           "def f():\n    from extract import symptom\n    import extract.learned.predict as p\n"
           "    from .threadtext import strip_code\n")
    got = set(imported("extract.probe", src, project_modules()))
    assert got == {"extract.rules", "extract.symptom", "extract.learned.predict", "extract.threadtext"}


def test_no_import_cycle_between_project_modules() -> None:
    graph = import_graph()
    assert not cycles(graph), "import cycles between project modules:\n" + describe(graph)


if __name__ == "__main__":
    g = import_graph()
    print(describe(g) or "no cycles", file=sys.stdout)
