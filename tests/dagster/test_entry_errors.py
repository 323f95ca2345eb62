"""Config mistakes through the Dagster entry point, run as README's command (1) is typed (after
``source .venv/bin/activate``): one line naming file, entry and key, exit status 2, no traceback,
and no SupersessionWarning from ``dagster job execute``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.paths import PROJECT_ROOT

SAMPLE = "pipeline/sample_data/locomo_sample.json"


def _dagster_job_execute(config: Path) -> tuple[int, list[str]]:
    script = f"source .venv/bin/activate && MEMBENCH_CONFIG={config} dagster job execute -j full_benchmark"
    proc = subprocess.run(
        ["bash", "-c", script], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600
    )  # fmt: skip
    return proc.returncode, (proc.stdout + proc.stderr).splitlines()


CASES = {
    "missing": (None, ["config file not found: {path}"]),
    "unknown_kind": (
        f"datasets:\n  - {{name: s, loader: locomo, path: {SAMPLE}}}\nmemory_systems:\n  - {{name: h, kind: hybird}}\n",
        ["{path}: memory_systems[0] (name: h): kind: unknown memory system 'hybird'"],
    ),
    "misspelled_top_level_key": (
        f"datasets:\n  - {{name: s, loader: locomo, path: {SAMPLE}}}\n"
        "memory_sytems:\n  - {name: f, kind: full_context}\n",
        ["{path}: memory_sytems: unknown key (did you mean 'memory_systems'? keys here: "],
    ),
    "remote_endpoint_without_its_key": (  # the run would have failed every LLM call, sending none
        f"datasets:\n  - {{name: s, loader: locomo, path: {SAMPLE}}}\nreaders:\n  - {{name: gpt, kind: llm}}\n"
        "llm: {base_url: 'https://llm.example.invalid/v1', model: m, api_key_env: MEMBENCH_TEST_UNSET_KEY}\n",
        ["{path}: llm: api_key_env: $MEMBENCH_TEST_UNSET_KEY is not set", "(needed by readers[0] (name: gpt))"],
    ),
    "misspelled_nested_key": (
        f"datasets:\n  - {{name: s, loader: locomo, path: {SAMPLE}, limt: 3}}\n",
        ["{path}: datasets[0].limt: unknown key (did you mean 'limit'? "],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_one_line_naming_file_entry_and_key(case: str, tmp_path: Path) -> None:
    text, expected = CASES[case]
    path = tmp_path / "bad.yaml"
    if text is not None:
        path.write_text(text)
    code, lines = _dagster_job_execute(path)
    assert code == 2
    assert len(lines) == 1, "\n".join(lines)  # no warning, no traceback: the error is first and last line
    assert lines[0].startswith("membench: config error: ")
    for part in expected:
        assert part.format(path=path) in lines[0]
