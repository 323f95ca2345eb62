"""BEAM's judges vs BEAM's own scoring, question by question, on the real 100K tier and fixed judge replies.

tests/data/official/beam_scores.json holds what mohammadtavakoli78/BEAM's ``compute_metrics.py``
(``evaluate_<ability>``) and ``report_results.py`` produced, outside this repository, on the inputs
of tests/support/parity_inputs_beam.py: 400 questions, 1,280 answers, every judge request answered
by ``beam_reply`` (its header names the commit and how). Here the same answers go through
membench's judges with the same replies; every figure must be equal to the last bit, a reply the
official code could not score (json_repair, or ``int("0.5")``) must be an unparseable verdict here,
and the per-ability table of the ``beam_official_abilities`` view must equal report_results.py's.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest

from pipeline.catalog.official_beam import beam_official_abilities_sql
from pipeline.judges.base import JudgeContext, JudgeInput, UnparseableVerdict, Verdict
from pipeline.judges.beam import beam_event_ordering, beam_official, beam_rubric_mean
from pipeline.metrics.aggregates import METRIC_BEAM_OFFICIAL
from tests.support.judges import question
from tests.support.official_figures import load_figures
from tests.support.parity_inputs import inputs_digest
from tests.support.parity_inputs_beam import BeamCase, beam_case_payload, beam_cases, beam_reply
from tests.support.replay_llm import ReplayClient

pytestmark = pytest.mark.shared_data

FIGURES = "beam_scores.json"


@lru_cache(maxsize=1)
def _official() -> dict[str, Any]:
    return load_figures(FIGURES)


def _tier(shared_datasets: Path) -> Path:
    return shared_datasets / "beam" / "chats" / "100K"


def _cases(shared_datasets: Path) -> list[BeamCase]:
    return list(beam_cases(_tier(shared_datasets)))


def test_the_figures_were_computed_on_these_inputs(shared_datasets: Path) -> None:
    header = _official()["header"]
    tier = _tier(shared_datasets)
    chats = sorted((d.name for d in tier.iterdir() if d.name.isdigit()), key=int)
    files = b"".join((tier / c / "probing_questions" / "probing_questions.json").read_bytes() for c in chats)
    assert hashlib.sha256(files).hexdigest() == header["dataset"]["sha256"]
    cases = _cases(shared_datasets)
    assert inputs_digest(beam_case_payload(c) for c in cases) == header["inputs_sha256"]
    assert [c.key for c in cases] == [q["key"] for q in _official()["questions"]]


def _outcome(fn: Any, inp: JudgeInput, ctx: JudgeContext) -> Verdict | str:
    try:
        return fn(inp, ctx)
    except UnparseableVerdict:
        return "unparseable"


def _scored(shared_datasets: Path) -> Iterator[tuple[BeamCase, int, Any, dict[str, Verdict | str]]]:
    ctx = JudgeContext(ReplayClient(beam_reply))
    official = {q["key"]: q["results"] for q in _official()["questions"]}
    for case in _cases(shared_datasets):
        q = dataclasses.replace(question(dataset="beam", question_id=case.key, type_raw=case.ability,
                                         text=case.question), rubric=case.rubric)  # fmt: skip
        for i, output in enumerate(case.outputs):
            inp = JudgeInput(q, output)
            judges = (("official", beam_official), ("mean", beam_rubric_mean), ("ordering", beam_event_ordering))
            ours = {name: _outcome(fn, inp, ctx) for name, fn in judges}
            yield case, i, official[case.key][i], ours


def test_every_answer_scores_as_the_official_code_scores_it(shared_datasets: Path) -> None:
    checked = refused = 0
    mismatches = []
    for case, i, theirs, ours in _scored(shared_datasets):
        where = f"{case.key} output {i}"
        if isinstance(theirs, str):  # the official code raised ('repair': its reply went to json_repair)
            assert theirs in ("repair", "error:ValueError"), where
            # a reply membench cannot read: the rubric judges refuse it (event ordering's alignment still scores)
            rubric_judge = "mean" if case.ability == "event_ordering" else "official"
            if ours[rubric_judge] != "unparseable":
                mismatches.append(f"{where}: official {theirs}, membench {ours[rubric_judge]}")
            refused += 1
            continue
        if case.ability == "event_ordering":
            ordering, official, mean = ours["ordering"], ours["official"], ours["mean"]
            assert isinstance(ordering, Verdict) and isinstance(official, Verdict) and isinstance(mean, Verdict)
            got = {**{k: ordering.details[k] for k in ("precision", "recall", "f1", "tau_norm")},
                   "final_score": ordering.score, "llm_judge_score": mean.score}  # fmt: skip
            expected = {k: theirs[k] for k in got}
            if got != expected or official.score != theirs["tau_norm"]:
                mismatches.append(f"{where}: official {expected}, membench {got} / {official.score}")
        else:
            official = ours["official"]
            if not isinstance(official, Verdict) or official.score != theirs["llm_judge_score"]:
                mismatches.append(f"{where}: official {theirs['llm_judge_score']}, membench {official}")
        checked += 1
    assert not mismatches, "\n".join(mismatches[:20])
    counts = _official()["header"]["counts"]
    assert (checked, refused) == (counts["outputs"] - counts["failed_outputs"], counts["failed_outputs"])


def test_the_per_ability_table_is_report_results(shared_datasets: Path) -> None:
    """The first answer of every question the official code scored becomes a judgment row; the view's ability scores
    (mean over chats of the chat means) equal report_llms_accuracies' row."""
    outcomes, questions, seen = [], [], set()
    for case, _i, _theirs, ours in _scored(shared_datasets):
        verdict = ours["official"]
        # the official evaluation of an event-ordering answer fails with its rubric calls (membench's mean)
        rubric_failed = case.ability == "event_ordering" and ours["mean"] == "unparseable"
        failed = not isinstance(verdict, Verdict) or rubric_failed
        if case.key in seen or failed:
            continue
        seen.add(case.key)
        key = f"beam__{case.key}"
        questions.append({"partition_key": key, "haystack_id": "-".join(case.key.split("-")[:2])})
        outcomes.append({"dataset": "beam", "partition_key": key, "question_id": case.key, "type_raw": case.ability,
                         "system": "s", "reader": "r", "judge": "j", "metric": METRIC_BEAM_OFFICIAL,
                         "outcome": "scored", "correct": verdict.correct, "score": verdict.score})  # fmt: skip
    con = duckdb.connect()
    for name, rows in (("questions", questions), ("judgment_outcomes", outcomes)):
        con.register(f"{name}_arrow", pa.Table.from_pylist(rows))
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM {name}_arrow")
    con.execute(beam_official_abilities_sql([METRIC_BEAM_OFFICIAL]))
    rows = con.execute("SELECT aggregate, ability, score, tier, n_chats FROM beam_official_abilities").fetchall()
    ours = {ability: score for aggregate, ability, score, _tier, _n in rows if aggregate == "ability"}
    assert ours == pytest.approx(_official()["report"], rel=1e-12, abs=0)
    assert {tier for *_, tier, _n in rows} == {"100K"} and {n for *_, n in rows} == {20}
    average = next(score for aggregate, _a, score, _t, _n in rows if aggregate == "ability_average")
    assert average == pytest.approx(sum(_official()["report"].values()) / 10)


def test_figures_file_is_the_documented_format() -> None:
    doc = json.loads((Path(__file__).parents[1] / "data" / "official" / FIGURES).read_text(encoding="utf-8"))
    assert doc["header"]["official_commit"] == "b2a3ee8ba12d68f83143dda191097dc3e028ddd3"
    assert set(doc["report"]) == {
        "abstention", "contradiction_resolution", "event_ordering", "information_extraction", "instruction_following",
        "knowledge_update", "multi_session_reasoning", "preference_following", "summarization", "temporal_reasoning",
    }  # fmt: skip
