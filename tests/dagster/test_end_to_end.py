"""The whole job on the bundled samples, as a user runs it: `dagster job execute -j full_benchmark`.

One test drives the real CLI in a subprocess: it is killed with SIGKILL in the middle of the
answer stage, run again to completion, then run a third time. Afterwards every (question, unit)
row exists exactly once, nothing is missing, the third run computes nothing, and the report
files exist.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import dagster as dg
import duckdb
import pytest
import yaml

from pipeline.config.model import load_config
from pipeline.definitions import partition_keys
from pipeline.store.results import ResultStore, open_catalog
from tests.support.dagster import status_mismatches
from tests.support.paths import PROJECT_ROOT

pytestmark = pytest.mark.slow
STAGES = ("ingestion", "retrievals", "answers", "judgments")


def _env(tmp_path: Path, config: Path) -> dict[str, str]:
    home = tmp_path / "dagster_home"
    home.mkdir(exist_ok=True)
    shutil.copy(PROJECT_ROOT / "configs" / "dagster.yaml", home / "dagster.yaml")
    env = dict(os.environ)
    env.update(
        DAGSTER_HOME=str(home),
        DAGSTER_CLI_JOB_EXECUTE_MODULE_NAME="pipeline.definitions",
        MEMBENCH_CONFIG=str(config),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
    )
    return env


def _dagster() -> str:
    return str(Path(sys.executable).parent / "dagster")


def _config(tmp_path: Path) -> tuple[Path, Path]:
    cfg = yaml.safe_load((PROJECT_ROOT / "configs" / "sample.yaml").read_text())
    results = tmp_path / "results"
    cfg["results_dir"] = str(results)  # the datasets' membench:... paths name the bundled samples from anywhere
    path = tmp_path / "sample.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path, results


def _run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_dagster(), "job", "execute", "-j", "full_benchmark"],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def _run_and_kill_during_answers(env: dict[str, str], answers_dir: Path) -> int:
    """Start a run, SIGKILL its process group once a few answer files exist; return that count."""
    proc = subprocess.Popen(
        [_dagster(), "job", "execute", "-j", "full_benchmark"],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 600
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            done = len(list(answers_dir.glob("*.parquet"))) if answers_dir.exists() else 0
            if done >= 5:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return done
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    raise AssertionError(f"run ended (rc={proc.returncode}) before it could be killed mid-answers")


def _assert_dagster_agrees(tmp_path: Path, config: Path, results: Path) -> None:
    """Partition status of every stage equals the progress view; the killed run is marked failed."""
    load_config.cache_clear()
    keys = partition_keys(load_config(str(config)))
    home = str(tmp_path / "dagster_home")
    with mock.patch.dict(os.environ, {"DAGSTER_HOME": home}), dg.DagsterInstance.from_config(home) as instance:
        store = ResultStore(results_dir=str(results))
        assert status_mismatches(instance, "sample", keys, store) == []
        runs = instance.get_runs()
        assert [r.status for r in runs][-1:] == [dg.DagsterRunStatus.FAILURE]  # the killed first run, reaped
        assert all(r.status in (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE) for r in runs)
        assert {r.tags.get("membench/config") for r in runs} == {"sample"}


def _assert_quiet_and_true(log: str) -> None:
    """The sample run prints no WARNING; that three datasets have no LLM judge is said once, in the summary."""
    assert " - WARNING - " not in log, [line for line in log.splitlines() if " - WARNING - " in line]
    notes = [line for line in log.splitlines() if "no LLM judge" in line]
    assert len(notes) == 1 and " - run: " in notes[0], notes
    assert notes[0].endswith(
        "no LLM judge (the config has no 'llm:' block): sample_locomo (locomo_llm_judge), sample_lme_s "
        "(lme_official_llm_judge), sample_lme_oracle (lme_official_llm_judge); rule-based judges only"
    )


def test_kill_resume_rerun_on_samples(tmp_path: Path) -> None:
    config, results = _config(tmp_path)
    env = _env(tmp_path, config)
    killed_at = _run_and_kill_during_answers(env, results / "parquet" / "answers")

    second = _run(env)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    _assert_quiet_and_true(second.stdout + second.stderr)
    _assert_dagster_agrees(tmp_path, config, results)
    catalog = results / "results.duckdb"
    con = open_catalog(catalog)
    n_questions = con.execute("SELECT count(*) FROM questions").fetchall()[0][0]
    assert killed_at < n_questions  # the kill really happened in the middle of the stage
    for stage in STAGES:
        dupes = con.execute(
            f"SELECT count(*) FROM (SELECT partition_key, unit FROM {stage} GROUP BY ALL HAVING count(*) > 1)"
        ).fetchall()[0][0]
        assert dupes == 0, stage
    progress = dict(con.execute("SELECT status, count(*) FROM progress GROUP BY 1").fetchall())
    assert progress == {"done": n_questions * 5}, progress  # canonical + 4 stages, all done
    answers = con.execute("SELECT count(*), count(DISTINCT partition_key) FROM answers").fetchall()[0]
    assert answers[1] == n_questions and answers[0] > n_questions
    con.close()
    assert (results / "report.html").stat().st_size > 10_000
    assert (results / "results.json").exists()

    emb_glob = str(results / "parquet" / "embeddings" / "*" / "*.parquet")
    count_vectors = f"SELECT count(*), count(DISTINCT text_hash) FROM read_parquet('{emb_glob}')"
    cached = duckdb.sql(count_vectors).fetchall()
    third = _run(env)
    assert third.returncode == 0, third.stderr[-3000:]
    log = third.stdout + third.stderr
    summaries = [
        line[line.index(" - ") :] for line in log.splitlines() if "questions," in line and "to compute" in line
    ]
    for stage in STAGES:
        expected = f"{stage}: {n_questions} questions, {n_questions} already done, 0 to compute"
        assert any(expected in line for line in summaries), (stage, summaries)
    assert duckdb.sql(count_vectors).fetchall() == cached  # nothing re-embedded (shards may be compacted)

    membench = str(Path(sys.executable).parent / "membench")
    shown = subprocess.run([membench, "--config", str(config), "results"], env=env, capture_output=True, text=True)
    assert shown.returncode == 0, shown.stderr
    assert str(results / "report.html") in shown.stdout and "SELECT" in shown.stdout
    failed = subprocess.run([membench, "--config", str(config), "failed"], env=env, capture_output=True, text=True)
    assert failed.stdout.strip() == "no failed questions"


def test_cli_refuses_to_run_without_dagster_home(tmp_path: Path) -> None:
    """Without DAGSTER_HOME the CLI would use a throw-away instance: the run stops at once, saying why."""
    config, results = _config(tmp_path)
    env = {k: v for k, v in _env(tmp_path, config).items() if k != "DAGSTER_HOME"}
    proc = subprocess.run(
        [_dagster(), "job", "execute", "-m", "pipeline.definitions", "-j", "full_benchmark"],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode != 0
    assert "DAGSTER_HOME is not set" in proc.stdout + proc.stderr
    assert not (results / "parquet" / "answers").exists()
