"""Loading the definitions imports no heavy library that only computing work needs (issue 27).

Why: every ``dagster job execute``, an unchanged rerun included, loads the definitions; pandera
(0.2 s of CPU), bm25s with scipy (0.14 s), faiss, torch, openai and matplotlib are imported where
a table is checked, an index built, a model or an endpoint called, a chart drawn. Run in a fresh
interpreter, as the CLI does, on the bundled sample config.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.support.paths import PROJECT_ROOT

HEAVY = ("pandera", "bm25s", "scipy", "faiss", "torch", "sentence_transformers", "openai", "matplotlib")
PROBE = f"""
import json, sys
import pipeline.definitions as d
d.defs()
print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))
"""


def test_loading_the_definitions_imports_no_heavy_library() -> None:
    env_config = str(PROJECT_ROOT / "configs" / "sample.yaml")
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "MEMBENCH_CONFIG": env_config},
        check=True,
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
