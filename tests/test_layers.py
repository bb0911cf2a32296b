"""The package's layers hold: no module imports from a layer above its own.

``mag_dataset`` is built in five layers, lowest first (``docs/architecture.md``)::

    core  <-  board  <-  live/sites  <-  harness  <-  commands/CLI

* **core**: actions, schema, the raw format, coordinates, Set-of-Mark rendering, prompts,
  parsing, predictions, the scorer, the builder, the card, the dataset loader, the model
  runners: everything a reader of the published dataset or a scorer of a predictions file
  needs, with no browser, server or command line;
* **board**: the leaderboard's storage, grading and ranking (:mod:`mag_dataset.board`);
* **live/sites**: the browser (:mod:`mag_dataset.live`) and the web applications with their
  tasks and experts (:mod:`mag_dataset.sites`);
* **harness**: what builds a corpus from those (recording at scale, import, annotation,
  audit, unification, live evaluation: :mod:`mag_dataset.harness`);
* **commands/CLI**: ``mag`` (:mod:`mag_dataset.cli`, :mod:`mag_dataset.commands`).

A module may import its own layer and the layers below it. Test support
(:mod:`mag_dataset.testing`: tiny random models, hostile inputs) is for the tests: no
production module imports it, in the package or in ``baselines/``, ``leaderboard/`` and
``loaders/``. Packages must not import each other in a circle either, inside one layer too
(``live`` and ``sites`` share one): a package cycle is one package in two folders.

The imports are read with :mod:`ast` (nothing is imported or run), function-level (lazy)
imports included, since a lazy import only hides a back-edge from Python, not from a reader;
the resolution of ``import``/``from ... import``/relative forms is the module-cycle test's
(``tests/test_import_graph.py``).

Edges that still break the rule are listed in :data:`ALLOWED`, each with its reason; the
test fails on any other back-edge, and on an entry of :data:`ALLOWED` that no longer exists
(so the list only shrinks).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import NamedTuple

from test_import_graph import PACKAGE, ROOT, _resolve, _tree, cycles, module_files

#: The layers, lowest first: a module may import its own layer and those before it.
LAYERS: tuple[str, ...] = ("core", "board", "live/sites", "harness", "commands/cli")
#: Test support: importable by tests only.
TEST_SUPPORT = "test support"
#: Where each package or top-level module sits. Anything not listed is core, the strictest
#: layer (it may import only core), so a new module that belongs higher fails loudly until
#: it is placed here, instead of passing by default.
PLACES: dict[str, str] = {
    "mag_dataset.board": "board",
    "mag_dataset.live": "live/sites",
    "mag_dataset.sites": "live/sites",
    "mag_dataset.harness": "harness",
    "mag_dataset.commands": "commands/cli",
    "mag_dataset.cli": "commands/cli",
    "mag_dataset.testing": TEST_SUPPORT,
}
#: Production code outside the package: it may import any layer, but not test support.
OUTSIDE_PRODUCTION: tuple[str, ...] = ("baselines", "leaderboard", "loaders")

#: Known back-edges (issue 28), ``(importer, imported) -> reason``. Each is a lazy import inside
#: one function; remove the entry when the edge goes.
ALLOWED: dict[tuple[str, str], str] = {
    # test support (issue 28): the GPU smoke check builds random-weight models of the real
    # shape on purpose; it is a check to run on a GPU machine, not a baseline.
    ("baselines.gpu_check", "mag_dataset.testing.tiny_vlm"): "builds the tiny and the 4B-shaped random VLM to time them",
}


class Edge(NamedTuple):
    importer: str
    imported: str
    path: Path
    line: int


def layer_of(module: str) -> str:
    """The layer of a dotted module name of the package (:data:`PLACES`, else core)."""
    name = module
    while name:
        if name in PLACES:
            return PLACES[name]
        name = name.rpartition(".")[0]
    return "core"


def package_of(module: str) -> str:
    """The unit of the package-cycle check: ``mag_dataset.X`` (a subpackage or a top-level module)."""
    return ".".join(module.split(".")[:2])


def edges_of(module: str, path: Path, modules: set[str]) -> list[Edge]:
    """Every import of a package module in ``path``, at any depth, with its line."""
    is_package = path.name == "__init__.py"
    out = []
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
            targets = [f"{prefix}.{a.name}" for a in node.names if a.name != "*"] or [prefix]
        else:
            continue
        for t in targets:
            if t == PACKAGE or t.startswith(PACKAGE + "."):
                hit = _resolve(t, modules)
                if hit is not None and hit != module:
                    out.append(Edge(module, hit, path, node.lineno))
    return out


def all_edges(files: dict[str, Path], modules: set[str]) -> list[Edge]:
    return [e for m, p in sorted(files.items()) for e in edges_of(m, p, modules)]


def outside_files(repo: Path) -> dict[str, Path]:
    """``dotted name -> file`` of the production code outside the package (:data:`OUTSIDE_PRODUCTION`)."""
    out = {}
    for top in OUTSIDE_PRODUCTION:
        for path in sorted((repo / top).rglob("*.py")):
            out[".".join(path.relative_to(repo).with_suffix("").parts)] = path
    return out


def violations(edges: list[Edge], allowed: dict[tuple[str, str], str]) -> list[str]:
    """One line per import that breaks the layers: ``file:line: importer (layer) imports
    imported (layer)``. Importers outside the package may use every layer but test support."""
    out: list[str] = []
    for e in edges:
        if (e.importer, e.imported) in allowed:
            continue
        inside = e.importer == PACKAGE or e.importer.startswith(PACKAGE + ".")
        src = layer_of(e.importer) if inside else "outside production code"
        dst = layer_of(e.imported)
        if src == TEST_SUPPORT:
            continue
        if dst == TEST_SUPPORT or (inside and LAYERS.index(dst) > LAYERS.index(src)):
            line = f"{e.path}:{e.line}: {e.importer} ({src}) imports {e.imported} ({dst})"
            if line not in out:  # ``from m import a, b`` is one import
                out.append(line)
    return out


def package_cycles(edges: list[Edge], allowed: dict[tuple[str, str], str]) -> list[list[str]]:
    """Cycles of the package graph (``mag_dataset.X`` units), allowed edges left out."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        a, b = package_of(e.importer), package_of(e.imported)
        graph.setdefault(a, set())
        graph.setdefault(b, set())
        if a != b and (e.importer, e.imported) not in allowed:
            graph[a].add(b)
    return cycles(graph)


