"""Raw dataset files -> canonical tables (questions, sessions, turns, haystacks, evidence, data_quality).

Why one multi-asset for all canonical tables: they are produced by one streaming pass over each
raw file and must change together; each still is its own asset key (lineage, checks, UI). The
asset also registers every question as a dynamic partition, so no manual step precedes a run.
"""

from collections import Counter
from collections.abc import Iterator
from typing import Any

import dagster as dg
from dagster import AssetExecutionContext

from pipeline.datasets.convert import ConvertStats, convert_datasets
from pipeline.datasets.crosscheck import CrosscheckResult, apply_mc10_crosscheck
from pipeline.partitions import QUESTION_PARTITIONS_NAME
from pipeline.schemas import validate_table_file
from resources.benchmark import BenchmarkResource
from resources.storage import ResultStore

CANONICAL_TABLES = ("questions", "sessions", "turns", "haystacks", "evidence", "data_quality")
_DESCRIPTIONS = {
    "questions": "One row per question: ids, partition key, raw + named type, answer, choices, dates.",
    "sessions": "Sessions stored once per dataset, keyed by content hash; dates parsed + raw.",
    "turns": "Turns of each session: speaker, role, text, has_answer, source id (e.g. D3:7).",
    "haystacks": "Question haystack -> ordered session keys (a LoCoMo conversation is stored once).",
    "evidence": "Gold units per question: turn ids and session keys.",
    "data_quality": "Every known dataset quirk met: kind, record, raw value, action taken, count.",
}
CHECK_NAME = "pandera_schema"


def require_persistent_instance(context: AssetExecutionContext) -> None:
    """Refuse an ephemeral instance: it silently forgets partition status between runs."""
    if context.instance.is_ephemeral:
        raise dg.Failure(
            "DAGSTER_HOME is not set, so Dagster is using a temporary instance that forgets "
            "partition status. Run `source .venv/bin/activate` (scripts/setup.sh sets "
            "DAGSTER_HOME=<project>/.dagster_home) and start again."
        )


def register_partitions(context: AssetExecutionContext, keys: list[str]) -> int:
    """Add the question keys Dagster does not know yet; returns how many were added."""
    known = set(context.instance.get_dynamic_partitions(QUESTION_PARTITIONS_NAME))
    new = [k for k in keys if k not in known]
    for start in range(0, len(new), 5000):
        context.instance.add_dynamic_partitions(QUESTION_PARTITIONS_NAME, new[start : start + 5000])
    return len(new)


def question_keys(store: ResultStore, dataset: str) -> list[str]:
    keys: list[str] = []
    for table in ("questions", "load_failures"):
        t = store.read_canonical(dataset, table)
        if t is not None:
            keys += [k for k in t.column("partition_key").to_pylist() if k]
    return keys


def validate(store: ResultStore, datasets: list[str], table: str) -> dg.AssetCheckResult:
    """Run the table's pandera schema over every configured dataset's file, in bounded memory."""
    rows = 0
    for ds in datasets:
        path = store.canonical_path(ds, table)
        if not path.exists():
            continue
        result = validate_table_file(path, table)
        rows += result.rows
        if result.failure_cases is not None:
            cases = result.failure_cases.to_markdown(index=False)
            return dg.AssetCheckResult(
                asset_key=table,
                check_name=CHECK_NAME,
                passed=False,
                metadata={"dataset": ds, "failure_cases": dg.MetadataValue.md(cases)},
            )
    return dg.AssetCheckResult(asset_key=table, check_name=CHECK_NAME, passed=True, metadata={"rows": rows})


def _table_metadata(stats: list[ConvertStats], table: str) -> dict[str, Any]:
    meta: dict[str, Any] = {f"rows_{s.dataset}": int(s.rows.get(table, 0)) for s in stats}
    meta["rows"] = sum(int(s.rows.get(table, 0)) for s in stats)
    return meta


def _quality_markdown(stats: list[ConvertStats]) -> str:
    lines = ["| dataset | kind | count |", "|---|---|---|"]
    for s in stats:
        for kind, n in sorted(Counter(s.quality).items()):
            lines.append(f"| {s.dataset} | {kind} | {n} |")
    return "\n".join(lines)


def _crosscheck_markdown(results: list[CrosscheckResult]) -> str:
    """MC10 question_type label x LoCoMo category, over the questions matched in both."""
    lines = ["| mc10 dataset | mc10 label | locomo category | locomo name | n |", "|---|---|---|---|---|"]
    for r in results:
        if r.contingency.num_rows == 0:
            lines.append(f"| {r.mc10_dataset} | (no LoCoMo dataset configured: labels unverified) | | | |")
        for row in r.contingency.to_pylist():
            lines.append(
                f"| {r.mc10_dataset} | {row['mc10_label']} | {row['locomo_category']} "
                f"| {row['locomo_type_name']} | {row['n']} |"
            )
    return "\n".join(lines)


@dg.multi_asset(
    specs=[dg.AssetSpec(t, description=_DESCRIPTIONS[t], group_name="canonical") for t in CANONICAL_TABLES],
    check_specs=[
        dg.AssetCheckSpec(CHECK_NAME, asset=t, blocking=True, description="pandera schema of the table")
        for t in CANONICAL_TABLES
    ],
    can_subset=False,
)
def canonical(context: AssetExecutionContext, benchmark: BenchmarkResource) -> Iterator[Any]:
    """Convert every configured dataset (skipping unchanged ones) and register its partitions."""
    require_persistent_instance(context)
    cfg = benchmark.load()
    store = benchmark.store()
    stats, failed = convert_datasets(cfg.datasets, store, context.log.info)
    for f in failed:  # this dataset only: the others go on to every later stage
        context.log.error(f"dataset {f.dataset} failed to load (shown as failed in progress): {f.message}")
    names = [s.dataset for s in stats]
    loaded = [ds for ds in cfg.datasets if ds.name in names]
    crosschecks = apply_mc10_crosscheck(store, loaded, context.log.info)
    keys = [k for ds in names for k in question_keys(store, ds)]
    added = register_partitions(context, keys)
    context.log.info(f"{len(keys)} question partitions ({added} new) for datasets {names}")
    store.refresh_catalog()
    for table in CANONICAL_TABLES:
        meta = _table_metadata(stats, table)
        if table == "questions":
            meta |= {
                "partitions": len(keys),
                "new_partitions": added,
                "load_failures": sum(s.n_failures for s in stats),
                "failed_datasets": dg.MetadataValue.json({f.dataset: f.message for f in failed}),
                "skipped_unchanged": ", ".join(s.dataset for s in stats if s.skipped) or "none",
            }
        if table == "data_quality":
            meta["quirks"] = dg.MetadataValue.md(_quality_markdown(stats))
        if table == "questions" and crosschecks:
            meta["mc10_vs_locomo"] = dg.MetadataValue.md(_crosscheck_markdown(crosschecks))
        yield dg.MaterializeResult(asset_key=table, metadata=meta)
    for table in CANONICAL_TABLES:
        yield validate(store, names, table)
