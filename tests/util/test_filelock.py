"""The advisory lock that lets concurrent runs share a results folder: exclusive across processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.util.filelock import file_lock, keyed_lock, keyed_locks_available
from tests.support.locks import other_process_sees, other_process_sees_key


def test_lock_excludes_another_process_until_released(tmp_path: Path) -> None:
    lock = tmp_path / "sub" / "ckpt.parquet.lock"
    with file_lock(lock):
        assert lock.exists()
        assert other_process_sees(lock) == "busy"
    assert other_process_sees(lock) == "free"


def test_lock_is_released_when_the_block_raises(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    try:
        with file_lock(lock):
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert other_process_sees(lock) == "free"


@pytest.mark.skipif(not keyed_locks_available(), reason="byte-range locks owned by the open file: Linux only")
def test_a_keyed_lock_excludes_its_key_only_until_released(tmp_path: Path) -> None:
    """One lock file, a byte per key: another process waits on the same key, not on another."""
    lock = tmp_path / "sub" / ".checkpoints.lock"
    with keyed_lock(lock, "a.parquet"):
        assert other_process_sees_key(lock, "a.parquet") == "busy"
        assert other_process_sees_key(lock, "b.parquet") == "free"
        with keyed_lock(lock, "b.parquet"):  # another key, same process: no wait
            assert other_process_sees_key(lock, "b.parquet") == "busy"
        assert other_process_sees_key(lock, "b.parquet") == "free"
    assert other_process_sees_key(lock, "a.parquet") == "free"
    with pytest.raises(RuntimeError, match="boom"), keyed_lock(lock, "a.parquet"):
        raise RuntimeError("boom")
    assert other_process_sees_key(lock, "a.parquet") == "free"
    assert [p.name for p in lock.parent.iterdir()] == [".checkpoints.lock"]
