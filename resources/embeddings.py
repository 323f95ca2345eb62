"""The ``embeddings`` Dagster resource: which embedding model, backend and limits a run uses.

The model and the cached encoder are plain code (pipeline/embeddings/model.py, encoder.py); this
resource mirrors the config's ``embeddings:`` block and builds the run's encoder from it.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from pipeline.config.model import EmbeddingConfig
from pipeline.embeddings.encoder import CachedEncoder, encoder_for, model_spec, store_encoder
from pipeline.embeddings.spec import BACKENDS, DEFAULT_MODEL, ENCODE_THREADS, EmbeddingModelError, ModelSpec
from pipeline.store.results import ResultStore


class EmbeddingResource(dg.ConfigurableResource):
    """Which embedding model, backend and limits a run uses (mirrors ``embeddings:`` in the YAML).

    Build it with ``EmbeddingResource.from_config(cfg.embeddings)`` so every stage embeds with the
    settings the benchmark config declares.
    """

    model: str = DEFAULT_MODEL
    backend: str = "auto"
    batch_size: int = 32  # pipeline/config/model.py EmbeddingConfig: measured
    device: str = "cpu"
    max_seq_length: int | None = None
    num_threads: int | None = None
    workers: int = 1
    encode_threads: int = ENCODE_THREADS  # per-question encode calls (not in the YAML; see ENCODE_THREADS)

    @classmethod
    def from_config(cls, cfg: EmbeddingConfig) -> EmbeddingResource:
        return cls(**cfg.model_dump())

    def settings(self) -> EmbeddingConfig:
        if self.backend not in BACKENDS:
            raise EmbeddingModelError(f"embedding backend {self.backend!r} is unknown; choose one of {list(BACKENDS)}")
        return EmbeddingConfig.model_validate(self.model_dump(exclude={"encode_threads"}))

    def spec(self) -> ModelSpec:
        return model_spec(self.settings(), self.encode_threads)

    def encoder(self, cache_root: Path) -> CachedEncoder:
        """A cached encoder whose shards live in ``cache_root/<model_slug>/part-*.parquet`` (tests pass a
        temporary folder; the pipeline's own cache is ``store_encoder``'s)."""
        return encoder_for(cache_root, self.settings(), self.encode_threads)

    def store_encoder(self, store: ResultStore) -> CachedEncoder:
        """The encoder over the run's cache, shared by the embeddings asset and every stage."""
        return store_encoder(self.settings(), store, self.encode_threads)
