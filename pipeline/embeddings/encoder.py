"""The cached encoder: vectors from the persistent cache, only misses embedded (the memory systems' ``Encoder``).

Plain (no Dagster): tests and benchmarks build one with ``encoder_for``; the Dagster resource
(resources/embeddings.py) builds one per run from the config's ``embeddings:`` block.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipeline.config.model import EmbeddingConfig
from pipeline.embeddings.cache import (
    EmbeddingCache,
    embeddings_dir,
    in_lane_calls,
    in_short_text_calls,
    text_hash,
)
from pipeline.embeddings.model import EmbeddingModel, encode_chunks, load_model
from pipeline.embeddings.spec import ENCODE_THREADS, EmbeddingModelError, ModelSpec
from pipeline.store.results import ResultStore

CHUNK_TEXTS = 1024  # texts per model call and per cache shard: bounds the work a kill loses
CHARS_PER_TOKEN = 4.0  # English WordPiece average, only used to weight progress / ETA
# A bulk job of at least this many new texts runs in one child process (the spec's threads), even
# with ``workers: 1``. Why: the model's activations and the heap they fragment stay with the process
# that ran them; in the step's own process a full configs/shared.yaml embedding (99,833 texts) left
# RSS at 1,360 MB after the step (and every later step on top of it), against ~450 MB when the
# stages that follow only load the model for queries and sentences. A child costs one model load
# (~5-7 s), so small jobs (tests, the sample) stay in-process.
ISOLATE_TEXTS = 20_000


@dataclass(frozen=True)
class EmbedProgress:
    """Progress of one ``ensure`` call; ``work`` weights texts by estimated tokens (for the ETA)."""

    done: int
    total: int
    work_done: float
    work_total: float
    elapsed_s: float

    @property
    def eta_s(self) -> float | None:
        if self.work_done <= 0 or self.elapsed_s <= 0:
            return None
        return self.elapsed_s * (self.work_total - self.work_done) / self.work_done


ProgressFn = Callable[[EmbedProgress], None]


@dataclass(frozen=True)
class EnsureStats:
    """What one ``ensure`` call did: texts asked for, unique texts, cache hits, newly embedded."""

    model: str
    requested: int
    unique: int
    cached: int
    embedded: int
    truncated: int
    seconds: float  # the whole call, model load included
    model_load_s: float = 0.0

    @property
    def texts_per_s(self) -> float:
        """Embedding throughput of this call (model load excluded)."""
        busy = self.seconds - self.model_load_s
        return self.embedded / busy if busy > 0 else 0.0


def _work(text: str, seq_length: int | None) -> float:
    tokens = len(text) / CHARS_PER_TOKEN + 2
    return (min(tokens, seq_length) if seq_length else tokens) + 8  # + per-text overhead


class CachedEncoder:
    """The ``Encoder`` of pipeline.memory.base: vectors come from the cache, misses are embedded.

    Only texts whose hash is not cached reach the model, each unique text once per call, longest
    first in chunks of ``CHUNK_TEXTS`` (sorted batches carry little padding); every chunk is
    persisted as soon as it is embedded. The model is loaded on the first miss only, so a fully
    cached re-run never pays for it.
    """

    def __init__(
        self, spec: ModelSpec, cache_root: Path, chunk_texts: int = CHUNK_TEXTS, isolate_texts: int = ISOLATE_TEXTS
    ) -> None:
        self.spec = spec
        self.chunk_texts = chunk_texts
        self.isolate_texts = isolate_texts
        self._lock = threading.RLock()  # stages may call encode from worker threads
        # a model folder that does not state its token limit must be loaded to name the variant
        self._model: EmbeddingModel | None = load_model(spec) if spec.max_seq_length is None else None
        self.model_name = spec.variant(self._model.max_seq_length if self._model else None)
        self.cache = EmbeddingCache(cache_root, self.model_name)

    @property
    def model(self) -> EmbeddingModel:
        if self._model is None:
            self._model = load_model(self.spec)
        return self._model

    @property
    def dim(self) -> int:
        return self.cache.dim if self.cache.dim is not None else self.model.dim

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), dim) float32 L2-normalized vectors, in input order."""
        hashes = [text_hash(t) for t in texts]
        with self._lock:
            threads = self.spec.encode_threads if in_short_text_calls() else None
            lanes = self.spec.num_threads if in_lane_calls() else 1
            self._embed_missing(texts, hashes, None, threads=threads, bulk=False, lanes=lanes)
            if not hashes:
                return np.zeros((0, self.dim), dtype=np.float32)
            return self.cache.get(hashes)

    def ensure(self, texts: Sequence[str], progress: ProgressFn | None = None) -> EnsureStats:
        """Embed and persist every uncached text (vectors are not returned: for bulk pre-embedding)."""
        start = time.monotonic()
        hashes = [text_hash(t) for t in texts]
        with self._lock:
            load_start = time.monotonic()
            missing = len(self.cache.missing(hashes))
            if self._model is None and missing and not self._in_children(missing):
                _ = self.model  # load now, so the load is timed apart from the embedding
            load_s = time.monotonic() - load_start
            unique, embedded, truncated = self._embed_missing(texts, hashes, progress, retain=False)
        return EnsureStats(
            model=self.model_name,
            requested=len(texts),
            unique=unique,
            cached=unique - embedded,
            embedded=embedded,
            truncated=truncated,
            seconds=time.monotonic() - start,
            model_load_s=load_s,
        )

    def compact(self) -> int:
        with self._lock:
            return self.cache.compact()

    def _in_children(self, new_texts: int) -> bool:
        """Whether a bulk job of ``new_texts`` runs in child processes (workers, or ISOLATE_TEXTS)."""
        return new_texts > 0 and (self.spec.workers > 1 or new_texts >= self.isolate_texts)

    def _embed_missing(
        self,
        texts: Sequence[str],
        hashes: list[str],
        progress: ProgressFn | None,
        retain: bool = True,
        threads: int | None = None,
        bulk: bool = True,
        lanes: int = 1,
    ) -> tuple[int, int, int]:
        """(unique texts, texts embedded now, of which truncated).

        ``bulk=False`` (per-question ``encode``): never a worker pool, since a pool start (~7 s
        of model load per worker) costs more than a few hundred short texts; ``threads`` then
        sets the torch threads of the call.
        """
        todo = {h: t for h, t in zip(hashes, texts, strict=True) if h not in self.cache}
        unique = len(set(hashes))
        if not todo:
            return unique, 0, 0
        order = sorted(todo.items(), key=lambda kv: -len(kv[1]))
        size = self.chunk_texts
        spec = self.spec if bulk else dataclasses.replace(self.spec, workers=1)
        if spec.workers > 1:  # >= 4 chunks per worker, or the longest-texts chunk runs alone
            size = max(1, min(size, -(-len(order) // (4 * spec.workers))))
        chunks = [order[lo : lo + size] for lo in range(0, len(order), size)]
        seq = self.spec.max_seq_length
        work_total = sum(_work(t, seq) for _, t in order)
        start, work_done, truncated, done = time.monotonic(), 0.0, 0, 0
        if progress is not None:
            progress(EmbedProgress(0, len(order), 0.0, work_total, 0.0))
        isolate = bulk and self._in_children(len(order))
        encoded = encode_chunks(spec, [[t for _, t in c] for c in chunks], lambda: self.model, threads, isolate, lanes)
        for chunk, (vectors, n_truncated) in zip(chunks, encoded, strict=True):
            self.cache.put([h for h, _ in chunk], vectors, retain=retain)
            truncated += n_truncated
            done += len(chunk)
            work_done += sum(_work(t, seq) for _, t in chunk)
            if progress is not None:
                progress(EmbedProgress(done, len(order), work_done, work_total, time.monotonic() - start))
        return unique, len(order), truncated


def model_spec(settings: EmbeddingConfig, encode_threads: int = ENCODE_THREADS) -> ModelSpec:
    """The model spec of an ``embeddings:`` block (``encode_threads``: see ENCODE_THREADS)."""
    if encode_threads < 1:
        raise EmbeddingModelError(f"encode_threads must be >= 1, got {encode_threads}")
    return dataclasses.replace(ModelSpec.from_config(settings), encode_threads=encode_threads)


def encoder_for(
    cache_root: Path, settings: EmbeddingConfig | None = None, encode_threads: int = ENCODE_THREADS
) -> CachedEncoder:
    """A cached encoder of ``settings`` (default: the default ``embeddings:`` block) whose shards live
    in ``cache_root/<model_slug>/part-*.parquet``; ``store_encoder`` uses the results folder's cache."""
    return CachedEncoder(model_spec(settings or EmbeddingConfig(), encode_threads), Path(cache_root))


def store_encoder(settings: EmbeddingConfig, store: ResultStore, encode_threads: int = ENCODE_THREADS) -> CachedEncoder:
    """The encoder over a results folder's cache (<results_dir>/parquet/embeddings)."""
    return encoder_for(embeddings_dir(store.root), settings, encode_threads)
