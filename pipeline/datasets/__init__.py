"""Dataset layer: registered loaders (``LOADERS``), the converter and the MC10 cross-check.

Importing this package registers every loader by name (``locomo``, ``locomo_mc10``,
``longmemeval``), so ``LOADERS.get(cfg.loader)`` works wherever the config is read.
"""

from pipeline.datasets import locomo, locomo_mc10, longmemeval  # noqa: F401  (register loaders)
from pipeline.datasets.base import LOADERS, DatasetFileError, LoaderFn
from pipeline.datasets.convert import ConvertStats, convert_dataset
from pipeline.datasets.crosscheck import apply_mc10_crosscheck, mc10_type_names, mc10_vs_locomo

__all__ = [
    "LOADERS",
    "ConvertStats",
    "DatasetFileError",
    "LoaderFn",
    "apply_mc10_crosscheck",
    "convert_dataset",
    "mc10_type_names",
    "mc10_vs_locomo",
]
