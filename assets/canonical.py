"""Raw dataset files -> canonical tables (questions, sessions, turns, haystacks, evidence, data_quality).

Why one multi-asset for all canonical tables: they are produced by one streaming pass over each
raw file and must change together; each still is its own asset key (lineage, checks, UI). The
question partitions themselves are known before the run (pipeline/datasets/keys.py reads them with
the same loaders); this asset logs an error when the files changed since the definitions loaded.
"""

import contextlib
import functools
import hashlib
import importlib.metadata
import json
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
from dagster import AssetExecutionContext

from assets.layout import CANONICAL_TABLES, key, prefix_of
from assets.run_claim import check_scope
from assets.run_gate import is_last_step
from pipeline.config.model import BenchmarkConfig
from pipeline.core.records import TABLES
from pipeline.datasets.convert import ConvertStats, convert_datasets
from pipeline.datasets.crosscheck import CrosscheckResult, apply_mc10_crosscheck
from pipeline.store.results import ResultStore
from pipeline.util.fingerprint import pipeline_code_files, update_with_files
from resources.benchmark import BenchmarkResource, ResultStoreResource

CHECK_NAME = "pandera_schema"
VALIDATED_DIR = ".validated"  # <results>/.validated/<table>: inputs of the table's last passed check


def require_persistent_instance(context: AssetExecutionContext) -> None:
    """Refuse an ephemeral or throw-away instance: it silently forgets partition status between runs.

    Without ``DAGSTER_HOME`` the ``dagster`` CLI runs on a temporary directory instance that is not
    flagged ephemeral, so the variable itself is checked too.
    """
    if context.instance.is_ephemeral or not os.environ.get("DAGSTER_HOME"):
        raise dg.Failure(
            "DAGSTER_HOME is not set, so Dagster is using a temporary instance that forgets "
            "partition status. Run `source .venv/bin/activate` (scripts/setup.sh sets "
            "DAGSTER_HOME=<project>/.dagster_home) and start again."
        )


def check_partition_keys(context: AssetExecutionContext, keys: list[str], known: frozenset[str]) -> None:
    """Warn when the loaded questions differ from the partitions the definitions were built with."""
    new = [k for k in keys if k not in known]
    if new:
        context.log.error(
            f"{len(new)} question(s) are not partitions of the loaded definitions (e.g. {new[:3]}): the dataset "
            "files changed after the definitions loaded; reload the code location (or rerun the CLI) to see them"
        )


def question_keys(store: ResultStore, dataset: str) -> list[str]:
    keys: list[str] = []
    for table in ("questions", "load_failures"):
        t = store.read_canonical(dataset, table)
        if t is not None:
            keys += [k for k in t.column("partition_key").to_pylist() if k]
    return keys


def _validation_mark(store: ResultStore, table: str) -> Path:
    return store.root / VALIDATED_DIR / table


@functools.cache
def _pandera_version() -> str:
    """Read from the installed package's metadata: importing pandera costs 0.2 s that a rerun can skip."""
    return importlib.metadata.version("pandera")


def _validation_inputs(store: ResultStore, datasets: list[str], table: str) -> str:
    """Hash of what a table's check reads: its files (path, size, mtime) and the schema code."""
    h = hashlib.sha256(f"{table}|{_pandera_version()}".encode())
    paths = [store.canonical_path(ds, table) for ds in datasets]
    update_with_files(h, [*pipeline_code_files(), *(p for p in paths if p.exists())])
    return h.hexdigest()


