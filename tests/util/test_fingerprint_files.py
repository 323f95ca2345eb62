"""The Parquet files the catalog's and the manifest's fingerprints hash: which, and in what order.

Both fingerprints hash files by (path, size, mtime) in this order, so a change of order or of the
files taken changes every stored fingerprint and makes a rerun rebuild what had not changed.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pipeline.report import refresh
from pipeline.report.refresh import report_fingerprint
from pipeline.store.results import ResultStore
from pipeline.util.fingerprint import parquet_files, update_with_files


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


def _path_way(files: list[Path], under: Path | None = None, named: Path | None = None) -> str:
    """What ``update_with_files`` hashed before it renamed by string: ``named / f.relative_to(under)``."""
    h = hashlib.sha256()
    for f in files:
        st = f.stat()
        path = named / f.relative_to(under) if under is not None and named is not None else f
        h.update(f"|{path}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()


def _hashed(files: list[Path], under: Path | None = None, named: Path | None = None) -> str:
    h = hashlib.sha256()
    update_with_files(h, files, under, named)
    return h.hexdigest()


def test_files_hashed_under_another_folder_hash_as_their_paths_there(tmp_path: Path) -> None:
    """A snapshot's links hash under the live names, the text ``named / f.relative_to(under)`` gives."""
    files = _touch(tmp_path / "links" / "parquet", "a/x.parquet", "a/sub/y.parquet", "b/z.parquet")
    live = tmp_path / "results" / "parquet"
    assert _hashed(files) == _path_way(files)
    assert _hashed(files, tmp_path / "links" / "parquet", live) == _path_way(
        files, tmp_path / "links" / "parquet", live
    )
    assert _hashed(files, tmp_path / "links" / "parquet", live) != _hashed(files)
    # a folder whose name only starts like ``under`` is not under it
    other = _touch(tmp_path / "links" / "parquet2", "c.parquet")
    with pytest.raises(ValueError):
        _hashed(other, tmp_path / "links" / "parquet", live)
    root = Path(tmp_path.anchor)
    assert _hashed(files, root, live) == _path_way(files, root, live)


def test_the_report_fingerprint_hashes_the_files_parquet_files_lists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report's fingerprint takes its files from ``parquet_files`` (one walk, one order for all
    the fingerprints), minus the stages it never reads; a stage folder's own walk hashed the same."""
    store = ResultStore(str(tmp_path / "res"))
    _touch(store.parquet_root, "answers/q1.parquet", "answers/q0.parquet", "memory/s/d/h.parquet")
    _touch(store.parquet_root, "_index/answers.parquet", "embeddings/e.parquet")
    walked: list[Path] = []

    def listing(root: Path, skip: frozenset[str]) -> list[Path]:
        found = parquet_files(root, skip)
        walked.extend(found)
        return found

    before = report_fingerprint(store)
    monkeypatch.setattr(refresh, "parquet_files", listing)
    assert report_fingerprint(store) == before
    assert [p.relative_to(store.parquet_root).as_posix() for p in walked] == [
        "answers/q0.parquet", "answers/q1.parquet", "memory/s/d/h.parquet",
    ]  # fmt: skip
