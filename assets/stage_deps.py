"""What a stage's components run on: the embedding encoder and the LLM of the run.

The LLM is the bound ``llm`` resource, checked against the run's config (``resolve_llm``).
No `from __future__ import annotations` in asset modules (Dagster checks real types).
"""

from dataclasses import dataclass

import dagster as dg

from pipeline.config import BenchmarkConfig
from pipeline.memory.base import Encoder
from pipeline.memory.vector import LazyEncoder
from resources.embeddings import EmbeddingResource, embedding_variant
from resources.llm import LLMResource
from resources.storage import ResultStore

# settings that change what the LLM replies, hence part of every unit hash via the config
_HASHED_LLM_FIELDS = ("base_url", "model", "temperature", "max_tokens")


def resolve_llm(
    context: dg.AssetExecutionContext, cfg: BenchmarkConfig, bound: LLMResource | None
) -> LLMResource | None:
    """The run's LLM: the bound ``llm`` resource, checked against the config's ``llm:`` section.

    Why the check: answers are keyed by hashes of the config; a resource pointing at another model
    would file its replies under the config's model. When no resource is bound (a run config
    switched ``benchmark.config_path`` to a config with an ``llm:`` section), one is built from
    that section, reading the key from ``$<api_key_env>`` at call time.
    """
    if cfg.llm is None:
        return None
    if bound is None:
        context.log.warning(f"no llm resource bound; using the llm section of {cfg.source}")
        return LLMResource.from_benchmark(cfg)
    wrong = [f for f in _HASHED_LLM_FIELDS if getattr(bound, f) != getattr(cfg.llm, f)]
    if wrong:
        diff = ", ".join(f"{f}: resource {getattr(bound, f)!r} vs config {getattr(cfg.llm, f)!r}" for f in wrong)
        raise dg.Failure(f"{cfg.source}: the bound llm resource disagrees with the config's llm section ({diff})")
    return bound


def stop_after(cfg: BenchmarkConfig) -> int:
    """Consecutive unreachable-endpoint questions after which a stage stops (0 = never)."""
    return cfg.llm.stop_after_unreachable if cfg.llm is not None else 0


@dataclass(frozen=True)
class StageDeps:
    """The encoder and LLM a stage's components need (None when none needs one) and its workers."""

    encoder: Encoder | None
    llm: LLMResource | None

    @property
    def workers(self) -> int:
        """Concurrent units: the LLM's request cap; 1 without an LLM (CPU-bound work)."""
        return self.llm.max_concurrency if self.llm is not None else 1


def stage_deps(
    context: dg.AssetExecutionContext,
    cfg: BenchmarkConfig,
    store: ResultStore,
    embeddings: EmbeddingResource,
    bound_llm: LLMResource | None,
    needs: tuple[bool, bool],
) -> StageDeps:
    """Build only what ``needs`` = (encoder, llm) asks for; the model loads on first use."""
    need_encoder, need_llm = needs
    encoder = None
    if need_encoder:
        encoder = LazyEncoder(embedding_variant(cfg.embeddings), lambda: embeddings.store_encoder(store))
    llm = resolve_llm(context, cfg, bound_llm) if need_llm else None
    return StageDeps(encoder, llm)
