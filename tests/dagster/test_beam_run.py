"""BEAM and LoCoMo-Plus samples through the whole job, as a user runs it (`dagster job execute`).

Two runs of the real CLI: one with the offline reader and no LLM (no judge applies: the report still
shows retrieval and answers instead of failing), then the same results folder with an LLM endpoint
(the fake OpenAI server of this process): the presets ``beam_official`` / ``locomo_plus_official``
answer, BEAM's three judges and LoCoMo-Plus's judge score, and ``beam_official_abilities`` holds the
per-ability table the report shows.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from pipeline.judges.beam import BEAM_EQUIVALENCE_USER
from pipeline.llm.fake_server import FakeOpenAIServer, running_fake_server
from pipeline.store.results import open_catalog
from tests.support.dagster import dagster_cli_env
from tests.support.paths import PROJECT_ROOT, SAMPLE_DATA

pytestmark = pytest.mark.slow

DATASETS = [
    {"name": "beam", "loader": "beam", "path": str(SAMPLE_DATA / "beam" / "100K")},
    {"name": "beam10m", "loader": "beam", "path": str(SAMPLE_DATA / "beam" / "10M")},
    {"name": "plus", "loader": "locomo_plus", "path": str(SAMPLE_DATA / "locomo_plus")},
]


def _config(tmp_path: Path, **sections: object) -> Path:
    cfg = {"name": "beamrun", "results_dir": str(tmp_path / "res"), "datasets": DATASETS,
           "memory_systems": [{"name": "rag", "kind": "rag", "params": {"top_k": 5}}], **sections}  # fmt: skip
    path = tmp_path / "beamrun.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _run(tmp_path: Path, config: Path) -> subprocess.CompletedProcess[str]:
    env = {**dagster_cli_env(tmp_path, config), "MEMBENCH_TEST_KEY": "sk-test"}
    dagster = str(Path(sys.executable).parent / "dagster")
    return subprocess.run([dagster, "job", "execute", "-j", "full_benchmark"], cwd=PROJECT_ROOT, env=env,
                          capture_output=True, text=True, timeout=900)  # fmt: skip


def _judge_rules(server: FakeOpenAIServer) -> None:
    server.add_rule("RUBRIC CRITERION (what to check): LLM response should state", '{"score": 0.5, "reason": "r"}')
    server.add_rule("RUBRIC CRITERION (what to check):", '```json\n{"score": 1.0, "reason": "r"}\n```')
    server.add_rule(BEAM_EQUIVALENCE_USER.format(first="Sowing calendar", second="Sowing calendar"), "YES")
    server.add_rule("Memory Awareness Judge", '{"label": "partial", "reason": "r"}')
    server.add_rule("memory-aware dialogue", "That reminds me of what you said before.")
    server.add_rule("STRICT INSTRUCTIONS:", "Sowing calendar")


def test_offline_then_llm_run_of_the_samples(tmp_path: Path) -> None:
    offline = _run(tmp_path, _config(tmp_path, readers=[{"name": "offline", "kind": "offline"}]))
    assert offline.returncode == 0, offline.stdout[-3000:] + offline.stderr[-3000:]
    report = tmp_path / "res" / "report.html"
    assert report.exists() and "judgments" not in json.loads((tmp_path / "res" / "results.json").read_text())
    # BEAM's evidence recall from source_chat_ids, by message (turn) and by batch (session), beside the
    # other datasets' retrieval report; the questions without source_chat_ids are not scored
    con = open_catalog(tmp_path / "res" / "results.duckdb")
    recall = con.execute(
        "SELECT dataset, level, n_questions, n_scored, n_excluded_no_gold, n_failed, evidence_recall_at_10 "
        "FROM retrieval_report WHERE dataset LIKE 'beam%' AND type_raw = '(all)' AND level IN ('turn', 'session') "
        "ORDER BY 1, 2"
    ).fetchall()
    con.close()
    assert [row[:6] for row in recall] == [
        ("beam", "session", 15, 12, 3, 0), ("beam", "turn", 15, 12, 3, 0),
        ("beam10m", "session", 10, 9, 1, 0), ("beam10m", "turn", 10, 9, 1, 0),
    ]  # fmt: skip
    assert all(0.0 < row[6] <= 1.0 for row in recall)
    with running_fake_server(default_reply="NO") as server:
        _judge_rules(server)
        llm = {"base_url": server.base_url, "model": "fake-model", "api_key_env": "MEMBENCH_TEST_KEY",
               "max_retries": 0}  # fmt: skip
        readers = [
            {"name": "beam_llm", "kind": "llm", "params": {"preset": "beam_official"}, "datasets": ["beam", "beam10m"]},
            {"name": "plus_llm", "kind": "llm", "params": {"preset": "locomo_plus_official"}, "datasets": ["plus"]},
        ]
        llm_run = _run(tmp_path, _config(tmp_path, readers=readers, llm=llm))
    assert llm_run.returncode == 0, llm_run.stdout[-3000:] + llm_run.stderr[-3000:]
    con = open_catalog(tmp_path / "res" / "results.duckdb")
    judged = dict(con.execute("SELECT metric, count(*) FROM judgment_outcomes WHERE outcome = 'scored' "
                              "GROUP BY 1").fetchall())  # fmt: skip
    # 25 BEAM questions (rubric judges on every one), 5 event-ordering ones for the alignment judge, 4 LoCoMo-Plus
    assert judged == {"beam_official": 25, "beam_rubric_mean": 25, "beam_event_ordering": 3, "locomo_plus_judge": 4}
    plus = con.execute("SELECT DISTINCT score FROM judgment_outcomes WHERE metric = 'locomo_plus_judge'").fetchall()
    assert plus == [(0.5,)]
    table = con.execute(
        "SELECT ability, score, n_chats FROM beam_official_abilities WHERE dataset = 'beam' "
        "AND metric = 'beam_official' AND aggregate = 'ability' ORDER BY row_order"
    ).fetchall()
    scores = {ability: score for ability, score, _ in table}
    assert scores["information_extraction"] == 0.0  # "should state" items: 0.5 each, int() -> 0
    assert scores["abstention"] == 1.0 and scores["summarization"] == 1.0  # other items: 1.0
    assert scores["multi_session_reasoning"] == 0.5  # one "should state" item (0.5 -> 0), one "should mention" (1)
    mean = con.execute("SELECT score FROM beam_official_abilities WHERE dataset = 'beam' AND metric = "
                       "'beam_rubric_mean' AND ability = 'multi_session_reasoning'").fetchall()  # fmt: skip
    assert mean == [(0.75,)]
    tier = con.execute("SELECT DISTINCT tier FROM beam_official_abilities WHERE dataset = 'beam10m'").fetchall()
    assert tier == [("10M",)]
    con.close()
    assert "BEAM per ability" in (report.parent / "report" / "beam.html").read_text(encoding="utf-8")
