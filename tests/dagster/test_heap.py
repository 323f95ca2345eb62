"""pipeline/util/heap.py: freed memory handed back between steps, wired into every job."""

from __future__ import annotations

import platform

import pytest

from pipeline.util.heap import limit_arenas, release_freed


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
        hooks = {h.name for h in defs().resolve_job_def(name).hook_defs}
        assert hooks == {"release_freed_memory", "release_freed_memory_on_failure"}, name


def test_release_returns_arrow_pool_blocks() -> None:
    """Arrow's allocator keeps freed blocks (~160 MB of 160 MB freed here) until asked."""
    import pyarrow as pa

    arrays = [pa.array(range(i, i + 200_000)) for i in range(100)]  # ~160 MB from Arrow's pool
    del arrays
    assert pa.default_memory_pool().bytes_allocated() < 1_000_000
    before = _vm_rss_kb()
    release_freed()
    assert _vm_rss_kb() < before - 50_000  # kB: most of the cached blocks went back to the OS


@pytest.mark.skipif(platform.system() != "Linux", reason="reads /proc")
def test_rss_figures_and_release_message() -> None:
    from pipeline.util.heap import peak_rss_mb, release_and_report, rss_mb

    now = rss_mb()
    assert now is not None and abs(now - _vm_rss_kb() / 1024) < 64  # same counter, read moments apart
    assert peak_rss_mb() >= now - 1
    message = release_and_report()
    assert message.startswith("memory: RSS ") and "after release; peak so far" in message


def test_fewer_collections_sets_and_restores_the_young_threshold() -> None:
    import gc

    from pipeline.util.heap import YOUNG_COLLECTION_EVERY, fewer_collections

    before = gc.get_threshold()
    with fewer_collections():
        assert gc.get_threshold() == (YOUNG_COLLECTION_EVERY, before[1], before[2])
        with fewer_collections(5_000):
            assert gc.get_threshold()[0] == 5_000
        assert gc.get_threshold()[0] == YOUNG_COLLECTION_EVERY
    assert gc.get_threshold() == before
    with pytest.raises(RuntimeError), fewer_collections():
        raise RuntimeError("a failing stage")
    assert gc.get_threshold() == before


def test_collections_paused_disables_the_collector_and_restores_it() -> None:
    import gc

    from pipeline.util.heap import collections_paused

    assert gc.isenabled()
    with collections_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collections_paused():
        raise RuntimeError("a failing conversion")
    assert gc.isenabled()
    gc.disable()
    try:
        with collections_paused():
            pass
        assert not gc.isenabled()  # a collector off before stays off
    finally:
        gc.enable()
