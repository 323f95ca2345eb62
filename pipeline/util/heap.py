"""Give freed heap memory back to the OS between pipeline steps (glibc only; elsewhere a no-op).

Why: ``dagster job execute`` runs every step in one process (in-process executor). A step frees
what it built (corpora, contexts, vectors) when it ends, but glibc keeps freed blocks in its
arenas, one arena per thread that ever allocated (torch, DuckDB and Dagster threads), so the next
step started from the previous step's high-water mark and the run's peak RSS was the sum of
fragments rather than the largest step. ``limit_arenas`` caps the arenas at two (like
``MALLOC_ARENA_MAX=2``, which must otherwise be set before the process starts) and
``release_freed`` returns free pages at the top and inside of the heaps (``malloc_trim(0)``) and
the blocks Arrow's own allocator (mimalloc or jemalloc, not glibc) keeps for reuse: measured after
the answers stage of configs/shared.yaml in a fresh process, RSS 1,714 MB -> 1,381 MB (trim) ->
1,211 MB (Arrow's pool).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import gc
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

M_ARENA_MAX = -8  # glibc mallopt parameter
ARENAS = 2


@cache
def _libc() -> Any | None:
    """glibc, or None (musl, macOS, Windows: nothing to do)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        _ = libc.malloc_trim, libc.mallopt
    except (OSError, AttributeError):
        return None
    return libc


def limit_arenas(arenas: int = ARENAS) -> bool:
    """Cap glibc's malloc arenas for threads created from now on; True when applied."""
    libc = _libc()
    return bool(libc is not None and libc.mallopt(M_ARENA_MAX, arenas) == 1)


def keep_out_of_collections() -> None:
    """Move every object alive now out of the reach of later full garbage collections (``gc.freeze``).

    Why: each step of a run ends with a full collection (``release_freed``); with Dagster, pandas,
    DuckDB and the definitions loaded that walks ~400k objects, 0.21 s CPU each (measured), eight
    times per run of the sample, and finds nothing among them: modules, classes and definitions
    live as long as the process. Called once they are loaded, later collections walk only what the
    steps allocate. Objects freed by reference counting are freed as before.
    """
    gc.freeze()


def release_freed() -> bool:
    """Collect garbage, then hand free heap pages back to the OS; True when memory was released."""
    gc.collect()
    return trim_heap()


YOUNG_COLLECTION_EVERY = 20_000  # allocations between young collections in a stage (CPython: 700)


@contextlib.contextmanager
def fewer_collections(threshold: int = YOUNG_COLLECTION_EVERY) -> Iterator[None]:
    """Run the block with young garbage collections ``threshold`` allocations apart, then restore.

    Why: a per-question stage allocates millions of short-lived objects (rows, units, spans); at
    CPython's default of 700 the answers stage of configs/shared.yaml ran 5,270 young and 480 middle
    collections, 3.7 s of 65 s, finding little (measured with ``gc.callbacks``); at 20,000 it ran
    108 and 10, 1.2 s. Cyclic garbage is still collected, only less often.
    """
    old = gc.get_threshold()
    gc.set_threshold(threshold, old[1], old[2])
    try:
        yield
    finally:
        gc.set_threshold(*old)


@contextlib.contextmanager
def collections_paused() -> Iterator[None]:
    """Run the block without cyclic garbage collection, then restore the collector as it was.

    Why: converting a dataset to its canonical tables allocates ~2.5 tracked objects per turn
    (the parsed JSON, the turn rows buffered for Parquet: ~600k for LongMemEval_S) and frees
    them by reference counting; the cyclic collector ran ~860 collections over them and found
    ~1,000 objects (measured with ``gc.get_stats``), 0.2 s CPU of ~3.1 s with the definitions'
    heap frozen, 0.7 s of 3.7 s without. The few cycles made in the block (tracebacks) are
    collected once it ends. Objects freed by reference counting are freed as before.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def trim_heap() -> bool:
    """Hand free heap pages (glibc, Arrow's pool) back to the OS, without a garbage collection.

    Why apart from ``release_freed``: inside a step, after a burst of short-lived C allocations
    (DuckDB binding a view over thousands of files frees ~450 MB it held for a second), a full
    ``gc.collect()`` costs ~0.3 s on a large heap and finds nothing; the trim alone takes ms.
    """
    _release_arrow_pool()
    libc = _libc()
    return bool(libc is not None and libc.malloc_trim(0) == 1)


def _release_arrow_pool() -> None:
    """Ask Arrow's default memory pool to return cached free blocks (a no-op without pyarrow)."""
    try:
        import pyarrow as pa
    except ImportError:
        return
    pa.default_memory_pool().release_unused()


def rss_mb() -> float | None:
    """This process's resident set size in MB (Linux ``/proc``), None where it cannot be read."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def peak_rss_mb() -> float:
    """The largest resident set size this process has had so far, in MB (``ru_maxrss``)."""
    import resource  # Unix only

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024  # bytes on macOS, KiB elsewhere


def release_and_report() -> str:
    """``release_freed`` with what it did in words (RSS before and after, the peak so far)."""
    before = rss_mb()
    release_freed()
    after = rss_mb()
    if before is None or after is None:
        return f"memory released; peak RSS so far {peak_rss_mb():.0f} MB"
    return f"memory: RSS {before:.0f} MB at step end, {after:.0f} MB after release; peak so far {peak_rss_mb():.0f} MB"
