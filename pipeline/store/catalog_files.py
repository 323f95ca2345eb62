"""Fixed sets of a results folder's Parquet files, as hard links: what a query reads never changes under it.

Why: DuckDB lists a view's files (and their sizes) when it binds a query and opens each file again
to read it. A run that renames a new version over a file in between makes the query read the new
file at the old file's offsets: with runs rewriting answers and judgments, 11 of 1,000 queries in
the DuckDB shell over ``results.duckdb`` failed ("TProtocolException: Invalid data", "Parquet file
is likely corrupted, missing dictionary"), and a view over a whole stage folder bound with
``union_by_name`` failed nearly every query while a writer replaced files without pause. A hard
link is the file as it was: a replaced or retired file stays readable, unchanged, through the link.
No data is copied (~15k links for the full shared benchmark).

Two users (pipeline/store/results.py):

- ``ResultStore.connect()`` (``membench sql``, reports, progress) links every file when it opens
  and removes the folder when it closes (``<results>/.pinned/<pid>-<uuid>/``);
- the catalog ``results.duckdb`` (the DuckDB shell, ``ResultStore.reader()``) reads the files as
  they were when it was built (``<results>/.catalog_files/<id>/``, its views' paths relative to the
  results folder). A catalog that has been replaced stays readable wherever it is still open (the
  shell keeps its inode), so its folder is removed only once it is superseded for
  ``RETIRE_AFTER_S`` and no process holds a lock on that catalog (DuckDB locks a database file it
  opens; the folder holds a hard link to its catalog to ask about).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

CATALOG_FILES_DIR = ".catalog_files"  # <results>/.catalog_files/<id>/parquet/...: what a catalog's views read
CATALOG_LINK = "results.duckdb"  # in each such folder: a hard link to the catalog built over it
RETIRED_MARK = ".superseded"  # written when a newer catalog replaced this folder's (its time, epoch seconds)
RETIRE_AFTER_S = 10.0  # a superseded folder stays at least this long: a session opening its catalog locks it by then
PROC_LOCKS = Path("/proc/locks")


def link_tree(src: Path, dst: Path, skip_dirs: Iterable[str] = ()) -> None:
    """Hard-link every ``*.parquet`` under ``src`` into ``dst`` (same relative paths).

    ``skip_dirs``: top-level folders of ``src`` left out. A file retired while the tree is walked is
    left out too (a reader sees the folder as it was at some point of the walk, file by file).
    """
    src_root, skipped = str(src), set(skip_dirs)
    for dirpath, dirnames, filenames in os.walk(src_root):  # plain strings: ~15k files
        if dirpath == src_root:
            dirnames[:] = [d for d in dirnames if d not in skipped]
        target = os.path.join(dst, os.path.relpath(dirpath, src_root))
        os.makedirs(target, exist_ok=True)
        for name in filenames:
            if name.endswith(".parquet"):
                with contextlib.suppress(FileNotFoundError):  # retired since it was listed
                    os.link(os.path.join(dirpath, name), os.path.join(target, name))


def new_folder(root: Path) -> Path:
    """A new, empty folder for a catalog's files: ``<root>/.catalog_files/<id>``."""
    folder = root / CATALOG_FILES_DIR / f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}"
    folder.mkdir(parents=True)
    return folder


def retire_superseded(root: Path, current: str) -> list[str]:
    """Remove the catalog file folders of ``root`` other than ``current`` that nothing can read any more.

    A folder is first marked superseded (now), and removed by a later call once that is
    ``RETIRE_AFTER_S`` ago and no process holds a lock on its catalog. Returns the removed names.
    """
    base = root / CATALOG_FILES_DIR
    if not base.is_dir():
        return []
    removed = []
    now = time.time()
    for folder in sorted(base.iterdir()):
        if folder.name == current or not folder.is_dir():
            continue
        mark = folder / RETIRED_MARK
        if not mark.exists():
            mark.write_text(f"{now}")
            continue
        with contextlib.suppress(ValueError, OSError):
            if now - float(mark.read_text()) < RETIRE_AFTER_S:
                continue
        if is_locked(folder / CATALOG_LINK):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder.name)
    return removed


def is_locked(path: Path) -> bool:
    """True when some process holds a lock on ``path``'s file (False when there is no such file).

    /proc/locks lists every lock by device and inode without touching the file (a lock of this
    very process included); where it is absent, or to see a process it does not list (another PID
    namespace), a non-blocking exclusive lock is tried and released.
    """
    try:
        st = path.stat()
    except FileNotFoundError:
        return False
    ident = f" {os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino} "
    with contextlib.suppress(OSError):
        if any(ident in line for line in PROC_LOCKS.read_text().splitlines()):
            return True
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return True  # cannot even ask: keep it
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    else:
        fcntl.lockf(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)
