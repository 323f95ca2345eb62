"""The run manifest and ``membench verify`` on a real run (pipeline/provenance/manifest.py and verify.py).

One run of the real job (``dagster job execute -j full_benchmark`` in a subprocess, as a user types
it) over the LongMemEval oracle sample sliced to 6 questions, with a RAG system whose top_k covers
every haystack. Then: the manifest records the dataset hash, slice and flags; the report shows the
flags beside the numbers; ``membench verify`` passes on the run as written and fails, naming file
and field, on a tampered dataset file, a tampered judgment row, and a missing manifest.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from pipeline.catalog.manifest import FLAG_FULL_HAYSTACK, FLAG_SLICED, MANIFEST_TABLES
from pipeline.kinds.resolve import load_benchmark
from pipeline.provenance import manifest
from pipeline.provenance.libraries import library_versions
from pipeline.provenance.manifest import MANIFEST_JSON
from pipeline.provenance.releases import file_sha256
from pipeline.provenance.run_end import refresh_run_end
from pipeline.report.refresh import REPORT_INPUTS, refresh_report_files, report_fingerprint
from pipeline.store.results import CATALOG_MARK, CATALOG_WORK, ResultStore, open_catalog, write_parquet_atomic
from pipeline.util.coalesce import Coalescer
from tests.support.dagster import dagster_cli_env as cli_env  # DAGSTER_HOME=<tmp>/home, offline, this config
from tests.support.paths import PROJECT_ROOT

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent
SAMPLE = PROJECT_ROOT / "pipeline/sample_data/longmemeval_oracle_sample.json"
LIMIT = 6


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A finished run: its config, dataset copy and results folder."""
    tmp = tmp_path_factory.mktemp("manifest")
    data = tmp / "lme_oracle_sample.json"
    shutil.copy(SAMPLE, data)
    config = tmp / "manifest_run.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "results_dir": str(tmp / "results"),
                "datasets": [{"name": "lme", "loader": "longmemeval", "path": str(data), "limit": LIMIT}],
                "memory_systems": [
                    {"name": "rag_all", "kind": "rag", "params": {"top_k": 50}},
                    {"name": "rag_2", "kind": "rag", "params": {"top_k": 2}},
                ],
                "readers": [{"name": "offline", "kind": "offline"}],
            }
        )
    )
    proc = subprocess.run(
        [str(BIN / "dagster"), "job", "execute", "-j", "full_benchmark"],
        cwd=PROJECT_ROOT,
        env=cli_env(tmp, config),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return {"config": config, "data": data, "results": tmp / "results", "tmp": tmp}


def _verify(target: Path | str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "membench"), "verify", str(target)], capture_output=True, text=True, timeout=300)


def _copy(run: dict[str, Path], name: str) -> Path:
    dst = run["tmp"] / name
    shutil.copytree(run["results"], dst, ignore=shutil.ignore_patterns(".pinned"))
    return dst


def test_manifest_records_data_code_models_and_flags(run: dict[str, Path]) -> None:
    m = json.loads((run["results"] / MANIFEST_JSON).read_text())
    (ds,) = m["datasets"]
    assert ds["sha256"] == file_sha256(run["data"]) and ds["release"] is None  # a sample, no official release
    assert (ds["n_questions_loaded"], ds["n_questions_file"], ds["limit"]) == (LIMIT, 8, LIMIT)
    assert m["code"]["package_version"] and len(m["code"]["pipeline_sha256"]) == 64
    assert m["libraries"] == library_versions() and m["libraries"]["numpy"] == numpy.__version__
    assert m["config"]["sha256"] == file_sha256(run["config"])
    assert [s["params"]["top_k"] for s in m["config"]["resolved"]["memory_systems"]] == [50, 2]
    assert m["models"]["embedder"] == "all-MiniLM-L6-v2" and m["models"]["readers"] == {"offline": None}
    assert m["fingerprints"]["judges"] and m["fingerprints"]["reader_prompts"]
    flags = {(f["flag"], f["system"]): f for f in m["flags"]}
    assert flags[(FLAG_SLICED, None)]["message"] == f"sliced: {LIMIT} of 8 questions (limit: {LIMIT})"
    full = flags[(FLAG_FULL_HAYSTACK, "rag_all")]
    assert full["n_affected"] == full["n_of"] == LIMIT  # the oracle haystacks are 1-3 sessions: all ranked
    assert (FLAG_FULL_HAYSTACK, "rag_2") not in flags or flags[(FLAG_FULL_HAYSTACK, "rag_2")]["n_affected"] < LIMIT
    assert m["headline"] and all(r["dataset"] == "lme" for r in m["headline"])
    assert len(m["stored_rows"]["judgments"]) == LIMIT


