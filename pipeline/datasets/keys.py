"""The question partition keys of a dataset, known before any asset runs.

Why before: Dagster partitions are fixed when the definitions load, and a run over every question
(``dagster job execute -j full_benchmark``) is a run over the whole partition range, so the keys
must be known then, not discovered by the canonical asset halfway through the run. They are read
from the canonical tables, converted here when they are not up to date with the source file (the
canonical asset then finds them so and skips its conversion: a dataset is parsed once, not once
for its keys and again for its tables, ~6 s of LongMemEval_S). A file that cannot be converted
falls back to one scan of the file with the same loader (the keys up to its error), cached under
``parquet/canonical/.keys/`` by the source's (path, size, mtime, loader version, limit); the
canonical asset then records the dataset's failure as before.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from pipeline.config.model import PROJECT_ROOT, BenchmarkConfig, DatasetConfig
from pipeline.datasets.base import DatasetFileError
from pipeline.datasets.convert import _source_manifest, _stored_keys, _up_to_date, convert_dataset
from pipeline.datasets.loaders import LOADERS
from pipeline.datasets.slicing import sliced
from pipeline.store.results import ResultStore

KEYS_DIR = ".keys"
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DatasetKeys:
    """A dataset's partition keys in file order; ``error`` when the file could not be read whole."""

    dataset: str
    keys: tuple[str, ...]
    error: str | None = None


def _scan(ds: DatasetConfig, src: Path) -> tuple[list[str], str | None]:
    """Keys the canonical conversion would produce (the same slice as ``convert._limited``)."""
    keys: list[str] = []
    try:
        with contextlib.closing(LOADERS.get(ds.loader)(src, ds.name)) as records:
            for rec in sliced(records, ds.limit, ds.limit_per_type, ds.question_ids):
                if rec.question is not None:
                    keys.append(rec.question.partition_key)
                elif rec.failure is not None and rec.failure.partition_key:
                    keys.append(rec.failure.partition_key)
    except DatasetFileError as exc:
        return keys, str(exc)
    return keys, None


def _convert(ds: DatasetConfig, parquet_root: Path, base_dir: Path) -> tuple[str, ...] | None:
    """The keys of the dataset's canonical tables, converted now; None when it cannot be converted
    (the scan then says why: its error is the dataset's)."""
    store = ResultStore(results_dir=str(parquet_root.parent))
    try:
        return convert_dataset(ds, store, _log.info, base_dir=base_dir).partition_keys
    except Exception as exc:  # any failure: the scan (and later the canonical asset) reports it
        _log.info("dataset %s: not converted while loading the definitions (%s); its file is scanned", ds.name, exc)
        return None


def dataset_keys(ds: DatasetConfig, parquet_root: Path, base_dir: Path = PROJECT_ROOT) -> DatasetKeys:
    """The dataset's keys: canonical tables if current, else the cached scan, else a new scan."""
    src = ds.resolved_path(base_dir)
    try:
        source = _source_manifest(ds, src)
    except DatasetFileError as exc:
        return DatasetKeys(ds.name, (), str(exc))
    out = parquet_root / "canonical" / ds.name
    if _up_to_date(out, source) is not None:
        with contextlib.suppress(OSError, ValueError):
            return DatasetKeys(ds.name, _stored_keys(out))
    cache = parquet_root / "canonical" / KEYS_DIR / f"{ds.name}.json"
    with contextlib.suppress(OSError, ValueError):
        cached = json.loads(cache.read_text())
        if cached.get("input") == source:
            return DatasetKeys(ds.name, tuple(cached["keys"]), cached.get("error"))
    converted = _convert(ds, parquet_root, base_dir)
    if converted is not None:
        return DatasetKeys(ds.name, converted)
    keys, error = _scan(ds, src)
    if error is not None:  # the canonical asset keeps this dataset's earlier tables: keep their questions too
        with contextlib.suppress(OSError, ValueError):
            keys = list(dict.fromkeys([*keys, *_stored_keys(out)]))
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_name(f"{cache.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"input": source, "keys": keys, "error": error}))
    os.replace(tmp, cache)
    return DatasetKeys(ds.name, tuple(keys), error)


def config_keys(cfg: BenchmarkConfig, parquet_root: Path) -> list[DatasetKeys]:
    """Every configured dataset's keys, in config order."""
    return [dataset_keys(ds, parquet_root, cfg.base_dir) for ds in cfg.datasets]
