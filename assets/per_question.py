"""The four per-question stages as ONE partitioned multi-asset, ``per_question``.

Why one multi-asset and not one asset per stage: ``dagster job execute -j full_benchmark`` runs
without a partition key (it processes every question not yet done, in one run), and Dagster
1.13 cannot look up data-version provenance between two partitioned assets in such a run
("Cannot access partition_key for a non-partitioned run", raised before the step starts). So
the partitioned stages never depend on each other through Dagster: ingestion, retrievals,
answers and judgments run in this order inside one step. Each keeps its own asset key, table,
pandera check and per-question partition status, and ``can_subset`` lets the UI or
``dagster asset materialize --select answers,judgments --partition <key>`` run just some
stages for just some questions, always in pipeline order.
"""

from collections.abc import Callable, Iterator
from typing import Optional

import dagster as dg
from dagster import AssetExecutionContext

from assets.answers import run_answers
from assets.ingestion import run_ingestion
from assets.judgments import run_judgments
from assets.retrieval import run_retrievals
from pipeline.partitions import question_partitions
from resources.benchmark import BenchmarkResource
from resources.embeddings import EmbeddingResource
from resources.llm import LLMResource

StageRunner = Callable[..., dg.MaterializeResult]


def _run_selected(
    context: AssetExecutionContext, stages: list[tuple[str, StageRunner, tuple[object, ...]]]
) -> Iterator[dg.MaterializeResult]:
    """Run the selected stages in order; each result is attributed to its own asset key."""
    selected = {k.to_user_string() for k in context.selected_asset_keys}
    for name, runner, args in stages:
        if name in selected:
            result = runner(context, *args)
            yield dg.MaterializeResult(asset_key=name, metadata=result.metadata)


def _spec(key: str, deps: list[str], description: str) -> dg.AssetSpec:
    return dg.AssetSpec(key, deps=deps, group_name="per_question", description=description)


@dg.multi_asset(
    specs=[
        _spec(
            "ingestion",
            ["questions", "turns", "embeddings"],
            "Memory systems ingest each question's haystack session by session (once per system and "
            "haystack, resumable at the session where a run stopped); one row per (question, system) with "
            "sessions_completed / sessions_total / next_session.",
        ),
        _spec(
            "retrievals",
            ["embeddings", "evidence"],
            "Per (question, memory system), after ingestion: ranked units with channel / fused / rerank "
            "scores, the context handed to the reader and its token count (regex_word_punct), latency.",
        ),
        _spec(
            "answers",
            ["questions"],
            "Per (question, memory system, reader), after retrieval: the reader's answer from the retrieved "
            "context; label 'offline' (embedding baseline) or 'llm'; MC replies that do not parse are "
            "invalid (counted apart); tokens, latency, cache hit, cost.",
        ),
        _spec(
            "judgments",
            ["questions"],
            "Per (question, system, reader, judge), after answers: correct / score under a pinned metric; "
            "a failed answer gives a failed judgment, never a wrong one.",
        ),
    ],
    partitions_def=question_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    can_subset=True,
)
def per_question(
    context: AssetExecutionContext,
    benchmark: BenchmarkResource,
    embeddings: EmbeddingResource,
    llm: dg.ResourceParam[Optional[LLMResource]],  # noqa: UP045 (Dagster resolves this at runtime)
) -> Iterator[dg.MaterializeResult]:
    """Ingestion, retrieval, answers, judgments (the selected ones, in this order) for pending questions."""
    yield from _run_selected(
        context,
        [
            ("ingestion", run_ingestion, (benchmark, embeddings, llm)),
            ("retrievals", run_retrievals, (benchmark, embeddings, llm)),
            ("answers", run_answers, (benchmark, embeddings, llm)),
            ("judgments", run_judgments, (benchmark, llm)),
        ],
    )
