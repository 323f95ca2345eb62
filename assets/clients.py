"""What a stage's components run on: the encoder and the LLM clients of the run's bound resources.

Why bound resources, built from the benchmark object (resources/factory.py): the config is the one
source of truth for every setting that enters a unit hash (embedding model and backend, LLM
endpoints, model and sampling), so the resources read it rather than carry settings of their own
(the LLM resources), or are checked against it here (the encoder: a resource whose model differs
from the config's fails the stage instead of filing vectors under another model's hash). A bound
resource holds its client for the run: one concurrency gate and rate limit for every stage.
No `from __future__ import annotations` in asset modules (Dagster checks real types).
"""

from dataclasses import dataclass

import dagster as dg
import pyarrow as pa

from assets.partition_status import current_reporter
from pipeline.config.model import BenchmarkConfig
from pipeline.embeddings.spec import embedding_variant
from pipeline.llm.protocol import ChatClient
from pipeline.memory.base import Encoder
from pipeline.memory.vector import LazyEncoder
from pipeline.readers.base import LLMClient
from pipeline.run.stage import QuestionStage, UnitsFor
from pipeline.store.results import ResultStore
from resources.embeddings import EmbeddingResource
from resources.llm import LLMResource


def question_stage(
    context: dg.AssetExecutionContext,
    cfg: BenchmarkConfig,
    store: ResultStore,
    *,
    stage: str,
    payload_schema: pa.Schema,
    units_for: UnitsFor,
) -> QuestionStage:
    """The stage driver of one per-question asset: the run's log, the config's endpoint breaker, and
    the step's question reporter (assets/partition_status.py), told of each question as it is recorded."""
    reporter = current_reporter()
    driver = QuestionStage(
        store,
        cfg,
        stage=stage,
        payload_schema=payload_schema,
        units_for=units_for,
        log=context.log.info,
        stop_after_unreachable=stop_after(cfg),
        on_recorded=reporter.recorded if reporter is not None else None,
    )
    if reporter is not None:
        reporter.watch(driver.outcome)
    return driver


def stop_after(cfg: BenchmarkConfig) -> int:
    """Consecutive unreachable-endpoint questions after which a stage stops (0 = never)."""
    return cfg.llm.stop_after_unreachable if cfg.llm is not None else 0


@dataclass(frozen=True)
class StageDeps:
    """The encoder and LLM a stage's components need (None when none needs one) and its workers."""

    encoder: Encoder | None
    llm: LLMClient | None

    @property
    def workers(self) -> int:
        """Concurrent units: the LLM's request cap; 1 without an LLM (CPU-bound work)."""
        return workers_for(self.llm)


def workers_for(llm: ChatClient | None) -> int:
    """Concurrent units of a stage calling ``llm``: its request cap (1 without an LLM)."""
    return int(getattr(llm, "max_concurrency", 1)) if llm is not None else 1


@dataclass(frozen=True)
class StageClients:
    """The bound resources a per-question stage may use (assets/question_assets.py hands them in)."""

    embeddings: EmbeddingResource
    llm: LLMResource
    judge_llm: LLMResource

    def deps(self, cfg: BenchmarkConfig, store: ResultStore, needs: tuple[bool, bool]) -> StageDeps:
        """Only what ``needs`` = (encoder, llm) asks for; the model loads on first use."""
        need_encoder, need_llm = needs
        encoder = None
        if need_encoder:
            self.check_encoder(cfg)
            embeddings = self.embeddings
            encoder = LazyEncoder(embedding_variant(cfg.embeddings), lambda: embeddings.store_encoder(store))
        return StageDeps(encoder, self.llm.client() if need_llm else None)

    def check_encoder(self, cfg: BenchmarkConfig) -> None:
        bound = embedding_variant(self.embeddings.settings())
        if bound != embedding_variant(cfg.embeddings):
            raise dg.Failure(
                f"{cfg.source}: the bound 'embeddings' resource encodes with {bound}, the config's "
                f"unit hashes with {embedding_variant(cfg.embeddings)}; bind the resource built from the config"
            )