def test_flags_are_views_and_sit_beside_the_numbers_in_the_report(run: dict[str, Path]) -> None:
    sql = "SELECT flag, system, n_affected, n_of FROM integrity_flags ORDER BY flag, system"
    proc = subprocess.run(
        [str(BIN / "membench"), "--config", str(run["config"]), "sql", sql], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert "full_haystack" in proc.stdout and "rag_all" in proc.stdout and "sliced" in proc.stdout
    page = (run["results"] / "report" / "lme.html").read_text()
    row = page[page.index("<td>rag_all") :].split("</tr>")[0]
    assert "top_k ≥ haystack: equals full context" in row
    assert f"sliced: {LIMIT} of 8 questions" in (run["results"] / "report.html").read_text()


def test_verify_passes_on_the_run_as_written(run: dict[str, Path]) -> None:
    for target in (run["results"], run["config"]):
        proc = _verify(target)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        lines = proc.stdout.splitlines()
        assert any(line.startswith("ok") and "dataset lme" in line for line in lines)
        assert any(line.startswith("ok") and "headline lme/rag_all/offline" in line for line in lines)
        assert not any(line.startswith("MISMATCH") for line in lines)


def test_verify_names_a_tampered_dataset_file(run: dict[str, Path]) -> None:
    original = run["data"].read_bytes()
    try:
        run["data"].write_bytes(original.replace(b'"answer"', b'"answer" ', 1))
        proc = _verify(run["results"])
    finally:
        run["data"].write_bytes(original)
    assert proc.returncode == 1
    (bad,) = [line for line in proc.stdout.splitlines() if line.startswith("MISMATCH")]
    assert "dataset lme" in bad and str(run["data"]) in bad and "manifest.json datasets[0].sha256" in bad


def test_verify_names_a_tampered_result_row(run: dict[str, Path]) -> None:
    results = _copy(run, "tampered_row")
    path = sorted((results / "parquet" / "judgments").glob("*.parquet"))[0]
    table = pq.read_table(path)
    rows = table.to_pylist()
    flip = next(r for r in rows if r["status"] == "ok" and r["correct"] is not None)
    flip["correct"], flip["score"] = (not flip["correct"]), (0.0 if flip["correct"] else 1.0)
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    proc = _verify(results)
    assert proc.returncode == 1
    bad = [line for line in proc.stdout.splitlines() if line.startswith("MISMATCH")]
    assert any(f"parquet/judgments/{path.name}" in line and "stored_rows.judgments" in line for line in bad), bad
    assert any(
        "headline lme/" in line and "headline_value is" in line and "headline_value says" in line for line in bad
    ), bad


def test_verify_without_a_manifest_says_so(run: dict[str, Path]) -> None:
    results = _copy(run, "no_manifest")
    (results / MANIFEST_JSON).unlink()
    proc = _verify(results)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == (
        f"membench verify: no manifest: {results.resolve() / MANIFEST_JSON} does not exist "
        "(the benchmark_report step writes it: dagster job execute -j full_benchmark)"
    )


def test_a_question_re_run_alone_keeps_the_manifest_current(run: dict[str, Path]) -> None:
    """A one-question re-run (no report step) rewrites the manifest at its end (assets/run_gate.py)."""
    path = sorted((run["results"] / "parquet" / "judgments").glob("*.parquet"))[0]
    path.unlink()
    catalog = Coalescer(run["results"], CATALOG_WORK)
    done = catalog.counts().done
    proc = subprocess.run(
        [str(BIN / "dagster"), "asset", "materialize", "--select", "manifest_run/judgments", "--partition", path.stem],
        cwd=PROJECT_ROOT,
        env={**cli_env(run["tmp"], run["config"]), "DAGSTER_CLI_ASSET_MATERIALIZE_MODULE_NAME": "pipeline.definitions"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    written = json.loads((run["results"] / MANIFEST_JSON).read_text())
    recorded = written["stored_rows"]["judgments"][path.name]
    assert recorded["mtime_ns"] == path.stat().st_mtime_ns  # the new file, not the deleted one
    assert _verify(run["results"]).returncode == 0
    # the catalog was rebuilt once, after the manifest (pipeline/provenance/run_end.py; the stage's own
    # rebuild made a second one necessary before), and it is current: it shows the manifest's flags
    assert catalog.counts().done == done + 1
    store = ResultStore(results_dir=str(run["results"]))
    assert json.loads((store.root / CATALOG_MARK).read_text())["fingerprint"] == store.catalog_fingerprint()
    con = open_catalog(store.catalog_path)
    try:
        flags = con.execute("SELECT flag, system, n_affected, n_of FROM integrity_flags ORDER BY ALL").fetchall()
    finally:
        con.close()
    assert flags == sorted((f["flag"], f["system"], f["n_affected"], f["n_of"]) for f in written["flags"])


def test_unchanged_inputs_query_nothing_and_changed_rows_rewrite(
    run: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report step of a rerun that changed nothing must not pay for the flag and headline queries."""
    bench, store = load_benchmark(str(run["config"])), ResultStore(results_dir=str(run["results"]))
    built: list[int] = []
    real = manifest.build_manifest
    monkeypatch.setattr(manifest, "build_manifest", lambda *a: built.append(1) or real(*a))
    assert manifest.write_manifest(bench, store)[1] is False and built == []
    path = sorted((run["results"] / "parquet" / "answers").glob("*.parquet"))[0]
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))  # as a stage's atomic rewrite does
    assert manifest.write_manifest(bench, store)[1] is True and built == [1]  # its recorded mtime moved
    assert manifest.write_manifest(bench, store)[1] is False and built == [1]
    assert _verify(run["results"]).returncode == 0
    # another numpy installed: the manifest is rebuilt and records it (compare and leaderboard read it there)
    other = {**library_versions(), "numpy": "0.0.0-other"}
    monkeypatch.setattr(manifest, "library_versions", lambda *a: other)
    assert manifest.write_manifest(bench, store)[1] is True and built == [1, 1]
    assert json.loads((run["results"] / MANIFEST_JSON).read_text())["libraries"]["numpy"] == "0.0.0-other"


_WRITTEN_AT = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC")


def _run_end_outputs(root: Path) -> dict[str, object]:
    """What a run's end writes, the time of writing and the folder's own path left out."""

    def text_of(value: object) -> str:  # a row's floats rounded: DuckDB's parallel sums differ in the last bits
        if isinstance(value, tuple):
            value = tuple(round(v, 9) if isinstance(v, float) else v for v in value)
        return _WRITTEN_AT.sub("<time>", str(value)).replace(str(root), "<results>")

    def text(path: Path) -> str:
        return text_of(path.read_text())

    tables = {t: pq.read_table(root / "parquet" / "manifest" / f"{t}.parquet").to_pylist() for t in MANIFEST_TABLES}
    for row in tables["run_manifest"]:
        row.pop("generated_at")
    store = ResultStore(results_dir=str(root))
    con = open_catalog(store.catalog_path)
    try:
        names = [r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall()]
        views = {n: sorted(text_of(r) for r in con.execute(f'SELECT * FROM "{n}"').fetchall()) for n in sorted(names)}
    finally:
        con.close()
    pages = [*sorted(root.glob("report/**/*.html")), root / "report.html", root / "results.json"]
    return {
        "manifest": text(root / MANIFEST_JSON),
        "tables": tables,
        "pages": {p.relative_to(root).as_posix(): text(p) for p in pages},
        "views": views,
        "report current": (root / REPORT_INPUTS).read_text() == report_fingerprint(store),
        "catalog current": json.loads((root / CATALOG_MARK).read_text())["fingerprint"] == store.catalog_fingerprint(),
    }


def test_the_run_end_writes_what_the_manifest_then_the_report_refresh_wrote(run: dict[str, Path]) -> None:
    """``refresh_run_end`` (the manifest on the report's snapshot, one catalog rebuild) writes the same
    manifest, manifest tables, report files and catalog as ``write_manifest`` then ``refresh_report_files``."""
    bench = load_benchmark(str(run["config"]))
    written = []
    for name in ("apart", "together"):
        root = _copy(run, f"run_end_{name}")
        path = sorted((root / "parquet" / "judgments").glob("*.parquet"))[0]
        table = pq.read_table(path)  # a re-judged question: the numbers, the manifest and the report change
        rows = table.to_pylist()
        flip = next(r for r in rows if r["status"] == "ok" and r["correct"] is not None)
        flip["correct"], flip["score"] = (not flip["correct"]), (0.0 if flip["correct"] else 1.0)
        mtime = path.stat().st_mtime_ns + 1_000_000_000  # the same in both copies (the manifest records it)
        write_parquet_atomic(path, pa.Table.from_pylist(rows, schema=table.schema))
        os.utime(path, ns=(mtime, mtime))
        store = ResultStore(results_dir=str(root))
        if name == "apart":
            assert manifest.write_manifest(bench, store)[1]
            refresh_report_files(store)
        else:
            refresh_run_end(bench, store)
        written.append(_run_end_outputs(root))
    apart, together = written
    assert apart["report current"] and apart["catalog current"]
    assert together == apart
    headline = json.loads(together["manifest"])["headline"]  # type: ignore[arg-type]
    assert headline != json.loads((run["results"] / MANIFEST_JSON).read_text())["headline"]
