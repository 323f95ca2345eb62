"""``membench leaderboard RESULTS...``: ranking inside one (dataset, metric, judge, reader) only,
intervals and counts from each run's accuracy_report, product memory tokens from the checkpoints."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.cli.main import main
from pipeline.memory.base import MemoryUnit
from pipeline.memory.checkpoint import Checkpoint, CheckpointState, checkpoint_path, save
from pipeline.products.base import KIND_PRODUCT_SESSION
from pipeline.report.leaderboard import build, text_report
from pipeline.store.results import ResultStore
from tests.support.report import build_full_store


def _set(store: ResultStore, stage: str, key: str, which: str, **values: object) -> None:
    path = store.partition_path(stage, key)
    rows = pq.read_table(path).to_pylist()
    for r in rows:
        if r["unit"] == which:
            r.update(values)
    store.write_partition(stage, key, pa.Table.from_pylist(rows, schema=pq.read_schema(path)))


def _marker(session: str, tokens: int) -> MemoryUnit:
    usage = {"prompt_tokens": tokens, "completion_tokens": 10, "cost_usd": 0.0, "upstream_llm_calls": 1}
    when = dt.datetime(2023, 1, 1)
    return MemoryUnit(f"{session}#m", "h", session, 0, (), json.dumps(usage), when, "system", KIND_PRODUCT_SESSION)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("leaderboard")
    a = build_full_store(root / "run_a")
    shutil.copytree(a.root, root / "run_b")
    b = ResultStore(results_dir=str(root / "run_b"))
    _set(b, "judgments", "mc__m3", "sysA/extract/mc", correct=True, score=1.0)  # B: sysA 3/3 -> ranks first
    # sysA of run B is a product memory: 2 sessions of ingestion, 90 + 10 and 190 + 10 tokens
    state = CheckpointState("sysA", "mem0", "h", "f", 2, 2, 1.0)
    save(checkpoint_path(b, "sysA", "mc", "h"), Checkpoint(state, [_marker("s0", 90), _marker("s1", 190)]))
    b.refresh_catalog()
    return a.root, b.root


def test_ranks_inside_a_group_across_runs(runs: tuple[Path, Path]) -> None:
    board = build([str(p) for p in runs])
    mc = board.groups[("mc", "mc_accuracy", "mc", "offline")]
    assert [(e.system, e.run, e.n_scored, e.n_judgments) for e in mc] == [
        ("sysA", "run_b", 3, 5),  # 3/3 scored right (2 failed: counted, not scored)
        ("sysB", "run_a", 5, 5),
        ("sysB", "run_b", 5, 5),
        ("sysA", "run_a", 3, 5),
    ]
    top = mc[0]
    assert top.value == pytest.approx(1.0) and top.ci_method == "wilson_95" and top.n_failed == 2
    assert top.ci_low is not None and 0 < top.ci_low < 1.0
    assert top.memory_tokens_per_question == pytest.approx((100 + 200) / 5)
    assert mc[1].memory_tokens_per_question is None  # not a product memory: no ingestion LLM tokens


def test_different_readers_are_not_ranked_together(runs: tuple[Path, Path], tmp_path: Path) -> None:
    c = ResultStore(results_dir=str(tmp_path / "run_c"))
    shutil.copytree(runs[0], c.root)
    for key in ("mc__m1", "mc__m2", "mc__m3", "mc__m4", "mc__m5"):
        for unit in ("sysA/extract/mc", "sysB/extract/mc"):
            _set(c, "judgments", key, unit, unit=unit.replace("/extract/", "/other/"))
        for unit in ("sysA/extract", "sysB/extract"):
            _set(c, "answers", key, unit, unit=unit.replace("/extract", "/other"), label="other")
    c.refresh_catalog()
    board = build([str(runs[0]), str(c.root)])
    readers = {k[3] for k in board.groups if k[:3] == ("mc", "mc_accuracy", "mc")}
    assert len(readers) == 2
    assert any(n.startswith("mc / mc_accuracy: scored under 2 (judge, reader) pairs") for n in board.notes)
    assert "never against each other" in text_report(board)


def test_cli_prints_and_writes_the_page(runs: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    page = tmp_path / "board.html"
    assert main(["leaderboard", str(runs[0]), str(runs[1]), "--html", str(page)]) == 0
    out = capsys.readouterr().out
    assert "mc | metric mc_accuracy | judge mc | reader offline" in out and f"written: {page}" in out
    assert "<h2>mc | metric mc_accuracy | judge mc | reader offline</h2>" in page.read_text()
    assert main(["leaderboard", str(tmp_path / "nowhere")]) == 2
    assert "no such results folder" in capsys.readouterr().err


def test_failures_as_wrong_beside_each_headline_and_reversals(runs: tuple[Path, Path]) -> None:
    board = build([str(p) for p in runs])
    key = ("mc", "mc_accuracy", "mc", "offline")
    mc = {(e.system, e.run): e for e in board.groups[key]}
    # run B's sysA: 3 of 3 scored right, but 2 of 5 questions failed -> 3/5 once they count as wrong
    top = mc[("sysA", "run_b")]
    assert (top.value, top.bound, top.n_bound) == (1.0, 0.6, 2)
    assert (mc[("sysB", "run_a")].bound, mc[("sysB", "run_a")].n_bound) == (0.8, 0)
    # sysA (run_b) above both sysB rows by its headline, below them by its bound; run_a's sysA (2/3, bound 2/5)
    # is below the sysB rows both ways
    flips = board.reversals[key]
    assert len(flips) == 2 and all(line.startswith("sysA (run_b) ranks above sysB") for line in flips)
    text = text_report(board)
    assert "failure rates change the order: sysA (run_b) ranks above sysB (run_a)" in text
    assert "0.600 (2)" in text


def test_default_page_is_beside_the_runs_and_versions_that_differ_are_noted(
    runs: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    results = tmp_path / "results"
    a = Path(shutil.copytree(runs[0], results / "run_a", ignore=shutil.ignore_patterns(".pinned")))
    b = Path(shutil.copytree(runs[1], results / "run_b", ignore=shutil.ignore_patterns(".pinned")))
    for root, numpy in ((a, "2.4.6"), (b, "2.3.5")):
        (root / "manifest.json").write_text(json.dumps({"libraries": {"numpy": numpy, "duckdb": "2.0.1"}}))
    here = tmp_path / "typed_here"
    here.mkdir()
    monkeypatch.chdir(here)
    assert main(["leaderboard", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert f"written: {results / 'leaderboard.html'}" in out and list(here.iterdir()) == []
    note = "note: runs on other library versions (their manifests): numpy differs: 2.3.5 in run_b; 2.4.6 in run_a"
    assert note in out
    assert "numpy differs" in (results / "leaderboard.html").read_text()
