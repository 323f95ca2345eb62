"""pipeline/heap.py: freed memory handed back between steps, wired into every job."""

from __future__ import annotations

import platform

import pytest

from pipeline.heap import limit_arenas, release_freed


def _vm_rss_kb() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_release_returns_freed_small_blocks_to_the_os() -> None:
    assert limit_arenas() is True
    blocks = [bytearray(16_384) for _ in range(12_000)]  # ~200 MB of heap (below the mmap threshold) blocks
    del blocks[1::2]  # every other one freed: holes glibc keeps without a trim
    before = _vm_rss_kb()
    assert release_freed() is True
    assert _vm_rss_kb() < before  # pages inside the heap were handed back
    del blocks


def test_every_job_releases_memory_after_each_step() -> None:
    from pipeline.definitions import defs

    for name in ("full_benchmark", "retrieval_benchmark", "question_stages"):
        hooks = {h.name for h in defs.resolve_job_def(name).hook_defs}
        assert hooks == {"release_freed_memory", "release_freed_memory_on_failure"}, name
