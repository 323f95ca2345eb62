"""Dagster's private modules (``dagster._...``) are imported in resources/dagster_internals.py only.

Why: a private name can change in any Dagster release; kept in one module, with a comment per use,
an upgrade re-checks one file (docs/design/dagster_upgrade.md). This test fails on a ``dagster._`` import
anywhere else in the project (library, assets, resources, benchmarks, tests), static or dynamic.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.support.paths import PROJECT_ROOT

ALLOWED = PROJECT_ROOT / "resources" / "dagster_internals.py"
THIS_FILE = Path(__file__).resolve()  # its samples below name private modules on purpose
FOLDERS = ("pipeline", "assets", "resources", "benchmarks", "tests", "examples", "scripts")
# a private module named as a string (importlib.import_module("dagster._core..."), __import__, dagster.yaml)
PRIVATE_STRING = re.compile(r"""["']dagster\._""")


def _private_imports(path: Path) -> list[str]:
    """``dagster._`` imports of ``path``, as ``file:line: module``."""
    text = path.read_text()
    found: list[str] = []
    for node in ast.walk(ast.parse(text)):
        modules: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        found += [f"{path}:{node.lineno}: {m}" for m in modules if m.startswith("dagster._")]
    found += [f"{path}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}" for m in PRIVATE_STRING.finditer(text)]
    return found


def _project_files() -> list[Path]:
    return [p for folder in FOLDERS for p in sorted((PROJECT_ROOT / folder).rglob("*.py")) if ".venv" not in p.parts]


def test_private_dagster_imports_only_in_the_internals_module() -> None:
    offenders = [hit for path in _project_files() if path not in (ALLOWED, THIS_FILE) for hit in _private_imports(path)]
    assert offenders == [], "import Dagster private names through resources/dagster_internals.py:\n" + "\n".join(
        offenders
    )


def test_the_check_sees_a_private_import(tmp_path: Path) -> None:
    """The scan itself: each form of a private import is caught, public ones are not."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import dagster as dg\n"
        "from dagster import AssetKey\n"
        "from dagster._core.events import DagsterEvent\n"
        "import dagster._utils\n"
        "from dagster import _check\n"
        "import importlib\n"
        "importlib.import_module('dagster._serdes')\n"
    )
    hits = _private_imports(sample)
    assert [h.split(": ", 1)[1] for h in hits] == [
        "dagster._core.events",
        "dagster._core.events.DagsterEvent",
        "dagster._utils",
        "dagster._check",
        "'dagster._",
    ]


def test_every_internal_name_is_explained() -> None:
    """Each import of the internals module sits under a comment saying why (no bare private import)."""
    tree = ast.parse(ALLOWED.read_text())
    lines = ALLOWED.read_text().splitlines()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("dagster._"):
            above = lines[node.lineno - 2].strip()
            block = lines[node.lineno - 1 : node.end_lineno]
            assert above.startswith("#") or all("#" in line for line in block[1:-1] or block), (
                f"resources/dagster_internals.py:{node.lineno}: say why {node.module} is needed"
            )
