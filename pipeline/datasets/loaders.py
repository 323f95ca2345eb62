"""The dataset loaders by name: the explicit list a config's ``loader:`` is looked up in.

Why a list and not registration on import: which loaders exist must not depend on which modules a
process happened to import.

Most loaders read the one file a dataset's ``path`` names. Two read several: ``beam`` (a tier or
chat folder of the official layout) and ``locomo_plus`` (``locomo_plus.json`` and the
``locomo10.json`` it is stitched into). ``SOURCE_FILES`` lists, for those, every file a conversion
reads, so the converter's manifest sees an edit to any of them and ``check-config`` can refuse a
folder that holds no dataset before any asset runs.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pipeline.datasets.base import LoaderFn
from pipeline.datasets.beam import load_beam
from pipeline.datasets.beam_layout import source_files as beam_files
from pipeline.datasets.locomo import load_locomo
from pipeline.datasets.locomo_mc10 import load_locomo_mc10
from pipeline.datasets.locomo_plus import load_locomo_plus
from pipeline.datasets.locomo_plus import source_files as locomo_plus_files
from pipeline.datasets.longmemeval import load_longmemeval, load_longmemeval_keys
from pipeline.util.registry import Registry

LOADERS: Registry[LoaderFn] = Registry.of(
    "dataset loader",
    {
        "locomo": load_locomo,
        "locomo_mc10": load_locomo_mc10,
        "longmemeval": load_longmemeval,
        "beam": load_beam,
        "locomo_plus": load_locomo_plus,
    },
)

# loader -> a loader for the keys scan at definitions load (pipeline/datasets/keys.py) that yields
# the same records' ids and partition keys without parsing the questions (questions as keyed failures)
KEY_LOADERS: dict[str, LoaderFn] = {"longmemeval": load_longmemeval_keys}

# loader -> the files a conversion of ``path`` reads (raises DatasetFileError when the layout is wrong)
SOURCE_FILES: dict[str, Callable[[Path], list[Path]]] = {
    "beam": beam_files,
    "locomo_plus": locomo_plus_files,
}
# loaders whose ``path`` may be a folder
FOLDER_LOADERS: frozenset[str] = frozenset({"beam", "locomo_plus"})


def source_files(loader: str, path: Path) -> list[Path]:
    """Every file a conversion with ``loader`` reads from ``path`` (the file itself for most)."""
    lister = SOURCE_FILES.get(loader)
    return [path] if lister is None else lister(path)
