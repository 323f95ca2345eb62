"""A run that ends with failed questions, run as a user types it (``dagster job execute`` after
``source .venv/bin/activate``): the last lines are the run's summary, why, and what to do next, the
failure says the report step is not the cause, and the exit status is 1."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from pipeline.llm.fake_server import running_fake_server
from tests.support.paths import PROJECT_ROOT

SAMPLE = PROJECT_ROOT / "pipeline" / "sample_data" / "locomo_sample.json"


def test_last_lines_are_the_summary_and_the_next_command(tmp_path: Path) -> None:
    with running_fake_server() as srv:
        dead_url = srv.base_url  # nothing listens there after the block
    config = tmp_path / "dead.yaml"
    config.write_text(yaml.safe_dump({
        "results_dir": str(tmp_path / "results"),
        "datasets": [{"name": "dead", "loader": "locomo", "path": str(SAMPLE), "limit": 3}],
        "memory_systems": [{"name": "full", "kind": "full_context", "params": {"token_budget": 2000}}],
        "readers": [{"name": "llm", "kind": "llm"}],
        "judges": [{"name": "f1", "kind": "locomo_f1"}],
        "llm": {"base_url": dead_url, "model": "m", "api_key_env": "MEMBENCH_TEST_KEY", "max_retries": 0,
                "stop_after_unreachable": 2},
    }))  # fmt: skip
    home = tmp_path / "home"
    home.mkdir()
    script = (
        f"source .venv/bin/activate && export DAGSTER_HOME={home} && "
        f"MEMBENCH_CONFIG={config} dagster job execute -j full_benchmark"
    )
    proc = subprocess.run(["bash", "-c", script], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 1
    lines = proc.stderr.rstrip("\n").splitlines()
    assert lines[-6].startswith("Error: Run ") and lines[-5] == ""
    summary = "run: 3 questions; failed questions per stage: ingestion 0, retrievals 0, answers 3, judgments 3"
    assert lines[-4] == summary
    # why, in the summary: the stage's stop (judgments only copied the answers' errors: no line of their own)
    assert lines[-3].startswith("answers stopped after 2 consecutive questions could not reach the endpoint (last ")
    assert "connection error: " in lines[-3]
    assert lines[-2] == f"Report (failed questions reported apart): {tmp_path / 'results' / 'report.html'}"
    assert lines[-1].endswith(f"list them and the commands that re-run them: MEMBENCH_CONFIG={config} membench failed")
    # the failed steps are the checks of the stages that lost questions, not the report; no stack trace
    steps = "Steps failed: ['dead__answers_no_failed_units', 'dead__judgments_no_failed_units']"
    assert steps in proc.stderr and "benchmark_report - STEP_FAILURE" not in proc.stderr
    assert "answers: 3 of 3 questions of this run failed" in proc.stderr
    assert "Stack Trace" not in proc.stderr and "Traceback" not in proc.stderr
    assert (tmp_path / "results" / "report.html").exists()
