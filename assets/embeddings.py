"""The ``embeddings`` asset: embed every unique memory-unit text of the configured datasets once.

Why a separate, unpartitioned asset: LongMemEval_S has 245,625 turns but 188,998 unique unit texts
(sessions are shared across questions); embedding them per question would repeat work and hide
an hour of compute inside the first memory stage. Here the texts are deduplicated across all
datasets, embedded longest-first in sorted batches, and persisted chunk by chunk in the cache
that every later stage reads (``pipeline.embeddings.encoder.CachedEncoder``): a re-run embeds nothing,
a killed run resumes where it stopped.
"""

# No `from __future__ import annotations`: Dagster checks the real type of `context`.
import hashlib
import json
import sys
import time
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from tqdm import tqdm

from assets.layout import key
from assets.run_claim import check_scope
from assets.run_gate import is_last_step
from pipeline.config.model import BenchmarkConfig
from pipeline.core.records import TurnRow
from pipeline.datasets.convert import dataset_failure_path
from pipeline.embeddings.cache import SHARD_GLOB
from pipeline.embeddings.encoder import EmbedProgress, EnsureStats
from pipeline.kinds.resolve import ResolvedConfig
from pipeline.memory.base import turn_unit_text
from pipeline.memory.systems import system_specs, uses_encoder
from pipeline.store.results import ResultStore
from pipeline.util.filelock import file_lock
from pipeline.util.fingerprint import pipeline_code_files, update_with_files
from pipeline.util.row_groups import iter_row_groups
from resources.benchmark import BenchmarkResource, ResultStoreResource
from resources.embeddings import EmbeddingResource

LOG_EVERY_S = 30.0
TEXT_BATCH_ROWS = 20_000
EMBEDDED_MARK = ".embeddings_inputs"  # under the results folder: inputs of the last complete step


class HashContainer(Protocol):
    """What ``cached`` must offer: membership of a text hash (an EmbeddingCache, a set of hashes)."""

    def __contains__(self, text_hash: str, /) -> bool: ...


@dataclass
class UnitTexts:
    """Unique unit texts (first-seen order) and how many units they stand for.

    With a cache, ``texts`` keeps only the unique texts whose vector is not cached yet (``unique``
    still counts them all): a re-run of LongMemEval_M then holds hashes, not gigabytes of text.
    """

    texts: list[str] = field(default_factory=list)
    units: int = 0  # turn + summary units before deduplication
    unique: int = 0  # distinct texts, cached or not
    per_dataset: dict[str, int] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)  # datasets that failed to load and have no tables

    def add(self, dataset: str, texts: Iterable[str], seen: set[bytes], cached: HashContainer | None) -> None:
        """Count ``texts``; keep each new one (``seen`` holds sha256 digests, 32 bytes a text)."""
        n = 0
        for t in texts:
            n += 1
            digest = hashlib.sha256(t.encode("utf-8")).digest()  # .hex() == pipeline.embeddings.cache.text_hash
            if digest in seen:
                continue
            seen.add(digest)
            self.unique += 1
            if cached is None or digest.hex() not in cached:
                self.texts.append(t)
        self.units += n
        self.per_dataset[dataset] = self.per_dataset.get(dataset, 0) + n


def _turn_text_batches(store: ResultStore, dataset: str, roles: tuple[str, ...] | None) -> Iterator[str]:
    """Unit texts of a dataset's turns, read one row group at a time.

    Why batches: reading the whole turns table and building a ``TurnRow`` per turn peaked at
    3.6 GB on a LongMemEval_M-sized file (1.5 M turns); memory is now one batch.
    """
    folder = store.parquet_root / "canonical" / dataset
    parts = sorted(folder.glob("turns.parquet")) + sorted(folder.glob("turns-*.parquet"))
    if not parts:
        raise FileNotFoundError(
            f"dataset {dataset!r}: canonical turns table {store.canonical_path(dataset, 'turns')} is "
            "missing; materialize the canonical assets first"
        )
    names = [f.name for f in fields(TurnRow)]
    wanted = pa.array(list(roles), pa.string()) if roles is not None else None
    for part in parts:
        missing = [n for n in names if n not in pq.ParquetFile(part).schema_arrow.names]
        if missing:
            raise ValueError(f"{part}: not a canonical turns table: missing columns {missing}")
        for group in iter_row_groups(part, names):
            if wanted is not None:
                group = group.filter(pc.is_in(group.column("role"), value_set=wanted))
            for batch in group.to_batches(max_chunksize=TEXT_BATCH_ROWS):
                for row in batch.to_pylist():
                    yield turn_unit_text(TurnRow(**row))


