"""Every ``llm:`` key takes effect: the reader sends llm.max_tokens / llm.temperature unless its own
params override them; what a protocol fixes instead, ``membench check-config`` names (key, value,
protocol, and the config value not used)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from pipeline.config.model import load_config
from pipeline.kinds.resolve import resolve_config
from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.fake_server import FakeOpenAIServer, running_fake_server
from pipeline.readers.base import ReaderDeps, ReadInput
from pipeline.readers.run import build_readers
from tests.support.judges import RETRIEVAL, lme, mc
from tests.support.paths import PROJECT_ROOT

MEMBENCH = PROJECT_ROOT / ".venv" / "bin" / "membench"


def _config(tmp_path: Path, base_url: str, reader_params: str = "{}") -> Path:
    path = tmp_path / "llm.yaml"
    path.write_text(f"""
results_dir: {tmp_path / "results"}
datasets:
  - {{name: mc, loader: locomo_mc10, path: pipeline/sample_data/locomo_mc10_sample.jsonl}}
  - {{name: lme, loader: longmemeval, path: pipeline/sample_data/longmemeval_oracle_sample.json}}
memory_systems:
  - {{name: full, kind: full_context}}
readers:
  - {{name: qwen, kind: llm, params: {reader_params}}}
llm:
  base_url: {base_url}
  model: local-model
  api_key_env: LOCAL_KEY
  temperature: 0.3
  max_tokens: 64
""")
    return path


@pytest.fixture()
def server() -> FakeOpenAIServer:
    with running_fake_server(default_reply="Paris.") as srv:
        yield srv


def _answer_free_form(cfg_path: Path) -> None:
    cfg = load_config(cfg_path)
    llm = OpenAIChatClient.from_benchmark(cfg).model_copy(update={"api_key": "unused"})
    try:
        reader = build_readers(resolve_config(cfg), ReaderDeps(llm=llm))["qwen"]
        reader.answer(ReadInput(lme("single-session-user", "Paris"), RETRIEVAL))
        reader.answer(ReadInput(mc(0), RETRIEVAL))
    finally:
        llm.close()


def test_llm_block_max_tokens_and_temperature_are_sent(server: FakeOpenAIServer, tmp_path: Path) -> None:
    _answer_free_form(_config(tmp_path, server.base_url))
    free, choice = server.requests
    assert (free["max_tokens"], free["temperature"]) == (64, 0.3)
    assert (choice["max_tokens"], choice["temperature"]) == (10, 0.3)  # MC: one index (check-config says so)


def test_reader_params_override_the_llm_block(server: FakeOpenAIServer, tmp_path: Path) -> None:
    _answer_free_form(_config(tmp_path, server.base_url, "{max_tokens: 32, temperature: 0.0}"))
    assert (server.requests[0]["max_tokens"], server.requests[0]["temperature"]) == (32, 0.0)


def _check_config(path: Path) -> list[str]:
    proc = subprocess.run([str(MEMBENCH), "check-config", str(path)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_check_config_names_what_a_protocol_fixes(tmp_path: Path) -> None:
    lines = _check_config(_config(tmp_path, "http://127.0.0.1:9/v1"))
    assert lines[0].endswith("llm: local-model")
    assert lines[1] == "fixed by protocol (not taken from the config):"
    assert lines[2:] == [
        "  readers[0] (name: qwen): multiple-choice answers (mc) send max_tokens=10 "
        "(membench's multiple-choice protocol: one option index); llm.max_tokens: 64 is not used for them",
        "  default judge lme_official_llm_judge: judge calls send max_tokens=10 (LongMemEval's evaluate_qa.py); "
        "llm.max_tokens: 64 is not used for them",
        "  default judge lme_official_llm_judge: judge calls send temperature=0.0 (LongMemEval's evaluate_qa.py); "
        "llm.temperature: 0.3 is not used for them",
        "judge models (each asks the configured one):",
        "  default judge lme_official_llm_judge: judge calls ask local-model (llm.model); the published protocol "
        "judged with gpt-4o-2024-08-06",
    ]


def test_check_config_without_llm_has_nothing_fixed() -> None:
    assert len(_check_config(PROJECT_ROOT / "configs" / "sample.yaml")) == 1
