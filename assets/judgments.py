"""The ``judgments`` asset: every chosen judge scores every answer (metric names pinned).

Judges per dataset kind (pipeline.judges.select.judges_for): the config's ``judges:`` or the
defaults; LLM judges need the config's ``llm:`` block and are listed as unavailable otherwise
(asset metadata ``judges_unavailable``; the run's summary line says so once:
pipeline.judges.select.without_llm_judge), never replaced by another judge. A failed answer gives a
failed judgment ("answer failed: ..."), never a wrong one. The logic lives in
pipeline.judges.run; this module only wires resources.
"""

from typing import Any

import dagster as dg

from assets.clients import StageClients, question_stage, workers_for
from pipeline.judges.base import JUDGMENTS_PAYLOAD, JudgeConfigError, dataset_kind
from pipeline.judges.run import JudgmentRun
from pipeline.judges.select import check_judges, judges_for, unavailable_judges
from pipeline.kinds.resolve import ResolvedConfig
from pipeline.readers.base import LLMClient
from pipeline.run.stage import StageOutcome
from pipeline.store.results import ResultStore
from pipeline.util.registry import RegistryError


def judge_metadata(bench: ResolvedConfig, llm: LLMClient | None) -> dict[str, Any]:
    """Which judges run per dataset, and which default judges are unavailable (and why)."""
    used, unavailable = [], []
    for ds in bench.config.datasets:
        kind = dataset_kind(ds.loader)
        used += [f"{ds.name}: {j.name} ({j.spec.metric})" for j in judges_for(kind, ds.name, bench, llm)]
        unavailable += [f"{ds.name}: {name} ({why})" for name, why in unavailable_judges(kind, bench, llm)]
    return {"judges": "; ".join(used) or "none", "judges_unavailable": "; ".join(unavailable) or "none"}


def run_judgments(
    context: dg.AssetExecutionContext,
    bench: ResolvedConfig,
    store: ResultStore,
    keys: list[str],
    clients: StageClients,
) -> tuple[StageOutcome, dict[str, Any]]:
    cfg = bench.config
    llm = clients.judge_llm.client()  # the config's judge_llm endpoint when it has one, else its llm
    try:
        check_judges(bench, llm)
        metadata = judge_metadata(bench, llm)
    except (JudgeConfigError, RegistryError) as exc:
        raise dg.Failure(f"{cfg.source}: {exc}") from exc
    run = JudgmentRun(store, bench, llm, max_workers=workers_for(llm), log=context.log.info)
    stage = question_stage(
        context, cfg, store, stage="judgments", payload_schema=JUDGMENTS_PAYLOAD, units_for=run.units_for
    )
    outcome = stage.run(keys, run.compute)
    return outcome, {**metadata, "config": cfg.source}