def _summary_texts(store: ResultStore, dataset: str) -> list[str]:
    """Session summaries as the ``summaries`` memory indexes them (stripped, non-empty)."""
    path = store.canonical_path(dataset, "sessions")
    if not path.exists() or "summary" not in pq.ParquetFile(path).schema_arrow.names:
        return []
    column = pq.read_table(path, columns=["summary"]).column("summary").to_pylist()
    return [s.strip() for s in column if s and s.strip()]


def failed_without_tables(store: ResultStore, dataset: str) -> bool:
    """The dataset's file failed to load and it has no canonical turns from an earlier load.

    Why skipped, not an error: its questions are failed questions in every per-question stage
    (the stage driver finds no canonical record for them); the other datasets still need vectors.
    """
    folder = store.parquet_root / "canonical" / dataset
    has_turns = any(folder.glob("turns.parquet")) or any(folder.glob("turns-*.parquet"))
    return not has_turns and dataset_failure_path(store, dataset).exists()


def collect_unit_texts(
    store: ResultStore,
    cfg: BenchmarkConfig,
    cached: HashContainer | None = None,
    datasets: Collection[str] | None = None,
) -> UnitTexts:
    """Every text a memory system embeds: turns of ``index_roles`` (None = all) and summaries.

    ``cached`` (hash -> vector container, e.g. ``EmbeddingCache``): texts already in it are
    counted but not kept. Turns are streamed; memory holds the digests and the kept texts.
    ``datasets``: only these (``embedded_datasets``); None = every configured dataset.
    """
    out, seen = UnitTexts(), set[bytes]()
    for ds in cfg.datasets:
        if datasets is not None and ds.name not in datasets:
            continue
        if failed_without_tables(store, ds.name):
            out.skipped.append(ds.name)
            continue
        out.add(ds.name, _turn_text_batches(store, ds.name, ds.index_roles), seen, cached)
        out.add(ds.name, _summary_texts(store, ds.name), seen, cached)
    return out


def embedded_datasets(bench: ResolvedConfig, answering: bool) -> list[str]:
    """The datasets whose unit texts some consumer of this run will look up in the cache.

    Why: a dataset whose every memory system declares ``uses_encoder = False`` (``flat_bm25``,
    ``full_context``) never reads a unit vector; embedding its texts anyway cost a run of
    ``flat_bm25`` on LongMemEval_S ~94k texts (~50 min on the 2-core box) that nothing read. The
    vectors are kept for a reader that uses the encoder (``offline``) when this run answers
    (``answering``), and for a dataset with no memory system (nothing to tell from). Results are
    the same either way: the cache is content-addressed, a text missing from it is embedded on use.
    """
    reader_needs = answering and any(r.impl.uses_encoder for r in bench.readers)
    out = []
    for ds in bench.config.datasets:
        specs = system_specs(bench, ds.name)
        if reader_needs or not specs or any(uses_encoder(s.cls) for s in specs):
            out.append(ds.name)
    return out


def answers_in_run(context: dg.AssetExecutionContext, prefix: str) -> bool:
    """Whether this run's job also materializes ``answers`` (unknown selection: assume it does)."""
    selected = context.job_def.asset_layer.selected_asset_keys
    return not selected or key(prefix, "answers") in selected


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
        "unique_texts": texts.unique,
        "already_cached": texts.unique - stats.embedded,
        "newly_embedded": stats.embedded,
        "truncated_texts": stats.truncated,
        "texts_per_s": round(stats.texts_per_s, 2),
        "embed_seconds": round(stats.seconds, 2),
        "model_load_seconds": round(stats.model_load_s, 2),
        "units_per_dataset": dg.MetadataValue.json(texts.per_dataset),
        **extra,
    }


def inputs_fingerprint(
    store: ResultStore, cfg: BenchmarkConfig, model: str, datasets: Collection[str] | None = None
) -> str:
    """Hash of what decides which texts must be in the cache.

    Why: on an unchanged rerun of configs/shared.yaml, streaming and hashing 133k unit texts only
    to find each one cached took 31 s, a fifth of the rerun. Inputs: each dataset's name and
    ``index_roles``, its canonical turns/sessions files (path, size, mtime: replaced only by atomic
    rename), the model variant and the pipeline code (``turn_unit_text``), and which datasets are
    embedded (``datasets``; a later run that needs another one embeds it). The cache itself is
    checked by ``shard_stamps`` (below), not hashed here.
    """
    h = hashlib.sha256(model.encode())
    files = pipeline_code_files()
    for ds in cfg.datasets:
        if datasets is not None and ds.name not in datasets:
            continue
        h.update(f"|{ds.name}:{ds.index_roles}".encode())
        folder = store.parquet_root / "canonical" / ds.name
        files += sorted(folder.glob("turns*.parquet")) + sorted(folder.glob("sessions*.parquet"))
    update_with_files(h, files)
    return h.hexdigest()


