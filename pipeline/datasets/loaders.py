"""The dataset loaders by name: the explicit list a config's ``loader:`` is looked up in.

Why a list and not registration on import: which loaders exist must not depend on which modules a
process happened to import.
"""

from __future__ import annotations

from pipeline.datasets.base import LoaderFn
from pipeline.datasets.locomo import load_locomo
from pipeline.datasets.locomo_mc10 import load_locomo_mc10
from pipeline.datasets.longmemeval import load_longmemeval
from pipeline.util.registry import Registry

LOADERS: Registry[LoaderFn] = Registry.of(
    "dataset loader",
    {"locomo": load_locomo, "locomo_mc10": load_locomo_mc10, "longmemeval": load_longmemeval},
)
