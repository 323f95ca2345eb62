"""An exclusive advisory file lock (POSIX ``flock``) for work that concurrent runs share.

Why: a backfill split into concurrent runs, or two CLI runs, may reach the same (memory system,
haystack) checkpoint or the same embedding cache at once; both write several files that must
change together. The lock is held per open file, so it serialises threads and processes alike
(on a shared results folder across machines it needs a filesystem with POSIX locks, e.g. NFSv4).
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing) for the duration of the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
