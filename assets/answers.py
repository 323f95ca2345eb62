"""The ``answers`` asset: each reader answers each question from each memory system's retrieval.

The LLM and the encoder are the run's bound resources, built from the benchmark object the unit
hashes are computed from (assets.clients), so one model's answers are never filed under another's name.
The logic lives in pipeline.readers.run; this module only wires resources.
"""

from typing import Any

import dagster as dg

from assets.clients import StageClients, question_stage
from pipeline.agentic.mcp.spec import mcp_data_dir
from pipeline.agentic.search import MemoryAccess
from pipeline.kinds.resolve import ResolvedConfig
from pipeline.memory.base import MemoryDeps
from pipeline.readers.base import ANSWERS_PAYLOAD, ReaderConfigError, ReaderDeps
from pipeline.readers.run import AnswerRun, build_readers, configured_readers, needs
from pipeline.run.stage import StageOutcome
from pipeline.store.results import ResultStore


def answer_run(
    context: dg.AssetExecutionContext, bench: ResolvedConfig, store: ResultStore, clients: StageClients
) -> AnswerRun:
    """Readers built once (a reader that cannot be built fails the run before any question)."""
    deps = clients.deps(bench.config, store, needs(bench))
    try:
        memory_deps = MemoryDeps(encoder=deps.encoder, llm=deps.llm, log=context.log.info, data_dir=mcp_data_dir(store))
        memory = MemoryAccess(store, bench, memory_deps)
        readers = build_readers(bench, ReaderDeps(encoder=deps.encoder, llm=deps.llm, memory=memory))
    except ReaderConfigError as exc:
        raise dg.Failure(f"{bench.config.source}: {exc}") from exc
    return AnswerRun(store, bench, readers, max_workers=deps.workers, log=context.log.info)


def run_answers(
    context: dg.AssetExecutionContext,
    bench: ResolvedConfig,
    store: ResultStore,
    keys: list[str],
    clients: StageClients,
) -> tuple[StageOutcome, dict[str, Any]]:
    run = answer_run(context, bench, store, clients)
    stage = question_stage(
        context, bench.config, store, stage="answers", payload_schema=ANSWERS_PAYLOAD, units_for=run.units_for
    )
    outcome = stage.run(keys, run.compute)
    readers = ", ".join(f"{r.name} ({r.kind})" for r in configured_readers(bench))
    return outcome, {"readers": readers, "config": bench.config.source}
