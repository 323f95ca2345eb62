"""Writing a small file without the folder check every write would otherwise pay."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa


def write_new_file(path: Path, data: bytes | memoryview | pa.Buffer) -> None:
    """Write ``data`` to ``path`` (created or truncated), making its folder only when it is missing.

    Why not ``mkdir(parents=True, exist_ok=True)`` first: in a folder that exists (every write but
    a folder's first) that is a failed ``mkdir`` and a ``stat`` per file written, paid per LLM
    reply cached and per per-question Parquet file.
    """
    try:
        f = open(path, "wb")  # noqa: SIM115 (closed below; the retry needs the open apart)
    except FileNotFoundError:
        path.parent.mkdir(parents=True, exist_ok=True)
        f = open(path, "wb")  # noqa: SIM115
    with f:
        f.write(data)
