"""A results folder written before the ``config_hash`` column became ``unit_hash`` keeps working.

Why: users upgrade with finished runs on disk; their questions must stay done (no recompute, no
LLM spend) and their SQL must keep working under the new name. The old format is made the way
earlier versions wrote it: the same files with the unit's hash in a column named ``config_hash``
(stage files and the stage indexes) and in the memory checkpoints' ``config_hash`` field.
"""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.definitions import build_defs
from pipeline.memory.checkpoint import MEMORY_STAGE_DIR
from pipeline.store.results import CATALOG_MARK, STAGE_TABLES, ResultStore, write_parquet_atomic
from tests.support.dagster import lme_sample_config, stage_run_metadata

OLD, NEW = "config_hash", "unit_hash"
CHECKPOINT_KEY = b"membench.memory_checkpoint"


def _config(tmp_path: Path) -> Path:
    return lme_sample_config(
        tmp_path,
        "legacy",
        memory_systems=[{"name": "full", "kind": "full_context"}],
        readers=[{"name": "offline", "kind": "offline"}],
        judges=[{"name": "lme_contains_normalized", "kind": "lme_contains_normalized"}],
    )


def _to_old_format(path: Path) -> None:
    """Rewrite one Parquet file as an earlier version wrote it (column, or checkpoint field, renamed)."""
    table = pq.read_table(path)
    meta = dict(table.schema.metadata or {})
    if CHECKPOINT_KEY in meta:
        state = json.loads(meta[CHECKPOINT_KEY])
        state[OLD] = state.pop(NEW)
        meta[CHECKPOINT_KEY] = json.dumps(state).encode()
    names = [OLD if n == NEW else n for n in table.column_names]
    write_parquet_atomic(path, table.rename_columns(names).replace_schema_metadata(meta))


def _stage_files(parquet: Path) -> dict[Path, int]:
    files = [p for s in STAGE_TABLES for p in (parquet / s).glob("*.parquet")]
    files += list((parquet / MEMORY_STAGE_DIR).rglob("*.parquet"))
    return {p: p.stat().st_mtime_ns for p in files}


def _age(parquet: Path) -> None:
    """Old files, old indexes, old checkpoints, and no catalog: as an earlier version left the folder."""
    for p in _stage_files(parquet):
        _to_old_format(p)
    for p in (parquet / "_index").glob("*.parquet"):
        _to_old_format(p)


def _computed(result: dg.ExecuteInProcessResult) -> dict[str, int]:
    return {stage: int(stage_run_metadata(result, stage)["computed"]) for stage in STAGE_TABLES}


def test_a_folder_written_with_config_hash_stays_done(tmp_path: Path) -> None:
    config = _config(tmp_path)
    store = ResultStore(results_dir=str(tmp_path / "res"))
    with dg.instance_for_test() as instance:
        first = build_defs(str(config)).resolve_job_def("full_benchmark").execute_in_process(instance=instance)
        assert first.success
    with store.connect() as con:
        before = con.execute(f"SELECT partition_key, unit, {NEW}, status FROM answers ORDER BY ALL").fetchall()
        n_questions = con.execute("SELECT count(*) FROM questions").fetchone()[0]  # type: ignore[index]
    assert before and all(r[3] == "ok" for r in before)

    _age(store.parquet_root)
    for name in ("results.duckdb", CATALOG_MARK):
        (store.root / name).unlink(missing_ok=True)
    aged = _stage_files(store.parquet_root)
    assert all(OLD in pq.read_schema(p).names for p in aged if MEMORY_STAGE_DIR not in p.parts)

    assert store.refresh_catalog()  # the catalog (and `membench sql`) reads the old folder
    with store.reader() as con:
        for stage in STAGE_TABLES:
            columns = {r[0] for r in con.execute(f'DESCRIBE "{stage}"').fetchall()}
            assert NEW in columns and OLD not in columns, stage
            assert con.execute(f'SELECT count(*) FROM "{stage}" WHERE {NEW} IS NULL').fetchone() == (0,)
        assert con.execute(f"SELECT partition_key, unit, {NEW}, status FROM answers ORDER BY ALL").fetchall() == before
        progress = dict(con.execute("SELECT status, count(*) FROM progress GROUP BY 1").fetchall())
    assert progress == {"done": n_questions * 5}, progress

    with dg.instance_for_test() as instance:
        rerun = build_defs(str(config)).resolve_job_def("full_benchmark").execute_in_process(instance=instance)
        assert rerun.success
    assert _computed(rerun) == dict.fromkeys(STAGE_TABLES, 0)
    assert _stage_files(store.parquet_root) == aged  # not one file rewritten


def test_views_read_old_and_new_files_side_by_side(tmp_path: Path) -> None:
    """A folder a new version kept writing into: each row has its hash under one of the two names."""
    store = ResultStore(results_dir=str(tmp_path / "res"))
    base = {"dataset": "d", "unit": "s/r", "status": "ok", "system": "s", "reader": "r"}
    rows = {q: {**base, "partition_key": f"d__{q}", "question_id": q} for q in ("q1", "q2")}
    write_parquet_atomic(store.partition_path("answers", "d__q1"), pa.Table.from_pylist([{**rows["q1"], OLD: "h1"}]))
    write_parquet_atomic(store.partition_path("answers", "d__q2"), pa.Table.from_pylist([{**rows["q2"], NEW: "h2"}]))
    with store.connect() as con:
        got = con.execute(f"SELECT question_id, {NEW}, system, reader FROM answers ORDER BY 1").fetchall()
        columns = {r[0] for r in con.execute("DESCRIBE answers").fetchall()}
    assert got == [("q1", "h1", "s", "r"), ("q2", "h2", "s", "r")]
    assert OLD not in columns
    old = store.read_partition("answers", "d__q1", columns=["unit", NEW])
    assert old is not None and old.column_names == ["unit", NEW] and old.column(NEW).to_pylist() == ["h1"]
