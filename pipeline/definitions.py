"""Dagster definitions: assets, checks, the ``full_benchmark`` and ``retrieval_benchmark`` jobs, resources.

The benchmark config (datasets, memory systems, readers, judges, LLM endpoint) is chosen by
``$MEMBENCH_CONFIG`` (default configs/sample.yaml) or, per run, by the ``benchmark`` resource's
``config_path`` in a run config file (``dagster job execute -j full_benchmark -c run.yaml``).
"""

from __future__ import annotations

import dagster as dg

import assets.canonical
import assets.embeddings
import assets.per_question
import assets.reports
from pipeline.config import load_config
from pipeline.resources_factory import build_resources

_MODULES = [
    assets.canonical,
    assets.embeddings,
    assets.per_question,
    assets.reports,
]

all_assets = dg.load_assets_from_modules(_MODULES)
all_checks = dg.load_asset_checks_from_modules(_MODULES)

full_benchmark = dg.define_asset_job(
    "full_benchmark",
    selection=dg.AssetSelection.all(),
    description=(
        "Every configured dataset end to end: canonical tables, embeddings, memory ingestion, "
        "retrieval, answers, judgments, reports. Without a partition it processes every question "
        "not yet done (one run); with a partition or range only those."
    ),
    executor_def=dg.in_process_executor,
)

retrieval_benchmark = dg.define_asset_job(
    "retrieval_benchmark",
    selection=(dg.AssetSelection.all() - dg.AssetSelection.assets("answers", "judgments", "benchmark_report")),
    description=(
        "Retrieval only (no reader, no judge): canonical tables, embeddings, memory ingestion, "
        "retrieval and the retrieval report. For retrieval ablations, which need no answers."
    ),
    executor_def=dg.in_process_executor,
)


def build_defs(config_path: str | None = None) -> dg.Definitions:
    """Definitions bound to one benchmark config (tests pass their own)."""
    cfg = load_config(config_path)
    return dg.Definitions(
        assets=all_assets,
        asset_checks=all_checks,
        jobs=[full_benchmark, retrieval_benchmark],
        resources=build_resources(cfg),
    )


defs = build_defs()
