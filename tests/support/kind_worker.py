"""Run one product ingestion (kind graphiti or hindsight) in a child process: the kill -9 tests kill it.

Usage: python -m tests.support.kind_worker BASE_URL WORK_DIR KIND
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.memory.checkpoint import load
from tests.support.memory import HAYSTACK, build_haystack
from tests.support.paths import PROJECT_ROOT
from tests.support.products_worker import deps_for

if TYPE_CHECKING:
    from pipeline.llm.fake_server import FakeOpenAIServer, Rule


def run(base_url: str, work: Path, kind: str) -> str | None:
    from pipeline.config.model import ComponentConfig
    from pipeline.kinds.memory import MEMORY_SYSTEMS
    from pipeline.memory.ingest import ingest_haystack
    from pipeline.memory.systems import SystemSpec

    cls = MEMORY_SYSTEMS.get(kind)
    deps = deps_for(base_url, work)
    spec = SystemSpec.from_class(ComponentConfig(name=kind, kind=kind), cls, f"hash-{kind}", None)
    build = lambda: cls({}, deps)  # noqa: E731
    return ingest_haystack(spec, build, HAYSTACK, build_haystack(), work / "ck.parquet").error


def kill_9_then_rerun(server: FakeOpenAIServer, hanging: Rule, work: Path, kind: str, bound_s: float) -> None:
    """Run the worker in a child, SIGKILL it once a request for ``hanging`` (a rule set to hang, in the
    third session) arrived, check the checkpoint kept two sessions, then rerun here with fresh counts.

    ``bound_s`` only stops a child that never gets there (a generous bound, not a timing assertion)."""
    cmd = [sys.executable, "-m", "tests.support.kind_worker", server.base_url, str(work), kind]
    child = subprocess.Popen(cmd, cwd=PROJECT_ROOT)
    arrived = lambda: any(match == hanging.match for _, match in server.timeline)  # noqa: E731
    try:
        deadline = time.monotonic() + bound_s
        while child.poll() is None and time.monotonic() < deadline and not arrived():
            time.sleep(0.2)
        assert arrived(), f"the {kind} child never sent the request it was to be killed in"
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    ck = load(work / "ck.parquet")
    assert ck is not None and ck.state.sessions_completed == 2
    server.reset_counts()
    assert run(server.base_url, work, kind) is None


if __name__ == "__main__":
    sys.exit(1 if run(sys.argv[1], Path(sys.argv[2]), sys.argv[3]) else 0)
