"""The ``answers`` asset: each reader answers each question from each memory system's retrieval.

Why the LLM comes from the run's config (``LLMResource.from_benchmark``) and not from a separate
resource binding: the unit hashes are computed from that same config (``llm.model``), as in the
memory stages; one config file then decides both what is run and what it is recorded as.
The logic lives in pipeline.readers.run; this module only wires resources.
"""

import dagster as dg

from pipeline.config import BenchmarkConfig
from pipeline.memory.vector import LazyEncoder
from pipeline.readers.base import ANSWERS_PAYLOAD, LLMClient, ReaderConfigError, ReaderDeps
from pipeline.readers.run import AnswerRun, build_readers, configured_readers, needs
from pipeline.stage import QuestionStage
from resources.benchmark import BenchmarkResource
from resources.embeddings import EmbeddingResource, embedding_variant
from resources.llm import LLMResource
from resources.storage import ResultStore


def run_llm(cfg: BenchmarkConfig) -> LLMClient | None:
    """The run's LLM (cached under <results_dir>/llm_cache), or None when the config has none."""
    return LLMResource.from_benchmark(cfg) if cfg.llm is not None else None


def answer_run(
    context: dg.AssetExecutionContext, cfg: BenchmarkConfig, store: ResultStore, embeddings: EmbeddingResource
) -> AnswerRun:
    """Readers built once (a bad reader config fails the run before any question)."""
    need_encoder, need_llm = needs(cfg)
    encoder = None
    if need_encoder:
        encoder = LazyEncoder(embedding_variant(cfg.embeddings), lambda: embeddings.store_encoder(store))
    llm = run_llm(cfg) if need_llm else None
    try:
        readers = build_readers(cfg, ReaderDeps(encoder=encoder, llm=llm))
    except ReaderConfigError as exc:
        raise dg.Failure(f"{cfg.source}: {exc}") from exc
    workers = cfg.llm.max_concurrency if llm is not None and cfg.llm is not None else 1
    return AnswerRun(store, cfg, readers, max_workers=workers, log=context.log.info)


def run_answers(
    context: dg.AssetExecutionContext, benchmark: BenchmarkResource, embeddings: EmbeddingResource
) -> dg.MaterializeResult:
    cfg = benchmark.load()
    store = benchmark.store()
    run = answer_run(context, cfg, store, embeddings)
    stage = QuestionStage(context, store, cfg, stage="answers", payload_schema=ANSWERS_PAYLOAD, units_for=run.units_for)
    result = stage.run(run.compute)
    readers = ", ".join(f"{r.name} ({r.kind})" for r in configured_readers(cfg))
    return dg.MaterializeResult(metadata={**(result.metadata or {}), "readers": readers, "config": cfg.source})
