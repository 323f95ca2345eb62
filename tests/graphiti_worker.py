"""Run one graphiti ingestion in a child process (the kill -9 test kills it mid-session).

Usage: python -m tests.graphiti_worker BASE_URL WORK_DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.memory_fixtures import HAYSTACK, build_haystack
from tests.products_worker import deps_for


def run(base_url: str, work: Path) -> str | None:
    from pipeline.config import ComponentConfig
    from pipeline.memory.ingest import ingest_haystack
    from pipeline.memory.systems import SystemSpec
    from pipeline.products.graphiti_memory import GraphitiMemory

    deps = deps_for(base_url, work)
    spec = SystemSpec.from_class(ComponentConfig(name="graphiti", kind="graphiti"), GraphitiMemory, "hash-g", None)
    build = lambda: GraphitiMemory({}, deps)  # noqa: E731
    return ingest_haystack(spec, build, HAYSTACK, build_haystack(), work / "ck.parquet").error


if __name__ == "__main__":
    sys.exit(1 if run(sys.argv[1], Path(sys.argv[2])) else 0)
