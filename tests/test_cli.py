"""The ``membench`` CLI: a query over the result views, and a clear error for a bad one."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from pipeline.cli import main
from resources.storage import ResultStore


@pytest.fixture
def config(tmp_path: Path) -> str:
    store = ResultStore(results_dir=str(tmp_path / "results"))
    table = pa.table({"dataset": ["d"], "question_id": ["q1"], "partition_key": ["d__q1"]})
    store.write(store.canonical_path("d", "questions"), table)
    store.refresh_catalog()
    path = tmp_path / "cfg.yaml"
    path.write_text(f"results_dir: {store.root}\ndatasets:\n  - {{name: d, loader: locomo, path: x.json}}\n")
    return str(path)


def test_sql_prints_a_table(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", config, "sql", "SELECT question_id, partition_key FROM questions"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split(" | ") == ["question_id", "partition_key"] and "d__q1" in out[2]


def test_bad_sql_is_a_one_line_error_not_a_traceback(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--config", config, "sql", "SELECT no_such_column FROM questions"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("membench sql: Binder Error") and "no_such_column" in err and "Traceback" not in err
