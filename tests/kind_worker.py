"""Run one product ingestion (kind graphiti or hindsight) in a child process: the kill -9 tests kill it.

Usage: python -m tests.kind_worker BASE_URL WORK_DIR KIND
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.memory_fixtures import HAYSTACK, build_haystack
from tests.products_worker import deps_for


def run(base_url: str, work: Path, kind: str) -> str | None:
    from pipeline.config import ComponentConfig
    from pipeline.kinds.memory import MEMORY_SYSTEMS
    from pipeline.memory.ingest import ingest_haystack
    from pipeline.memory.systems import SystemSpec

    cls = MEMORY_SYSTEMS.get(kind)
    deps = deps_for(base_url, work)
    spec = SystemSpec.from_class(ComponentConfig(name=kind, kind=kind), cls, f"hash-{kind}", None)
    build = lambda: cls({}, deps)  # noqa: E731
    return ingest_haystack(spec, build, HAYSTACK, build_haystack(), work / "ck.parquet").error


if __name__ == "__main__":
    sys.exit(1 if run(sys.argv[1], Path(sys.argv[2]), sys.argv[3]) else 0)
