"""The advisory lock that lets concurrent runs share a results folder: exclusive across processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pipeline.util.filelock import file_lock

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


def _other_process_sees(path: Path) -> str:
    out = subprocess.run([sys.executable, "-c", TRY_LOCK, str(path)], capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_lock_excludes_another_process_until_released(tmp_path: Path) -> None:
    lock = tmp_path / "sub" / "ckpt.parquet.lock"
    with file_lock(lock):
        assert lock.exists()
        assert _other_process_sees(lock) == "busy"
    assert _other_process_sees(lock) == "free"


def test_lock_is_released_when_the_block_raises(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    try:
        with file_lock(lock):
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert _other_process_sees(lock) == "free"
