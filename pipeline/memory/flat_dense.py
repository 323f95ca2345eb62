"""``flat_dense``: LongMemEval's flat dense retrieval as a memory system, with any local model.

Follows xiaowu0162/LongMemEval ``src/retrieval/run_retrieval.py`` ``run_flat_retrieval`` for the
dense retrievers, over the corpus of pipeline.memory.flat_corpus (``process_item_flat_index``).
What the official branches do, and the ``protocol`` parameter that selects it:

- ``contriever`` (``flat-contriever``): documents and question embedded as given, mean pooling,
  NO normalisation, score = inner product;
- ``stella`` (``flat-stella``): embedded as given, vectors L2-normalised, score = inner product
  (cosine);
- ``gte`` (``flat-gte``): the question formatted as ``Instruction: <task>\\nQuery: <question>``
  with the official task sentence, documents as given, L2-normalised, inner product.

Every branch ranks with a descending torch ``argsort`` of the scores, as here. Pooling, any
projection layer and the token limit are the model's own (its sentence-transformers folder);
the official code hard-codes one model per branch (facebook/contriever, stella_en_1.5B_v5,
gte-Qwen2-7B-instruct), membench takes ``model``, the path of any local sentence-transformers
model folder, so the paper's retrievers run when their weights are on disk (nothing is
downloaded). Without ``model`` the run's embedding model is used (``embeddings:`` of the config,
through the pipeline's cached encoder, whose vectors are normalised: the ``stella`` and ``gte``
protocols only). A ``model`` folder is loaded once per process and its vectors are kept in memory
for the process (LongMemEval_S sessions recur across questions); they are not persisted.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from pipeline.embeddings.spec import hub_offline, resolve_model
from pipeline.memory.base import Encoder, MemoryDeps
from pipeline.memory.flat_corpus import FlatMemory, FlatParams
from pipeline.memory.params import MemoryConfigError, ParamsInput

KIND = "flat_dense"
GTE_TASK = "Given a query about personal information, retrieve relevant chat history that answer the query."


class FlatDenseParams(FlatParams):
    protocol: Literal["contriever", "stella", "gte"] = "stella"
    model: str | None = None  # local sentence-transformers folder (or all-MiniLM-L6-v2); None = the run's
    batch_size: int = Field(default=32, gt=0)


def query_text(protocol: str, question: str) -> str:
    """The text the question is embedded as under ``protocol``."""
    return f"Instruction: {GTE_TASK}\nQuery: {question}" if protocol == "gte" else question


def normalises(protocol: str) -> bool:
    return protocol != "contriever"


# A plain transformers model folder: config, weights and tokenizer, without the sentence-transformers
# modules (modules.json, pooling and Normalize configs). sentence-transformers loads such a folder with
# mean pooling and no normalisation: how facebook/contriever is loaded, the ``contriever`` protocol's case.
PLAIN_MODEL_FILES: tuple[str, ...] = (
    "config.json",
    "model.safetensors",
    "special_tokens_map.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.txt",
)


def link_plain_model(source: Path, folder: Path) -> Path:
    """Make ``folder`` a plain model folder of ``source``'s weights: symbolic links to its PLAIN_MODEL_FILES.

    ``source`` is a model folder holding those files (such as the bundled all-MiniLM-L6-v2, a
    sentence-transformers folder); ``folder`` is created when missing and must not hold them yet.
    Returns ``folder``, to give as ``params.model`` (the ``contriever`` protocol on those weights).
    Raises FileNotFoundError naming the files ``source`` lacks (nothing is linked then).
    """
    missing = [name for name in PLAIN_MODEL_FILES if not (source / name).is_file()]
    if missing:
        raise FileNotFoundError(
            f"model folder {str(source)!r} lacks {', '.join(missing)} (a plain model folder needs "
            f"{', '.join(PLAIN_MODEL_FILES)})"
        )
    folder.mkdir(parents=True, exist_ok=True)
    for name in PLAIN_MODEL_FILES:
        (folder / name).symlink_to(source / name)
    return folder


class LocalModel:
    """A sentence-transformers folder run as the protocol says, its vectors memoised by text."""

    def __init__(self, path: str, normalise: bool, batch_size: int) -> None:
        self.model_name = path
        self.normalise = normalise
        self.batch_size = batch_size
        self._vectors: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
            if missing:
                vecs = _sentence_transformer(self.model_name).encode(
                    missing, batch_size=self.batch_size, convert_to_numpy=True,
                    normalize_embeddings=self.normalise, show_progress_bar=False,
                )  # fmt: skip
                self._vectors.update(zip(missing, np.asarray(vecs, dtype=np.float32), strict=True))
            return np.stack([self._vectors[t] for t in texts])


@lru_cache(maxsize=2)
def _sentence_transformer(path: str) -> Any:
    hub_offline()
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(path, device="cpu", local_files_only=True)
    model.eval()
    return model


@lru_cache(maxsize=4)
def _local_model(path: str, normalise: bool, batch_size: int) -> LocalModel:
    """One memo per (model, normalisation) per process: every question's memory shares it."""
    return LocalModel(path, normalise, batch_size)


class FlatDenseMemory(FlatMemory):
    """Dense scores of every document of the flat corpus; documents embedded on the first question."""

    params_model = FlatDenseParams
    kind = KIND
    uses_encoder = True

    def __init__(self, params: ParamsInput, deps: MemoryDeps) -> None:
        super().__init__(params, deps)
        p = self.params
        assert isinstance(p, FlatDenseParams)
        self.protocol = p.protocol
        self.encoder = self._encoder(p, deps)

    def _encoder(self, p: FlatDenseParams, deps: MemoryDeps) -> Encoder:
        if p.model is not None:
            path, _ = resolve_model(p.model)
            return _local_model(str(path), normalises(p.protocol), p.batch_size)
        if not normalises(p.protocol):
            raise MemoryConfigError(
                f"memory system kind {KIND!r}: protocol 'contriever' scores unnormalised vectors; the run's "
                "embeddings are normalised, so give params.model (a local sentence-transformers folder)"
            )
        if deps.encoder is None:
            raise MemoryConfigError(f"memory system kind {KIND!r} needs params.model or the run's embeddings")
        return deps.encoder

    def _changed(self) -> None:
        self._doc_vectors: np.ndarray | None = None

    def ranking(self, question: str) -> list[tuple[int, float]]:
        import torch

        if self._doc_vectors is None:
            self._doc_vectors = np.asarray(self.encoder.encode([u.text for u in self.units]), dtype=np.float32)
        query = np.asarray(self.encoder.encode([query_text(self.protocol, question)]), dtype=np.float32)
        scores = torch.from_numpy(query @ self._doc_vectors.T).reshape(-1)
        order = scores.argsort(descending=True)
        return [(int(i), float(scores[i])) for i in order]

    def notes(self) -> dict[str, object]:
        return {"protocol": f"LongMemEval src/retrieval/run_retrieval.py flat dense ({self.protocol})",
                "model": getattr(self.encoder, "model_name", None)}  # fmt: skip
