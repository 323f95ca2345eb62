"""The question partition keys of a dataset, known before any asset runs.

Why before: Dagster partitions are fixed when the definitions load, and a run over every question
(``dagster job execute -j full_benchmark``) is a run over the whole partition range, so the keys
must be known then, not discovered by the canonical asset halfway through the run. They come from
the same loader the canonical asset uses (so the two never disagree), read from the canonical
tables when those are up to date with the source file, else from one scan of the source file,
cached under ``parquet/canonical/.keys/`` by the source's (path, size, mtime, loader version, limit).
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from pipeline.config.model import PROJECT_ROOT, BenchmarkConfig, DatasetConfig
from pipeline.datasets.base import DatasetFileError, LoaderFn
from pipeline.datasets.convert import _source_manifest, _stored_keys, _up_to_date
from pipeline.datasets.loaders import KEY_LOADERS, LOADERS
from pipeline.datasets.slicing import sliced

KEYS_DIR = ".keys"


@dataclass(frozen=True)
class DatasetKeys:
    """A dataset's partition keys in file order; ``error`` when the file could not be read whole."""

    dataset: str
    keys: tuple[str, ...]
    error: str | None = None


def _scan_loader(ds: DatasetConfig) -> LoaderFn:
    """The loader's key-only variant (KEY_LOADERS) when the slice does not depend on question types."""
    fast = KEY_LOADERS.get(ds.loader) if ds.limit_per_type is None else None
    return fast or LOADERS.get(ds.loader)


def _scan(ds: DatasetConfig, src: Path) -> tuple[list[str], str | None]:
    """Keys the canonical conversion would produce (the same slice as ``convert._limited``)."""
    keys: list[str] = []
    try:
        with contextlib.closing(_scan_loader(ds)(src, ds.name)) as records:
            for rec in sliced(records, ds.limit, ds.limit_per_type, ds.question_ids):
                if rec.question is not None:
                    keys.append(rec.question.partition_key)
                elif rec.failure is not None and rec.failure.partition_key:
                    keys.append(rec.failure.partition_key)
    except DatasetFileError as exc:
        return keys, str(exc)
    return keys, None


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