def _package_edges() -> list[Edge]:
    files = module_files()
    return all_edges(files, set(files))


def test_layer_map_sees_every_layer():
    files = module_files()
    by_layer: dict[str, int] = {}
    for m in files:
        by_layer[layer_of(m)] = by_layer.get(layer_of(m), 0) + 1
    # every layer has modules (a typo in PLACES would leave one empty and its modules in core)
    assert set(by_layer) == {*LAYERS, TEST_SUPPORT}, by_layer
    assert by_layer["core"] >= 40 and by_layer["harness"] >= 30 and by_layer["commands/cli"] >= 20, by_layer
    assert layer_of("mag_dataset.som") == layer_of("mag_dataset.errors") == layer_of("mag_dataset.vlm_processor") == "core"
    assert layer_of("mag_dataset.sites.shop.tasks") == "live/sites" and layer_of("mag_dataset.cli") == "commands/cli"
    # the outside production code is read too
    outside = outside_files(ROOT.parent)
    assert "baselines.common" in outside and "leaderboard.app" in outside, sorted(outside)


def test_the_checker_fails_on_a_deliberate_back_edge(tmp_path):
    # a small package with one import per rule, function-level and relative ones included
    pkg = tmp_path / "mag_dataset"
    for rel, src in {
        "__init__.py": "",
        "schema.py": "def f():\n    from mag_dataset.harness import agents\n",      # core -> harness
        "raw.py": "from .live.observe import render\n",                               # core -> live (relative)
        "live/__init__.py": "",
        "live/observe.py": "from mag_dataset.sites import shop\nrender = 1\n",       # same layer: allowed
        "sites/__init__.py": "",
        "sites/shop.py": "from mag_dataset.live import observe\n",                   # live <-> sites cycle
        "harness/__init__.py": "",
        "harness/audit.py": "from mag_dataset import cli\n",                         # harness -> cli
        "harness/agents.py": "def load():\n    import mag_dataset.testing.tiny_vlm\n",  # test support
        "cli.py": "from mag_dataset import raw\n",                                  # down: fine
        "testing/__init__.py": "",
        "testing/tiny_vlm.py": "from mag_dataset.cli import main\n",                 # test support may import all
    }.items():
        path = pkg / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(src)
    files = {}
    for path in sorted(pkg.rglob("*.py")):
        parts = list(path.relative_to(tmp_path).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        files[".".join(parts)] = path
    edges = all_edges(files, set(files))
    found = violations(edges, {})
    assert [f.split(": ", 1)[1] for f in found] == [
        "mag_dataset.harness.agents (harness) imports mag_dataset.testing.tiny_vlm (test support)",
        "mag_dataset.harness.audit (harness) imports mag_dataset.cli (commands/cli)",
        "mag_dataset.raw (core) imports mag_dataset.live.observe (live/sites)",
        "mag_dataset.schema (core) imports mag_dataset.harness.agents (harness)",
    ], found
    # each names the file and the line of the import, the function-level one included
    assert found[3].startswith(f"{pkg / 'schema.py'}:2: "), found[3]
    assert found[0].startswith(f"{pkg / 'harness' / 'agents.py'}:2: "), found[0]
    # the package cycle inside one layer is found; an allowed edge breaks it
    assert package_cycles(edges, {}) == [["mag_dataset.live", "mag_dataset.sites", "mag_dataset.live"]]
    assert package_cycles(edges, {("mag_dataset.sites.shop", "mag_dataset.live.observe"): "x"}) == []
    # an allowed edge is not reported
    assert len(violations(edges, {("mag_dataset.raw", "mag_dataset.live.observe"): "x"})) == 3


def test_no_module_imports_a_layer_above_its_own():
    edges = _package_edges()
    assert len(edges) >= 500, len(edges)  # the walk reads the whole package
    outside = outside_files(ROOT.parent)
    edges += all_edges(outside, set(module_files()))
    found = violations(edges, ALLOWED)
    assert not found, "imports against the layers (core <- board <- live/sites <- harness <- commands/cli; " \
                      "nothing imports mag_dataset.testing):\n" + "\n".join(found)


def test_no_package_cycle():
    found = package_cycles(_package_edges(), ALLOWED)
    assert not found, "packages that import each other:\n" + "\n".join(" -> ".join(c) for c in found)


def test_every_allowed_back_edge_still_exists():
    # an entry whose import is gone must be deleted, so the list only shrinks
    edges = _package_edges() + all_edges(outside_files(ROOT.parent), set(module_files()))
    present = {(e.importer, e.imported) for e in edges}
    stale = sorted(set(ALLOWED) - present)
    assert not stale, f"allowed back-edges that no longer exist (delete them from ALLOWED): {stale}"
