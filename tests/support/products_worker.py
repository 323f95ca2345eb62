"""Run one product memory's ingestion in a child process (the kill -9 tests kill it mid-session).

Usage: python -m tests.support.products_worker BASE_URL WORK_DIR [KIND]   (KIND: mem0 (default) or langmem)
"""

from __future__ import annotations

import sys
from pathlib import Path

from pipeline.llm.client import OpenAIChatClient
from pipeline.memory.base import MemoryDeps
from pipeline.memory.ingest import ingest_haystack
from tests.support.memory import HAYSTACK, build_haystack, encoder


def deps_for(base_url: str, work: Path) -> MemoryDeps:
    """The deps both the child and the test's own rerun use (same caches, same state dir)."""
    llm = OpenAIChatClient(
        base_url=base_url, model="fake-mem0", cache_dir=str(work / "llm"), max_retries=0, timeout_s=120
    )
    return MemoryDeps(encoder(work / "embeddings"), llm=llm, state_dir=work / "results")


def run(base_url: str, work: Path, kind: str = "mem0") -> str | None:
    from pipeline.config.model import ComponentConfig
    from pipeline.kinds.memory import BUILTIN_MEMORY_SYSTEMS
    from pipeline.memory.systems import SystemSpec

    deps = deps_for(base_url, work)
    cls = BUILTIN_MEMORY_SYSTEMS[kind]
    spec = SystemSpec.from_class(ComponentConfig(name=kind, kind=kind), cls, f"hash-{kind}", None)
    outcome = ingest_haystack(spec, lambda: cls({}, deps), HAYSTACK, build_haystack(), work / "ck.parquet")
    return outcome.error


if __name__ == "__main__":
    sys.exit(1 if run(sys.argv[1], Path(sys.argv[2]), *sys.argv[3:4]) else 0)
