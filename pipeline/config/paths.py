"""Is a dataset's file there and readable? Asked when a config loads.

Why at load: a missing or unreadable dataset file used to pass ``check-config`` and surface only
in the embeddings step, with a message about canonical tables that did not name the file. The
check opens the file and reads one byte, so what the loaders will meet (a folder, a dangling
link, a permission the process lacks) is found before any asset runs. Content errors (a
truncated file, a non-UTF-8 byte) are left to the loaders: they fail that dataset's questions.
"""

from __future__ import annotations

import os
from pathlib import Path


def path_problem(path: Path, folder_ok: bool = False) -> str | None:
    """Why ``path`` cannot be read as a dataset file (one line naming it), or None when it can.

    ``folder_ok``: the loader reads a folder (BEAM's layout); a readable folder passes here and
    the loader's own layout check says whether it holds the dataset."""
    if path.is_dir():
        if folder_ok:
            return None if os.access(path, os.R_OK | os.X_OK) else f"cannot be read: {path}: permission denied"
        return f"{path} is a directory, not a file"
    if not path.exists():
        return f"file not found: {path}"
    try:
        with path.open("rb") as f:
            f.read(1)
    except OSError as exc:
        return f"cannot be read: {path}: {exc.strerror or exc}"
    return None
