"""The official aggregate views (pipeline/catalog/official.py) on hand-built tables.

Every expected figure below is worked out by hand from the rows, following LongMemEval's
``print_qa_metrics.py`` and LoCoMo's ``evaluation_stats.py analyze_aggr_acc`` as described in the
module docstring; the views run on a plain DuckDB connection holding only the tables they read.
"""

from __future__ import annotations

from typing import Any

import duckdb
import pytest

from pipeline.catalog.official import (
    LOCOMO_OFFICIAL_RECALL_SQL,
    lme_official_accuracy_sql,
    locomo_official_by_distance_sql,
    locomo_official_categories_sql,
)

LME = "lme_official_llm_judge"
F1 = "locomo_f1"


def _table(con: duckdb.DuckDBPyConnection, name: str, columns: str, rows: list[tuple[Any, ...]]) -> None:
    con.execute(f"CREATE TABLE {name} ({columns})")
    marks = ", ".join("?" for _ in columns.split(","))
    con.executemany(f"INSERT INTO {name} VALUES ({marks})", rows)


OUTCOME_COLUMNS = (
    "dataset VARCHAR, partition_key VARCHAR, question_id VARCHAR, type_raw VARCHAR, system VARCHAR, reader VARCHAR, "
    "judge VARCHAR, metric VARCHAR, outcome VARCHAR, correct BOOLEAN, score DOUBLE"
)


def _lme(qid: str, qtype: str, correct: bool | None, outcome: str = "scored", system: str = "rag") -> tuple[Any, ...]:
    score = None if correct is None else float(correct)
    return ("lme", f"lme__{qid}", qid, qtype, system, "r", "j", LME, outcome, correct, score)


def _loc(key: str, cat: str, score: float | None, outcome: str = "scored") -> tuple[Any, ...]:
    return ("loc", key, key, cat, "rag", "r", "f1", F1, outcome, None if score is None else score == 1.0, score)


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    c = duckdb.connect()
    lme_rows = [
        _lme("q1", "single-session-user", True),
        _lme("q2", "single-session-user", False),
        _lme("q3", "single-session-preference", True),
        _lme("q4", "single-session-assistant", True),
        _lme("q5", "single-session-assistant", True),
        _lme("q6", "single-session-assistant", None, "judgment_failed"),
        _lme("q7", "multi-session", False),
        _lme("q8", "temporal-reasoning", True),
        _lme("q9_abs", "temporal-reasoning", True),
        _lme("q10", "knowledge-update", False),
        _lme("q11_abs", "knowledge-update", False),
        # a second system without any knowledge-update question
        _lme("q1", "single-session-user", True, system="full"),
    ]
    loc_rows = [
        _loc("qA", "4", 1.0),
        _loc("qD", "4", 0.5),
        _loc("qC", "1", 0.2),
        _loc("qF", "2", None, "answer_failed"),
        _loc("qG", "2", 1.0),  # scored, but its evidence id is unparseable: no distance bin
        _loc("qE", "3", 0.0),
        _loc("qH", "5", 1.0),
        _loc("qI", "5", 0.0),
    ]
    _table(c, "judgment_outcomes", OUTCOME_COLUMNS, lme_rows + loc_rows)
    words = lambda n: " ".join(["w"] * n)  # noqa: E731 - n whitespace tokens
    # conversation c1: tokens per turn = len("A: <text>\n".split()) = 1 + words; listed session 2 first
    # (the script walks session_1, session_2, ... whatever the list order): D1:1 ends at 600, D1:2 at 1200,
    # D2:1 at 2200
    _table(c, "haystacks", "dataset VARCHAR, haystack_id VARCHAR, position INT, session_key VARCHAR, "
           "source_session_id VARCHAR",
           [("loc", "c1", 0, "k2", "session_2"), ("loc", "c1", 1, "k1", "session_1")])  # fmt: skip
    _table(c, "turns", "dataset VARCHAR, session_key VARCHAR, position INT, speaker VARCHAR, text VARCHAR, "
           "source_id VARCHAR",
           [("loc", "k2", 0, "A", words(999), "D2:1"), ("loc", "k1", 0, "A", words(599), "D1:1"),
            ("loc", "k1", 1, "B", words(599), "D1:2")])  # fmt: skip
    evidence = {"qA": ["D1:1"], "qD": ["(D1:2)"], "qC": ["D2:1", "D1:2"], "qF": ["D1:1"], "qG": ["Dx:1"],
                "qE": ["D2:1; D1:1"], "qH": [], "qI": ["D2:1"]}  # fmt: skip
    _table(c, "questions", "dataset VARCHAR, partition_key VARCHAR, haystack_id VARCHAR, evidence_raw VARCHAR[]",
           [("loc", k, "c1", v) for k, v in evidence.items()])  # fmt: skip
    recall = {"qA": ("4", 1.0), "qD": ("4", 1.0), "qC": ("1", 0.5), "qH": ("5", 1.0), "qI": ("5", 0.0)}
    _table(c, "retrieval_metrics", "dataset VARCHAR, system VARCHAR, partition_key VARCHAR, type_raw VARCHAR, "
           "level VARCHAR, evidence_recall_official_context DOUBLE",
           [("loc", "rag", k, cat, lv, r) for k, (cat, r) in recall.items() for lv in ("turn", "session")])  # fmt: skip
    return c


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple[Any, ...]]:
    return con.execute(sql).fetchall()


