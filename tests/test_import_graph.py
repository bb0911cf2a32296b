"""No import cycle anywhere in ``mag_dataset``, function-level (lazy) imports included.

A lazy import hides a cycle from Python (nothing fails at import time) but not from a
reader: two modules that import each other are one module in two files. This test reads
every module of the package with :mod:`ast` (nothing is imported or run), resolves
``import a.b``, ``from a import b`` (a submodule or a name) and relative imports, and
fails naming each cycle it finds.
"""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import mag_dataset

PACKAGE = "mag_dataset"
ROOT = Path(mag_dataset.__file__).resolve().parent

def module_files() -> dict[str, Path]:
    """``dotted name -> file`` for every module of the package (packages as their __init__)."""
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


@functools.lru_cache(maxsize=None)
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text("utf-8"), str(path))


def _resolve(name: str, modules: set[str]) -> str | None:
    """The longest prefix of ``name`` that is a module of the package (a name imported from a
    module resolves to that module)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: Path, modules: set[str]) -> set[str]:
    """Modules of the package that ``module`` imports anywhere in its file (any depth)."""
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(_tree(path)):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".") if is_package else module.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                prefix = ".".join(base + ([node.module] if node.module else []))
            else:
                prefix = node.module or ""
            # ``from a import b``: b may be a submodule (then that is the import) or a name of a
            targets = [f"{prefix}.{a.name}" for a in node.names if a.name != "*"] or [prefix]
        else:
            continue
        for t in targets:
            if t == PACKAGE or t.startswith(PACKAGE + "."):
                hit = _resolve(t, modules)
                if hit is not None and hit != module:
                    out.add(hit)
    return out


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    names = set(files)
    return {m: imports_of(m, p, names) for m, p in files.items()}


def components(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan): each is a set of
    modules that all reach each other through imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    comps: list[set[str]] = []

    def visit(v: str) -> None:  # the graph has ~100 nodes: recursion depth is no concern
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return comps


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per component of :func:`components` (the shortest through its first module),
    sorted by that module."""
    return sorted((_path(graph, c) for c in components(graph)), key=lambda p: p[0])


def _path(graph: dict[str, set[str]], comp: set[str]) -> list[str]:
    """One closed walk a -> ... -> a inside ``comp``, from its first module (by name)."""
    start = min(comp)
    # breadth-first from start until an edge leads back to it: the shortest cycle through it
    prev: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & comp):
                if w == start:
                    walk = [v]
                    while walk[-1] != start:
                        walk.append(prev[walk[-1]])
                    return [*reversed(walk), start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return sorted(comp)  # unreachable for a strongly connected component


def test_the_walk_sees_the_whole_package():
    files = module_files()
    # every module is read: the package, its subpackages and the deep modules
    assert len(files) >= 60, sorted(files)
    for name in ("mag_dataset", "mag_dataset.cli", "mag_dataset.harness.audit", "mag_dataset.commands"):
        assert name in files
    graph = import_graph()
    # module-level, function-level, relative and "from package import module" imports are all edges
    assert "mag_dataset.schema" in graph["mag_dataset.scoring"] or "mag_dataset.actions" in graph["mag_dataset.scoring"]
    lazy = [m for m, p in files.items() if any(isinstance(n, (ast.Import, ast.ImportFrom)) and n.col_offset > 0
                                               for n in ast.walk(_tree(p)))]
    assert len(lazy) >= 10, "few indented (function-level) imports found: the walk would miss lazy cycles"
    # a lazy import is an edge: the command modules import the library only inside run()
    assert "mag_dataset.harness.audit" in graph["mag_dataset.commands.audit"]


def test_resolution_of_import_forms(tmp_path):
    modules = {"mag_dataset", "mag_dataset.a", "mag_dataset.sub", "mag_dataset.sub.b", "mag_dataset.sub.c"}
    src = tmp_path / "b.py"
    src.write_text(
        "import mag_dataset.a\n"
        "from . import c\n"
        "from .. import a as x\n"
        "def f():\n"
        "    from mag_dataset.sub.c import thing\n"
        "    import json\n"
    )
    assert imports_of("mag_dataset.sub.b", src, modules) == {"mag_dataset.a", "mag_dataset.sub.c"}
    init = tmp_path / "__init__.py"
    init.write_text("from .b import name\nfrom mag_dataset import a\n")
    assert imports_of("mag_dataset.sub", init, modules) == {"mag_dataset.sub.b", "mag_dataset.a"}


def test_cycles_are_found_and_named():
    graph = {"p.a": {"p.b"}, "p.b": {"p.c"}, "p.c": {"p.a"}, "p.d": {"p.a"}, "p.e": {"p.e"}}
    assert cycles(graph) == [["p.a", "p.b", "p.c", "p.a"]]
    assert components(graph) == [{"p.a", "p.b", "p.c"}]
    assert cycles({"p.a": {"p.b"}, "p.b": set()}) == []


def test_no_import_cycle_in_the_package():
    found = cycles(import_graph())
    assert not found, "import cycles in mag_dataset (one per group of modules that import each other):\n" + "\n".join(
        " -> ".join(c) for c in found)
