"""Two ``full_benchmark`` runs on one config: the second is refused, nothing is computed twice (issue 24 item 5).

Both are real ``dagster job execute`` processes on one results folder and one
Dagster instance, with an LLM reader against the project's fake server. The fake server holds
every reply until the test releases it, so the first run is certainly mid-answers (it claimed the
config at its first step) while the second starts: no sleeps, no timing. The second run must stop
at its first step with one line naming the first run; after the release the first run completes,
and the fake server has seen each prompt exactly once.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import dagster as dg
import pytest

from assets.partition_status import status_mismatches
from assets.run_gate import RANGE_END_TAG, RANGE_START_TAG
from assets.run_heartbeat import HEARTBEAT_DIR
from pipeline.config.model import load_config
from pipeline.definitions import partition_keys
from pipeline.llm.fake_server import FakeOpenAIServer
from pipeline.store.results import ResultStore
from tests.support.dagster import dagster_cli_env, lme_sample_config
from tests.support.paths import PROJECT_ROOT

pytestmark = pytest.mark.slow


def _config(tmp_path: Path, base_url: str) -> Path:
    return lme_sample_config(
        tmp_path,
        "collide",
        memory_systems=[{"name": "full", "kind": "full_context"}],
        readers=[{"name": "llm", "kind": "llm"}],
        judges=[{"name": "lme_contains_normalized", "kind": "lme_contains_normalized"}],
        llm={"base_url": base_url, "model": "fake-model", "api_key_env": "MEMBENCH_TEST_KEY", "timeout_s": 900},
    )


def _runs(
    env: dict[str, str], monkeypatch: pytest.MonkeyPatch, status: dg.DagsterRunStatus | None = None
) -> list[dg.DagsterRun]:
    """The runs of the Dagster home of ``env`` (all, or those of ``status``)."""
    monkeypatch.setenv("DAGSTER_HOME", env["DAGSTER_HOME"])
    with dg.DagsterInstance.get() as instance:
        runs = instance.get_runs()
    return [r for r in runs if status is None or r.status == status]


def _execute(env: dict[str, str], *job: str) -> subprocess.Popen[str]:
    dagster = str(Path(sys.executable).parent / "dagster")
    return subprocess.Popen(
        [dagster, "job", "execute", *(job or ("-j", "full_benchmark"))],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


@pytest.mark.parametrize("home", ["same Dagster home", "another Dagster home"])
@pytest.mark.parametrize("second_job", ["whole config", "question range"])
def test_a_second_run_on_a_held_config_is_refused_and_nothing_is_asked_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, second_job: str, home: str
) -> None:
    """A second whole-config ``dagster job execute`` is refused as the definitions load: one line, exit
    status 2, no run created (so no partition shown Failed). A run over a question range (``--tags``)
    is refused at its first step, which checks the overlap: its console shows no stack frames, and it
    ends CANCELED, so the partitions the holder finished do not read Failed. A second Dagster home on
    the same results folder (issue 38 item 8) sees the holder through its claim in the folder."""
    server = FakeOpenAIServer(default_reply="A golden retriever.", default_delay_s=3600).start()
    release = threading.Event()
    server.stopping = release  # every reply waits on this event (the server's delay): set = answer now
    first = second = None
    try:
        config = _config(tmp_path, server.base_url)
        env = dagster_cli_env(tmp_path, config)
        (tmp_path / "second").mkdir()
        env2 = env if home == "same Dagster home" else dagster_cli_env(tmp_path / "second", config)
        first = _execute(env)
        while server.request_count == 0:  # the first run is answering: it holds the config
            assert first.poll() is None, first.communicate()[0][-3000:]
            release.wait(0.05)
        keys = partition_keys(load_config(str(config)))
        span = json.dumps({RANGE_START_TAG: keys[0], RANGE_END_TAG: keys[1]})
        job = ("-j", "full_benchmark") if second_job == "whole config" else ("-j", "question_stages", "--tags", span)
        second = _execute(env2, *job)
        out, _ = second.communicate(timeout=900)
        holder = _runs(env, monkeypatch, dg.DagsterRunStatus.STARTED)
        assert len(holder) == 1
        lines = [line for line in out.splitlines() if f"is held by run {holder[0].run_id}" in line]
        assert lines, out[-3000:]
        assert "config 'collide' is held by run" in lines[0]
        assert "Stack Trace" not in out and 'File "' not in out, out[-3000:]  # a refusal is no bug: no frames
        refused_runs = [r for r in _runs(env2, monkeypatch) if r.run_id != holder[0].run_id]
        if second_job == "whole config":
            assert second.returncode == 2
            ours = [line for line in out.splitlines() if line.startswith("membench")]
            assert ours == lines, out[-3000:]  # one line of ours
            assert refused_runs == []  # no run was created
        else:
            assert second.returncode != 0
            assert "Dependencies for step collide__retrievals failed" in out  # stopped at its first step
            assert [r.status for r in refused_runs] == [dg.DagsterRunStatus.CANCELED]  # not FAILURE
        release.set()
        first_out, _ = first.communicate(timeout=900)
        assert first.returncode == 0, first_out[-3000:]
        cfg = load_config(str(config))
        store = ResultStore(results_dir=str(cfg.resolved_results_dir()))
        assert list((store.root / HEARTBEAT_DIR).glob("*.json")) == []  # the ended runs hold nothing
        monkeypatch.setenv("DAGSTER_HOME", env["DAGSTER_HOME"])
        with dg.DagsterInstance.get() as instance:  # what the holder finished reads done, not Failed
            assert status_mismatches(instance, "collide", partition_keys(cfg), store) == []
    finally:
        release.set()
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
        server.stop()
    prompts = [json.dumps(r["messages"], sort_keys=True) for r in server.requests]
    assert len(prompts) == 8 and len(set(prompts)) == len(prompts)  # each question asked once, by one run
