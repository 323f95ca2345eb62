"""An exclusive advisory file lock (POSIX ``flock``) for work that concurrent runs share.

Why: a backfill split into concurrent runs, or two CLI runs, may reach the same (memory system,
haystack) checkpoint or the same embedding cache at once; both write several files that must
change together. The lock is held per open file, so it serialises threads and processes alike
(on a shared results folder across machines it needs a filesystem with POSIX locks, e.g. NFSv4).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import struct
import sys
from collections.abc import Iterator
from pathlib import Path

from pipeline.util.files import open_in_folder


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


# Linux's locks owned by the open file (OFD), byte-range: fcntl's commands and the ``struct flock``
# they take (LP64: short type, short whence, off_t start, off_t len, pid_t pid, padded to 32 bytes).
_OFD_SET_WAIT = getattr(fcntl, "F_OFD_SETLKW", None)
_OFD_SET = getattr(fcntl, "F_OFD_SETLK", None)
_FLOCK = struct.Struct("@hhqqi4x")
KEY_BYTES = 7  # a key's byte: the first 7 bytes of its SHA-256 (offsets below 2**56, within off_t)


def keyed_locks_available() -> bool:
    """True where ``keyed_lock`` holds a byte of a shared file (Linux, 64-bit); elsewhere a caller
    keeps a file per key (``file_lock``)."""
    return _OFD_SET_WAIT is not None and _OFD_SET is not None and sys.maxsize > 2**32


def key_offset(key: str) -> int:
    """The byte of a keyed lock file that stands for ``key``."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:KEY_BYTES], "big")


def _range(kind: int, offset: int) -> bytes:
    return _FLOCK.pack(kind, os.SEEK_SET, offset, 1, 0)


@contextlib.contextmanager
def keyed_lock(path: Path, key: str) -> Iterator[None]:
    """Hold an exclusive lock on ``key`` in the lock file ``path`` (created if missing) for the block.

    Why one file for many keys: a lock file per key is a new file (an inode) for every key a run
    locks the first time: the ingestion of LongMemEval_S made 996, one per (memory system,
    haystack), and creating a file is the costly part of a lock (ext4 without a journal scans
    past every inode freed in the last 30 s for each new one). Each key is the byte at
    ``key_offset``; the lock is owned by this open of the file, so, like ``file_lock``, it
    serialises threads (each opens the file anew) and processes alike, and the kernel drops it
    when its holder dies. Only where ``keyed_locks_available``.
    """
    if _OFD_SET_WAIT is None or _OFD_SET is None or not keyed_locks_available():
        raise OSError("byte-range locks owned by the open file are not available here")
    offset = key_offset(key)
    with open_in_folder(path, "a+b") as handle:
        fcntl.fcntl(handle, _OFD_SET_WAIT, _range(fcntl.F_WRLCK, offset))
        try:
            yield
        finally:
            fcntl.fcntl(handle, _OFD_SET, _range(fcntl.F_UNLCK, offset))
