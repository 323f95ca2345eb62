"""The advisory lock that lets concurrent runs share a results folder: exclusive across processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.util.filelock import file_lock, key_offset, keyed_lock, keyed_locks_available

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


def _other_process_sees_key(path: Path, key: str) -> str:
    """Whether another process could lock ``key`` of the keyed lock file ``path`` now."""
    args = [sys.executable, "-c", TRY_KEY, str(path), str(key_offset(key))]
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout.strip()


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


@pytest.mark.skipif(not keyed_locks_available(), reason="byte-range locks owned by the open file: Linux only")
def test_a_keyed_lock_excludes_its_key_only_until_released(tmp_path: Path) -> None:
    """One lock file, a byte per key: another process waits on the same key, not on another."""
    lock = tmp_path / "sub" / ".checkpoints.lock"
    with keyed_lock(lock, "a.parquet"):
        assert _other_process_sees_key(lock, "a.parquet") == "busy"
        assert _other_process_sees_key(lock, "b.parquet") == "free"
        with keyed_lock(lock, "b.parquet"):  # another key, same process: no wait
            assert _other_process_sees_key(lock, "b.parquet") == "busy"
        assert _other_process_sees_key(lock, "b.parquet") == "free"
    assert _other_process_sees_key(lock, "a.parquet") == "free"
    with pytest.raises(RuntimeError, match="boom"), keyed_lock(lock, "a.parquet"):
        raise RuntimeError("boom")
    assert _other_process_sees_key(lock, "a.parquet") == "free"
    assert [p.name for p in lock.parent.iterdir()] == [".checkpoints.lock"]
