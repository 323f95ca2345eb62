"""``membench compare RUN_A RUN_B``: pairing on shared questions, McNemar for binary metrics, the
paired bootstrap for means, the CLI and the page linked from the report."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.cli.main import main
from pipeline.metrics.stats import mcnemar_exact_p, paired_bootstrap
from pipeline.report.build import collect
from pipeline.report.compare import TEST_BOOTSTRAP, TEST_MCNEMAR, CompareRow, _row_html, compare_runs
from pipeline.report.refresh import write_report_files
from pipeline.store.results import ResultStore
from tests.support.report import F1_SCORES, build_full_store


def _set_judgment(store: ResultStore, key: str, unit: str, **values: object) -> None:
    path = store.partition_path("judgments", key)
    rows = pq.read_table(path).to_pylist()
    for r in rows:
        if r["unit"] == unit:
            r.update(values)
    store.write_partition("judgments", key, pa.Table.from_pylist(rows, schema=pq.read_schema(path)))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[ResultStore, ResultStore]:
    root = tmp_path_factory.mktemp("compare")
    a = build_full_store(root / "run_a")
    shutil.copytree(a.root, root / "run_b")
    b = ResultStore(results_dir=str(root / "run_b"))
    # B: mc sysA gets m3 right (A: wrong); sysB loses m2 (A: right); lme F1 of q2 rises .25 -> .75
    _set_judgment(b, "mc__m3", "sysA/extract/mc", correct=True, score=1.0)
    _set_judgment(b, "mc__m2", "sysB/extract/mc", correct=False, score=0.0)
    _set_judgment(b, "lme__q2", "bm25/gpt/f1", score=0.75, correct=True)
    # B has no judgment of lme q1 for the F1 judge: that question is compared in no run
    path = b.partition_path("judgments", "lme__q1")
    rows = [r for r in pq.read_table(path).to_pylist() if r["unit"] != "bm25/gpt/f1"]
    b.write_partition("judgments", "lme__q1", pa.Table.from_pylist(rows, schema=pq.read_schema(path)))
    b.refresh_catalog()
    return a, b


def _rows(runs: tuple[ResultStore, ResultStore]) -> dict[tuple[str, str, str], CompareRow]:
    a, b = runs
    return {(r.dataset, r.system, r.metric): r for r in compare_runs(a.root, b.root).rows}


def test_binary_metric_mcnemar(runs: tuple[ResultStore, ResultStore]) -> None:
    rows = _rows(runs)
    sys_a = rows[("mc", "sysA", "mc_accuracy")]
    # sysA scored m1, m2, m3 in both runs (m4 answer failed, m5 judgment failed): m3 flipped to right
    assert (sys_a.test, sys_a.n_paired, sys_a.b_only_a_correct, sys_a.c_only_b_correct) == (TEST_MCNEMAR, 3, 0, 1)
    assert sys_a.diff == pytest.approx(1 / 3) and sys_a.p_value == mcnemar_exact_p(0, 1) == 1.0
    sys_b = rows[("mc", "sysB", "mc_accuracy")]
    assert (sys_b.b_only_a_correct, sys_b.c_only_b_correct, sys_b.diff) == (1, 0, pytest.approx(-0.2))


def test_mean_metric_paired_bootstrap(runs: tuple[ResultStore, ResultStore]) -> None:
    f1 = _rows(runs)[("lme", "bm25", "locomo_f1")]
    assert f1.test == TEST_BOOTSTRAP
    # shared scored questions: q2, q3_abs (q1 only in A; q4 failed in both)
    assert (f1.n_paired, f1.n_only_a, f1.n_only_b) == (2, 1, 0)
    expected = paired_bootstrap([F1_SCORES["q2"], F1_SCORES["q3_abs"]], [0.75, F1_SCORES["q3_abs"]])
    assert (f1.diff, f1.ci_low, f1.ci_high, f1.p_value) == pytest.approx(
        (expected.diff, expected.low, expected.high, expected.p_value)
    )
    assert f1.diff == pytest.approx(0.25)


def test_unchanged_rows_are_equal(runs: tuple[ResultStore, ResultStore]) -> None:
    same = _rows(runs)[("lme", "full", "lme_contains_normalized")]
    assert (same.diff, same.p_value, same.b_only_a_correct, same.c_only_b_correct) == (0.0, 1.0, 0, 0)


def test_cli_and_report_page(runs: tuple[ResultStore, ResultStore], capsys: pytest.CaptureFixture[str]) -> None:
    a, b = runs
    write_report_files(b, collect(b))  # B's report exists before the comparison
    assert "compare/run_a.html" not in (b.root / "report.html").read_text()
    assert main(["compare", str(a.root), str(b.root), "--html"]) == 0
    out = capsys.readouterr().out
    assert "mcnemar_exact" in out and "paired_bootstrap" in out and "+0.250" in out
    page = b.root / "compare" / "run_a.html"
    text = page.read_text()
    assert page.exists() and "McNemar" in text
    assert '<a href="../report.html">' in text  # back to B's report
    assert "<td>0.625</td><td><b>0.875</b></td>" in text  # lme F1 on q2, q3_abs: the better run in bold
    # B's report links the page at once, not after another run
    assert 'href="compare/run_a.html"' in (b.root / "report.html").read_text()
    assert json.loads((b.root / "results.json").read_text())["comparisons"] == ["compare/run_a.html"]


def test_significant_differences_are_coloured() -> None:
    base = dict(dataset="d", system="s", reader="r", judge="j", metric="m", aggregate="accuracy", test=TEST_MCNEMAR)
    counts = dict(n_paired=40, n_only_a=0, n_only_b=0, ci_low=None, ci_high=None)
    better = CompareRow(**base, **counts, value_a=0.5, value_b=0.8, diff=0.3, b_only_a_correct=1,
                        c_only_b_correct=13, p_value=0.002)  # fmt: skip
    worse = dataclasses.replace(better, value_a=0.8, value_b=0.5, diff=-0.3, p_value=0.002)
    same = dataclasses.replace(better, value_b=0.55, diff=0.05, p_value=0.6)
    assert '<td class="better">+0.300</td>' in _row_html(better) and "<b>0.800</b>" in _row_html(better)
    assert '<td class="worse">-0.300</td>' in _row_html(worse)
    assert '<td class="same">+0.050</td>' in _row_html(same)


def test_config_as_run(
    runs: tuple[ResultStore, ResultStore], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = runs
    cfg = tmp_path / "b.yaml"
    cfg.write_text(f"results_dir: {b.root}\ndatasets:\n  - {{name: mc, loader: locomo_mc10, path: x.json}}\n")
    assert main(["compare", str(a.root), str(cfg)]) == 0
    assert "sysA" in capsys.readouterr().out


def _copies(runs: tuple[ResultStore, ResultStore], tmp_path: Path) -> tuple[Path, Path]:
    """Copies of the two runs a test may write into (the module's runs stay as the other tests expect)."""
    a, b = runs
    return (
        Path(shutil.copytree(a.root, tmp_path / "run_a", ignore=shutil.ignore_patterns(".pinned"))),
        Path(shutil.copytree(b.root, tmp_path / "run_b", ignore=shutil.ignore_patterns(".pinned"))),
    )


def test_html_goes_beside_the_results_not_into_the_working_directory(
    runs: tuple[ResultStore, ResultStore], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    a, b = _copies(runs, tmp_path)
    here = tmp_path / "typed_here"
    here.mkdir()
    monkeypatch.chdir(here)
    assert main(["compare", str(a), str(b), "--html", "mine.html"]) == 0
    assert f"written: {b / 'compare' / 'mine.html'}" in capsys.readouterr().out
    assert (b / "compare" / "mine.html").is_file() and list(here.iterdir()) == []
    elsewhere = tmp_path / "pages" / "abs.html"
    assert main(["compare", str(a), str(b), "--html", str(elsewhere)]) == 0  # an absolute path as given
    assert elsewhere.is_file() and list(here.iterdir()) == []


def _libraries(root: Path, libraries: dict[str, str] | None) -> None:
    manifest = {"manifest_version": 1} | ({"libraries": libraries} if libraries is not None else {})
    (root / "manifest.json").write_text(json.dumps(manifest))


def test_compare_says_when_the_runs_used_other_library_versions(
    runs: tuple[ResultStore, ResultStore], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _copies(runs, tmp_path)
    _libraries(a, {"numpy": "2.4.6", "duckdb": "2.0.1", "mem0ai": "2.2.1"})
    _libraries(b, {"numpy": "2.3.5", "duckdb": "2.0.1"})  # mem0ai not installed in B: not a difference
    result = compare_runs(a, b)
    assert result.libraries == ["numpy differs: 2.3.5 in B; 2.4.6 in A"]
    assert main(["compare", str(a), str(b), "--html", ""]) == 0
    out = capsys.readouterr().out
    assert "A and B ran on other versions of libraries that can move a number" in out
    assert "numpy differs: 2.3.5 in B; 2.4.6 in A" in out
    assert "numpy differs: 2.3.5 in B; 2.4.6 in A" in (b / "compare" / "run_a.html").read_text()
    _libraries(b, {"numpy": "2.4.6", "duckdb": "2.0.1"})
    assert compare_runs(a, b).libraries == []  # same versions: nothing said
    _libraries(b, None)  # a manifest from before versions were recorded
    assert compare_runs(a, b).libraries == ["library versions unknown for B (its manifest records none)"]
