"""The layering rules of issue 12, checked on the import graph (static: function-level imports count).

- No import cycle among the project's modules (pipeline/, assets/, resources/).
- Library code in pipeline/ imports neither Dagster nor resources/ nor assets/; the exceptions are the
  two entry points: pipeline/definitions.py, which the Dagster CLI and workspace.yaml load, and
  pipeline/cli/main.py (``membench``), whose ``forget --yes`` asks the Dagster instance for live runs
  (inside the command: importing the CLI loads no Dagster, the last test).
- Importing the library (a judge, the stage driver, the report) does not load Dagster at run time.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from tests.conftest import PROJECT_ROOT

PACKAGES = ("pipeline", "assets", "resources")
ENTRY_POINTS = {"pipeline.definitions", "pipeline.cli.main"}


def _modules() -> dict[str, Path]:
    mods: dict[str, Path] = {}
    for package in PACKAGES:
        for path in (PROJECT_ROOT / package).rglob("*.py"):
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
    return mods, edges, external


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


def test_no_import_cycle() -> None:
    mods, edges, _ = _graph()
    assert _cycles(mods, edges) == []


def test_library_imports_no_dagster_and_no_upper_layer() -> None:
    mods, edges, external = _graph()
    bad = {
        name: sorted(
            {*(t for t in edges[name] if t.startswith(("resources", "assets"))), *external[name] & {"dagster"}}
        )
        for name in mods
        if name.startswith("pipeline") and name not in ENTRY_POINTS
    }
    assert {k: v for k, v in bad.items() if v} == {}


def test_importing_the_library_does_not_load_dagster() -> None:
    code = (
        "import sys, pipeline.judges.base, pipeline.run.stage, pipeline.report.build, pipeline.readers.run, "
        "pipeline.memory.ingest, pipeline.cli.main; print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('dagster', 'resources', 'assets')))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