def shard_stamps(cache_dir: Path) -> dict[str, list[int]]:
    """``{shard file name: [size, mtime_ns]}`` of the cache's shards.

    Why a set and not a hash: later stages of the same run (question vectors at retrieval, reader
    spans) add shards to the cache, which must not invalidate the unit texts' completeness; a
    shard that disappeared or changed (cleared cache, compaction) does, since it may have held them.
    """
    out: dict[str, list[int]] = {}
    for path in sorted(cache_dir.glob(SHARD_GLOB)):
        st = path.stat()
        out[path.name] = [st.st_size, st.st_mtime_ns]
    return out


def _unchanged_since_complete(store: ResultStore, fingerprint: str, cache_dir: Path) -> dict[str, Any] | None:
    """The last complete step's counts when its inputs were exactly these and every shard it
    left is still there unchanged (shards added since are fine: the cache only grew), else None."""
    mark = store.root / EMBEDDED_MARK
    try:
        saved = json.loads(mark.read_text())
    except (FileNotFoundError, ValueError):
        return None
    if saved.get("fingerprint") != fingerprint or not isinstance(saved.get("shards"), dict):
        return None
    now = shard_stamps(cache_dir)
    if any(now.get(name) != stamp for name, stamp in saved["shards"].items()):
        return None
    return {k: v for k, v in saved.items() if k != "shards"}


def embeddings_asset(
    context: dg.AssetExecutionContext,
    benchmark: BenchmarkResource,
    store: ResultStoreResource,
    embeddings: EmbeddingResource,
) -> dg.MaterializeResult:
    bench = benchmark.resolved()
    cfg = bench.config
    check_scope(context, cfg)
    results = store.store()
    wanted = embedded_datasets(bench, answers_in_run(context, cfg.config_name))
    skipped = [ds.name for ds in cfg.datasets if ds.name not in wanted]
    if skipped:
        context.log.info(f"embeddings: no memory system or reader of this run reads unit vectors of {skipped}")
    if embeddings.settings() != cfg.embeddings:
        context.log.warning(
            f"the embeddings resource ({embeddings.settings()}) differs from the embeddings block of "
            f"{cfg.source} ({cfg.embeddings}); the resource is used by every stage"
        )
    encoder = embeddings.store_encoder(results)
    fingerprint = inputs_fingerprint(results, cfg, encoder.model_name, wanted)
    done = _unchanged_since_complete(results, fingerprint, encoder.cache.directory)
    if done is not None:
        context.log.info(
            f"embeddings: {done['unit_texts']:,} unit texts, {done['unique_texts']:,} unique, all cached; inputs "
            f"unchanged since they were embedded (model {encoder.model_name}); skipped"
        )
        return dg.MaterializeResult(metadata={**done, "skipped_unchanged": True, "fingerprint": fingerprint})
    try:
        texts = collect_unit_texts(results, cfg, cached=encoder.cache, datasets=wanted)
    except (FileNotFoundError, ValueError) as exc:
        raise dg.Failure(str(exc)) from exc
    context.log.info(
        f"embeddings: {texts.units:,} unit texts, {texts.unique:,} unique, {len(texts.texts):,} not cached yet, "
        f"model {encoder.model_name}"
    )
    if texts.skipped:
        context.log.warning(f"embeddings: datasets {texts.skipped} failed to load (no canonical tables): skipped")
    reporter = ProgressReporter(context.log.info)
    with file_lock(encoder.cache.directory / ".lock"):  # concurrent runs: one writes/compacts shards at a time
        try:
            stats = encoder.ensure(texts.texts, progress=reporter)
        finally:
            reporter.close()
        compacted = encoder.compact()
    if is_last_step(context):  # else the run's last step refreshes it (finish_run, assets/run_gate.py)
        results.refresh_catalog()
    counts = {"model": encoder.model_name, "unit_texts": texts.units, "unique_texts": texts.unique}
    mark = {**counts, "fingerprint": fingerprint, "shards": shard_stamps(encoder.cache.directory)}
    (results.root / EMBEDDED_MARK).write_text(json.dumps(mark))
    extra = {
        "cache_dir": dg.MetadataValue.path(str(encoder.cache.directory)),
        "shards_merged": compacted,
        "datasets_not_embedded": ", ".join(skipped) or "none",
    }
    return dg.MaterializeResult(metadata=_metadata(stats, texts, embeddings, extra))


def build_embeddings(prefix: str) -> dg.AssetsDefinition:
    """The embeddings asset of config ``prefix``."""
    return dg.asset(
        key=key(prefix, "embeddings"),
        deps=[key(prefix, "turns"), key(prefix, "sessions")],
        group_name=f"{prefix}_memory",
        description=(
            "Every unique memory-unit text (turns of each dataset's index_roles, session summaries) "
            "embedded once and cached by (model variant, sha256(text)) in "
            "parquet/embeddings/<model>/part-*.parquet; a re-run embeds only new texts."
        ),
    )(embeddings_asset)
