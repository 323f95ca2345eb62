"""``membench estimate``: pending LLM calls, tokens and cost per dataset and component, counted from the
questions (BEAM's rubric items, the alignment bound), shared calls counted once, measured rows used
when the results folder has them, and the CLI around it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.cli.main import main
from pipeline.config.model import load_config
from pipeline.core.families import BEAM_EVENT_ORDERING
from pipeline.datasets.convert import convert_dataset
from pipeline.kinds.resolve import resolve_config
from pipeline.llm.prices import ModelPrice
from pipeline.report.estimate import Estimate, dataset_text, estimate_run
from pipeline.store.results import ResultStore
from tests.support.answers import unit_row, write_stage
from tests.support.paths import SAMPLE_DATA

PRICES = {"judge-model": ModelPrice(1.0, 4.0), "reader-model": ModelPrice(2.0, 8.0)}


def _config(tmp_path: Path) -> Path:
    cfg = {
        "results_dir": str(tmp_path / "res"),
        "datasets": [{"name": "beam", "loader": "beam", "path": str(SAMPLE_DATA / "beam" / "100K")},
                     {"name": "plus", "loader": "locomo_plus", "path": str(SAMPLE_DATA / "locomo_plus")}],
        "memory_systems": [{"name": "rag", "kind": "rag"}],
        "readers": [{"name": "gpt", "kind": "llm", "params": {"max_tokens": 200}}],
        "llm": {"base_url": "http://127.0.0.1:9/v1", "model": "reader-model", "max_tokens": 300},
        "judge_llm": {"base_url": "http://127.0.0.1:9/v1", "model": "judge-model", "max_tokens": 100},
    }  # fmt: skip
    path = tmp_path / "est.yaml"
    path.write_text(yaml.safe_dump(cfg))
    load_config.cache_clear()
    return path


def _estimates(tmp_path: Path) -> tuple[dict[str, Estimate], ResultStore, Any]:
    cfg = load_config(str(_config(tmp_path)))
    store = ResultStore(results_dir=str(tmp_path / "res"))
    for ds in cfg.datasets:
        convert_dataset(ds, store, lambda _m: None)
    res = resolve_config(cfg)
    return {f"{e.dataset}:{e.component}": e for e in estimate_run(res, store, PRICES)}, store, res


def test_calls_are_counted_from_the_questions(tmp_path: Path) -> None:
    lines, store, _ = _estimates(tmp_path)
    text = dataset_text(store, "beam")
    assert text is not None
    rubric = {k: len(q["rubric"]) for k, q in text.questions.items()}
    eo = [k for k, q in text.questions.items() if q["type_raw"] == BEAM_EVENT_ORDERING]
    official = lines["beam:rag/gpt/beam_official"]
    # nine abilities: one call per rubric item; event ordering: the alignment, at most n(n+1)/2 calls
    assert official.calls == sum(n for k, n in rubric.items() if k not in eo) + sum(
        rubric[k] * (rubric[k] + 1) / 2 for k in eo
    )
    mean = lines["beam:rag/gpt/beam_rubric_mean"]
    assert mean.calls == sum(rubric[k] for k in eo)  # the others are beam_official's calls, cached
    assert "13 question(s) share their calls" in mean.basis
    assert lines["beam:rag/gpt/beam_event_ordering"].calls == 0
    assert lines["plus:rag/gpt/locomo_plus_judge"].calls == 4
    answers = lines["beam:rag/gpt"]
    assert (answers.pending, answers.calls, answers.model) == (15, 15, "reader-model")
    assert answers.completion_tokens == 15 * 200  # at most max_tokens each, before any answer
    assert answers.prompt_tokens is None and "no retrieval stored yet" in answers.basis
    # judge prompts: the rubric prompt + an answer of at most max_tokens; replies at most 100 tokens
    assert official.completion_tokens == official.calls * 100 and official.cost_usd is not None


def test_stored_rows_are_not_pending_and_measure_the_rest(tmp_path: Path) -> None:
    _, store, res = _estimates(tmp_path)
    text = dataset_text(store, "beam")
    assert text is not None
    keys = sorted(text.questions)
    for key in keys[:5]:
        write_stage(store, "retrievals", key, [{**unit_row(key, key, "rag", "h"), "dataset": "beam",
                                                "context_tokens": 1000}])  # fmt: skip
    for key in keys[:3]:
        row = unit_row(key, key, "rag/gpt", "h", system="rag", reader="gpt", label="llm", prompt_tokens=1500,
                       completion_tokens=40)  # fmt: skip
        write_stage(store, "answers", key, [{**row, "dataset": "beam"}])
    judged = next(k for k in keys[:3] if text.questions[k]["type_raw"] != BEAM_EVENT_ORDERING)
    row = unit_row(judged, judged, "rag/gpt/beam_official", "h", system="rag", reader="gpt", judge="beam_official",
                   metric="beam_official", score=1.0, details='{"n_calls": 2}', judge_prompt_tokens=2000,
                   judge_completion_tokens=60)  # fmt: skip
    write_stage(store, "judgments", judged, [{**row, "dataset": "beam"}])
    lines = {f"{e.dataset}:{e.component}": e for e in estimate_run(res, store, PRICES)}
    answers = lines["beam:rag/gpt"]
    assert (answers.pending, answers.prompt_tokens, answers.completion_tokens) == (12, 12 * 1500, 12 * 40)
    assert answers.basis == "mean of this unit's stored answers"
    official = lines["beam:rag/gpt/beam_official"]
    assert official.pending == 14 and official.prompt_tokens == pytest.approx(official.calls * 1000)
    assert official.completion_tokens == pytest.approx(official.calls * 30)  # 60 tokens over its 2 calls


def test_the_cli_prints_the_table_and_totals(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path)
    assert main(["estimate", str(config)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:5] == ["dataset", "stage", "component", "model", "pending"]
    assert any(line.startswith("beam") and "beam_official" in line for line in out)
    assert out[-1].startswith("all") and " total " in out[-1]
    assert not (tmp_path / "res" / "parquet" / "canonical").exists()  # converted in a temporary folder only
