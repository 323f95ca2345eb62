"""The Parquet files the catalog's and the manifest's fingerprints hash: which, and in what order.

Both fingerprints hash files by (path, size, mtime) in this order, so a change of order or of the
files taken changes every stored fingerprint and makes a rerun rebuild what had not changed.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.util.fingerprint import parquet_files


def _touch(root: Path, *names: str) -> list[Path]:
    paths = [root / n for n in names]
    for p in paths:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"")
    return paths


def test_folders_in_name_order_files_at_any_depth_in_path_order(tmp_path: Path) -> None:
    _touch(tmp_path, "b/x.parquet", "b/sub/a.parquet", "a/z.parquet", "a/y.parquet", "a/y-2.parquet")
    _touch(tmp_path, "_index/i.parquet", "b/notes.txt", "top.parquet")
    got = parquet_files(tmp_path, {"_index"})
    expected = sorted((tmp_path / "a").rglob("*.parquet")) + sorted((tmp_path / "b").rglob("*.parquet"))
    assert got == expected
    assert [p.relative_to(tmp_path).as_posix() for p in got] == [
        "a/y-2.parquet", "a/y.parquet", "a/z.parquet", "b/sub/a.parquet", "b/x.parquet",
    ]  # fmt: skip


def test_skipped_folders_and_a_missing_root_give_nothing(tmp_path: Path) -> None:
    _touch(tmp_path, "_index/i.parquet", "embeddings/e.parquet")
    assert parquet_files(tmp_path, {"_index", "embeddings"}) == []
    assert parquet_files(tmp_path / "absent", set()) == []
