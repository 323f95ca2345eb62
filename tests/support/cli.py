"""A results folder with one failed answer and configs pointing at it, for tests of ``membench``
commands, and a runner of ``main(argv)`` that captures what a command printed."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from pipeline.cli.main import main
from pipeline.store.results import ResultStore

NOW = dt.datetime(2025, 1, 1)


def write_results(store: ResultStore) -> None:
    """Two questions of dataset ``d``: d__q1 answered ok by rag/offline, d__q2 failed ("reader timed out")."""
    questions = pa.table({"dataset": ["d", "d"], "question_id": ["q1", "q2"], "partition_key": ["d__q1", "d__q2"]})
    store.write(store.canonical_path("d", "questions"), questions)
    for key, status, error in (("d__q1", "ok", None), ("d__q2", "failed", "reader timed out")):
        answers = pa.table(
            {
                "partition_key": [key], "dataset": ["d"], "question_id": [key[3:]], "unit": ["rag/offline"],
                "status": [status], "error": pa.array([error], pa.string()), "duration_s": [0.1],
                "finished_at": [NOW], "system": pa.array(["rag" if status == "ok" else None], pa.string()),
                "reader": pa.array(["offline" if status == "ok" else None], pa.string()),
            }
        )  # fmt: skip
        store.write_partition("answers", key, answers)
    store.refresh_catalog()


def results_config(tmp_path: Path, name: str, results: Path) -> str:
    """The path of ``tmp_path/<name>.yaml``, a config whose results folder is ``results``."""
    path = tmp_path / f"{name}.yaml"
    path.write_text(
        f"results_dir: {results}\ndatasets:\n  - {{name: d, loader: locomo, path: x.json}}\n"
        "memory_systems:\n  - {name: rag, kind: rag}\n"  # the system of the stored rows (else `failed` names it stale)
    )
    return str(path)


@pytest.fixture
def configs(tmp_path: Path) -> dict[str, str]:
    """RUN: a config over results with one failed answer; EMPTY: one whose results folder never ran;
    MISSING: a config path that does not exist; RESULTS: the results folder of RUN."""
    store = ResultStore(results_dir=str(tmp_path / "results"))
    write_results(store)
    return {
        "RUN": results_config(tmp_path, "run", store.root),
        "EMPTY": results_config(tmp_path, "empty", tmp_path / "never_ran"),
        "MISSING": str(tmp_path / "missing.yaml"),
        "RESULTS": str(store.root),
    }


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``membench <argv>`` run in this process."""
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse errors
        rc = int(exc.code or 0)
    captured = capsys.readouterr()
    return rc, captured.out, captured.err
