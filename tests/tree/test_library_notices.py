"""Third-party deprecation notices stay off the run's terminal; membench's own warnings do not.

Each check runs in a fresh interpreter with ``-W always`` (every warning printed), because Python
warns once per import and this test session has imported the libraries already. The control cases
show the same code does print the notice when membench's filter is not in place, so a pass is not
a library that simply stopped warning.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.paths import PROJECT_ROOT

ROOT = PROJECT_ROOT

DAGSTER_NOTICE = "dagster_run is deprecated"
REPLACE_CONFIG = (
    "import dagster as dg\n"
    "from dagster._core.execution.context.init import InitResourceContext\n"
    "none = dg.ResourceDefinition.none_resource()\n"
    "ctx = InitResourceContext(resource_config={}, resources=None, resource_def=none, all_resource_defs={})\n"
    "ctx.replace_config({})\n"
)


def stderr_of(code: str) -> str:
    env = {**os.environ, "MEMBENCH_CONFIG": "configs/sample.yaml"}
    done = subprocess.run(
        [sys.executable, "-W", "always", "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


@pytest.mark.parametrize(
    ("kind", "library_module", "notice"),
    [
        ("langmem", "langmem.knowledge.extraction", "LangGraphDeprecatedSinceV10"),
        ("graphiti", "graphiti_core.driver.kuzu_driver", "PydanticDeprecatedSince20"),
    ],
)
def test_product_import_prints_no_library_notice(kind: str, library_module: str, notice: str) -> None:
    assert notice in stderr_of(f"import {library_module}")  # the control: the library does warn
    quiet = stderr_of(f"from pipeline.products.{kind}_memory import _quiet_import\n_quiet_import()")
    assert "Warning" not in quiet


def test_mem0_import_prints_no_library_notice() -> None:
    assert "Warning" not in stderr_of("from pipeline.products.mem0_memory import _quiet_import\n_quiet_import()")


def test_dagster_internal_notice_is_off_once_definitions_load() -> None:
    assert DAGSTER_NOTICE in stderr_of(REPLACE_CONFIG)  # the control: Dagster's own call warns
    assert DAGSTER_NOTICE not in stderr_of("import pipeline.definitions\n" + REPLACE_CONFIG)


def test_membench_own_deprecation_warnings_still_show() -> None:
    code = "import pipeline.definitions, warnings\nwarnings.warn('ours', DeprecationWarning)\n"
    assert "DeprecationWarning: ours" in stderr_of(code)
