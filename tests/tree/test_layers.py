"""The layout rules, checked on the import graph (static: function-level imports count too).

- ``pipeline.LAYERS`` is the one layer list, bottom to top; every module of pipeline/, assets/ and
  resources/ belongs to one layer, and imports only from its own layer or the layers below.
- No two modules import each other round (no cycle, inside a layer either).
- pipeline/ holds folders, one per role; only ``__init__.py`` and ``definitions.py`` stay loose, and
  no file name repeats its folder's name.
- Library code (pipeline/ below the CLI) imports no Dagster, and importing it loads none at run time.
- Tests and benchmarks: no test module imports another, no benchmark script imports tests/.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from pipeline import LAYERS
from tests.support.paths import PROJECT_ROOT

PACKAGES = ("pipeline", "assets", "resources")
LOOSE_ALLOWED = {"__init__.py", "definitions.py"}
DAGSTER_LAYERS = ("resources", "assets", "pipeline.cli", "pipeline.definitions")
TEST_MODULE_IMPORT = re.compile(r"(?:from|import)\s+tests\.(?:[\w]+\.)*test_\w+")


def _modules() -> dict[str, Path]:
    mods: dict[str, Path] = {}
    for package in PACKAGES:
        for path in (PROJECT_ROOT / package).rglob("*.py"):
            if "node_modules" in path.parts:
                continue
            name = ".".join(path.relative_to(PROJECT_ROOT).with_suffix("").parts)
            mods[name.removesuffix(".__init__")] = path
    return mods


def _imports(path: Path, mods: dict[str, Path]) -> tuple[set[str], set[str]]:
    """(project modules imported, top-level third-party packages imported) anywhere in the file."""
    project: set[str] = set()
    external: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            if name in mods:
                project.add(name)
            elif name.split(".")[0] not in PACKAGES:
                external.add(name.split(".")[0])
    return project, external


def _graph() -> tuple[dict[str, Path], dict[str, set[str]], dict[str, set[str]]]:
    mods = _modules()
    edges: dict[str, set[str]] = defaultdict(set)
    external: dict[str, set[str]] = {}
    for name, path in mods.items():
        edges[name], external[name] = _imports(path, mods)
        edges[name].discard(name)
    return mods, edges, external


def layer_of(module: str) -> int | None:
    """Index in LAYERS of the deepest layer that contains ``module`` (None: in no layer)."""
    found = [i for i, layer in enumerate(LAYERS) if module == layer or module.startswith(layer + ".")]
    return max(found, key=lambda i: len(LAYERS[i])) if found else None


def _cycles(mods: dict[str, Path], edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(mods):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
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
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_every_module_is_in_a_layer() -> None:
    mods = _modules()
    assert len(set(LAYERS)) == len(LAYERS)
    assert sorted(m for m in mods if m != "pipeline" and layer_of(m) is None) == []
    assert all(layer in mods for layer in LAYERS), "a layer that names no module or package"


def test_every_import_goes_down() -> None:
    mods, edges, _ = _graph()
    upward = sorted(
        f"{a} -> {b}" for a in mods for b in edges[a] if b != "pipeline" and (layer_of(b) or 0) > (layer_of(a) or 0)
    )
    assert upward == []


def test_no_import_cycle() -> None:
    mods, edges, _ = _graph()
    assert _cycles(mods, edges) == []


def test_pipeline_is_folders_of_one_role() -> None:
    loose = {p.name for p in (PROJECT_ROOT / "pipeline").glob("*.py")}
    assert loose <= LOOSE_ALLOWED
    repeating = []
    for path in (PROJECT_ROOT / "pipeline").rglob("*.py"):
        folder = path.parent.name
        stem = folder.removesuffix("s")
        if folder != "pipeline" and "node_modules" not in path.parts and stem in path.stem.split("_"):
            repeating.append(str(path.relative_to(PROJECT_ROOT)))
    assert repeating == []


def test_library_imports_no_dagster() -> None:
    mods, _, external = _graph()
    dagster_layers = {LAYERS.index(layer) for layer in DAGSTER_LAYERS}
    bad = sorted(m for m in mods if "dagster" in external[m] and layer_of(m) not in dagster_layers)
    assert bad == []


def test_importing_the_library_does_not_load_dagster() -> None:
    code = (
        "import sys, pipeline.judges.base, pipeline.run.stage, pipeline.report.build, pipeline.readers.run, "
        "pipeline.memory.ingest, pipeline.llm.client, pipeline.embeddings.encoder, pipeline.cli.main; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dagster', 'resources', 'assets')))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_no_test_module_imports_another_and_no_benchmark_imports_tests() -> None:
    """Shared test code lives in tests/support/; code strings run in a subprocess count too."""
    offenders = [
        f"{path.relative_to(PROJECT_ROOT)}: {m.group(0)}"
        for path in sorted((PROJECT_ROOT / "tests").rglob("*.py"))
        for m in TEST_MODULE_IMPORT.finditer(path.read_text())
    ]
    offenders += [
        str(path.relative_to(PROJECT_ROOT))
        for path in sorted((PROJECT_ROOT / "benchmarks").glob("*.py"))
        if re.search(r"(?:from|import)\s+tests\b", path.read_text())
    ]
    assert offenders == []
