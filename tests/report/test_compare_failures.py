"""``membench compare``: failures-as-wrong bounds per row and the order they reverse."""

from __future__ import annotations

import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipeline.cli.main import main
from pipeline.report.compare import REVERSED_MARK, compare_runs, render_html
from pipeline.store.results import ResultStore
from tests.support.report import build_full_store


def _set(store: ResultStore, key: str, unit: str, **values: object) -> None:
    path = store.partition_path("judgments", key)
    rows = pq.read_table(path).to_pylist()
    for r in rows:
        if r["unit"] == unit:
            r.update(values)
    store.write_partition("judgments", key, pa.Table.from_pylist(rows, schema=pq.read_schema(path)))


def test_failure_rates_that_reverse_the_order(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path_factory.mktemp("cmpfail")
    a = build_full_store(root / "run_a")
    shutil.copytree(a.root, root / "run_b")
    b = ResultStore(results_dir=str(root / "run_b"))
    # A's sysB: m1 wrong, m2..m5 right, nothing failed. B's sysB: m1 right, but m2 and m3 judgments failed
    _set(b, "mc__m1", "sysB/extract/mc", correct=True, score=1.0)
    for key in ("mc__m2", "mc__m3"):
        _set(b, key, "sysB/extract/mc", status="failed", error="UnparseableVerdict: judge reply is 'maybe'",
             correct=None, score=None)  # fmt: skip
    b.refresh_catalog()
    rows = {(r.dataset, r.system): r for r in compare_runs(a.root, b.root).rows}
    r = rows[("mc", "sysB")]
    # paired on m1, m4, m5: A 2/3, B 3/3 -> B ahead; on all five attempted, failures as wrong: A 4/5, B 3/5
    assert (r.n_paired, r.value_a, r.value_b) == (3, pytest.approx(2 / 3), 1.0)
    assert (r.n_failed_a, r.n_failed_b, r.bound_a, r.bound_b) == (0, 2, 0.8, 0.6)
    assert r.order_reversed
    # sysA fails m4 (answer) and m5 (judgment) in both runs: same order, no reversal
    s = rows[("mc", "sysA")]
    assert (s.n_failed_a, s.n_failed_b, s.order_reversed) == (2, 2, False)
    assert main(["compare", str(a.root), str(b.root)]) == 0
    out = capsys.readouterr().out
    assert out.count(REVERSED_MARK) == 2  # the legend and the row
    assert "1 row(s) where the failure rates reverse the order of A and B: mc sysB extract mc_accuracy" in out
    assert f'<span class="reversed">0.800/0.600 {REVERSED_MARK}</span>' in render_html(compare_runs(a.root, b.root))
