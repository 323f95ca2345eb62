"""The per-question stages as two partitioned multi-assets: ``memory`` and ``qa``.

Why multi-assets and not one asset per stage: ``dagster job execute -j full_benchmark`` runs
without a partition key (it processes every question not yet done, in one run), and Dagster
1.13 cannot look up data-version provenance between two partitioned assets in such a run
("Cannot access partition_key for a non-partitioned run", raised before the step starts).
So partitioned assets only ever depend on unpartitioned ones: ingestion and retrievals run in
order inside ``memory`` (after ``embeddings``), answers and judgments inside ``qa`` (after
``retrieval_report``). Each stage keeps its own asset key, table, checks and per-question
partition status, and ``can_subset`` lets the UI or ``dagster asset materialize --select answers
--partition <key>`` run a single stage for a single question.
"""

from collections.abc import Callable, Iterator

import dagster as dg
from dagster import AssetExecutionContext

from assets.answers import run_answers
from assets.ingestion import run_ingestion
from assets.judgments import run_judgments
from assets.retrieval import run_retrievals
from pipeline.partitions import question_partitions
from resources.benchmark import BenchmarkResource
from resources.embeddings import EmbeddingResource

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


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            "ingestion",
            deps=["questions", "turns", "embeddings"],
            group_name="memory",
            description=(
                "Memory systems ingest each question's haystack session by session (once per system "
                "and haystack, resumable at the session where a run stopped); one row per (question, "
                "system) with sessions_completed / sessions_total / next_session."
            ),
        ),
        dg.AssetSpec(
            "retrievals",
            deps=["embeddings", "evidence"],
            group_name="memory",
            description=(
                "Per (question, memory system), computed after ingestion in the same step: ranked units "
                "with channel / fused / rerank scores, the context handed to the reader and its token "
                "count (regex_word_punct), retrieval latency."
            ),
        ),
    ],
    partitions_def=question_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    can_subset=True,
)
def memory(
    context: AssetExecutionContext, benchmark: BenchmarkResource, embeddings: EmbeddingResource
) -> Iterator[dg.MaterializeResult]:
    """Ingestion, then retrieval, for every pending (question, memory system)."""
    yield from _run_selected(
        context,
        [
            ("ingestion", run_ingestion, (benchmark, embeddings)),
            ("retrievals", run_retrievals, (benchmark, embeddings)),
        ],
    )


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            "answers",
            deps=["retrieval_report"],
            group_name="answers",
            description=(
                "Per (question, memory system, reader): the reader's answer from the retrieved context; "
                "label 'offline' (embedding baseline) or 'llm'; MC replies that do not parse are invalid "
                "(counted apart); tokens, latency, cache hit, cost."
            ),
        ),
        dg.AssetSpec(
            "judgments",
            deps=["questions"],
            group_name="answers",
            description=(
                "Per (question, system, reader, judge), computed after answers in the same step: correct / "
                "score under a pinned metric; a failed answer gives a failed judgment, never a wrong one."
            ),
        ),
    ],
    partitions_def=question_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    can_subset=True,
)
def qa(
    context: AssetExecutionContext, benchmark: BenchmarkResource, embeddings: EmbeddingResource
) -> Iterator[dg.MaterializeResult]:
    """Answers, then judgments, for every pending (question, system, reader[, judge])."""
    yield from _run_selected(
        context,
        [("answers", run_answers, (benchmark, embeddings)), ("judgments", run_judgments, (benchmark,))],
    )
