"""Persistent embedding cache: one vector per (model variant, sha256(text)), in Parquet shards.

Why: embedding LongMemEval_S once takes about an hour on a laptop CPU; every memory system and
every re-run must reuse those vectors instead of recomputing them. Vectors live next to the other
results (``<results_dir>/parquet/embeddings/<model_slug>/part-*.parquet``) so DuckDB can query
them, and each write is a new shard renamed into place (atomic): a killed run keeps every shard it
finished and never leaves a half-written file. The key is the *variant* string (model + backend +
max sequence length), because a bf16 or truncated vector is not the fp32 full-length one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextvars import ContextVar
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.store.results import write_parquet_atomic

EMBEDDINGS_DIRNAME = "embeddings"
SHARD_GLOB = "part-*.parquet"
COMPACT_BELOW_ROWS = 10_000  # shards smaller than this are merged by ``compact``

_SLUG_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


_SHORT_TEXT_CALLS: ContextVar[bool] = ContextVar("membench_short_text_encode_calls", default=False)


@contextlib.contextmanager
def _flag_set(flag: ContextVar[bool]) -> Iterator[None]:
    """``flag`` is True inside the block (this thread / async task only), as before after it."""
    token = flag.set(True)
    try:
        yield
    finally:
        flag.reset(token)


@contextlib.contextmanager
def short_text_calls() -> Iterator[None]:
    """Mark the encode calls made inside the block as batches of short texts (reader spans).

    Why: the offline reader embeds hundreds of ~22-token sentences per question, which run 2-4x
    faster on one torch thread than on two on a busy 2-core machine; the cached encoder embeds
    such calls with its ``encode_threads`` (pipeline/embeddings/spec.py). Calls outside the block
    (question texts at retrieval, bulk unit texts) keep ``num_threads``, so their vectors, and
    the retrievals computed from them, are bit-identical to before. Per thread / async task.
    """
    with _flag_set(_SHORT_TEXT_CALLS):
        yield


def in_short_text_calls() -> bool:
    """True inside ``short_text_calls()``."""
    return _SHORT_TEXT_CALLS.get()


_LANE_CALLS: ContextVar[bool] = ContextVar("membench_lane_encode_calls", default=False)


@contextlib.contextmanager
def lane_calls() -> Iterator[None]:
    """Mark the encode calls made inside the block as large batches of short texts, to be embedded
    in parallel lanes (one torch thread each) instead of one call on all torch threads.

    Why: short texts give each intra-op thread little work between barriers. Measured on the
    2-core box (6,000 LoCoMo sentences of ~46 chars, bf16, batch 32): two threads in one call
    6.7 s, one thread 9.1 s, two lanes of one thread 5.2 s. Used by the offline reader's chunk
    prefetch (thousands of sentences a call). Per thread / async task.
    """
    with _flag_set(_LANE_CALLS):
        yield


def in_lane_calls() -> bool:
    """True inside ``lane_calls()``."""
    return _LANE_CALLS.get()


class EmbeddingCacheError(RuntimeError):
    """A cache shard is unreadable or inconsistent (message names the file)."""


def text_hash(text: str) -> str:
    """The cache key of a text: hex sha256 of its UTF-8 bytes (exact content, no normalization)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def model_slug(model: str) -> str:
    """A folder name for a model variant: readable prefix + hash (distinct variants never share one)."""
    readable = _SLUG_UNSAFE.sub("_", model).strip("_.")[-60:] or "model"
    return f"{readable}-{hashlib.sha256(model.encode()).hexdigest()[:8]}"


def embeddings_dir(results_dir: Path) -> Path:
    """``<results_dir>/parquet/embeddings``: the folder holding one sub-folder per model variant."""
    return Path(results_dir) / "parquet" / EMBEDDINGS_DIRNAME


