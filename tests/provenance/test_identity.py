"""Stored rows and the settings that made them: unit hashes, the manifest's record, ``membench verify``.

- Rows made with default settings keep the unit hashes membench gave them before the endpoint's
  settings entered the hashes (figures computed by that earlier code, stored below): an existing
  results folder recomputes nothing for them and asks the LLM nothing.
- The issue's run, as a user makes it: an LLM reader at temperature 0.0; the config changed to 0.9
  and max_tokens 64. ``membench verify`` fails naming both fields; the next run asks the endpoint
  again (it once kept the old answers at 0 requests); then verify passes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import pytest
import yaml

from pipeline.cli.main import main
from pipeline.config.model import load_config
from pipeline.definitions import build_defs
from pipeline.judges.run import judgment_units
from pipeline.kinds.resolve import load_benchmark
from pipeline.llm.client import ROLE_JUDGES, client_for
from pipeline.llm.fake_server import FakeOpenAIServer, running_fake_server
from pipeline.memory.systems import system_specs
from pipeline.readers.run import answer_units
from tests.support.dagster import LME_ORACLE_SAMPLE
from tests.support.paths import SAMPLE_DATA

# unit hashes of the config below, computed by membench before the endpoint settings (and the model
# tag, the price) entered unit hashes; the same config must give the same hashes now
BEFORE_SETTINGS = {
    "lme/notes": "342de9e9f9352126",
    "lme/notes/gpt": "606aeba5599ab4e0",
    "lme/notes/gpt/official": "971750f478e11930",
    "lme/notes/offline": "439c4c82e9cc56d1",
    "lme/notes/offline/official": "7007dfcd310a84b8",
    "lme/rag": "4d504db5bfb968b7",
    "lme/rag/gpt": "32c01d39da467af7",
    "lme/rag/gpt/official": "3c1d42909f0844e6",
    "lme/rag/offline": "fe843970b95cc47c",
    "lme/rag/offline/official": "a26959375472002e",
    "loco/notes/gpt/f1": "63bddac1079a17dc",
}
ENDPOINT = {"base_url": "http://127.0.0.1:9/v1", "model": "fake-model", "temperature": 0.0, "max_tokens": 512}


def _hash_config(tmp_path: Path, **llm: Any) -> str:
    raw = {
        "results_dir": str(tmp_path / "res"),
        "embeddings": {"backend": "fp32"},
        "datasets": [  # limits and paths are no part of a unit hash
            {"name": "lme", "loader": "longmemeval", "path": str(SAMPLE_DATA / "longmemeval_oracle_sample.json")},
            {"name": "loco", "loader": "locomo", "path": str(SAMPLE_DATA / "locomo_sample.json"), "limit": 2},
        ],
        "memory_systems": [{"name": "rag", "kind": "rag"}, {"name": "notes", "kind": "notes"}],
        "readers": [{"name": "gpt", "kind": "llm"}, {"name": "offline", "kind": "offline"}],
        "judges": [{"name": "official", "kind": "lme_official_llm_judge"}, {"name": "f1", "kind": "locomo_f1"}],
        "llm": {**ENDPOINT, **llm},
        "judge_llm": {"base_url": "http://127.0.0.1:9/v1", "model": "fake-judge"},
    }
    path = tmp_path / f"hashes-{len(list(tmp_path.iterdir()))}.yaml"
    path.write_text(yaml.safe_dump(raw))
    return str(path)


def _hashes(config: str) -> dict[str, str]:
    bench = load_benchmark(config)
    judges = client_for(bench.config, ROLE_JUDGES)
    out = {}
    for ds in ("lme", "loco"):
        out |= {f"{ds}/{s.name}": s.unit_hash for s in system_specs(bench, ds)}
        out |= {f"{ds}/{u.spec.unit}": u.spec.unit_hash for u in answer_units(bench, ds)}
        out |= {f"{ds}/{u.spec.unit}": u.spec.unit_hash for u in judgment_units(bench, ds, judges)}
    return out


def test_default_settings_keep_the_unit_hashes_of_rows_made_before(tmp_path: Path) -> None:
    now = _hashes(_hash_config(tmp_path))
    assert {k: now[k] for k in BEFORE_SETTINGS} == BEFORE_SETTINGS


NOTES = {"lme/notes", "lme/notes/gpt", "lme/notes/gpt/official", "lme/notes/offline", "lme/notes/offline/official"}
READ_BY_GPT = {"lme/notes/gpt", "lme/notes/gpt/official", "lme/rag/gpt", "lme/rag/gpt/official"}


@pytest.mark.parametrize(
    ("llm", "changed"),
    [
        ({"temperature": 0.9}, NOTES | READ_BY_GPT),  # the notes' calls take it too, and all that reads them
        ({"max_tokens": 64}, READ_BY_GPT),  # the notes set their own reply cap
        ({"model_tag": "q4"}, NOTES | READ_BY_GPT),
        ({"timeout_s": 5.0, "max_concurrency": 1, "base_url": "http://127.0.0.1:8/v1"}, set()),
    ],
)
def test_a_changed_setting_changes_the_hashes_of_the_units_whose_calls_take_it(
    tmp_path: Path, llm: dict[str, Any], changed: set[str]
) -> None:
    before, after = _hashes(_hash_config(tmp_path)), _hashes(_hash_config(tmp_path, **llm))
    assert {k for k in before if k.startswith("lme/") and before[k] != after[k]} == changed


# ---- the issue's run ------------------------------------------------------------------------------
def _issue_config(tmp_path: Path, base_url: str, **llm: Any) -> Path:
    raw = {
        "results_dir": str(tmp_path / "res"),
        "datasets": [{"name": "lme", "loader": "longmemeval", "path": str(LME_ORACLE_SAMPLE), "limit": 3}],
        "memory_systems": [{"name": "full", "kind": "full_context"}],
        "readers": [{"name": "gpt", "kind": "llm"}],
        "llm": {"base_url": base_url, "model": "fake-model", "temperature": 0.0, "max_retries": 0, **llm},
    }
    path = tmp_path / "issue.yaml"
    path.write_text(yaml.safe_dump(raw))
    load_config.cache_clear()  # a new process reads the edited file; this one must forget it
    load_benchmark.cache_clear()
    return path


def _full_run(config: Path) -> None:
    job = build_defs(str(config)).resolve_job_def("full_benchmark")
    with dg.instance_for_test() as instance:
        assert job.execute_in_process(instance=instance, raise_on_error=False).success


def _verify(config: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    capsys.readouterr()
    rc = main(["verify", str(config)])
    return rc, capsys.readouterr().out


@pytest.fixture
def server() -> Any:
    with running_fake_server() as srv:
        yield srv


def test_changed_sampling_settings_are_named_by_verify_and_recomputed(
    server: FakeOpenAIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _issue_config(tmp_path, server.base_url)
    _full_run(config)
    first = server.request_count
    assert first > 0 and _verify(config, capsys)[0] == 0

    _issue_config(tmp_path, server.base_url, temperature=0.9, max_tokens=64)
    rc, out = _verify(config, capsys)
    assert rc == 1
    stale = [line for line in out.splitlines() if line.startswith("MISMATCH") and "answers lme/full/gpt" in line]
    assert stale and "made with llm.temperature=0.0, the config says 0.9" in stale[0]
    assert "made with llm.max_tokens=512, the config says 64" in stale[0]

    _full_run(config)
    asked = [r for r in server.requests[first:] if r.get("temperature") == 0.9]
    assert len(asked) == 3 and all(r["max_tokens"] == 64 for r in asked)  # one answer per question, asked again
    rc, out = _verify(config, capsys)
    assert rc == 0, out
