"""LoCoMo-Plus vs its own code, item by item on the real data: stitching, model input, judge and summary.

tests/data/official/locomo_plus_scores.json holds what xjtuleeyf/Locomo-Plus produced outside this
repository (header: commit and how): per item, sha256 of ``unified_input.py``'s stitched
``input_prompt``, of its ``evidence`` and of ``utils._build_model_input``; per judged prediction
(tests/support/parity_inputs_beam.py ``plus_cases``, judge replies ``plus_reply``) the label, the
score and sha256 of the judge prompt; and ``_compute_summary`` per prediction. Here the loader's
canonical rows must render the same stitched dialogue, the ``locomo_plus_official`` preset the same
model input, and the judge the same prompt, label and score.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest

from pipeline.core.records import ParsedRecord
from pipeline.datasets import LOADERS
from pipeline.judges.base import JudgeContext, JudgeInput
from pipeline.judges.locomo_plus import locomo_plus_judge
from pipeline.readers.presets_beam import locomo_plus_prompt
from tests.support.official_figures import load_figures
from tests.support.parity_inputs import inputs_digest
from tests.support.parity_inputs_beam import plus_case_payload, plus_cases, plus_reply
from tests.support.replay_llm import ReplayClient

pytestmark = pytest.mark.shared_data

FIGURES = "locomo_plus_scores.json"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@lru_cache(maxsize=1)
def _official() -> dict[str, Any]:
    return load_figures(FIGURES)


def _records(shared_datasets: Path) -> list[ParsedRecord]:
    path = shared_datasets / "locomo_plus" / "locomo_plus.json"
    return [r for r in LOADERS.get("locomo_plus")(path, "locomo_plus") if r.question is not None]


def _dialogue(record: ParsedRecord) -> str:
    """The haystack as the official input renders it: one ``<speaker> said, "<text>"`` line per turn."""
    sessions = {s.session.session_key: s for s in record.sessions}
    return "\n".join(
        f'{t.speaker} said, "{t.text.strip()}"' for h in record.haystack for t in sessions[h.session_key].turns
    )


def test_the_figures_were_computed_on_these_inputs(shared_datasets: Path) -> None:
    header = _official()["header"]
    plus, locomo = shared_datasets / "locomo_plus" / "locomo_plus.json", shared_datasets / "locomo10.json"
    assert hashlib.sha256(plus.read_bytes() + locomo.read_bytes()).hexdigest() == header["dataset"]["sha256"]
    items = json.loads(plus.read_text(encoding="utf-8"))
    assert inputs_digest(plus_case_payload(c) for c in plus_cases(items)) == header["inputs_sha256"]


def test_stitching_evidence_and_model_input_are_the_official_ones(shared_datasets: Path) -> None:
    records = _records(shared_datasets)
    official = _official()["items"]
    assert [r.question.record_index for r in records if r.question] == [i["index"] for i in official]
    for record, theirs in zip(records, official, strict=True):
        q = record.question
        assert q is not None
        dialogue = _dialogue(record)
        assert sha(f"{dialogue}\n{q.question}") == theirs["input_prompt_sha256"], q.question_id
        assert sha(q.answer or "") == theirs["evidence_sha256"], q.question_id
        # the preset with the whole stitched conversation as its context gives the official model input
        assert sha(locomo_plus_prompt(dialogue, q.question)) == theirs["model_input_sha256"], q.question_id


def test_the_judge_reads_and_scores_as_the_official_judge(shared_datasets: Path) -> None:
    def reply(messages: Sequence[Mapping[str, Any]]) -> str:
        return plus_reply(messages[-1]["content"])

    client = ReplayClient(reply)
    ctx = JudgeContext(client)
    items = json.loads((shared_datasets / "locomo_plus" / "locomo_plus.json").read_text(encoding="utf-8"))
    records = _records(shared_datasets)
    sums: dict[int, float] = {}
    for record, case, theirs in zip(records, plus_cases(items), _official()["items"], strict=True):
        assert record.question is not None
        for k, (output, expected) in enumerate(zip(case.outputs, theirs["results"], strict=True)):
            verdict = locomo_plus_judge(JudgeInput(record.question, output), ctx)
            sent = client.requests[-1][0]["content"]
            assert sha(sent) == expected["prompt_sha256"], (record.question.question_id, k)
            assert (verdict.details["label"], verdict.score) == (expected["label"], expected["score"])
            sums[k] = sums.get(k, 0.0) + (verdict.score or 0.0)
    for k, summary in _official()["summaries"].items():
        assert round(sums[int(k)], 2) == summary["total_score"]
        assert (
            round(sums[int(k)] / len(records), 4)
            == summary["overall_avg"]
            == summary["by_category"]["Cognitive"]["avg"]
        )
