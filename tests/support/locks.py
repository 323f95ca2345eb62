"""Whether another process could take a lock now (the lock tests' probes, run in a subprocess)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pipeline.util.filelock import key_offset

TRY_LOCK = """
import fcntl, sys
with open(sys.argv[1], "a+b") as f:
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print("busy")
    else:
        print("free")
"""


TRY_KEY = """
import fcntl, os, struct, sys
with open(sys.argv[1], "a+b") as f:
    try:
        fcntl.fcntl(f, fcntl.F_OFD_SETLK, struct.pack("@hhqqi4x", fcntl.F_WRLCK, os.SEEK_SET, int(sys.argv[2]), 1, 0))
    except BlockingIOError:
        print("busy")
    else:
        print("free")
"""


def other_process_sees_key(path: Path, key: str) -> str:
    """Whether another process could lock ``key`` of the keyed lock file ``path`` now."""
    args = [sys.executable, "-c", TRY_KEY, str(path), str(key_offset(key))]
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout.strip()


def other_process_sees(path: Path) -> str:
    """Whether another process could ``flock`` the file ``path`` now."""
    out = subprocess.run([sys.executable, "-c", TRY_LOCK, str(path)], capture_output=True, text=True, check=True)
    return out.stdout.strip()
