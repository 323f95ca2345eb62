"""The ``embeddings`` asset: embed every unique memory-unit text of the configured datasets once.

Why a separate, unpartitioned asset: LongMemEval_S has 245,625 turns but 188,998 unique unit texts
(sessions are shared across questions); embedding them per question would repeat work and hide
an hour of compute inside the first memory stage. Here the texts are deduplicated across all
datasets, embedded longest-first in sorted batches, and persisted chunk by chunk in the cache
that every later stage reads (``resources.embeddings.CachedEncoder``): a re-run embeds nothing,
a killed run resumes where it stopped.
"""

# No `from __future__ import annotations`: Dagster checks the real type of `context`.
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc
from tqdm import tqdm

from pipeline.config import BenchmarkConfig
from pipeline.memory.base import turn_unit_text
from pipeline.records import TurnRow
from resources.benchmark import BenchmarkResource
from resources.embeddings import EmbeddingResource, EmbedProgress, EnsureStats
from resources.storage import ResultStore

LOG_EVERY_S = 30.0


@dataclass
class UnitTexts:
    """Unique unit texts (first-seen order) and how many units they stand for."""

    texts: list[str] = field(default_factory=list)
    units: int = 0  # turn + summary units before deduplication
    per_dataset: dict[str, int] = field(default_factory=dict)

    def add(self, dataset: str, texts: list[str], seen: dict[str, None]) -> None:
        self.units += len(texts)
        self.per_dataset[dataset] = self.per_dataset.get(dataset, 0) + len(texts)
        for t in texts:
            if t not in seen:
                seen[t] = None
                self.texts.append(t)


def _turn_texts(store: ResultStore, dataset: str, roles: tuple[str, ...] | None) -> list[str]:
    table = store.read_canonical(dataset, "turns")
    if table is None:
        raise FileNotFoundError(
            f"dataset {dataset!r}: canonical turns table {store.canonical_path(dataset, 'turns')} is "
            "missing; materialize the canonical assets first"
        )
    try:
        table = table.select([f.name for f in fields(TurnRow)])
    except KeyError as exc:
        raise ValueError(f"{store.canonical_path(dataset, 'turns')}: not a canonical turns table: {exc}") from exc
    if roles is not None:
        table = table.filter(pc.is_in(table.column("role"), pa.array(list(roles), pa.string())))
    return [turn_unit_text(TurnRow(**row)) for row in table.to_pylist()]


def _summary_texts(store: ResultStore, dataset: str) -> list[str]:
    """Session summaries as the ``summaries`` memory indexes them (stripped, non-empty)."""
    table = store.read_canonical(dataset, "sessions")
    if table is None or "summary" not in table.column_names:
        return []
    return [s.strip() for s in table.column("summary").to_pylist() if s and s.strip()]


def collect_unit_texts(store: ResultStore, cfg: BenchmarkConfig) -> UnitTexts:
    """Every text a memory system embeds: turns of ``index_roles`` (None = all) and summaries."""
    out, seen = UnitTexts(), {}
    for ds in cfg.datasets:
        out.add(ds.name, _turn_texts(store, ds.name, ds.index_roles), seen)
        out.add(ds.name, _summary_texts(store, ds.name), seen)
    return out


def _fmt_eta(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    return f"{seconds / 60:.1f} min" if seconds >= 90 else f"{seconds:.0f} s"


class ProgressReporter:
    """A tqdm bar on a terminal plus a log line every ``every_s`` seconds (Dagster's run log)."""

    def __init__(self, log: Callable[[str], None], every_s: float = LOG_EVERY_S, bar: bool | None = None):
        self.log = log
        self.every_s = every_s
        self.bar_enabled = sys.stderr.isatty() if bar is None else bar
        self._bar: tqdm | None = None
        self._last = time.monotonic()

    def __call__(self, p: EmbedProgress) -> None:
        if self.bar_enabled:
            if self._bar is None:
                self._bar = tqdm(total=p.total, desc="embedding", unit="text")
            self._bar.update(p.done - self._bar.n)
        if p.done == p.total or time.monotonic() - self._last >= self.every_s:
            self._last = time.monotonic()
            rate = p.done / p.elapsed_s if p.elapsed_s > 0 else 0.0
            self.log(
                f"embeddings: {p.done:,}/{p.total:,} new texts ({100 * p.done / max(p.total, 1):.1f}%), "
                f"{rate:.1f} texts/s, ETA {_fmt_eta(p.eta_s)}"
            )

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _metadata(stats: EnsureStats, texts: UnitTexts, resource: EmbeddingResource, extra: dict[str, Any]) -> dict:
    return {
        "model": stats.model,
        "backend": resource.spec().backend,
        "unit_texts": texts.units,
        "unique_texts": stats.unique,
        "already_cached": stats.cached,
        "newly_embedded": stats.embedded,
        "truncated_texts": stats.truncated,
        "texts_per_s": round(stats.texts_per_s, 2),
        "embed_seconds": round(stats.seconds, 2),
        "model_load_seconds": round(stats.model_load_s, 2),
        "units_per_dataset": dg.MetadataValue.json(texts.per_dataset),
        **extra,
    }


@dg.asset(
    name="embeddings",
    deps=[dg.AssetKey("turns")],
    group_name="memory",
    description=(
        "Every unique memory-unit text (turns of each dataset's index_roles, session summaries) "
        "embedded once and cached by (model variant, sha256(text)) in "
        "parquet/embeddings/<model>/part-*.parquet; a re-run embeds only new texts."
    ),
)
def embeddings_asset(
    context: dg.AssetExecutionContext, benchmark: BenchmarkResource, embeddings: EmbeddingResource
) -> dg.MaterializeResult:
    cfg = benchmark.load()
    store = benchmark.store()
    if embeddings.settings() != cfg.embeddings:
        context.log.warning(
            f"the embeddings resource ({embeddings.settings()}) differs from the embeddings block of "
            f"{cfg.source} ({cfg.embeddings}); the resource is used by every stage"
        )
    try:
        texts = collect_unit_texts(store, cfg)
    except (FileNotFoundError, ValueError) as exc:
        raise dg.Failure(str(exc)) from exc
    encoder = embeddings.store_encoder(store)
    context.log.info(
        f"embeddings: {texts.units:,} unit texts, {len(texts.texts):,} unique, model {encoder.model_name}, "
        f"{len(encoder.cache):,} vectors already cached"
    )
    reporter = ProgressReporter(context.log.info)
    try:
        stats = encoder.ensure(texts.texts, progress=reporter)
    finally:
        reporter.close()
    compacted = encoder.compact()
    store.refresh_catalog()
    extra = {"cache_dir": dg.MetadataValue.path(str(encoder.cache.directory)), "shards_merged": compacted}
    return dg.MaterializeResult(metadata=_metadata(stats, texts, embeddings, extra))