def embedding_schema(dim: int) -> pa.Schema:
    return pa.schema(
        [
            ("model", pa.string()),
            ("text_hash", pa.string()),
            ("dim", pa.int32()),
            ("vector", pa.list_(pa.float32(), dim)),
        ]
    )


def _vectors_of(table: pa.Table, dim: int) -> np.ndarray:
    """The ``vector`` column as a (rows, dim) float32 array (one copy at most)."""
    col = table.column("vector")
    arr = col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
    return np.asarray(arr.flatten().to_numpy(zero_copy_only=False), dtype=np.float32).reshape(-1, dim)


class EmbeddingCache:
    """The shards of one model variant: an in-memory hash index, vectors loaded per shard on demand.

    Opening reads only the ``text_hash`` columns (fast even for 200k rows); a shard's vectors are
    read the first time one of its rows is requested. Concurrent writers are safe (unique shard
    names); a hash written twice is kept once by the index and once more by ``compact``.
    """

    def __init__(self, root: Path, model: str) -> None:
        self.model = model
        self.directory = Path(root) / model_slug(model)
        self.dim: int | None = None
        self._index: dict[str, tuple[int, int]] = {}
        self._shards: list[Path] = []
        self._vectors: dict[int, np.ndarray] = {}
        self.reload()

    # ---- index ---------------------------------------------------------------------------
    def reload(self) -> None:
        """(Re)build the hash index from the shards on disk."""
        self._index.clear()
        self._shards.clear()
        self._vectors.clear()
        for path in sorted(self.directory.glob(SHARD_GLOB)):
            self._add_shard(path, self._read_keys(path))

    def _read_keys(self, path: Path) -> pa.Table:
        try:
            table = pq.read_table(path, columns=["model", "text_hash", "dim"])
        except (OSError, pa.ArrowException) as exc:
            raise EmbeddingCacheError(f"embedding cache shard {path} is unreadable: {exc}") from exc
        models = pc.unique(table.column("model")).to_pylist()
        if table.num_rows and models != [self.model]:
            raise EmbeddingCacheError(
                f"embedding cache shard {path}: field 'model' holds {models}, expected [{self.model!r}]"
            )
        dims = pc.unique(table.column("dim")).to_pylist()
        if len(dims) > 1 or (dims and self.dim is not None and dims[0] != self.dim):
            raise EmbeddingCacheError(f"embedding cache shard {path}: field 'dim' holds {dims}, expected {self.dim}")
        if dims:
            self.dim = int(dims[0])
        return table

    def _add_shard(self, path: Path, keys: pa.Table) -> int:
        shard = len(self._shards)
        self._shards.append(path)
        for row, h in enumerate(keys.column("text_hash").to_pylist()):
            self._index.setdefault(h, (shard, row))
        return shard

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, key: str) -> bool:
        return key in self._index

    @property
    def shard_count(self) -> int:
        return len(self._shards)

    def missing(self, hashes: Iterable[str]) -> list[str]:
        """The hashes (deduplicated, first-seen order) that have no cached vector yet."""
        return [h for h in dict.fromkeys(hashes) if h not in self._index]

    # ---- read ----------------------------------------------------------------------------
    def _shard_vectors(self, shard: int) -> np.ndarray:
        vecs = self._vectors.get(shard)
        if vecs is None:
            path = self._shards[shard]
            try:
                table = pq.read_table(path, columns=["vector"])
            except (OSError, pa.ArrowException) as exc:
                raise EmbeddingCacheError(f"embedding cache shard {path} is unreadable: {exc}") from exc
            assert self.dim is not None
            vecs = self._vectors[shard] = _vectors_of(table, self.dim)
        return vecs

    def get(self, hashes: Sequence[str]) -> np.ndarray:
        """Vectors for ``hashes`` in order, shape (n, dim); KeyError names the first missing hash."""
        if not hashes:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        try:
            return self._get(hashes)
        except FileNotFoundError:  # another process compacted the shards since we opened: re-index
            self.reload()
            return self._get(hashes)

    def _get(self, hashes: Sequence[str]) -> np.ndarray:
        assert self.dim is not None or not self._index
        out = np.empty((len(hashes), self.dim or 0), dtype=np.float32)
        by_shard: dict[int, tuple[list[int], list[int]]] = {}
        for pos, h in enumerate(hashes):
            loc = self._index.get(h)
            if loc is None:
                raise KeyError(f"text hash {h} is not in the embedding cache of {self.model!r}")
            dest, rows = by_shard.setdefault(loc[0], ([], []))
            dest.append(pos)
            rows.append(loc[1])
        for shard, (dest, rows) in by_shard.items():
            out[dest] = self._shard_vectors(shard)[rows]
        return out

    # ---- write ---------------------------------------------------------------------------
    def put(self, hashes: Sequence[str], vectors: np.ndarray, retain: bool = True) -> Path | None:
        """Persist new vectors as one shard (atomic); hashes already cached are skipped.

        ``retain=False`` keeps the vectors out of memory (bulk pre-embedding reads none back).
        """
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(hashes):
            raise ValueError(f"put: {len(hashes)} hashes but vectors of shape {vectors.shape}")
        dim = int(vectors.shape[1])
        if self.dim is not None and dim != self.dim:
            raise ValueError(f"put: vectors have dim {dim}, the cache of {self.model!r} holds dim {self.dim}")
        first: dict[str, int] = {}
        for i, h in enumerate(hashes):
            if h not in self._index:
                first.setdefault(h, i)
        keep = list(first.values())
        if not keep:
            return None
        keys = [hashes[i] for i in keep]
        table = self._table(keys, vectors[keep])
        path = self.directory / f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.parquet"
        write_parquet_atomic(path, table)
        self.dim = dim
        shard = self._add_shard(path, table)
        if retain:
            self._vectors[shard] = np.ascontiguousarray(vectors[keep])
        return path

    def _table(self, keys: list[str], vectors: np.ndarray) -> pa.Table:
        n, dim = vectors.shape
        flat = pa.array(np.ascontiguousarray(vectors).reshape(-1), type=pa.float32())
        return pa.Table.from_arrays(
            [
                pa.array([self.model] * n, pa.string()),
                pa.array(keys, pa.string()),
                pa.array(np.full(n, dim, dtype=np.int32)),
                pa.FixedSizeListArray.from_arrays(flat, dim),
            ],
            schema=embedding_schema(dim),
        )

    def _rows_indexed_here(self, shard: int) -> pa.Table:
        """The rows of ``shard`` the index points to (a hash cached twice is kept once)."""
        table = pq.read_table(self._shards[shard])
        hashes = table.column("text_hash").to_pylist()
        keep = [row for row, h in enumerate(hashes) if self._index.get(h) == (shard, row)]
        return table.take(pa.array(keep, pa.int64()))

    def compact(self, below_rows: int = COMPACT_BELOW_ROWS) -> int:
        """Merge shards smaller than ``below_rows`` into one (dedup); returns the shards removed.

        Why: every encode call that meets new texts (e.g. one query per question) writes a shard;
        hundreds of tiny files slow down opening. Run it when no other process writes this cache
        (the embeddings asset does, at its end); readers re-index if a shard disappears.
        """
        small = [i for i, p in enumerate(self._shards) if pq.ParquetFile(p).metadata.num_rows < below_rows]
        if len(small) < 2 or self.dim is None:
            return 0
        path = self.directory / f"part-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}.parquet"
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        try:  # one shard in memory at a time (merging all at once peaked at ~0.6 GB for 100k vectors)
            with pq.ParquetWriter(tmp, embedding_schema(self.dim), compression="zstd") as writer:
                for shard in small:
                    writer.write_table(self._rows_indexed_here(shard))
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        for i in small:
            with contextlib.suppress(FileNotFoundError):
                self._shards[i].unlink()
        self.reload()
        return len(small)
