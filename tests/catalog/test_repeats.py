"""Reader repeats: N answer units per question with their own seeds and cache keys, and the
``repeat_report`` view (per-repeat accuracy, mean +- sample sd, majority vote) on a hand table."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import duckdb
import pytest

from pipeline.catalog.repeats import REPEAT_REPORT_SQL
from pipeline.config.model import BenchmarkConfig, ComponentConfig, DatasetConfig, LLMConfig
from pipeline.kinds.resolve import resolve_config
from pipeline.llm.client import OpenAIChatClient
from pipeline.llm.fake_server import FakeOpenAIServer
from pipeline.readers.base import ReaderDeps, ReadInput
from pipeline.readers.llm import LLMReader
from pipeline.readers.run import answer_units
from tests.support.judges import locomo

pytest_plugins = ["tests.support.llm"]  # fixtures: server (fake OpenAI server), llm (OpenAIChatClient on it)


def _cfg(tmp_path: Path, readers: tuple[ComponentConfig, ...]) -> BenchmarkConfig:
    return BenchmarkConfig(
        results_dir=str(tmp_path / "r"),
        datasets=(DatasetConfig(name="d", loader="locomo", path="x.json"),),
        memory_systems=(ComponentConfig(name="rag", kind="rag"),),
        readers=readers,
        llm=LLMConfig(base_url="http://127.0.0.1:1/v1", model="m"),
    )


def test_repeats_make_distinct_units(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path, (ComponentConfig(name="gpt", kind="llm", repeats=3), ComponentConfig(name="one", kind="llm")))
    units = answer_units(resolve_config(cfg), "d")
    assert [(u.spec.unit, u.repeat) for u in units] == [
        ("rag/gpt", 1), ("rag/gpt~2", 2), ("rag/gpt~3", 3), ("rag/one", 1)
    ]  # fmt: skip
    assert len({u.spec.unit_hash for u in units[:3]}) == 3  # each repeat recomputes on its own
    # repeat 1 keeps the unit and hash of a reader without repeats (its stored rows stay valid)
    plain = answer_units(resolve_config(_cfg(tmp_path, (ComponentConfig(name="gpt", kind="llm"),))), "d")
    assert plain[0].spec == units[0].spec


def test_repeats_apply_to_readers_and_judges_only(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'repeats' applies to readers and judges only"):
        BenchmarkConfig(
            results_dir=str(tmp_path),
            datasets=(DatasetConfig(name="d", loader="locomo", path="x.json"),),
            memory_systems=(ComponentConfig(name="rag", kind="rag", repeats=2),),
        )


def test_each_repeat_is_its_own_request_and_cache_key(llm: OpenAIChatClient, server: FakeOpenAIServer) -> None:
    from pipeline.memory.base import RetrievalResult

    server.add_rule("Caroline", "adoption agencies")
    reader = LLMReader({}, ReaderDeps(llm=llm))
    retrieval = RetrievalResult(units=(), context="Caroline researched agencies.", context_tokens=4)
    item = ReadInput(locomo("4", "x"), retrieval)
    for r in (1, 2, 3, 2):
        reader.answer(ReadInput(item.question, item.retrieval, repeat=r))
    assert server.request_count == 3  # the second ask of repeat 2 is a cache hit
    seeds = [body.get("seed") for body in server.requests]
    assert seeds == [None, 2, 3]  # repeat 1 is asked exactly as without repeats


def _row(system: str, reader: str, qid: str, correct: bool | None, outcome: str = "scored") -> tuple[Any, ...]:
    return ("d", f"d__{qid}", qid, "1", system, reader, "j", "m", outcome, correct, None if correct is None else 1.0)


def test_repeat_report_by_hand() -> None:
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE judgment_outcomes (dataset VARCHAR, partition_key VARCHAR, question_id VARCHAR, type_raw VARCHAR,"
        " system VARCHAR, reader VARCHAR, judge VARCHAR, metric VARCHAR, outcome VARCHAR, correct BOOLEAN,"
        " score DOUBLE)"
    )
    # 3 repeats x 4 questions: repeat 1 right on q1 q2 q3; repeat 2 on q1 q2; repeat 3 on q1, q4 failed
    votes = {"gpt": [1, 1, 1, 0], "gpt~2": [1, 1, 0, 0], "gpt~3": [1, 0, 0, None]}
    rows = []
    for reader, marks in votes.items():
        for i, mark in enumerate(marks, start=1):
            failed = mark is None
            outcome = "answer_failed" if failed else "scored"
            rows.append(_row("rag", reader, f"q{i}", None if failed else bool(mark), outcome))
    rows.append(_row("rag", "single", "q1", True))  # a reader without repeats: not in the view
    con.executemany("INSERT INTO judgment_outcomes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    con.execute(REPEAT_REPORT_SQL)
    [r] = con.sql("SELECT * FROM repeat_report").to_arrow_table().to_pylist()
    assert (r["reader"], r["n_repeats"], r["repeat_n_scored"], r["n_failed"]) == ("gpt", 3, [4, 4, 3], 1)
    assert r["repeat_accuracies"] == [0.75, 0.5, pytest.approx(1 / 3)]
    assert r["mean_accuracy"] == pytest.approx((0.75 + 0.5 + 1 / 3) / 3)
    assert r["sd_accuracy"] == pytest.approx(statistics.stdev([0.75, 0.5, 1 / 3]))
    # votes: q1 3/3 yes, q2 2/3 yes, q3 1/3, q4 0/2 (the failed repeat is no vote) -> 2 of 4
    assert (r["majority_accuracy"], r["n_questions_voted"]) == (0.5, 4)


def test_repeats_through_the_answers_stage(tmp_path: Path, server: FakeOpenAIServer, llm: OpenAIChatClient) -> None:
    from pipeline.core.status import STATUS_OK
    from pipeline.readers.run import AnswerRun, build_readers
    from pipeline.run.stage import WorkItem
    from pipeline.store.results import ResultStore
    from tests.support.answers import config, retrieval_payload, system_hashes, unit_row, write_canonical, write_stage
    from tests.support.judges import question

    server.add_rule("which city", "Paris")
    cfg = config(tmp_path, "locomo", readers=(ComponentConfig(name="gpt", kind="llm", repeats=2),),
                 llm_url=server.base_url)  # fmt: skip
    cfg = cfg.model_copy(update={"memory_systems": cfg.memory_systems[:1]})  # rag only
    store = ResultStore(results_dir=cfg.results_dir)
    write_canonical(store, [question(dataset="d", question_id="q0", text="In which city was she?", answer="Paris")])
    h = system_hashes(cfg)
    payload = retrieval_payload(["Caroline: I visited Paris in May."])
    write_stage(store, "retrievals", "d__q0", [unit_row("d__q0", "q0", "rag", h["rag"], **payload)])
    bench = resolve_config(cfg)
    run = AnswerRun(store, bench, build_readers(bench, ReaderDeps(llm=llm)))
    [(_key, results)] = list(run.compute([WorkItem("d__q0", "d", "q0", tuple(run.units_for("d")))]))
    assert [(r.unit, r.status, r.payload["prediction"]) for r in results] == [
        ("rag/gpt", STATUS_OK, "Paris"), ("rag/gpt~2", STATUS_OK, "Paris")
    ]  # fmt: skip
    assert [b.get("seed") for b in server.requests] == [None, 2]


def test_judge_repeats_units_seeds_and_view(tmp_path: Path, server: FakeOpenAIServer, llm: OpenAIChatClient) -> None:
    from pipeline.judges.base import JudgeContext, JudgeInput
    from pipeline.judges.llm import lme_official_llm_judge
    from pipeline.judges.run import judgment_units
    from tests.support.judges import lme

    judges = (ComponentConfig(name="f1", kind="locomo_f1", repeats=2),)
    cfg = _cfg(tmp_path, (ComponentConfig(name="gpt", kind="llm"),)).model_copy(update={"judges": judges})
    units = judgment_units(resolve_config(cfg), "d", None)
    assert [(u.spec.unit, u.repeat) for u in units] == [("rag/gpt/f1", 1), ("rag/gpt/f1~2", 2)]
    assert units[0].spec.unit_hash != units[1].spec.unit_hash
    # an LLM judge's repeat r >= 2 is asked with seed r (its own cache key); repeat 1 as without repeats
    server.add_rule("Model Response:", "yes")
    for r in (1, 2, 2):
        lme_official_llm_judge(JudgeInput(lme("multi-session", "3"), "3"), JudgeContext(llm=llm, repeat=r))
    assert [b.get("seed") for b in server.requests] == [None, 2]
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE judgment_outcomes (dataset VARCHAR, partition_key VARCHAR, question_id VARCHAR, type_raw VARCHAR,"
        " system VARCHAR, reader VARCHAR, judge VARCHAR, metric VARCHAR, outcome VARCHAR, correct BOOLEAN,"
        " score DOUBLE)"
    )
    verdicts = (("f1", True), ("f1~2", False))
    rows = [("d", "d__q1", "q1", "1", "rag", "gpt", j, "m", "scored", c, float(c)) for j, c in verdicts]
    con.executemany("INSERT INTO judgment_outcomes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    from pipeline.catalog.repeats import repeat_report_sql

    con.execute(repeat_report_sql("judge_repeat_report"))
    [r] = con.sql("SELECT * FROM judge_repeat_report").to_arrow_table().to_pylist()
    assert (r["reader"], r["judge"], r["repeat_accuracies"], r["majority_accuracy"]) == ("gpt", "f1", [1.0, 0.0], 0.0)


def test_report_section_shows_repeats() -> None:
    from pipeline.report.build import ReportData
    from pipeline.report.official_html import repeat_section

    row = {"dataset": "d", "system": "rag", "reader": "gpt", "judge": "j", "metric": "m", "n_repeats": 3,
           "repeat_accuracies": [0.75, 0.5, 1 / 3], "mean_accuracy": 0.5278, "sd_accuracy": 0.2097,
           "majority_accuracy": 0.5, "n_failed": 1}  # fmt: skip
    html = "\n".join(repeat_section(ReportData("now", "r", "c", "", {"repeat_report": [row]}, {}, {}), "d"))
    assert "0.750 / 0.500 / 0.333" in html and "0.528 ± 0.210" in html and "<td>0.500</td>" in html
