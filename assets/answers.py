"""The ``answers`` asset: each reader answers each question from each memory system's retrieval.

The LLM is the run's bound ``llm`` resource (built from the config's ``llm:`` section by
pipeline.resources_factory, key as ``dg.EnvVar``). Unit hashes are computed from the config's
``llm:`` section, so a bound resource whose model or sampling settings differ from it fails the
run (assets.stage_deps.resolve_llm) instead of recording one model's answers under another's name.
The logic lives in pipeline.readers.run; this module only wires resources.
"""

from typing import Any

import dagster as dg

from assets.stage_deps import stage_deps, stop_after
from pipeline.config import BenchmarkConfig
from pipeline.readers.base import ANSWERS_PAYLOAD, ReaderConfigError, ReaderDeps
from pipeline.readers.run import AnswerRun, build_readers, configured_readers, needs
from pipeline.stage import QuestionStage, StageOutcome
from resources.embeddings import EmbeddingResource
from resources.llm import LLMResource
from resources.storage import ResultStore


def answer_run(
    context: dg.AssetExecutionContext,
    cfg: BenchmarkConfig,
    store: ResultStore,
    embeddings: EmbeddingResource,
    bound_llm: LLMResource | None,
) -> AnswerRun:
    """Readers built once (a bad reader config fails the run before any question)."""
    deps = stage_deps(context, cfg, store, embeddings, bound_llm, needs(cfg))
    try:
        readers = build_readers(cfg, ReaderDeps(encoder=deps.encoder, llm=deps.llm))
    except ReaderConfigError as exc:
        raise dg.Failure(f"{cfg.source}: {exc}") from exc
    return AnswerRun(store, cfg, readers, max_workers=deps.workers, log=context.log.info)


def run_answers(
    context: dg.AssetExecutionContext,
    cfg: BenchmarkConfig,
    store: ResultStore,
    embeddings: EmbeddingResource,
    llm: LLMResource | None,
    keys: list[str],
) -> tuple[StageOutcome, dict[str, Any]]:
    run = answer_run(context, cfg, store, embeddings, llm)
    stage = QuestionStage(
        store,
        cfg,
        stage="answers",
        payload_schema=ANSWERS_PAYLOAD,
        units_for=run.units_for,
        log=context.log.info,
        stop_after_unreachable=stop_after(cfg),
    )
    outcome = stage.run(keys, run.compute)
    readers = ", ".join(f"{r.name} ({r.kind})" for r in configured_readers(cfg))
    return outcome, {"readers": readers, "config": cfg.source}