def test_lme_official_accuracy_is_the_printers(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(lme_official_accuracy_sql([LME]))
    rows = _rows(con, "SELECT aggregate, type_raw, n_scored, n_correct, n_failed, accuracy FROM lme_official_accuracy "
                 "WHERE system = 'rag' ORDER BY row_order")  # fmt: skip
    assert rows[:6] == [
        ("type", "single-session-user", 2, 1, 0, 0.5),
        ("type", "single-session-preference", 1, 1, 0, 1.0),
        ("type", "single-session-assistant", 2, 2, 1, 1.0),  # the failed judgment is apart, not a zero
        ("type", "multi-session", 1, 0, 0, 0.0),
        ("type", "temporal-reasoning", 2, 2, 0, 1.0),  # abstention questions stay in their type
        ("type", "knowledge-update", 2, 0, 0, 0.0),
    ]
    task, overall, abstention = rows[6:]
    assert task[:5] == ("task_averaged", None, 10, 6, 1) and task[5] == pytest.approx(3.5 / 6)
    assert overall == ("overall", None, 10, 6, 1, 0.6)
    assert abstention == ("abstention", None, 2, 1, 0, 0.5)
    # a type without scored questions: NaN in the printer's mean, so no task average
    full = dict(_rows(con, "SELECT aggregate, accuracy FROM lme_official_accuracy WHERE system = 'full' "
                      "AND aggregate <> 'type'"))  # fmt: skip
    assert full == {"task_averaged": None, "overall": 1.0, "abstention": None}


def test_locomo_categories_in_official_order(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(locomo_official_categories_sql([F1]))
    rows = _rows(con, "SELECT aggregate, category, n_scored, n_failed, mean_score FROM locomo_official_categories "
                 "ORDER BY row_order")  # fmt: skip
    assert [r[1] for r in rows[:5]] == ["4", "1", "2", "3", "5"]
    assert rows[0] == ("category", "4", 2, 0, 0.75)
    assert rows[1] == ("category", "1", 1, 0, 0.2)
    assert rows[2] == ("category", "2", 1, 1, 1.0)  # qF failed: reported apart
    assert rows[3] == ("category", "3", 1, 0, 0.0)
    assert rows[4] == ("category", "5", 2, 0, 0.5)
    # overall: (1 + .5 + .2 + 1 + 0 + 1 + 0) / 7; without category 5: (1 + .5 + .2 + 1 + 0) / 5
    assert rows[5][:4] == ("overall", None, 7, 1) and rows[5][4] == pytest.approx(3.7 / 7)
    assert rows[6][:4] == ("overall_without_5", None, 5, 1) and rows[6][4] == pytest.approx(2.7 / 5)


def test_locomo_recall_per_category(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(LOCOMO_OFFICIAL_RECALL_SQL)
    rows = _rows(con, "SELECT aggregate, category, n_questions, n_with_evidence, recall FROM locomo_official_recall "
                 "ORDER BY row_order")  # fmt: skip
    # category 5: qH has no evidence (its recall of 1 is not summed) but is in the denominator: (0 + 0) / 2
    assert rows == [
        ("category", "4", 2, 2, 1.0),
        ("category", "1", 1, 1, 0.5),
        ("category", "5", 2, 1, 0.0),
        ("overall", None, 5, 4, 2.5 / 5),
    ]


def test_locomo_accuracy_by_distance_of_oldest_evidence(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(locomo_official_by_distance_sql([F1]))
    rows = _rows(con, "SELECT category, distance_bin, n_scored, mean_score FROM locomo_official_by_distance")
    assert rows == [
        ("4", 1, 1, 1.0),  # qA: D1:1 ends at token 600 -> ceil(0.6) = 1
        ("4", 2, 1, 0.5),  # qD: "(D1:2)" -> D1:2 ends at 1200 -> 2
        ("1", 2, 1, 0.2),  # qC: oldest session 1, dialogue 2 -> 1200 -> 2
        ("3", 3, 1, 0.0),  # qE: "D2:1; D1:1" read as session 2, dialogue 1 (the script's split) -> 2200 -> 3
        ("5", 3, 1, 0.0),  # qI: D2:1; qH has no evidence, qG's id does not parse, qF failed
    ]


def test_report_page_shows_the_official_tables(con: duckdb.DuckDBPyConnection) -> None:
    from pipeline.report.build import ReportData
    from pipeline.report.official_html import protocol_sections

    con.execute(lme_official_accuracy_sql([LME]))
    con.execute(locomo_official_categories_sql([F1]))
    sections = {
        view: [dict(zip([d[0] for d in cur.description], r, strict=True)) for r in cur.fetchall()]
        for view in ("lme_official_accuracy", "locomo_official_categories")
        for cur in [con.execute(f"SELECT * FROM {view}")]
    }
    data = ReportData("now", "r", "c", "", sections, {}, {})
    lme = "\n".join(protocol_sections(data, "lme"))
    assert "task_averaged" in lme and "0.583" in lme and "abstention" in lme
    loc = "\n".join(protocol_sections(data, "loc"))
    head = loc[loc.index("<thead>") : loc.index("</thead>")]
    assert [head.index(f"<th>{c}</th>") for c in ("4", "1", "2", "3", "5")] == sorted(
        head.index(f"<th>{c}</th>") for c in ("4", "1", "2", "3", "5")
    )
    assert "overall_without_5" in loc and "0.540" in loc and "1 failed" in loc