def validate(store: ResultStore, datasets: list[str], table: str, asset_key: dg.AssetKey) -> dg.AssetCheckResult:
    """Run the table's pandera schema over every configured dataset's file, in bounded memory.

    Why a mark: the files a rerun finds unchanged (same path, size and mtime; they are only
    replaced by atomic rename) passed this very check when they were written, and reading them
    all again was a second of every rerun of the sample. A failed check is never remembered.
    """
    inputs = _validation_inputs(store, datasets, table)
    mark = _validation_mark(store, table)
    with contextlib.suppress(FileNotFoundError, ValueError):
        saved = json.loads(mark.read_text())
        if saved.get("inputs") == inputs:
            return dg.AssetCheckResult(
                asset_key=asset_key, check_name=CHECK_NAME, passed=True, metadata={"rows": int(saved["rows"])}
            )
    from pipeline.core.schemas import validate_table_file  # pandera (0.2 s): only when a table is checked

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
                asset_key=asset_key,
                check_name=CHECK_NAME,
                passed=False,
                metadata={"dataset": ds, "failure_cases": dg.MetadataValue.md(cases)},
            )
    mark.parent.mkdir(parents=True, exist_ok=True)
    tmp = mark.with_name(f".{table}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"inputs": inputs, "rows": rows}))
    os.replace(tmp, mark)
    return dg.AssetCheckResult(asset_key=asset_key, check_name=CHECK_NAME, passed=True, metadata={"rows": rows})


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


def convert_all(
    context: AssetExecutionContext, benchmark: BenchmarkResource, results: ResultStoreResource, known: frozenset[str]
) -> Iterator[Any]:
    """Convert every configured dataset (skipping unchanged ones); check its partition keys."""
    require_persistent_instance(context)
    cfg = benchmark.load()
    check_scope(context, cfg)
    prefix = prefix_of(context)
    store = results.store()
    stats, failed = convert_datasets(cfg.datasets, store, context.log.info)
    for f in failed:  # this dataset only: the others go on to every later stage
        context.log.error(f"dataset {f.dataset} failed to load (shown as failed in progress): {f.message}")
    names = [s.dataset for s in stats]
    loaded = [ds for ds in cfg.datasets if ds.name in names]
    crosschecks = apply_mc10_crosscheck(store, loaded, context.log.info)
    keys = [k for ds in names for k in question_keys(store, ds)]
    check_partition_keys(context, keys, known)
    context.log.info(f"{len(keys)} question partitions for datasets {names}")
    if is_last_step(context):  # else the run's last step refreshes it (finish_run, assets/run_gate.py)
        store.refresh_catalog()
    for table in CANONICAL_TABLES:
        meta = _table_metadata(stats, table)
        if table == "questions":
            meta |= {
                "partitions": len(keys),
                "load_failures": sum(s.n_failures for s in stats),
                "failed_datasets": dg.MetadataValue.json({f.dataset: f.message for f in failed}),
                "skipped_unchanged": ", ".join(s.dataset for s in stats if s.skipped) or "none",
            }
        if table == "data_quality":
            meta["quirks"] = dg.MetadataValue.md(_quality_markdown(stats))
        if table == "questions" and crosschecks:
            meta["mc10_vs_locomo"] = dg.MetadataValue.md(_crosscheck_markdown(crosschecks))
        yield dg.MaterializeResult(asset_key=key(prefix, table), metadata=meta)
    for table in CANONICAL_TABLES:
        yield validate(store, names, table, key(prefix, table))


def raw_dataset_specs(prefix: str, cfg: BenchmarkConfig) -> list[dg.AssetSpec]:
    """One external asset per raw dataset file: the start of the lineage in the UI."""
    return [
        dg.AssetSpec(
            dg.AssetKey([prefix, "raw", ds.name]),
            description=f"raw {ds.loader} file {ds.resolved_path(cfg.base_dir)} (read, never written, by membench)",
            group_name=f"{prefix}_raw",
            metadata={"path": dg.MetadataValue.path(str(ds.resolved_path(cfg.base_dir))), "loader": ds.loader},
        )
        for ds in cfg.datasets
    ]


def build_canonical(prefix: str, partition_keys: list[str], raw: list[dg.AssetKey]) -> dg.AssetsDefinition:
    """The canonical multi-asset of config ``prefix`` (one asset key per table, all fed by the raw files)."""
    known = frozenset(partition_keys)

    def canonical(
        context: AssetExecutionContext, benchmark: BenchmarkResource, store: ResultStoreResource
    ) -> Iterator[Any]:
        yield from convert_all(context, benchmark, store, known)

    return dg.multi_asset(
        name=f"{prefix}__canonical",
        specs=[
            dg.AssetSpec(key(prefix, t), deps=raw, description=TABLES[t].description, group_name=f"{prefix}_canonical")
            for t in CANONICAL_TABLES
        ],
        check_specs=[
            dg.AssetCheckSpec(
                CHECK_NAME, asset=key(prefix, t), blocking=True, description="pandera schema of the table"
            )
            for t in CANONICAL_TABLES
        ],
        can_subset=False,
    )(canonical)
