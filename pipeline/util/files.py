"""Writing a small file without the folder check every write would otherwise pay."""

from __future__ import annotations

from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow as pa


def open_in_folder(path: Path, mode: str) -> IO[Any]:
    """``open(path, mode)`` (a binary mode that creates the file), making its folder only when missing.

    Why not ``mkdir(parents=True, exist_ok=True)`` first: in a folder that exists (every open but
    a folder's first) that is a failed ``mkdir`` and a ``stat`` per file, paid per LLM reply
    cached, per per-question Parquet file and per checkpoint lock taken.
    """
    try:
        return open(path, mode)  # the caller closes it
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        return open(path, mode)


def write_new_file(path: Path, data: bytes | memoryview | pa.Buffer) -> None:
    """Write ``data`` to ``path`` (created or truncated), making its folder only when it is missing."""
    with open_in_folder(path, "wb") as f:
        f.write(data)
