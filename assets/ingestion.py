"""The ``ingestion`` asset: every configured memory system ingests each question's haystack.

Why partitioned by question although memories are per haystack: progress, failures and Dagster
partition status are per question everywhere else. The work is still done once per
(system, haystack) (pipeline.memory.ingest); each question of the haystack then gets its row
(sessions_completed / total / next_session), so the progress view shows ingestion per question.
The logic lives in pipeline.memory.ingest; this module only wires resources.
"""

# No `from __future__ import annotations`: Dagster checks the real type of `context`.
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

import dagster as dg
import pyarrow as pa
from dagster import AssetExecutionContext

from assets.clients import StageClients, question_stage
from pipeline.agentic.mcp.spec import mcp_data_dir
from pipeline.config.model import BenchmarkConfig
from pipeline.kinds.resolve import ResolvedConfig
from pipeline.memory.base import INGESTION_PAYLOAD, MemoryDeps
from pipeline.memory.ingest import MemoryRun, ingestion_results, units_for
from pipeline.memory.params import MemoryConfigError
from pipeline.memory.systems import check_buildable, system_specs, uses_encoder, uses_llm
from pipeline.run.stage import StageOutcome, UnitResult, UnitsFor, WorkItem
from pipeline.store.results import ResultStore


def _needs(bench: ResolvedConfig) -> tuple[bool, bool]:
    """(some configured system uses an encoder, some uses an LLM)."""
    specs = [s for ds in bench.config.datasets for s in system_specs(bench, ds.name)]
    return any(uses_encoder(s.cls) for s in specs), any(uses_llm(s.cls) for s in specs)


def memory_run(
    context: AssetExecutionContext, bench: ResolvedConfig, store: ResultStore, clients: StageClients
) -> MemoryRun:
    """Deps for the memory stages (the bound resources); a system that cannot be built fails the run
    before any question (config mistakes already failed when the definitions loaded)."""
    built = clients.deps(bench.config, store, _needs(bench))
    state_dir = bench.config.resolved_results_dir()
    deps = MemoryDeps(
        encoder=built.encoder, llm=built.llm, log=context.log.info, state_dir=state_dir, data_dir=mcp_data_dir(store)
    )
    try:
        check_buildable(bench, deps)
    except MemoryConfigError as exc:
        raise dg.Failure(str(exc)) from exc
    return MemoryRun(store, bench, deps, log=context.log.info, workers=built.workers)


def run_metadata(cfg: BenchmarkConfig) -> dict[str, Any]:
    return {
        "memory_systems": ", ".join(f"{c.name} ({c.kind})" for c in cfg.memory_systems) or "none",
        "config": cfg.source,
    }


def run_memory_stage(
    context: AssetExecutionContext,
    bench: ResolvedConfig,
    store: ResultStore,
    keys: list[str],
    clients: StageClients,
    *,
    stage: str,
    payload_schema: pa.Schema,
    results: Callable[[MemoryRun, list[WorkItem]], Iterable[tuple[str, list[UnitResult]]]],
    stage_units: Callable[[ResolvedConfig], UnitsFor] = units_for,
) -> tuple[StageOutcome, dict[str, Any]]:
    """One memory stage (ingestion or retrievals) over the run's questions; ``stage_units``: its units
    (retrievals add each system's cut-off units, pipeline/memory/cutoffs.py)."""
    run = memory_run(context, bench, store, clients)
    driver = question_stage(
        context, bench.config, store, stage=stage, payload_schema=payload_schema, units_for=stage_units(bench)
    )
    outcome = driver.run(keys, lambda items: results(run, items))
    return outcome, run_metadata(bench.config)


run_ingestion = partial(
    run_memory_stage, stage="ingestion", payload_schema=INGESTION_PAYLOAD, results=ingestion_results
)
