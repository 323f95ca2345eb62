"""Fingerprints of files by (path, size, mtime), for the steps a rerun skips when nothing changed.

Why one place: the catalog, the report and the embeddings step each decide "inputs unchanged"
the same way -- results files are only ever replaced by atomic rename, so an unchanged
(size, mtime) means unchanged content (the rule ``make`` relies on), and the pipeline code is
an input of each. A fourth copy of the loop would drift.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Any

PIPELINE_ROOT = Path(__file__).resolve().parents[1]  # the pipeline package


def pipeline_code_files() -> list[Path]:
    """Every Python file of the pipeline package, sorted (view SQL, metrics, unit texts, report).

    The list is walked once per process (every step of a run asked for it, some several times);
    each file's size and mtime are still read by every fingerprint, so an edit is seen.
    """
    return list(_code_files())


@functools.cache
def _code_files() -> tuple[Path, ...]:
    return tuple(sorted(PIPELINE_ROOT.rglob("*.py")))


def sorted_paths(paths: Iterable[Path]) -> list[Path]:
    """``sorted(paths)``, in the same order: compared as tuples of their parts, which is what a
    ``Path``'s ``<`` compares, without a Python method call per comparison (the fingerprints of a
    2,000-question run's end sorted ~10k paths each, ~350k calls, ~0.3 s)."""
    return sorted(paths, key=_path_parts)


def _path_parts(path: Path) -> tuple[str, ...]:
    return path.parts


def parquet_files(root: Path, skip: Collection[str]) -> list[Path]:
    """Every Parquet file under ``root``'s folders but those named in ``skip``: folders in name
    order, each one's files (at any depth) in path order: the order the fingerprints hash them in."""
    files: list[Path] = []
    if root.is_dir():
        for sub in sorted(root.iterdir()):
            if sub.is_dir() and sub.name not in skip:
                files += sorted_paths(sub.rglob("*.parquet"))
    return files


def update_with_files(h: Any, files: Iterable[Path], under: Path | None = None, named: Path | None = None) -> None:
    """Feed each file's path, size and mtime (ns) to the hash ``h``, in the given order.

    ``under``, ``named``: files under ``under`` are hashed by their path under ``named`` instead
    (hard links of a folder's files hash as those files did when they were linked).
    """
    rename = _renamer(under, named)
    for f in files:
        st = os.stat(f)
        h.update(f"|{rename(f)}:{st.st_size}:{st.st_mtime_ns}".encode())


def _renamer(under: Path | None, named: Path | None) -> Callable[[Path], str]:
    """The text a file is hashed under: its path, or ``named / f.relative_to(under)``.

    Why by string where it can: a run's end hashes ~10k links of a snapshot by their live names,
    and two ``Path`` operations a file cost ~0.06 s; the same text (normalized paths: the prefix
    and a separator are what ``relative_to`` removes and ``/`` puts back).
    """
    if under is None or named is None:
        return str
    old, new = str(under), str(named)
    if old.endswith(os.sep) or new.endswith(os.sep):  # a root folder: Path's rules, not the prefix's
        return lambda f: str(named / f.relative_to(under))
    cut = len(old)

    def rename(f: Path) -> str:
        text = str(f)
        if text.startswith(old) and text[cut : cut + 1] == os.sep:
            return new + text[cut:]
        return str(named / f.relative_to(under))  # not under it: ValueError, as before

    return rename
